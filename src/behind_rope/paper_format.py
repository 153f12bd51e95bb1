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


def verdict(passed: bool) -> str:
    return r"\textbf{PASS}" if passed else r"\textbf{FAIL}"
