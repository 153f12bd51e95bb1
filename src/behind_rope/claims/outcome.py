"""Three outcomes for every claim: PASS, FAIL or UNDECIDED.

A claim's criteria say what its effect must be; its preconditions (config/claims.yaml, each written before the
run that tests it) say what the data must be for the criteria to mean anything about the paper: a twin that
has learned language, a probe with the power to see the bound, a noise control.  When every precondition holds,
the criteria decide: PASS or FAIL.  When one does not, the claim is UNDECIDED, and its record names the
precondition and what would decide it.  UNDECIDED is a gap in the design, to be closed, not a verdict.

A precondition is ``{"passed": bool, "reason": str, "would_decide": str, ...}`` in ``claim["preconditions"]``.
"""

from __future__ import annotations

OUTCOMES = ("PASS", "FAIL", "UNDECIDED")


def precondition(passed: bool, reason: str, would_decide: str, **measured) -> dict:
    return {"passed": bool(passed), "reason": reason, "would_decide": would_decide, **measured}


def unmet(record: dict) -> list[str]:
    """The names of a record's preconditions that do not hold."""
    return sorted(name for name, entry in record.get("preconditions", {}).items() if not entry["passed"])


def decided_by_parts(parts: dict, what: str, fails_anyway: bool = False) -> dict:
    """The precondition of a verdict that passes only when every part (a model, an NTK factor) passes, each
    part a record with ``passed`` and its own ``preconditions``: the data decide it when every part's
    preconditions hold, or when a part whose preconditions hold fails it already (as does ``fails_anyway``,
    a control that passes).  An undecided part can then only leave the verdict undecided, never pass it."""
    undecided = {name: unmet(part) for name, part in parts.items() if unmet(part)}
    failing = sorted(name for name, part in parts.items() if name not in undecided and not part["passed"])
    decided = not undecided or bool(failing) or fails_anyway
    if not undecided:
        reason = f"every {what} is decided"
    elif decided:
        reason = (f"undecided: {', '.join(undecided)}; decided anyway, as "
                  + (f"{', '.join(failing)} fails it" if failing else "a control passes"))
    else:
        reason = f"undecided: {', '.join(undecided)}; every decided {what} passes"
    would_decide = "; ".join(f"{name}: {parts[name]['preconditions'][entry]['would_decide']}"
                             for name, names in undecided.items() for entry in names)
    return precondition(decided, reason, would_decide or "nothing: it is decided", undecided=sorted(undecided),
                        failing=failing)


def part_outcome(part: dict) -> str:
    """PASS, FAIL or UNDECIDED for one part of a verdict (a model), from its own preconditions."""
    return "UNDECIDED" if unmet(part) else "PASS" if part["passed"] else "FAIL"


def settle(claim: dict) -> dict:
    """Add ``outcome`` to a decided claim (and, when UNDECIDED, ``undecided``: the preconditions unmet and what
    would decide it).  ``passed`` stays what the criteria give, so that an undecided claim's data can still be read."""
    unmet = {name: entry for name, entry in claim.get("preconditions", {}).items() if not entry["passed"]}
    if unmet:
        claim["outcome"] = "UNDECIDED"
        claim["undecided"] = {"preconditions_unmet": sorted(unmet),
                              "would_decide": "; ".join(dict.fromkeys(entry["would_decide"] for entry in unmet.values()))}
    else:
        claim["outcome"] = "PASS" if claim["passed"] else "FAIL"
    return claim


def outcome(claim: dict) -> str:
    """A claim's outcome; a record written before outcomes existed has only ``passed``."""
    return claim.get("outcome") or ("PASS" if claim["passed"] else "FAIL")
