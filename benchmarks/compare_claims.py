"""Compare the measured values of two claims files, timings aside; exit 1 if any differs.

    python benchmarks/compare_claims.py OLD/results/claims.json NEW/results/claims.json [--claims C1 C2 ...]

A refactor must leave every value under `measured` identical; this prints each path that differs
(or is missing on one side) with both values, and a summary line per claim.
"""

from __future__ import annotations

import argparse
import json
import sys

TIMINGS = {"seconds", "tokens_per_second", "train_seconds", "peak_rss_mb"}


def differences(old, new, path="") -> list[tuple[str, object, object]]:
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            if key in TIMINGS:
                continue
            if key not in old or key not in new:
                found.append((f"{path}/{key}", old.get(key, "<missing>"), new.get(key, "<missing>")))
            else:
                found += differences(old[key], new[key], f"{path}/{key}")
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for k, (a, b) in enumerate(zip(old, new, strict=True)) for d in differences(a, b, f"{path}[{k}]")]
    return [] if old == new else [(path, old, new)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--claims", nargs="+", help="only these claims (default: every claim in the old file)")
    args = parser.parse_args()
    old, new = (json.loads(open(path).read()) for path in (args.old, args.new))
    failed = False
    for claim in args.claims or list(old):
        found = differences(old[claim]["measured"], new.get(claim, {}).get("measured"))
        verdicts = (old[claim]["passed"], new.get(claim, {}).get("passed"))
        for path, a, b in found[:20]:
            print(f"  {claim}{path}: {a!r} -> {b!r}")
        print(f"{claim}: {'identical' if not found else f'{len(found)} values differ'} (measured, timings aside); "
              f"passed {verdicts[0]} -> {verdicts[1]}")
        failed |= bool(found) or verdicts[0] != verdicts[1]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
