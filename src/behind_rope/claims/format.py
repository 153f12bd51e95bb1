"""Values as LaTeX text: escaping, numbers with a real minus sign, lists, verdicts."""

from __future__ import annotations

import math
import re

LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  ">=": r"$\geq$", "<=": r"$\leq$", "<": r"$<$", ">": r"$>$"}


def tex_escape(text: str) -> str:
    pattern = "|".join(re.escape(key) for key in sorted(LATEX_SPECIALS, key=len, reverse=True))
    return re.sub(pattern, lambda match: LATEX_SPECIALS[match.group()], str(text))


def number(value, digits: int = 2) -> str:
    """A measured value as LaTeX text: fixed decimals, a real minus sign, thousands grouped."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, int):
        return f"{value:,}".replace(",", "{,}")
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", r"\ensuremath{-}")


def listing(items) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def verdict(passed: bool | str) -> str:
    """PASS or FAIL for a check; for a claim's outcome, PASS, FAIL or UNDECIDED."""
    said = passed if isinstance(passed, str) else "PASS" if passed else "FAIL"
    return rf"\textbf{{{said}}}"


def percent(fraction: float) -> str:
    """0.95 -> '95\\,\\%' (a configured share, written as the text reads it)."""
    return f"{fraction * 100:g}\\,\\%"


def bound(direction: str, threshold: float) -> str:
    """A pre-registered bound: '$\\geq$ 0.9' or '$\\leq$ 0.1'."""
    return (r"$\geq$ " if direction == "at_least" else r"$\leq$ ") + f"{threshold:g}".replace("-", r"\ensuremath{-}")


def interval(rule: dict, digits: int = 2) -> str:
    """A seed rule's mean and t-interval: '0.91 [0.88, 0.94]'."""
    low, high = rule["interval"]
    return f"{number(rule['mean'], digits)} [{number(low, digits)}, {number(high, digits)}]"


def span(values, digits: int = 2) -> str:
    """'a to b' over the defined values (one value when they agree as printed, 'n/a' when none is defined)."""
    values = [v for v in values if v is not None and v == v]
    if not values:
        return "n/a"
    low, high = number(min(values), digits), number(max(values), digits)
    return low if low == high else f"{low} to {high}"


def fraction_of_sequence(fraction: float, symbol: str = "S") -> str:
    """0.1 -> '$S/10$', 0.25 -> '$S/4$', 0.3 -> '$0.3S$': a configured share of the sequence."""
    inverse = 1 / fraction
    return f"${symbol}/{round(inverse)}$" if abs(inverse - round(inverse)) < 1e-9 else f"${fraction:g}{symbol}$"


def parameter_count(count: int) -> str:
    """1_777_088_000 -> '1.8 billion', 134_515_008 -> '135 million': a model's size as the text reads it."""
    return f"{count / 1e9:.1f} billion" if count >= 999.5e6 else f"{count / 1e6:.0f} million"


def model_name(name: str) -> str:
    return rf"\texttt{{{tex_escape(name)}}}"


def models(names) -> str:
    """'\\texttt{a} and \\texttt{b}', or 'none'."""
    return listing([model_name(name) for name in names] or ["none"])


# Plain-text math of the pre-registration's quotes, set as LaTeX math: [-10^1, 10^1], Q(2)K(2)^T, alpha != 0.
QUOTE_MATH = ((r"\[-?[\d^]+, ?-?[\d^]+\]", lambda text: text),
              (r"Q\((\d)\)K\((\d)\)\^T", lambda text: re.sub(r"Q\((\d)\)K\((\d)\)\^T", r"Q^{(\1)}K^{(\2)\\top}", text)),
              (r"alpha != 0", lambda text: r"\alpha \neq 0"),
              (r"j <= i", lambda text: r"j \leq i"))


def quote_tex(text: str) -> str:
    """A quoted sentence of the pre-registration, escaped, with its lines joined and its plain-text math
    (QUOTE_MATH) set in math mode."""
    text = " ".join(str(text).split())
    pattern = "|".join(f"(?:{math})" for math, _ in QUOTE_MATH)
    out, at = [], 0
    for match in re.finditer(pattern, text):
        convert = next(convert for math, convert in QUOTE_MATH if re.fullmatch(math, match.group()))
        out += [tex_escape(text[at:match.start()]), f"${convert(match.group())}$"]
        at = match.end()
    return "".join(out) + tex_escape(text[at:])
