"""What the claims' write-ups for docs/results.md and the README share: table cells, a claim's one-line
verdict, and the marked blocks of a page that the tables replace,

    <!-- name:start --> ... <!-- name:end -->

so that a table is rewritten from a claims file while the rest of the page stays as written."""

from __future__ import annotations

from pathlib import Path

from behind_rope import atomic
from behind_rope.claims.outcome import part_outcome


def value(number, form: str) -> str:
    """A number as a table cell; n/a where it is missing or NaN."""
    return "n/a" if number is None or number != number else format(number, form)


def pass_fail(passed) -> str:
    return "PASS" if passed else "FAIL"


def mean(values) -> float:
    """The mean of the defined values; NaN where there are none."""
    values = [v for v in values if v is not None and v == v]
    return sum(values) / len(values) if values else float("nan")


def floors(number, noise) -> str:
    """``number`` in units of its noise floor, as a cell."""
    if number is None or noise is None or number != number or noise != noise or noise <= 0:
        return "n/a"
    return f"{abs(number) / noise:.1f}"


def rule_cell(rule: dict, form: str = ".3f") -> str:
    """A seed rule as one cell: mean [interval], seeds clearing the bound, verdict."""
    low, high = rule["interval"]
    sign = ">=" if rule["direction"] == "at_least" else "<="
    return (f"{value(rule['mean'], form)} [{value(low, form)}, {value(high, form)}]; "
            f"{rule['seeds_passing']}/{rule['seeds']} seeds {sign} {rule['threshold']:g}; "
            f"{pass_fail(rule['passed'])}")


def claim_line(claims: dict, name: str) -> str:
    """The verdict, the criterion and its commit; for a claim decided per model, which models pass."""
    claim = claims[name]
    said = claim.get("outcome") or pass_fail(claim["passed"])
    line = f"**{name}: {said}** ({claim['threshold']}; criterion {claim.get('criterion_commit', 'unknown')})"
    for precondition, entry in claim.get("preconditions", {}).items():
        line += f". Precondition {precondition}: {'met' if entry['passed'] else 'NOT MET'} ({entry['reason']})"
    if "undecided" in claim:
        line += f". What would decide it: {claim['undecided']['would_decide']}"
    models = claim["measured"].get("models") if isinstance(claim["measured"], dict) else None
    if models and all(isinstance(result, dict) and "passed" in result for result in models.values()):
        said = {model: part_outcome(result) for model, result in models.items()}
        passing, failing = ([model for model, s in said.items() if s == outcome] for outcome in ("PASS", "FAIL"))
        undecided = [model for model, s in said.items() if s == "UNDECIDED"]
        line += (f". Passes for {', '.join(passing) or 'no model'}; "
                 + (f"undecided for {', '.join(undecided)}; " if undecided else "")
                 + f"fails for {', '.join(failing) or 'no model'}.")
    controls = claim.get("controls") if name != "C3" else None
    if controls:
        line += " Controls (each must fail): " + "; ".join(
            f"{control} {'FAIL' if not result['passed'] else 'PASS, so the claim fails'}"
            + (" (nothing to test here)" if result.get("testable") is False else "") for control, result in controls.items()) + "."
    return line


def replace_block(text: str, name: str, body: str, path: Path | str = "the page") -> str:
    """``text`` with its block ``name`` holding ``body``; raises where the page has no such block."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{path} has no block {start} ... {end}")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return head + start + "\n" + body.strip("\n") + "\n" + end + tail


def update(name: str, body: str, path: Path) -> None:
    """Replace the block ``name`` of the page ``path`` with ``body``."""
    atomic.write_text(path, replace_block(Path(path).read_text(), name, body, path))
