"""The settings each rule hands its step, ``python -m behind_rope <step> --settings``: one JSON object
per job, read from the validated config.

A twin's defaults are the ``training`` block of the config, which the twin's own entry overrides; every
other entry's defaults are filled in by behind_rope.config.validate before any of these reads them.
"""

from __future__ import annotations

from behind_rope.config import c5_runs, claim_arguments, weight_scale_reference
from behind_rope.experiments.paths import gram_files, llm_source
from behind_rope.experiments.pins import llm_provenance
from behind_rope.experiments.runs import (
    PAPER_CLAIMS,
    POSITION_CLAIMS,
    REVISION_CLAIMS,
    base_model,
    c3_twin_runs,
    model_kind,
    position_runs,
)

TRAIN_KEYS = ("batch_size", "learning_rate", "warmup_steps", "weight_decay", "checkpoint_every", "eval_sequences")


def monte_carlo_settings(config: dict) -> dict:
    return {**config["theory"]["monte_carlo"], "seed": config["seed"]}


def simulation_settings(config: dict, variant: str) -> dict:
    sizes = ("batch_size", "seq_len", "dim", "layers", "chunk_size")
    return {"variant": config["simulation"]["variants"][variant],
            "size": {key: config["simulation"][key] for key in sizes}, "seed": config["seed"]}


def recency_settings(config: dict, setting: str) -> dict:
    """One setting of version 2's stack, its sizes and its own seed (behind_rope.revision.stack)."""
    sizes = ("batch_size", "seq_len", "layers", "max_chunk_mb")
    return {"setting": config["revision"]["settings"][setting], "name": setting,
            "size": {key: config["revision"][key] for key in sizes}, "seed": config["seed"]}


def revision_claims_settings(config: dict) -> dict:
    """Claims R0-R5's pre-registered arguments and the stack's sizes."""
    return {"claims": {name: claim_arguments(config, name) for name in REVISION_CLAIMS},
            "sequences": config["revision"]["batch_size"], "layers": config["revision"]["layers"]}


def twin_settings(config: dict, twin: str) -> dict:
    """Model size and training settings of one twin: the ``training`` block, with the twin's own overrides."""
    training, spec = config["training"], config["training"]["twins"][twin]
    size = {**training["model"], **spec.get("model", {}), "max_positions": config["data"]["seq_len"]}
    size["rope_theta"] = float(size["rope_theta"])
    train = {key: training[key] for key in TRAIN_KEYS}
    reference = weight_scale_reference(training["twins"], twin)
    return {"twin": twin, "positional": spec["positional"], "size": size,
            "train": {**train, "steps": spec.get("steps", training["steps"]), "seed": spec.get("seed", config["seed"])},
            "stop_when": training["stop_when"], "device": training["device"], "dtype": training["dtype"],
            "compile": training["compile"], **({"weight_scale_of": reference} if reference else {})}


def checkpoint_input_settings(config: dict, twin: str) -> dict:
    inputs = config["training"]["twins"][twin]["inputs"]
    return {"files": config["data"]["corpora"][inputs["corpus"]]["files"], "seq_len": config["twin_analysis"]["seq_len"],
            "sequences": inputs["sequences"], "documents": inputs["documents"], "seed": config["seed"]}


def twin_input_settings(config: dict) -> dict:
    analysis = config["twin_analysis"]
    return {"seq_len": analysis["seq_len"], "sequences": analysis["sequences"],
            "probe_sequences": analysis["probe_sequences"], "seed": config["seed"]}


# What the llm-inputs step reads of a token set: a set's other keys (the layers its runs record, per_head,
# models) are the score runs' business, and editing them must not rewrite the tokens every run reads.
TOKEN_SET_KEYS = ("iid_of", "sampling", "first_token")


def llm_input_sets(config: dict, model: str) -> dict[str, dict]:
    """Every token set of ``llm.inputs`` at its size for ``model`` (an i.i.d. set taking its size from the set
    it draws from), with only what drawing its tokens needs."""
    sets = config["llm"]["inputs"]
    resolved = {}
    for name, spec in sets.items():
        source = sets[spec["iid_of"]] if spec.get("iid_of") else spec
        sequences = (source.get("sequences_by_model") or {}).get(model, source["sequences"])
        resolved[name] = {**{key: spec[key] for key in TOKEN_SET_KEYS if key in spec}, "sequences": sequences,
                          "seq_len": source["seq_len"]}
    return resolved


def dequantise_options(config: dict, model: str) -> str:
    """The cache-model step's options for a GGUF model: ``--layers N`` when only its first N layers are read."""
    layers = config["pretrained"][model].get("layers")
    return f"--layers {layers}" if layers else ""


def llm_input_settings(config: dict, model: str) -> dict:
    corpus = config["data"]["corpora"][config["llm"]["corpus"]]
    return {"model": model, "source": llm_source(config, model), "format": corpus["format"],
            "sets": llm_input_sets(config, model), "seed": config["seed"]}


def score_settings(config: dict, model: str, inputs: str, mask: str) -> dict:
    """What one score run records: which model (and what it changes at inference), which tokens, with or
    without the mask, which layers."""
    common = {"model": model, "inputs": inputs, "causal": mask == "causal"}
    if model_kind(config, model) == "twin":
        return {**common, "kind": "twin", "source": {"twin": f"results/training/{model}"}, "layers": "all",
                "batch_size": config["twin_analysis"]["batch_size"], "device": "cpu"}
    llm, base = config["llm"], base_model(model)
    variant = llm["variants"][model.split(".", 1)[1]] if model != base else {}
    return {**common, "kind": "llm", "source": llm_source(config, base), "provenance": llm_provenance(config, base),
            "layers": llm["inputs"][inputs]["layers"], "per_head": llm["inputs"][inputs]["per_head"],
            "query_offsets": llm["inputs"][inputs]["query_offsets"], "leakage": llm["inputs"][inputs]["leakage"],
            "value_paths": llm["inputs"][inputs]["value_paths"], "score_groups": llm["inputs"][inputs]["score_groups"],
            "batch_size": llm["batch_size"], "device": llm["device"], "dtype": llm["dtype"],
            "intervention": {key: variant.get(key) for key in ("replace_embedding", "ntk_factor")} if variant else None}


def measures_settings(config: dict) -> dict:
    """The shared definitions every metrics file is computed with (config/claims.yaml, ``measures:``)."""
    return config["measures"]


def patching_settings(config: dict, model: str) -> dict:
    """Claim C9's patches on one model (behind_rope.position.patching) at every layer from ``from_layer``, with
    the attention to key 0 its sink heads are chosen by, and the closed-system check of position 0 on the first
    ``closed_system_seq_len`` tokens of the same sequences (claims.C9.runs)."""
    c9 = claim_arguments(config, "C9")
    return {"model": model, "source": llm_source(config, model), "device": config["llm"]["device"],
            "dtype": config["llm"]["dtype"], "from_layer": c9["from_layer"], "sink_from_query": c9["sink_from_query"],
            "control_position_fraction": c9["control_position_fraction"],
            "batch_size": config["llm"]["batch_size"], "closed_system_seq_len": c9["closed_system_seq_len"]}


def competence_settings(config: dict) -> dict:
    c3 = claim_arguments(config, "C3")
    return {"positions": c3["order_positions"], "sequences": c3["order_sequences"], "seed": config["seed"]}


def claims_settings(config: dict, criterion_commits: dict | None = None, registration: dict | None = None) -> dict:
    """What the claims step needs: every claim's arguments, its pre-registered entry, the commit that last changed
    its criterion and the registration (behind_rope.claims.preregistration, read with git when the workflow is
    parsed)."""
    claims = {name: claim_arguments(config, name) for name in PAPER_CLAIMS}
    claims["C3"] |= {"probe_sequences": config["twin_analysis"]["probe_sequences"]}  # for its power
    return {"claims": claims,
            "entries": config["claims"], "criterion_commits": criterion_commits or {},
            "registration": registration or {"hash": "unknown", "commit": "unknown", "date": None},
            "twin_runs": c3_twin_runs(config), "gram": gram_files(config), "llm_runs": c5_runs(config),
            "training": {"steps": config["training"]["steps"], "stop_when": config["training"]["stop_when"]}}


def position_claims_settings(config: dict) -> dict:
    return {"claims": {name: claim_arguments(config, name) for name in POSITION_CLAIMS},
            "position_runs": position_runs(config), "measures": config["measures"]}


def corpus_settings(config: dict) -> dict:
    data = config["data"]
    return {"format": data["corpora"][data["corpus"]]["format"], "seq_len": data["seq_len"],
            "valid_fraction": data["valid_fraction"], "seed": config["seed"]}
