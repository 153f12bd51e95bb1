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
