"""Claim C5 as the paper states it for LLMs (Section 5.2), in parts that pass or fail on their own (per model):
their decision, the paper's values and tables (LaTeX) and docs/results.md's tables (Markdown), in one place.

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

from behind_rope.claims import markdown as md
from behind_rope.claims.format import listing, model_name, models, number, quote_tex, span, verdict
from behind_rope.claims.outcome import decided_by_parts, part_outcome, precondition

# ---- the decision --------------------------------------------------------------------------------


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


def _noise_floor(what: str, records: dict[str, dict]) -> dict:
    """How a claim's split-half noise was taken, with each model's record (the metrics' ``noise_floor``): the
    fewest splits any model's deciding run had, and the quantile over them."""
    return {"what": what, "splits": min(r["splits"] for r in records.values()),
            "quantile": next(iter(records.values()))["quantile"], "by_model": records}


def _floor_words(records: dict[str, dict]) -> str:
    """How the models' deciding runs took their split-half noise, in words (:func:`_noise_floor`)."""
    floor = _noise_floor("", records)
    if floor["splits"] == 1:
        return "from one split of the run's sequences into halves"
    return f"its {floor['quantile']:g} quantile over {floor['splits']} splits of the run's groups of sequences into halves"


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


def _row(metrics: dict, run: str, layer: int) -> dict:
    return metrics[run]["layers"][layer - 1]


def _table(metrics: dict, run: str, selected, keys=None) -> dict:
    return {str(r["layer"]): (_llm_layer(r) if keys is None else {k: r[k] for k in keys})
            for r in metrics[run]["layers"] if r["layer"] in selected}


def _structured_layers(metrics: dict, run: str, c5a: dict) -> list[int]:
    return [layer for layer in c5a["layers"][1:]
            if _row(metrics, run, layer)["block_reliability"] >= c5a["min_reliability"]]


def _c5a_model(metrics: dict, runs: dict, c5a: dict) -> dict:
    """C5a for one model: structure after layer 1 on text, and on i.i.d. tokens from the mask, layer by layer."""
    layers, min_reliability, min_layers = c5a["layers"], c5a["min_reliability"], c5a["min_layers"]
    text, iid, no_mask = runs["text"], runs["iid"], runs["iid_no_mask"]

    def reliability(run, layer):
        return _row(metrics, run, layer)["block_reliability"]

    # Per layer after layer 1, whether it is structured on i.i.d. tokens under the mask and not in the same layer
    # without it: only such a layer's structure is the mask's.  A layer structured both ways (a query offset the
    # softmax cannot see, say) is the control passing, and it does not count.
    by_layer = {str(layer): {"with_mask": reliability(iid, layer), "without_mask": reliability(no_mask, layer),
                             "counts_for_the_mask": (reliability(iid, layer) >= min_reliability
                                                     and reliability(no_mask, layer) < min_reliability)}
                for layer in layers[1:]}
    checks = {
        "text_structure_after_layer_1": len(_structured_layers(metrics, text, c5a)) >= min_layers,
        "iid_layer_1_at_noise_level": reliability(iid, layers[0]) < min_reliability,
        "iid_structure_from_the_mask": sum(layer["counts_for_the_mask"] for layer in by_layer.values()) >= min_layers,
    }
    return {
        "passed": all(checks.values()), "checks": checks, "iid_layers_with_and_without_the_mask": by_layer,
        "text": _table(metrics, text, layers), "iid_tokens": _table(metrics, iid, layers),
        "iid_tokens_no_mask": _table(metrics, no_mask, layers),
        "decomposition": {name: _table(metrics, run, layers, DECOMPOSITION_KEYS)
                          for name, run in (("text", text), ("iid_tokens", iid), ("iid_tokens_no_mask", no_mask))},
        "all_layers_text": _table(metrics, text, [r["layer"] for r in metrics[text]["layers"]]),
        "by_layer_type": layer_type_comparison(metrics[text]),
        "inputs": {key: metrics[text]["metadata"][key] for key in ("sequences", "seq_len", "dtype", "device")},
        # the whole model's size and architecture (behind_rope.claims.ladder orders and pairs the models by them)
        "parameters": metrics[text]["metadata"].get("parameters"),
        "architecture": metrics[text]["metadata"].get("architecture"),
    }


def _c5b_model(metrics: dict, figure5: str, c5b: dict) -> dict:
    """C5b for one model: the pattern's width against the raw scores' in the Figure 5 run, where the noise allows."""
    def large(r):
        return (r["spread_ratio"] >= c5b["min_spread_ratio"]
                and r["spread_ratio"] >= c5b["min_over_noise"] * r["noise_spread_ratio"])

    rows = {layer: _row(metrics, figure5, layer) for layer in c5b["layers"]}
    noise_large = [layer for layer, r in rows.items() if r["noise_spread_ratio"] >= c5b["min_spread_ratio"]]
    documents = metrics[figure5]["metadata"]["sequences"]
    magnitude = {
        "passed": sum(large(r) for r in rows.values()) >= c5b["min_layers"],
        "preconditions": {"noise_control": noise_control(rows, noise_large, documents, c5b["min_spread_ratio"],
                                                         c5b["min_layers"])},
        "layers": {str(layer): {"spread_ratio": r["spread_ratio"], "noise_spread_ratio": r["noise_spread_ratio"],
                                "raw_spread": r["raw_spread"], "pattern_spread": r["pattern_spread"],
                                "large": large(r)} for layer, r in rows.items()},
        "control_split_half_noise": {"layers_at_or_above_threshold": noise_large,
                                     "passed": len(noise_large) >= c5b["min_layers"]},
        "layer_1": {key: _row(metrics, figure5, 1)[key] for key in ("spread_ratio", "noise_spread_ratio")},
    }
    return magnitude | {"outcome": part_outcome(magnitude)}


def _c5c_model(metrics: dict, runs: dict, c5c: dict) -> dict:
    """C5c for one model: the first keys stand apart on text with the mask, and not on the same text without it."""
    def apart(run):
        keys = ("first_keys_contrast", "first_keys_contrast_halves", "first_keys_noise", "sink_contrast",
                "sink_contrast_halves", "sink_noise")
        return {str(layer): {**{k: _row(metrics, run, layer)[k] for k in keys},
                             "stands_apart": _stands_apart(_row(metrics, run, layer), "first_keys_contrast",
                                                           "first_keys_noise", c5c["min_over_noise"]),
                             "sink_stands_apart": _stands_apart(_row(metrics, run, layer), "sink_contrast",
                                                                "sink_noise", c5c["min_over_noise"])}
                for layer in c5c["layers"]}

    # The same text with and without the mask, so that the mask is the one thing the control changes; the text
    # pieces start anywhere in a document, so their first keys are positions, not a document's opening words.
    on_text, control = apart(runs["text"]), apart(runs["text_no_mask"])
    count = sum(layer["stands_apart"] for layer in on_text.values())
    control_count = sum(layer["stands_apart"] for layer in control.values())
    return {"passed": count >= c5c["min_layers"] and control_count < c5c["min_layers"],
            "text": on_text, "control_text_no_mask": {"layers": control, "passed": control_count >= c5c["min_layers"]},
            # recorded, deciding nothing: the Figure 5 run's documents, and i.i.d. tokens without the mask
            "figure5": apart(runs["figure5"]), "iid_no_mask": apart(runs["iid_no_mask"])}


def _c5d_model(metrics: dict, runs: dict, c5a: dict, c5d: dict) -> dict:
    """C5d for one model: in the layers where C5a's text structure holds, the start keys come out lower."""
    figure5 = runs["figure5"]
    checked = [layer for layer in _structured_layers(metrics, runs["text"], c5a) if layer in c5d["layers"]]
    keys = ("start_deficit_visible", "start_deficit_visible_halves", "start_deficit_paper",
            "start_deficit_paper_halves", "sink", "drawn_reliability", "relative_share", "query_offset_share",
            "visible_share")
    lower = {str(layer): _below_in_every_part(_row(metrics, figure5, layer), "start_deficit_visible", c5d["below"])
             for layer in checked}
    reliable = [layer for layer in c5d["layers"]
                if _row(metrics, figure5, layer)["drawn_reliability"] >= c5d["figure5_min_reliability"]]
    return {
        "passed": bool(checked) and all(lower.values()),
        "layers_where_c5a_holds": checked,
        "start_keys_lower_softmax_visible": lower,
        "start_keys_lower_paper_way": {str(layer): _below_in_every_part(_row(metrics, figure5, layer),
                                                                        "start_deficit_paper", c5d["below"])
                                       for layer in checked},
        "figure5": _table(metrics, figure5, [r["layer"] for r in metrics[figure5]["layers"]], keys),
        "iid_tokens": _table(metrics, runs["iid"], c5d["layers"],
                             ("start_deficit_visible", "start_deficit_visible_halves", "start_deficit_paper")),
        # Figure 5's own quality, not a part of C5d's verdict: are its panels reliable enough to read?
        "figure5_reliability": {
            "layers_reaching": reliable, "minimum": c5d["figure5_min_reliability"],
            "passed": len(reliable) >= c5d["figure5_min_layers"]},
        "figure5_inputs": {**{key: metrics[figure5]["metadata"][key] for key in ("sequences", "seq_len", "device")},
                           "sampling": metrics[figure5]["metadata"].get("token_set", {}).get("sampling")},
    }


def claims_c5(metrics: dict, runs_by_model: dict, criteria: dict) -> dict:
    """{"C5a": ..., "C5b": ..., "C5c": ..., "C5d": ...} from the metrics files of each model's runs
    (behind_rope.config.c5_runs); ``criteria`` holds each part's arguments (config/claims.yaml)."""
    c5a, c5b, c5c, c5d = (criteria[name] for name in ("C5a", "C5b", "C5c", "C5d"))
    structure = {model: _c5a_model(metrics, runs, c5a) for model, runs in runs_by_model.items()}
    magnitude = {model: _c5b_model(metrics, runs["figure5"], c5b) for model, runs in runs_by_model.items()}
    first_keys = {model: _c5c_model(metrics, runs, c5c) for model, runs in runs_by_model.items()}
    direction = {model: _c5d_model(metrics, runs, c5a, c5d) for model, runs in runs_by_model.items()}
    noise_of_figure5 = {model: metrics[runs["figure5"]]["noise_floor"] for model, runs in runs_by_model.items()}
    noise_of_text = {model: metrics[runs["text"]]["noise_floor"] for model, runs in runs_by_model.items()}
    return _c5_claims(c5a, c5b, c5c, c5d, structure, magnitude, first_keys, direction, noise_of_figure5, noise_of_text)


def _c5_claims(c5a: dict, c5b: dict, c5c: dict, c5d: dict, structure: dict, magnitude: dict, first_keys: dict,
               direction: dict, noise_of_figure5: dict, noise_of_text: dict) -> dict:
    """The four records from their per-model parts, with their statements and thresholds in words."""
    min_reliability, min_layers = c5a["min_reliability"], c5a["min_layers"]
    first, later = c5a["layers"][0], c5a["layers"][1:]
    later_text = ", ".join(map(str, later))
    floor_b, floor_c = _floor_words(noise_of_figure5), _floor_words(noise_of_text)
    claims = {
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
            f"scores' and >= {c5b['min_over_noise']:g} x the split-half noise's ({floor_b}); decided where the noise "
            f"itself reaches {c5b['min_spread_ratio']} in fewer than {c5b['min_layers']} layers (else UNDECIDED)",
            magnitude),
        "C5c": _per_model(
            "The non-relative pattern singles out the first few keys (key 0, the attention sink, "
            "reported on its own).",
            f"per model, in at least {c5c['min_layers']} of layers {c5c['layers']} of the text run: the "
            f"contrast of the first keys against mid-context keys (late queries, either sign) is >= "
            f"{c5c['min_over_noise']:g} noise floors ({floor_c}) with the same sign in both halves; the same text "
            "without the mask reaches that in fewer layers",
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
    claims["C5b"]["measured"]["noise_floor"] = _noise_floor(
        "the quantile of the split-half noise's spread ratio (of (A - B) / 2, diagonal-normalised and drawn) over "
        "random splits of the Figure 5 run's groups of sequences into halves A and B", noise_of_figure5)
    claims["C5c"]["measured"]["noise_floor"] = _noise_floor(
        "the quantile of the placebo key groups' standard deviation (of the contrast on (A - B) / 2) over random "
        "splits of the text run's groups of sequences into halves A and B", noise_of_text)
    return claims


# ---- the paper's values and tables ---------------------------------------------------------------


PARTS = (("relative_share", "rel."), ("query_offset_share", "offset"), ("visible_share", "visible"))


def _defined(value) -> bool:
    return value is not None and value == value


def _counts(models_: dict) -> dict[str, str]:
    return {"models_passed": str(sum(m["passed"] for m in models_.values())), "models_total": str(len(models_)),
            "passed_models": models([n for n, m in models_.items() if m["passed"]]),
            "failed_models": models([n for n, m in models_.items() if not m["passed"]])}


def _direction(values: list[float]) -> str:
    """The signs of some contrasts against mid-context keys, in words: 'higher than mid-context keys in every
    one of them', 'higher than mid-context keys in 2 and lower in 1 of them', 'lower than mid-context keys there'."""
    values = [v for v in values if _defined(v)]
    up, down = sum(v > 0 for v in values), sum(v < 0 for v in values)
    if not values:
        return "neither higher nor lower than mid-context keys in any of them"
    if up == len(values) or down == len(values):
        where = "there" if len(values) == 1 else "in every one of them"
        return f"{'higher' if up else 'lower'} than mid-context keys {where}"
    return f"higher than mid-context keys in {up} and lower in {down} of them"


def _above_or_below(values: list[float]) -> str:
    r"""How far some values lie from zero, with their side: '0.13 to 10.57 above', '0.20 below', or 'from
    \ensuremath{-}1.00 to 2.00 above or below' (both signs)."""
    values = [v for v in values if _defined(v)]
    if values and all(v > 0 for v in values):
        return f"{span(values)} above"
    if values and all(v < 0 for v in values):
        return f"{span([-v for v in values])} below"
    return f"from {span(values)} above or below"


def _apart_sentence(subject: str, contrasts: list[float], checked: int) -> str:
    """'The group of first keys stands apart in 5 of the 9 layers checked, scoring higher than mid-context keys
    in every one of them.'"""
    text = f"{subject} stands apart in {len(contrasts)} of the {checked} layers checked"
    return text + (f", scoring {_direction(contrasts)}." if contrasts else ".")


def ranging(values, digits: int = 2) -> str:
    """'is 0.03' or 'runs from -0.10 to 0.12' (or 'is not defined')."""
    text = span(values, digits)
    return "is not defined" if text == "n/a" else (f"runs from {text}" if " to " in text else f"is {text}")


def _judged_sentence(deficits: list[float]) -> str:
    """C5d's judged layers: how many, what their softmax-visible start deficits are, and their signs."""
    if not deficits:
        return r"\C{5a}'s text structure holds in none of these layers, so \C{5d} has no layer to judge and cannot pass."
    layers = "the one layer" if len(deficits) == 1 else f"the {len(deficits)} layers"
    return (f"In {layers} it judges, the softmax-visible start deficit {ranging(deficits)} logits: the start keys "
            f"score {_direction(deficits)}.")


def c5_values(claims: dict, settings: dict) -> dict[str, str]:
    args, entries = settings["claims"], settings["entries"]
    a, b, c, d = (claims[name]["measured"]["models"] for name in ("C5a", "C5b", "C5c", "C5d"))
    a_args, b_args, c_args, d_args = (args[name] for name in ("C5a", "C5b", "C5c", "C5d"))
    values = {f"c5a.{key}": text for key, text in _counts(a).items()}
    values |= {f"c5b.{key}": text for key, text in _counts(b).items()}
    values |= {f"c5c.{key}": text for key, text in _counts(c).items()}
    values |= {f"c5d.{key}": text for key, text in _counts(d).items()}
    values |= {
        "c5a.threshold": number(a_args["min_reliability"]), "c5a.min_layers": str(a_args["min_layers"]),
        "c5a.first_layer": str(a_args["layers"][0]), "c5a.later_layers": listing(a_args["layers"][1:]),
        "c5a.quote": quote_tex(entries["C5a"]["paper"]["quote"]),
    }

    # C5b, magnitude: the spread ratios of the pattern and of the noise, and the widths behind them.
    rows = [row for model in b.values() for row in model["layers"].values()]
    noisy = [n for n, m in b.items() if m["control_split_half_noise"]["passed"]]
    values |= {
        "c5b.layers": listing(b_args["layers"]), "c5b.min_layers": str(b_args["min_layers"]),
        "c5b.min_spread_ratio": number(b_args["min_spread_ratio"]), "c5b.min_over_noise": f"{b_args['min_over_noise']:g}",
        "c5b.ratio_span": span([r["spread_ratio"] for r in rows]),
        "c5b.noise_span": span([r["noise_spread_ratio"] for r in rows], 3),
        "c5b.raw_span": span([r["raw_spread"] for r in rows], 1),
        "c5b.pattern_span": span([r["pattern_spread"] for r in rows]),
        "c5b.quote": quote_tex(entries["C5b"]["paper"]["quote"]),
        "c5b.noise_outcome": "for every model the noise stays below the bound in enough layers, as a control must"
        if not noisy else f"for {models(noisy)} the noise itself reaches the bound in {b_args['min_layers']} or more "
        "of those layers, so that the data cannot resolve it: \\C{5b} is undecided there, and would be decided at "
        + listing(f"about {number(b[n]['preconditions']['noise_control']['documents_to_resolve'])} documents for "
                  f"{model_name(n)}" for n in noisy),
    }

    # C5c, the first keys: in which direction they stand apart, and key 0 on its own.
    apart = [row for model in c.values() for row in model["text"].values()]
    contrasts = [row["first_keys_contrast"] for row in apart if row["stands_apart"]]
    control_pass = [n for n, m in c.items() if m["control_text_no_mask"]["passed"]]
    values |= {
        "c5c.first_keys": str(settings["measures"]["first_keys"]), "c5c.layers": listing(c_args["layers"]),
        "c5c.min_layers": str(c_args["min_layers"]), "c5c.min_over_noise": f"{c_args['min_over_noise']:g}",
        "c5c.quote": quote_tex(entries["C5c"]["paper"]["quote"]),
        "c5c.apart": _apart_sentence("The group of first keys", contrasts, len(apart)),
        # Key 0 only where late queries see it (a sliding window may hide it).
        "c5c.sink_apart": _apart_sentence("Key~0", [row["sink_contrast"] for row in apart if row["sink_stands_apart"]],
                                          sum(_defined(row["sink_contrast"]) for row in apart)),
        "c5c.figure5_apart": listing(
            f"{model_name(n)}'s first keys stand apart in {sum(row['stands_apart'] for row in m['figure5'].values())} of "
            f"{len(m['figure5'])} layers there" for n, m in c.items()),
        "c5c.control_outcome": "For every model, the no-mask control stands apart in fewer layers than the claim "
        "needs, as a control must." if not control_pass else f"The no-mask control stands apart in as many layers "
        f"for {models(control_pass)}, which alone fails the claim there.",
    }

    # C5d, the direction (our question): the judged layers' signed start deficits.
    figure5 = next(iter(d.values()))["figure5_inputs"]
    judged = [model["figure5"][str(layer)] for model in d.values() for layer in model["layers_where_c5a_holds"]]
    iid = [row["start_deficit_visible"] for model in d.values() for row in model["iid_tokens"].values()]
    drawn = [row["drawn_reliability"] for model in d.values() for layer, row in model["figure5"].items()
             if int(layer) in d_args["layers"]]
    values |= {
        "c5d.layers": listing(d_args["layers"]), "c5d.below": f"{d_args['below']:g}",
        "c5d.quote": quote_tex(entries["C5d"]["paper"]["quote"]),
        "c5d.judged": _judged_sentence([row["start_deficit_visible"] for row in judged]),
        "c5d.paper_span": ranging([row["start_deficit_paper"] for row in judged]),
        "c5d.offset_span": span([row["query_offset_share"] for row in judged]),
        "c5d.sink_side": _above_or_below([row["sink"] for row in judged]),
        "c5d.iid_span": ranging(iid), "c5d.iid_direction": _direction(iid),
        "c5d.iid_layers": str(len([v for v in iid if _defined(v)])),
        "fig5.sequences": _per_model_count({name: model["figure5_inputs"]["sequences"] for name, model in d.items()}),
        "fig5.seq_len": number(figure5["seq_len"]),
        "fig5.sampling": (figure5["sampling"] or "n/a").replace("_", r"\_"),
        "fig5.drawn_span": span(drawn), "fig5.layers": listing(d_args["layers"]),
        "fig5.reliable": _reliable_sentence(d, d_args),
    }
    return values


def _reliable_sentence(direction: dict, args: dict) -> str:
    """Whether every model's Figure 5 panels reach the recorded reliability in enough layers."""
    short = [name for name, model in direction.items() if not model["figure5_reliability"]["passed"]]
    rule = f"{number(args['figure5_min_reliability'])} in at least {args['figure5_min_layers']} of them"
    if not short:
        return f"every model's panels reach {rule}."
    return f"the panels of {models(short)} fall short of {rule}, so read them with care."


def _per_model_count(counts: dict[str, int]) -> str:
    """'128', or '128 (gemma3: 224)' when some models differ from the most common count."""
    values = list(counts.values())
    common = max(set(values), key=values.count)
    others = [f"{model_name(name)}: {number(count)}" for name, count in counts.items() if count != common]
    return number(common) + (f" ({', '.join(others)})" if others else "")


def c5a_table(claims: dict) -> str:
    """C5a per model: block reliability of the non-relative residual by layer, on text, on i.i.d. tokens and
    on the same i.i.d. tokens without the mask."""
    models_ = claims["C5a"]["measured"]["models"]
    layers = sorted({int(layer) for model in models_.values() for layer in model["text"]})
    runs = (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", r"no mask"))
    width = len(layers)
    header = " & ".join(str(layer) for layer in layers)
    # 14 columns: narrower gaps between them, so that the table fits the text's width
    lines = [r"{\setlength{\tabcolsep}{4pt}", rf"\begin{{tabular}}{{@{{}}l{'r' * width * len(runs)}c@{{}}}}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{label}, layer}}" for _, label in runs) + r" & \\",
             "".join(rf"\cmidrule(lr){{{2 + k * width}-{1 + (k + 1) * width}}}" for k in range(len(runs))),
             rf"model & {' & '.join([header] * len(runs))} & C5a \\", r"\midrule"]
    for name, model in models_.items():
        counted = model.get("iid_layers_with_and_without_the_mask", {})
        cells = [number(model[run][str(layer)]["block_reliability"])
                 + ("*" if run == "iid_tokens" and counted.get(str(layer), {}).get("counts_for_the_mask") else "")
                 for run, _ in runs for layer in layers]
        lines.append(rf"{model_name(name)} & {' & '.join(cells)} & {verdict(model['passed'])} \\")
    lines += [r"\bottomrule", r"\end{tabular}", "}"]
    return "\n".join(lines) + "\n"


def c5b_table(claims: dict) -> str:
    """C5b per model and layer of the Figure 5 run: the quantile widths of the raw and the diagonal-normalised
    scores as drawn, their ratio, the split-half noise's ratio, and whether the layer counts as large."""
    lines = [r"\begin{tabular}{@{}llrrrrcc@{}}", r"\toprule",
             r"model & layer & raw width & pattern width & ratio & noise ratio & large & C5b \\", r"\midrule"]
    for name, model in claims["C5b"]["measured"]["models"].items():
        first = model["layer_1"]
        rows = [("1*", "", "", number(first["spread_ratio"], 3), number(first["noise_spread_ratio"], 3), "")]
        rows += [(layer, number(r["raw_spread"], 1), number(r["pattern_spread"]), number(r["spread_ratio"], 3),
                  number(r["noise_spread_ratio"], 3), "yes" if r["large"] else "no") for layer, r in model["layers"].items()]
        for k, row in enumerate(rows):
            lines.append(" & ".join([model_name(name) if k == 0 else "", *row,
                                     verdict(model.get("outcome", model["passed"])) if k == 0 else ""])
                         + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _floors(value, noise) -> str:
    """|contrast| in noise floors."""
    return number(abs(value) / noise, 1) if _defined(value) and _defined(noise) and noise > 0 else "n/a"


def c5c_table(claims: dict) -> str:
    """C5c per model and layer of the Figure 5 run: the first keys' contrast against mid-context keys (mean,
    halves), its noise floor and its size in floors, whether it stands apart; key 0 (the sink) the same
    way; and the no-mask control's first keys in floors."""
    lines = [r"\begin{tabular}{@{}llrrrcrrr c@{}}", r"\toprule",
             r" & & \multicolumn{4}{c}{first keys} & \multicolumn{2}{c}{key 0 (sink)} & no mask & \\",
             r"\cmidrule(lr){3-6}\cmidrule(lr){7-8}",
             r"model & layer & contrast (halves) & floor & floors & apart & contrast & floors & floors & C5c \\",
             r"\midrule"]
    for name, model in claims["C5c"]["measured"]["models"].items():
        control = model["control_text_no_mask"]["layers"]
        for k, (layer, r) in enumerate(model["text"].items()):
            halves = ", ".join(number(v) for v in r["first_keys_contrast_halves"])
            off = control.get(layer, {})
            cells = [model_name(name) if k == 0 else "", layer,
                     f"{number(r['first_keys_contrast'])} ({halves})", number(r["first_keys_noise"], 3),
                     _floors(r["first_keys_contrast"], r["first_keys_noise"]), "yes" if r["stands_apart"] else "no",
                     number(r["sink_contrast"]), _floors(r["sink_contrast"], r["sink_noise"]),
                     _floors(off.get("first_keys_contrast"), off.get("first_keys_noise")),
                     verdict(model["passed"]) if k == 0 else ""]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def c5d_table(claims: dict) -> str:
    """C5d per model and layer of the Figure 5 run: the panel's reliability as drawn, the start deficit the
    paper's way and in the softmax-visible part (mean; halves), the same on i.i.d. tokens, and the sink."""
    lines = [r"\begin{tabular}{@{}llrrrrrc@{}}", r"\toprule",
             r" & & & \multicolumn{3}{c}{start deficit} & & \\", r"\cmidrule(lr){4-6}",
             r"model & layer & panel $r$ & paper's way & softmax-visible (halves) & i.i.d.\ tokens & sink & C5d \\",
             r"\midrule"]
    for name, model in claims["C5d"]["measured"]["models"].items():
        for k, (layer, row) in enumerate(model["figure5"].items()):
            judged = int(layer) in model["layers_where_c5a_holds"]
            halves = ", ".join(number(v) for v in row["start_deficit_visible_halves"])
            iid = model["iid_tokens"].get(layer, {}).get("start_deficit_visible")
            cells = [model_name(name) if k == 0 else "", layer + ("" if judged else "*"),
                     number(row["drawn_reliability"]), number(row["start_deficit_paper"]),
                     f"{number(row['start_deficit_visible'])} ({halves})", number(iid) if layer in model["iid_tokens"] else "",
                     number(row["sink"]), verdict(model["passed"]) if k == 0 else ""]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def decomposition_table(claims: dict) -> str:
    """The variance shares of every kind of run, layers 1-4: relative / query offset / softmax-visible."""
    rows = []
    for name, model in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", "no mask")):
            rows.append((rf"{model_name(name)}, {label}", model["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        if run.endswith("text_causal"):
            rows.append((rf"twin {model_name(run.removesuffix('_text_causal'))}, text",
                         {str(r["layer"]): r for r in layers}))
    for variant, by_layer in claims["C4"]["measured"]["decomposition"].items():
        rows.append((rf"simulation {model_name(variant)}", by_layer))
    layers = ["1", "2", "3", "4"]
    lines = [r"\begin{tabular}{@{}l" + "c" * len(layers) + r"@{}}", r"\toprule",
             "run & " + " & ".join(f"layer {layer}" for layer in layers) + r" \\", r"\midrule"]
    for label, by_layer in rows:
        cells = [" / ".join(number(by_layer[layer][key]) for key, _ in PARTS) if layer in by_layer else "" for layer in layers]
        lines.append(f"{label} & {' & '.join(cells)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


# ---- docs/results.md -----------------------------------------------------------------------------


def _c5a_rows(claims: dict) -> list[str]:
    """C5a's rows: block reliability, non-relative index and start deficit per run and layer."""
    c5a = claims["C5a"]["measured"]["models"]
    rows = [md.claim_line(claims, "C5a"), "",
            "C5a: block reliability / non-relative index / start deficit (the old measure, key 0 included), layers 1-4:", "",
            "| model | run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for run, label in (("text", "text, mask"), ("iid_tokens", "i.i.d. tokens, mask"),
                           ("iid_tokens_no_mask", "i.i.d. tokens, no mask")):
            cells = [f"{md.value(v['block_reliability'], '.2f')} / {md.value(v['nonrelative_index'], '.2f')} / "
                     f"{md.value(v['start_deficit'], '+.2f')}" for v in result[run].values()]
            rows.append(f"| {model} | {label} | " + " | ".join(cells) + " |")
        checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in result["checks"].items())
        rows.append(f"| {model} | C5a {md.pass_fail(result['passed'])} | {checks} | | | |")
    return rows


def _c5b_rows(claims: dict) -> list[str]:
    """C5b's rows: the widths and ratios per layer of the Figure 5 run, and why each model passes or fails."""
    c5b = claims["C5b"]["measured"]["models"]
    rows = ["", md.claim_line(claims, "C5b"), "",
             "C5b, per layer of the Figure 5 run (as drawn): raw width / pattern width / spread ratio / noise ratio "
             "(a layer counts when the ratio and its margin over the noise are both reached):", "",
             "| model | layer 1 (recorded) | layer 2 | layer 3 | layer 4 | C5b |", "|---|---|---|---|---|---|"]
    for model, result in c5b.items():
        first = result["layer_1"]
        cells = [f"ratio {md.value(first['spread_ratio'], '.3f')}, noise {md.value(first['noise_spread_ratio'], '.3f')}"]
        cells += [f"{md.value(v['raw_spread'], '.1f')} / {md.value(v['pattern_spread'], '.2f')} / "
                  f"{md.value(v['spread_ratio'], '.3f')} / {md.value(v['noise_spread_ratio'], '.3f')}"
                  f"{' (counts)' if v['large'] else ''}" for v in result["layers"].values()]
        rows.append(f"| {model} | " + " | ".join(cells) + f" | **{part_outcome(result)}** |")
    rows.append("")
    for model, result in c5b.items():  # why each model passes or fails: the layers that count, and the control
        counting = [layer for layer, v in result["layers"].items() if v["large"]]
        noise = result["control_split_half_noise"]
        rows.append(f"- {model}: {len(counting)} layer(s) count ({', '.join(counting) or 'none'}); the noise reaches the "
                    f"bound in layer(s) {', '.join(map(str, noise['layers_at_or_above_threshold'])) or 'none'}"
                    + (" (the control passes: noise alone would reach the bound, so the model is UNDECIDED)."
                       if noise["passed"] else " (the control fails, as it must)."))
    return rows


def _c5c_rows(claims: dict) -> list[str]:
    """C5c's rows: the first keys' contrast per layer of the text run, with and without the mask."""
    c5c = claims["C5c"]["measured"]["models"]
    rows = ["", md.claim_line(claims, "C5c"), "",
             "C5c, per layer of the text run: the first keys' contrast against mid-context keys, mean (halves), in "
             "noise floors; key 0 (the sink) the same way; the same text without the mask (the control), first keys in "
             "noise floors:", "",
             "| model | layer | first keys | floors | stands apart | key 0 | floors | no mask, floors | C5c |",
             "|---|---|---|---|---|---|---|---|---|"]
    for model, result in c5c.items():
        control = result["control_text_no_mask"]["layers"]
        for k, (layer, v) in enumerate(result["text"].items()):
            halves = ", ".join(md.value(h, "+.3f") for h in v["first_keys_contrast_halves"])
            off = control.get(layer, {})
            rows.append(f"| {model if k == 0 else ''} | {layer} | {md.value(v['first_keys_contrast'], '+.3f')} ({halves}) | "
                        f"{md.floors(v['first_keys_contrast'], v['first_keys_noise'])} | {'yes' if v['stands_apart'] else 'no'} | "
                        f"{md.value(v['sink_contrast'], '+.3f')} | {md.floors(v['sink_contrast'], v['sink_noise'])} | "
                        f"{md.floors(off.get('first_keys_contrast'), off.get('first_keys_noise'))} | "
                        f"{md.pass_fail(result['passed']) if k == 0 else ''} |")
    return rows


def _c5d_rows(claims: dict) -> list[str]:
    """C5d's rows: the start deficits per layer of the Figure 5 run."""
    c5d = claims["C5d"]["measured"]["models"]
    rows = ["", md.claim_line(claims, "C5d"), "",
             "C5d (our own question, beyond the paper's text), on the Figure 5 run, per layer: panel reliability as "
             "drawn; start deficit the paper's way; softmax-visible start deficit, mean (halves); the same on i.i.d. "
             "tokens; sink:", "",
             "| model | sampling | layer 1 | layer 2 | layer 3 | layer 4 | C5d |", "|---|---|---|---|---|---|---|"]
    for model, result in c5d.items():
        cells = []
        for layer, v in result["figure5"].items():
            halves = ", ".join(md.value(h, "+.3f") for h in v["start_deficit_visible_halves"])
            iid = result["iid_tokens"].get(layer, {}).get("start_deficit_visible")
            mark = "" if int(layer) in result["layers_where_c5a_holds"] else " (not judged)"
            cells.append(f"r {md.value(v['drawn_reliability'], '.2f')}; {md.value(v['start_deficit_paper'], '+.3f')}; "
                         f"{md.value(v['start_deficit_visible'], '+.3f')} ({halves}); i.i.d. {md.value(iid, '+.3f')}; "
                         f"sink {md.value(v['sink'], '+.2f')}{mark}")
        rows.append(f"| {model} | {result['figure5_inputs']['sampling']} | " + " | ".join(cells)
                    + f" | {md.pass_fail(result['passed'])} |")
    return rows


def _text_layer_rows(claims: dict) -> list[str]:
    """Every layer of the text run, and the means by attention type."""
    c5a = claims["C5a"]["measured"]["models"]
    rows = ["", "The text run's layers (llm.inputs.text; the all-layer figures of `snakemake extended` draw every layer), "
             "block reliability (start deficit sign: + / −; · where the window hides the start):", "",
             "| model | layer: block reliability, start deficit sign (s = sliding window) |", "|---|---|"]
    for model, result in c5a.items():
        cells = []
        for layer, v in result["all_layers_text"].items():
            sign = {"positive": "+", "negative": "−"}.get(v["start_deficit_sign"], "·")
            mark = "s" if v.get("layer_type") == "sliding_attention" else ""
            cells.append(f"{layer}{mark}: {md.value(v['block_reliability'], '.2f')}{sign}")
        rows.append(f"| {model} | {', '.join(cells)} |")
    rows += ["", "By attention type (text; means over layers):", "",
             "| model | type | layers | block reliability | non-relative index | start deficit |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for kind, v in result["by_layer_type"].items():
            rows.append(f"| {model} | {kind} | {len(v['layers'])} | {md.value(v['mean_block_reliability'], '.2f')} | "
                        f"{md.value(v['mean_nonrelative_index'], '.2f')} | {md.value(v['mean_start_deficit'], '+.2f')} |")
    return rows


def results_table(claims: dict) -> str:
    """Claims C5a-C5d per model: the structure (C5a), its size (C5b), the first keys (C5c) and the direction
    (C5d, our own question), then every layer on text and the layer types."""
    return "\n".join(row for part in (_c5a_rows, _c5b_rows, _c5c_rows, _c5d_rows, _text_layer_rows)
                     for row in part(claims))
