"""The price list of doing less work (benchmarks/less_work.py): its reliability predictions, how options combine."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from less_work import cpu_off, cut, halved, merged, models_reaching, position_jobs, smallest_fitting, without_model_cost  # noqa: E402


@pytest.mark.parametrize("half_size", [0.2, 0.5, 0.9])
def test_halving_undoes_the_spearman_brown_doubling(half_size):
    assert halved(2 * half_size / (1 + half_size)) == pytest.approx(half_size)


def test_models_are_counted_now_and_at_half_the_data():
    values = {"steady": [0.95, 0.9, 0.2], "marginal": [0.82, 0.81, 0.1], "short": [0.85, 0.3, 0.2]}
    # At half the data 0.95 -> 0.90 and 0.9 -> 0.82 stay above 0.8; 0.82 -> 0.69 and 0.81 -> 0.68 do not.
    assert models_reaching(values, 0.8, 2) == (2, 1)


def test_options_that_cut_the_same_job_count_it_once():
    jobs = {"train/nope_seed4": 90.0, "train/nope": 90.0, "scores/smollm2/fig5_causal": 40.0}
    dropped_seed = cut(jobs, "train/nope_seed4")
    fewer_steps = cut(jobs, "train/nope*", 1 / 3)
    half_figure5 = cut(jobs, "scores/*/fig5_causal", 0.5)
    assert cpu_off(fewer_steps, jobs) == pytest.approx(60.0)
    # The dropped seed's 90 s go once, not 90 + 30; the other twin loses its third; two halvings leave a quarter.
    assert cpu_off(merged(dropped_seed, fewer_steps, half_figure5), jobs) == pytest.approx(90 + 30 + 20)
    assert cpu_off(merged(half_figure5, half_figure5), jobs) == pytest.approx(30.0)


def claims_with(c5a_passes: dict[str, bool]) -> dict:
    passing = {"a": {"passed": True}, "b": {"passed": True}}
    return {"C5a": {"measured": {"models": {m: {"passed": p} for m, p in c5a_passes.items()}}},
            **{claim: {"measured": {"models": passing | {"big": {"passed": True}}}} for claim in ("C5b", "C5c", "C5d")}}


def test_leaving_out_a_model_changes_a_verdict_only_where_that_model_alone_fails():
    assert without_model_cost(claims_with({"a": True, "b": True, "big": False}), "big").endswith("C5a FAIL -> PASS")
    assert without_model_cost(claims_with({"a": False, "b": True, "big": False}), "big").endswith("none")
    assert without_model_cost(claims_with({"a": True, "b": True, "big": True}), "big").endswith("none")


def test_only_the_smallest_sets_of_options_that_reach_the_target_are_listed():
    jobs = {"a": 50.0, "b": 40.0, "c": 30.0, "d": 5.0}
    rows = [(name, cut(jobs, name), "") for name in jobs]
    # 71 s off: a + b and a + c reach it; a + b + c too, but it holds a smaller set; b + c (70) does not, b + c + d does.
    found = smallest_fitting(rows, jobs, 71.0)
    assert [chosen for chosen, _ in found] == [(0, 1), (0, 2), (1, 2, 3)]
    assert [off for _, off in found] == [90.0, 80.0, 75.0]
    assert smallest_fitting(rows, jobs, 200.0) == []


def test_the_position_claims_option_takes_their_own_jobs_and_nothing_the_paper_claims_read():
    from behind_rope.config import load

    own = ["scores/smollm2/first_causal", "scores/qwen2_5_coder/first_noncausal", "scores/gemma3/long_causal",
           "scores/gemma3.bos_random3/first_causal", "metrics/smollm2.ntk4/first_causal", "metrics/gemma3/first_causal",
           "simulate/rope_ntk8_alpha0.0", "metrics/simulation/rope_window16_alpha0.0", "position/gemma3",
           "position_claims", "figures/figS_patching", "figures/figS_log_z_growth"]
    shared = ["scores/gemma3/fig5_causal", "scores/smollm2/random_noncausal", "metrics/qwen2_5_coder/text_causal",
              "scores/nope_seed1/text_causal", "simulate/rope_causal_alpha0.0", "metrics/simulation/rope_noncausal_alpha0.0",
              "figures/fig5_llm_layers", "claims", "train/nope"]
    jobs = dict.fromkeys(own + shared, 1.0)
    assert sorted(position_jobs(load(), jobs)) == sorted(own)


def test_a_summary_is_paired_only_with_the_process_log_of_its_own_run():
    from dag_profile import process_cpu
    from less_work import same_run

    def log(fetch_cpu):
        return [json.dumps({"pid": 2, "ppid": 1, "argv": ["/x/behind_rope/__main__.py", "fetch-package"], "user": fetch_cpu,
                            "system": 0.0, "job": None, "children_user": 0.0, "children_system": 0.0}),
                json.dumps({"pid": 1, "ppid": 0, "argv": ["/venv/snakemake/__main__.py", "--cores"], "user": 4.0,
                            "system": 0.0, "job": None, "children_user": fetch_cpu, "children_system": 0.0})]

    # run_benchmarks.py writes the steps' CPU seconds of its run into the summary, through JSON.
    summary = json.loads(json.dumps({"steps": process_cpu(log(1.5))}))
    assert same_run(summary, log(1.5))
    assert not same_run(summary, log(2.5))
