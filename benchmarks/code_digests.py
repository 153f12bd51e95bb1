"""A no-op rerun with the code digests kept in .snakemake, and with them worked out, side by side.

Every rule passes a digest of the library code its step imports (behind_rope.pipeline.codedigest);
finding those imports parses some 60 modules at every Snakemake start.  The digests are kept in
``.snakemake/behind_rope_code_digests.json`` for the next start, under a fingerprint of the package.
This script reruns a finished workflow (nothing to do) ``--repeats`` times each way, alternating:
without the kept file (removed first: the digests are worked out, as before they were kept) and
with it, and prints the least wall and CPU time of each and their ratio.  Both ways must find
nothing to do, or the script stops.

    python benchmarks/code_digests.py --run DIR                 # DIR: a finished run (run_benchmarks.py --keep DIR)
    python benchmarks/code_digests.py --run DIR --update-docs   # also rewrite its table in docs/results.md
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results_doc import update  # noqa: E402

KEPT = Path(".snakemake") / "behind_rope_code_digests.json"


def noop_rerun(run: Path, *options: str) -> tuple[float, float]:
    """Wall and CPU seconds of one `snakemake --cores 2` in ``run``, which must have nothing to do."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *options], cwd=run, capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "Nothing to be done" not in done.stdout + done.stderr:
        raise SystemExit(f"Error: {run} is not a finished run (the rerun had work to do or failed):\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished run of this workflow")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    if not (args.run / "Snakefile").is_file():
        raise SystemExit(f"Error: {args.run} holds no workflow; give --run a finished run (run_benchmarks.py --keep DIR)")
    noop_rerun(args.run, "--dry-run")  # an unfinished run stops here, before any job runs
    noop_rerun(args.run)  # warms the file cache, and keeps the digests for the first "kept" run
    ways = {"digests worked out (no kept file)": [], "digests kept in .snakemake": []}
    for _ in range(args.repeats):
        for way, times in ways.items():
            if "worked out" in way:
                (args.run / KEPT).unlink(missing_ok=True)
            times.append(noop_rerun(args.run))
            if not (args.run / KEPT).is_file():
                raise SystemExit(f"Error: the rerun kept no {KEPT}: is {args.run} run by this checkout's codedigest?")
    (worked_wall, worked_cpu), (kept_wall, kept_cpu) = ((min(wall for wall, _ in times), min(cpu for _, cpu in times))
                                                        for times in ways.values())
    lines = ["| no-op rerun (`snakemake --cores 2`, nothing to do) | wall s | CPU s |", "|---|---|---|",
             f"| digests worked out (no kept file) | {worked_wall:.2f} | {worked_cpu:.2f} |",
             f"| digests kept in .snakemake | {kept_wall:.2f} | {kept_cpu:.2f} |",
             f"| kept / worked out | {kept_wall / worked_wall:.2f} | {kept_cpu / worked_cpu:.2f} |"]
    print("\n".join(lines))
    if args.update_docs:
        update("code_digests", f"_Measured by `python benchmarks/code_digests.py --update-docs` on {args.run.name}, "
                               f"the least of {args.repeats} runs each way, alternating._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
