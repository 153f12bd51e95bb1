"""Claim C5 as the paper states it for LLMs (Section 5.2), in parts that pass or fail on their own (per model).

- **C5a, structure.** "We can observe the non-relative pattern among the models except for the first
  layer": in the early layers after layer 1 the mean pre-softmax scores carry a systematic
  non-relative residual (block reliability of the diagonal-normalised scores), on natural text and on
  i.i.d. tokens, while layer 1 on i.i.d. tokens (RoPE alone, no mixing yet) stays at noise level, and
  the same weights without the mask on the same tokens do *not* show it.
- **C5b, magnitude.** "The typical attention score [...] in [-10^1, 10^1] scale and the non-relative
  patterns in [-1, 1] scale": the quantile width of the diagonal-normalised scores over that of the
  raw scores, as Figure 5 draws them; the split-half noise is the control that must fail.
- **C5c, the first keys stand apart.** "This pattern non-uniformly emphasizes the first few keys": the
  contrast of keys 1 .. first_keys against mid-context keys, whatever its sign, beyond the split-half
  noise floor; key 0, the attention sink, on its own.  I.i.d. tokens without the mask must fail.
- **C5d, direction (our question, beyond the paper's text).** The paper states a direction only for
  the RoPE simulation ("the left portion of the attention maps appears darker").  In every layer among
  2-4 where C5a's text structure holds, the start keys score lower than mid-context keys in the
  *softmax-visible* residual (behind_rope.maths.decompose: the query offsets, which the softmax cannot see,
  removed; key 0 kept apart), in the mean and in both halves of the Figure 5 run.  The signed values on
  text and on i.i.d. tokens are recorded, and the paper's own measure beside them.

Every constant is in the pre-registration (config/claims.yaml).
"""

from __future__ import annotations

import math

from behind_rope.claims.outcome import decided_by_parts, part_outcome, precondition

LLM_KEYS = ("block_reliability", "split_half_reliability", "nonrelative_index", "start_deficit")
DECOMPOSITION_KEYS = ("relative_share", "query_offset_share", "visible_share", "paper_nonrelative_share", "sink",
                      "key_profile_share", "start_deficit_paper", "start_deficit_visible")


def _sign(value) -> str:
    if value is None or value != value:
        return "undefined"
    return "negative" if value < 0 else "positive"


def _llm_layer(row: dict) -> dict:
    summary = {key: row[key] for key in LLM_KEYS}
    summary["start_deficit_sign"] = _sign(row["start_deficit"])
    if "layer_type" in row:
        summary["layer_type"] = row["layer_type"]
    return summary


def rows_by_layer_type(metrics: dict) -> dict[str, list[dict]]:
    """A run's layer rows per attention type (e.g. Gemma 3's sliding-window and global layers)."""
    groups: dict[str, list[dict]] = {}
    for row in metrics["layers"]:
        groups.setdefault(row.get("layer_type", "full_attention"), []).append(row)
    return groups


def layer_type_comparison(metrics: dict) -> dict:
    """Mean metrics per attention type."""
    groups = rows_by_layer_type(metrics)

    def mean(rows, key):
        values = [r[key] for r in rows if r[key] is not None and r[key] == r[key]]
        return sum(values) / len(values) if values else None

    return {kind: {"layers": [r["layer"] for r in rows], **{f"mean_{key}": mean(rows, key) for key in LLM_KEYS}}
            for kind, rows in groups.items()}


def _below_in_every_part(row: dict, key: str, below: float) -> bool:
    """Below the threshold in the mean and in both halves (an undefined value is not below)."""
    values = [row[key], *row[f"{key}_halves"]]
    return all(value is not None and value == value and value < below for value in values)


def _stands_apart(row: dict, key: str, noise_key: str, min_over_noise: float) -> bool:
    """|contrast| >= min_over_noise noise floors, with the sign of the mean in both halves."""
    value, halves, noise = row[key], row[f"{key}_halves"], row[noise_key]
    if any(v is None or v != v for v in (value, *halves, noise)):
        return False
    same_sign = all((half > 0) == (value > 0) for half in halves)
    return same_sign and abs(value) >= min_over_noise * noise


def _per_model(statement: str, threshold: str, models: dict) -> dict:
    """A claim decided per model: it passes when every model passes.  Where models carry preconditions, the
    claim is decided when every model is, or when a decided model fails it (behind_rope.claims.outcome)."""
    claim = {"statement": statement, "threshold": threshold, "measured": {"models": models},
             "passed": all(model["passed"] for model in models.values())}
    if any("preconditions" in model for model in models.values()):
        claim["preconditions"] = {"models_decided": decided_by_parts(models, "model")}
    return claim


def documents_to_resolve(noises, documents: int, bound: float, layers: int) -> int:
    """The documents at which the split-half noise's ratio would fall below ``bound`` in ``layers`` of the
    layers, the noise falling as one over the root of the documents (each half's mean has that error)."""
    needed = sorted(documents * max(1.0, (noise / bound) ** 2) for noise in noises)
    return math.ceil(round(needed[layers - 1], 6))  # rounded first: a float's last bit adds no document


def noise_control(rows: dict, noisy: list, documents: int, min_spread_ratio: float, min_layers: int) -> dict:
    """C5b's noise control as a precondition: the split-half noise alone must reach the bound (``noisy``: the
    layers where it does) in fewer than ``min_layers`` of the layers, else it would pass the claim by itself and
    the bound is not resolved."""
    quiet = [layer for layer in rows if layer not in noisy]
    needed = documents_to_resolve([r["noise_spread_ratio"] for r in rows.values()], documents, min_spread_ratio,
                                  len(rows) - min_layers + 1)
    return precondition(
        len(noisy) < min_layers,
        f"the split-half noise's spread ratio reaches {min_spread_ratio} in layers {noisy or 'none'} of "
        f"{list(rows)} at {documents} documents (fewer than {min_layers} allowed)",
        f"about {needed:,} Figure 5 documents (llm.inputs.fig5.sequences), where the noise would fall below the "
        "bound in enough layers",
        documents=documents, documents_to_resolve=needed, quiet_layers=quiet)


def claims_c5(metrics: dict, runs_by_model: dict, criteria: dict) -> dict:
    """{"C5a": ..., "C5b": ..., "C5c": ..., "C5d": ...} from the metrics files of each model's runs
    (behind_rope.config.c5_runs); ``criteria`` holds each part's arguments (config/claims.yaml)."""
    c5a, c5b, c5c, c5d = (criteria[name] for name in ("C5a", "C5b", "C5c", "C5d"))
    layers, min_reliability, min_layers = c5a["layers"], c5a["min_reliability"], c5a["min_layers"]
    first, later = layers[0], layers[1:]

    def row(run, layer):
        return metrics[run]["layers"][layer - 1]

    def structured_layers(run):
        return [layer for layer in later if row(run, layer)["block_reliability"] >= min_reliability]

    def layers_from_the_mask(iid, no_mask):
        """Per layer after layer 1, whether it is structured on i.i.d. tokens under the mask and not in the same
        layer without it: only such a layer's structure is the mask's.  A layer structured both ways (a query
        offset the softmax cannot see, say) is the control passing, and it does not count."""
        return {str(layer): {"with_mask": row(iid, layer)["block_reliability"],
                             "without_mask": row(no_mask, layer)["block_reliability"],
                             "counts_for_the_mask": (row(iid, layer)["block_reliability"] >= min_reliability
                                                     and row(no_mask, layer)["block_reliability"] < min_reliability)}
                for layer in later}

    def table(run, selected, keys=None):
        return {str(r["layer"]): (_llm_layer(r) if keys is None else {k: r[k] for k in keys})
                for r in metrics[run]["layers"] if r["layer"] in selected}

    structure, magnitude, first_keys, direction = {}, {}, {}, {}
    for model, runs in runs_by_model.items():
        text, iid, no_mask, figure5, text_no_mask = (runs[role] for role in ("text", "iid", "iid_no_mask", "figure5",
                                                                              "text_no_mask"))
        by_layer = layers_from_the_mask(iid, no_mask)
        checks = {
            "text_structure_after_layer_1": len(structured_layers(text)) >= min_layers,
            "iid_layer_1_at_noise_level": row(iid, first)["block_reliability"] < min_reliability,
            "iid_structure_from_the_mask": sum(layer["counts_for_the_mask"] for layer in by_layer.values()) >= min_layers,
        }
        structure[model] = {
            "passed": all(checks.values()), "checks": checks, "iid_layers_with_and_without_the_mask": by_layer,
            "text": table(text, layers), "iid_tokens": table(iid, layers), "iid_tokens_no_mask": table(no_mask, layers),
            "decomposition": {name: table(run, layers, DECOMPOSITION_KEYS)
                              for name, run in (("text", text), ("iid_tokens", iid), ("iid_tokens_no_mask", no_mask))},
            "all_layers_text": table(text, [r["layer"] for r in metrics[text]["layers"]]),
            "by_layer_type": layer_type_comparison(metrics[text]),
            "inputs": {key: metrics[text]["metadata"][key] for key in ("sequences", "seq_len", "dtype", "device")},
            # the whole model's size and architecture (behind_rope.claims.ladder orders and pairs the models by them)
            "parameters": metrics[text]["metadata"].get("parameters"),
            "architecture": metrics[text]["metadata"].get("architecture"),
        }

        def large(r):
            return (r["spread_ratio"] >= c5b["min_spread_ratio"]
                    and r["spread_ratio"] >= c5b["min_over_noise"] * r["noise_spread_ratio"])

        rows_b = {layer: row(figure5, layer) for layer in c5b["layers"]}
        noise_large = [layer for layer, r in rows_b.items() if r["noise_spread_ratio"] >= c5b["min_spread_ratio"]]
        documents = metrics[figure5]["metadata"]["sequences"]
        magnitude[model] = {
            "passed": sum(large(r) for r in rows_b.values()) >= c5b["min_layers"],
            "preconditions": {"noise_control": noise_control(rows_b, noise_large, documents, c5b["min_spread_ratio"],
                                                             c5b["min_layers"])},
            "layers": {str(layer): {"spread_ratio": r["spread_ratio"], "noise_spread_ratio": r["noise_spread_ratio"],
                                    "raw_spread": r["raw_spread"], "pattern_spread": r["pattern_spread"],
                                    "large": large(r)} for layer, r in rows_b.items()},
            "control_split_half_noise": {"layers_at_or_above_threshold": noise_large,
                                         "passed": len(noise_large) >= c5b["min_layers"]},
            "layer_1": {key: row(figure5, 1)[key] for key in ("spread_ratio", "noise_spread_ratio")},
        }
        magnitude[model]["outcome"] = part_outcome(magnitude[model])

        def apart(run):
            keys = ("first_keys_contrast", "first_keys_contrast_halves", "first_keys_noise", "sink_contrast",
                    "sink_contrast_halves", "sink_noise")
            return {str(layer): {**{k: row(run, layer)[k] for k in keys},
                                 "stands_apart": _stands_apart(row(run, layer), "first_keys_contrast", "first_keys_noise",
                                                               c5c["min_over_noise"]),
                                 "sink_stands_apart": _stands_apart(row(run, layer), "sink_contrast", "sink_noise",
                                                                    c5c["min_over_noise"])}
                    for layer in c5c["layers"]}

        # The same text with and without the mask, so that the mask is the one thing the control changes; the text
        # pieces start anywhere in a document, so their first keys are positions, not a document's opening words.
        on_text, control = apart(text), apart(text_no_mask)
        count = sum(layer["stands_apart"] for layer in on_text.values())
        control_count = sum(layer["stands_apart"] for layer in control.values())
        first_keys[model] = {"passed": count >= c5c["min_layers"] and control_count < c5c["min_layers"],
                             "text": on_text, "control_text_no_mask": {"layers": control,
                                                                       "passed": control_count >= c5c["min_layers"]},
                             # recorded, deciding nothing: the Figure 5 run's documents, and i.i.d. tokens without the mask
                             "figure5": apart(figure5), "iid_no_mask": apart(no_mask)}

        checked = [layer for layer in structured_layers(text) if layer in c5d["layers"]]
        keys = ("start_deficit_visible", "start_deficit_visible_halves", "start_deficit_paper",
                "start_deficit_paper_halves", "sink", "drawn_reliability", "relative_share", "query_offset_share",
                "visible_share")
        lower = {str(layer): _below_in_every_part(row(figure5, layer), "start_deficit_visible", c5d["below"])
                 for layer in checked}
        reliable = [layer for layer in c5d["layers"]
                    if row(figure5, layer)["drawn_reliability"] >= c5d["figure5_min_reliability"]]
        direction[model] = {
            "passed": bool(checked) and all(lower.values()),
            "layers_where_c5a_holds": checked,
            "start_keys_lower_softmax_visible": lower,
            "start_keys_lower_paper_way": {str(layer): _below_in_every_part(row(figure5, layer), "start_deficit_paper",
                                                                            c5d["below"]) for layer in checked},
            "figure5": table(figure5, [r["layer"] for r in metrics[figure5]["layers"]], keys),
            "iid_tokens": table(iid, c5d["layers"], ("start_deficit_visible", "start_deficit_visible_halves",
                                                     "start_deficit_paper")),
            # Figure 5's own quality, not a part of C5d's verdict: are its panels reliable enough to read?
            "figure5_reliability": {
                "layers_reaching": reliable, "minimum": c5d["figure5_min_reliability"],
                "passed": len(reliable) >= c5d["figure5_min_layers"]},
            "figure5_inputs": {**{key: metrics[figure5]["metadata"][key] for key in ("sequences", "seq_len", "device")},
                               "sampling": metrics[figure5]["metadata"].get("token_set", {}).get("sampling")},
        }
    later_text = ", ".join(map(str, later))
    return {
        "C5a": _per_model(
            "In pretrained RoPE LLMs the early layers after layer 1 carry a systematic non-relative "
            "(absolute-position) pattern, which i.i.d. tokens and the same weights without the mask show to come "
            "from the causal mask.",
            f"per model: split-half reliability of the non-relative residual (block means) >= "
            f"{min_reliability} in at least {min_layers} of layers {later_text} on text; on i.i.d. tokens, in at "
            f"least {min_layers} of them with the mask while the same layer without it stays below "
            f"{min_reliability} (a layer structured both ways does not count); < {min_reliability} in layer "
            f"{first} on i.i.d. tokens (noise level)",
            structure),
        "C5b": _per_model(
            "The non-relative pattern is not negligible next to the raw scores (the paper: about [-1, 1] "
            "against [-10, 10]).",
            f"per model, in at least {c5b['min_layers']} of layers {c5b['layers']} of the Figure 5 run: the "
            f"quantile width of the diagonal-normalised scores (as drawn) is >= {c5b['min_spread_ratio']} of the raw "
            f"scores' and >= {c5b['min_over_noise']:g} x the split-half noise's; decided where the noise itself reaches "
            f"{c5b['min_spread_ratio']} in fewer than {c5b['min_layers']} layers (else UNDECIDED)",
            magnitude),
        "C5c": _per_model(
            "The non-relative pattern singles out the first few keys (key 0, the attention sink, "
            "reported on its own).",
            f"per model, in at least {c5c['min_layers']} of layers {c5c['layers']} of the text run: the "
            f"contrast of the first keys against mid-context keys (late queries, either sign) is >= "
            f"{c5c['min_over_noise']:g} noise floors with the same sign in both halves; the same text without the "
            "mask reaches that in fewer layers",
            first_keys),
        "C5d": _per_model(
            "Our question, beyond the paper's text (which states a direction only for the RoPE "
            "simulation): in those layers the scores at keys near the sequence start come out lower, with the "
            "attention sink at key 0 kept apart, in what the softmax can see.",
            f"per model: in every layer of {c5d['layers']} where C5a's text structure holds (at least one), "
            f"the softmax-visible start deficit (start keys minus mid-context keys, late queries, query offsets "
            f"removed) is < {c5d['below']:g} in the mean and in both halves of the Figure 5 run",
            direction),
    }
