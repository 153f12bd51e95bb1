"""What one parse of the workflow costs, in this checkout against another commit, side by side.

Every Snakemake command parses the workflow before it does anything: a no-op rerun, `snakemake <figure>`,
a dry run, and on a cluster every job.  This prints:

- the whole parse: `snakemake --list-rules` (a parse and nothing else) in this checkout, in a git
  worktree of ``--against`` and, for what Snakemake costs by itself, on a one-rule Snakefile; in fresh
  processes, alternating, after one untimed run each (which fills the caches Snakemake's folder keeps);
  the median CPU and wall time of each, the checkouts' ratio, and whether both listed the same rules;
- the part this checkout changed, timed in this process (median of ``--rounds``): the criteria commits
  (behind_rope.claims.preregistration.criterion_commits) with every version of the config parsed, and
  with the parsed versions kept in a file, checked equal;
- two costs of every start left as they are, in fresh processes: reading the config files as the
  Snakefile's `configfile:` lines do (yte's pure-Python YAML) against libyaml, and importing the
  installed executor plugins, which Snakemake does on every start (the SLURM plugin imports pandas).

    python benchmarks/parse_time.py [--against REV] [--rounds 7] [--update-docs]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from behind_rope.claims.preregistration import criterion_commits, deciding_paths  # noqa: E402
from behind_rope.config import load  # noqa: E402


def child_seconds(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """(CPU s, wall s, stdout) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall, done.stdout


def whole_parse(against: str, rounds: int) -> list[str]:
    snakemake = [sys.executable, "-m", "snakemake", "--list-rules"]
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "against"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(other), against], check=True)
        try:
            bare = Path(tmp) / "one_rule"
            bare.mkdir()
            (bare / "Snakefile").write_text('rule one:\n    output: "x"\n    shell: "touch x"\n')
            trees = {"this checkout": ROOT, f"{against} (worktree)": other, "a one-rule Snakefile (Snakemake alone)": bare}
            listed = {name: child_seconds(snakemake, tree)[2] for name, tree in trees.items()}  # untimed: fills caches
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            for round_ in range(rounds):
                for name in list(trees)[:: 1 if round_ % 2 == 0 else -1]:
                    cpu, wall, _ = child_seconds(snakemake, trees[name])
                    times[name].append((cpu, wall))
        finally:  # the temporary folder goes with its files; git forgets the worktree here
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=False)
    medians = {name: [statistics.median(run[i] for run in runs) for i in (0, 1)] for name, runs in times.items()}
    this, base, _ = medians.values()
    same = listed["this checkout"] == listed[f"{against} (worktree)"]
    return [f"| `snakemake --list-rules`, {name} | {cpu:.2f} | {wall:.2f} |" for name, (cpu, wall) in medians.items()] + [
        f"| ratio, this checkout / {against} | {this[0] / base[0]:.2f} | {this[1] / base[1]:.2f} |",
        f"| the same rules listed by both checkouts | {'yes' if same else 'NO'} | |"]


def median_seconds(work, rounds: int) -> float:
    seconds = []
    for _ in range(rounds):
        start = time.process_time()
        work()
        seconds.append(time.process_time() - start)
    return statistics.median(seconds)


def parts(rounds: int) -> list[str]:
    config = load()  # the config workflow/rules/common.smk reads the claims' paths from
    paths = {name: deciding_paths(config, name) for name in config["claims"]}
    with tempfile.TemporaryDirectory() as tmp:
        kept = Path(tmp) / "kept.json"
        parsed = criterion_commits(ROOT, paths)
        criterion_commits(ROOT, paths, kept=kept)
        same = criterion_commits(ROOT, paths, kept=kept) == parsed
        every = median_seconds(lambda: criterion_commits(ROOT, paths), rounds)
        read = median_seconds(lambda: criterion_commits(ROOT, paths, kept=kept), rounds)
    return [f"| criteria commits, every version of the config parsed | {every:.3f} | |",
            f"| criteria commits, the parsed versions kept | {read:.3f} | |",
            f"| ratio, kept / parsed; the same commits | {read / every:.2f} | {'yes' if same else 'NO'} |"]


CONFIG_READS = {
    "yte's pure-Python YAML, as Snakemake's `configfile:` lines read them":
        "from snakemake.common.configfile import load_configfile as read",
    "libyaml (behind_rope.config.load_yaml)":
        "from behind_rope.config import load_yaml; read = lambda path: load_yaml(open(path).read())",
}


def config_reads(rounds: int) -> list[str]:
    """The two config files read in a fresh process (so the first read's imports count), each way."""
    cpu = {}
    for name, reader in CONFIG_READS.items():
        code = (f"import sys, time; sys.path.insert(0, 'src'); import snakemake.api; {reader}; t = time.process_time(); "
                "[read(f) for f in ('config/config.yaml', 'config/claims.yaml')]; print(time.process_time() - t)")
        cpu[name] = statistics.median(float(child_seconds([sys.executable, "-c", code], ROOT)[2]) for _ in range(rounds))
    return [f"| the config files read with {name} (fresh process) | {seconds:.3f} | |" for name, seconds in cpu.items()]


def plugin_import(rounds: int) -> list[str]:
    bare = [sys.executable, "-c", "pass"]
    plugins = [sys.executable, "-c", "from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry;"
               "ExecutorPluginRegistry().collect_plugins()"]
    cpu = {name: statistics.median(child_seconds(command, ROOT)[0] for _ in range(rounds))
           for name, command in (("bare", bare), ("plugins", plugins))}
    return [f"| importing Snakemake's executor plugins, as every start does (fresh process, less a bare Python) "
            f"| {cpu['plugins'] - cpu['bare']:.2f} | |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="HEAD", help="the commit to compare with (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/results.md")
    args = parser.parse_args()
    lines = ["| measurement | CPU s (median) | wall s (median) |", "|---|---|---|"]
    print(*lines, sep="\n", flush=True)
    for section in (whole_parse(args.against, args.rounds), parts(args.rounds), config_reads(args.rounds),
                    plugin_import(args.rounds)):
        print(*section, sep="\n", flush=True)
        lines += section
    if args.update_docs:
        from results_doc import update

        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.against], capture_output=True,
                                text=True, check=True).stdout.strip()
        update("parse_time", f"_Measured by `python benchmarks/parse_time.py --against {args.against} --update-docs` "
                             f"({args.against} = {commit}): medians of {args.rounds} rounds; the parse rows alternate "
                             "the checkouts and the one-rule Snakefile, in fresh processes._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
