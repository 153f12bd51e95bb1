"""The tables of docs/results.md that come from a run's results/claims.json (claims C3 to C8).

    python benchmarks/result_tables.py results/claims.json      # rewrite them from this run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_doc import update  # noqa: E402


def twins_table(claims: dict) -> str:
    """The trained-twin numbers of claim C3, as written by the pipeline."""
    c3 = claims["C3"]["measured"]
    rows = ["| quantity | value |", "|---|---|"]
    for twin, sanity in c3["sanity"].items():
        rows.append(f"| {twin}: held-out loss / unigram loss (sanity) | {sanity['validation_loss']:.3f} / "
                    f"{sanity['unigram_loss']:.3f} ({'PASS' if sanity['passed'] else 'FAIL'}) |")
    for role in ("runs", "mask_probe", "mask_probe_control", "untrained", "comparisons"):
        for run, local in c3["locality"][role].items():
            amplified = c3["amplification"][role][run]
            values = ", ".join(f"layer {k}: {v:.2f}" for k, v in local["locality"].items())
            rows.append(f"| {run} ({role}): locality; layer-2 key slope (x the largest simulated) | {values}; "
                        f"{amplified['key_slope']:.4f} ({amplified['amplification']:.2f} x) |")
    checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in c3["checks"].items())
    rows.append(f"| **C3** | **{'PASS' if claims['C3']['passed'] else 'FAIL'}** ({checks}) |")
    for run, evidence in claims["C4"]["measured"]["trained_rope_twin"].items():
        values = ", ".join(f"layer {k}: {v['split_half_reliability']:.2f} / {v['nonrelative_index']:.3f} / "
                           f"{v['start_deficit']:+.3f}" for k, v in evidence["layers"].items())
        rows.append(f"| RoPE twin {run}: reliability / non-relative index / start deficit | {values} |")
    return "\n".join(rows)


def _number(value, form: str) -> str:
    return "n/a" if value is None else format(value, form)


def llm_table(claims: dict) -> str:
    """Claims C5a and C5b per model: layers 1-4 in the three C5a runs, the Figure 5 run, every layer, the layer types."""
    c5a, c5b = claims["C5a"]["measured"]["models"], claims["C5b"]["measured"]["models"]
    rows = ["| model | run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for run, label in (("text", "text, mask"), ("iid_tokens", "i.i.d. tokens, mask"),
                           ("iid_tokens_no_mask", "i.i.d. tokens, no mask")):
            cells = [f"{_number(v['block_reliability'], '.2f')} / {_number(v['nonrelative_index'], '.2f')} / "
                     f"{_number(v['start_deficit'], '+.2f')}" for v in result[run].values()]
            rows.append(f"| {model} | {label} | " + " | ".join(cells) + " |")
        checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in result["checks"].items())
        rows.append(f"| {model} | **C5a {'PASS' if result['passed'] else 'FAIL'}** | {checks} | | | |")
    rows += ["", f"**C5a: {'PASS' if claims['C5a']['passed'] else 'FAIL'}** ({claims['C5a']['threshold']})", "",
             "C5b, on the Figure 5 run (per layer: panel reliability as drawn; start deficit the paper's way; "
             "softmax-visible start deficit, mean (halves); sink):", "",
             "| model | sampling | layer 1 | layer 2 | layer 3 | layer 4 | C5b |", "|---|---|---|---|---|---|---|"]
    for model, result in c5b.items():
        cells = []
        for layer, v in result["figure5"].items():
            halves = ", ".join(_number(h, "+.3f") for h in v["start_deficit_visible_halves"])
            mark = "" if int(layer) in result["layers_where_c5a_holds"] else " (not judged)"
            cells.append(f"r {_number(v['drawn_reliability'], '.2f')}; {_number(v['start_deficit_paper'], '+.3f')}; "
                         f"{_number(v['start_deficit_visible'], '+.3f')} ({halves}); sink {_number(v['sink'], '+.2f')}{mark}")
        rows.append(f"| {model} | {result['figure5_inputs']['sampling']} | " + " | ".join(cells)
                    + f" | **{'PASS' if result['passed'] else 'FAIL'}** |")
    rows += ["", f"**C5b: {'PASS' if claims['C5b']['passed'] else 'FAIL'}** ({claims['C5b']['threshold']})", "",
             "Every layer on text, block reliability (start deficit sign: + / −; · where the window hides the start):", "",
             "| model | layer: block reliability, start deficit sign (s = sliding window) |", "|---|---|"]
    for model, result in c5a.items():
        cells = []
        for layer, v in result["all_layers_text"].items():
            sign = {"positive": "+", "negative": "−"}.get(v["start_deficit_sign"], "·")
            mark = "s" if v.get("layer_type") == "sliding_attention" else ""
            cells.append(f"{layer}{mark}: {_number(v['block_reliability'], '.2f')}{sign}")
        rows.append(f"| {model} | {', '.join(cells)} |")
    rows += ["", "By attention type (text; means over layers):", "",
             "| model | type | layers | block reliability | non-relative index | start deficit |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for kind, v in result["by_layer_type"].items():
            rows.append(f"| {model} | {kind} | {len(v['layers'])} | {_number(v['mean_block_reliability'], '.2f')} | "
                        f"{_number(v['mean_nonrelative_index'], '.2f')} | {_number(v['mean_start_deficit'], '+.2f')} |")
    return "\n".join(rows)


def decomposition_table(claims: dict) -> str:
    """Relative / query offset / softmax-visible shares, layers 1-4, for every kind of run."""
    shares = ("relative_share", "query_offset_share", "visible_share")
    runs = []
    for model, result in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", "i.i.d."), ("iid_tokens_no_mask", "i.i.d., no mask")):
            runs.append((f"{model}, {label}", result["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        runs.append((f"twin {run}", {str(row["layer"]): row for row in layers}))
    runs += [(f"simulation {name}", layers) for name, layers in claims["C4"]["measured"]["decomposition"].items()]
    rows = ["| run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|"]
    for label, by_layer in runs:
        cells = [" / ".join(_number(by_layer[str(k)][key], ".2f") for key in shares) if str(k) in by_layer else ""
                 for k in (1, 2, 3, 4)]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def position_table(claims: dict) -> str:
    """Claims C6-C8: the checks that decide them, with their controls."""
    c6, c7, c8a, c8b = (claims[name]["measured"] for name in ("C6", "C7", "C8a", "C8b"))
    rows = ["| model | C6: visible reliability, layers 2-4 (i.i.d.; no mask) | C7: fraction removed (|R| before) | "
            "closed system (gap same / different) | C8a: share by NTK factor |", "|---|---|---|---|---|"]
    for model, result in c7["models"].items():
        c6_rows = c6["models"][model]
        reliab = " ".join(_number(v["visible_reliability"], ".2f") for v in c6_rows["iid_tokens"].values())
        no_mask = " ".join(_number(v["visible_reliability"], ".2f") for v in c6_rows["iid_tokens_no_mask"].values())
        removed = ", ".join(f"{name} {_number(value, '+.2f')}" for name, value in result["fraction_removed"].items())
        closed = result["position_0_closed_system"]
        ntk = c8a["models"].get(model)
        shares = ", ".join(f"s={f}: {_number(v, '.3f')}" for f, v in ntk["residual_stream_share_early"].items()) if ntk else ""
        rows.append(f"| {model} | {reliab}; {no_mask} ({'PASS' if c6_rows['passed'] else 'FAIL'}) | {removed} "
                    f"({_number(result['first_key_early_original'], '.2f')}; {'PASS' if result['passed'] else 'FAIL'}) | "
                    f"{_number(closed['largest_gap_same_first_token'], '.1e')} / "
                    f"{_number(closed['smallest_gap_different_first_tokens'], '.1e')} | {shares}"
                    f"{(' (' + ('PASS' if ntk['passed'] else 'FAIL') + ')') if ntk else ''} |")
    sliding = c8b["by_layer_type"]
    rows += ["", f"C8b ({c8b['model']}): " + "; ".join(
        f"{kind}: rank correlation with depth {_number(v['depth_correlation'], '.2f')} over layers {v['layers']}"
        for kind, v in sliding.items())]
    rows += ["", *(f"**{name}: {'PASS' if claims[name]['passed'] else 'FAIL'}** ({claims[name]['threshold']})"
                   for name in ("C6", "C7", "C8a", "C8b"))]
    return "\n".join(rows)


def write_tables(claims: dict, source: str) -> None:
    note = f"_From `results/claims.json` of {source}._\n\n"
    update("twins", note + twins_table(claims))
    update("llm", note + llm_table(claims))
    update("decomposition", note + decomposition_table(claims))
    update("position", note + position_table(claims))


if __name__ == "__main__":
    write_tables(json.loads(Path(sys.argv[1]).read_text()), "a default-scale run")
