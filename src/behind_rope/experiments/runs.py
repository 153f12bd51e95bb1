"""Which experiments the config declares: the twins (trained here, or read from a checkpoint), the
pretrained models and their variants, the token sets and masks a score run combines, and the runs each
claim reads, each named ``<source>/<run>`` (the source ``simulation``, a twin or a model).

What the validation itself checks these against (a claim's arguments, a twin's seeds, the models of a
token set, the runs of C5a-C5d) is in behind_rope.config, which reads nothing from here.
"""

from __future__ import annotations

from behind_rope.config import C5_CLAIMS, SIMULATION, claim_arguments, seed_twins, set_models

TWIN_INPUTS = ("text", "random")  # held-out text, and i.i.d. tokens with the training frequencies
MASKS = ("causal", "noncausal")


def run_name(inputs: str, mask: str) -> str:
    return f"{inputs}_{mask}"


def checkpoint_twins(config: dict) -> list[str]:
    """The twins read from a checkpoint (``pretrained:``, behind_rope.twins.checkpoint) rather than trained here."""
    return [name for name, spec in config["training"]["twins"].items() if "pretrained" in spec]


def trained_twins(config: dict) -> list[str]:
    """The twins the train rule trains."""
    return [name for name in config["training"]["twins"] if name not in checkpoint_twins(config)]


def figure3_twin(config: dict) -> str:
    """The NoPE model Figure 3 and its appendix figure draw: twin_analysis.checkpoint when set (the authors'
    checkpoint at paper scale), else the first seed of claim C3's twin."""
    return config["twin_analysis"].get("checkpoint") or claim_arguments(config, "C3")["twin"]


def scored_llms(config: dict) -> list[str]:
    """The pretrained models that get token sets and score runs: llm.models, the models claim C8b reads (one
    with sliding-window layers, and its control without) and those only the extended target scores."""
    c8 = claim_arguments(config, "C8")
    return list(dict.fromkeys([*config["llm"]["models"], c8["sliding_model"], c8["no_window_model"],
                               *config["llm"]["extended_models"]]))


def extended_config(config: dict) -> dict:
    """The config of the extended target: llm.extended_models among llm.models, so that the claims it records
    (results/extended/claims.json, which decides nothing) and the scale ladder read them beside the others."""
    import copy

    extended = copy.deepcopy(config)
    llm = extended["llm"]
    llm["models"], llm["extended_models"] = [*llm["models"], *llm["extended_models"]], []
    return extended


def llm_variant_names(config: dict) -> list[str]:
    """Every ``<model>.<variant>`` of llm.variants."""
    llm = config["llm"]
    return [f"{model}.{name}" for name, spec in llm["variants"].items() for model in llm["models"]
            if model in (spec["models"] or llm["models"])]


def model_variants(config: dict, model: str) -> list[str]:
    """The variants ``<model>.<variant>`` of one pretrained model, in the order of llm.variants."""
    return [name for name in llm_variant_names(config) if base_model(name) == model]


def base_model(name: str) -> str:
    """The pretrained model a variant ``<model>.<variant>`` is made of (a model is its own base)."""
    return name.split(".", 1)[0]


def models_from(config: dict, kind: str) -> list[str]:
    """The pretrained models given as ``kind``: wheels (GGUF, dequantised by cache_llm) or hub (fetch_hub_model)."""
    return [model for model, spec in config["pretrained"].items() if kind in spec]


def model_kind(config: dict, model: str) -> str:
    return "twin" if model in config["training"]["twins"] else "llm"


def c3_twin_runs(config: dict) -> dict:
    """The twin score runs that claims C3 and C4 read, each as ``<twin>/<inputs>_<mask>``.

    C3 is decided on i.i.d. tokens, over every seed of the NoPE twin: with no word order only the mask
    can make positions differ, and the same weights without the mask are its control, as is every seed
    of the untrained twin.  Held-out text, with and without the mask, is recorded (text alone makes
    neighbouring tokens related).  The RoPE twin's runs are recorded beside C4.
    """
    c3 = claim_arguments(config, "C3")
    runs = {"probe": c3["probe"], "probe_no_mask": c3["no_mask_probe"], "text": c3["text"], "text_no_mask": c3["text_no_mask"]}
    untrained = {"probe": c3["probe"], "text": c3["text"]}
    rope = ("text_causal", "random_causal", "random_noncausal")
    twin_runs = {
        "seeds": {twin: {role: f"{twin}/{run}" for role, run in runs.items()} for twin in seed_twins(config, c3["twin"])},
        "untrained": {twin: {role: f"{twin}/{run}" for role, run in untrained.items()}
                      for twin in seed_twins(config, c3["untrained"])},
        "rope_twin": {f"{c3['rope_twin']}_{run}": f"{c3['rope_twin']}/{run}" for run in rope},
        # C3's competence compares the NoPE seeds' held-out loss with every seed of the RoPE twin.
        "rope_seeds": seed_twins(config, c3["rope_twin"]),
    }
    # A checkpoint (the authors' model at paper scale): the same roles, one model rather than seeds; the seed rule
    # does not read them.
    checkpoint = config["twin_analysis"].get("checkpoint")
    if checkpoint:
        twin_runs["checkpoint"] = {checkpoint: {role: f"{checkpoint}/{run}" for role, run in runs.items()}}
    return twin_runs


def simulation_claim_variants(config: dict) -> list[str]:
    names = {name for c in ("C2", "C4") for key in ("variants", "no_mask_variants") for name in claim_arguments(config, c)[key]}
    names |= set(claim_arguments(config, "C2").get("without_normalisation", []))
    return sorted(names | set(claim_arguments(config, "C3")["simulation_variants"]))


def position_runs(config: dict) -> dict:
    """The runs claims C6-C9 read (where absolute position comes from), each as ``<source>/<run>``."""
    models = position_models(config)
    c6, c7, c8, c9 = (claim_arguments(config, name) for name in POSITION_CLAIMS)
    first = run_name(c7["inputs"], "causal")
    replacements = [c7["replacement"], *c7["control_replacements"], *c7["recorded_replacements"]]
    scaled = {name: spec["ntk_factor"] for name, spec in config["llm"]["variants"].items() if name in c8["ntk_variants"]}
    ntk_models = [m for m in models if all(m in (config["llm"]["variants"][v]["models"] or models) for v in scaled)]
    ntk_first = run_name(c8["inputs"], "causal")
    simulation = config["simulation"]["variants"]
    return {
        "C6": {model: {"probe": f"{model}/{c6['probe']}", "no_mask": f"{model}/{c6['no_mask_probe']}"} for model in models},
        "C6_simulation": {"probe": f"{SIMULATION}/{c6['simulation_variant']}",
                          "no_mask": f"{SIMULATION}/{c6['simulation_control']}"},
        "C7": {model: {"original": f"{model}/{first}",
                       **{v: f"{model}.{v}/{first}" for v in replacements if f"{model}.{v}" in model_variants(config, model)}}
               for model in models},
        "identity": {model: {v: (f"{model}/{first}", f"{model}.{v}/{first}") for v in c7["control_replacements"]
                             if config["llm"]["variants"][v]["replace_embedding"]["with"] == "identity"} for model in models},
        "ntk": {model: {"1": f"{model}/{ntk_first}", **{f"{factor:g}": f"{model}.{v}/{ntk_first}" for v, factor in scaled.items()}}
                for model in ntk_models},
        "simulation_ntk": {f"{simulation[v]['ntk_factor']:g}": f"{SIMULATION}/{v}"
                           for v in [c8["simulation_reference"], *c8["simulation_ntk"]]},
        "window": {role: f"{c8[key]}/{run_name(c8['window_inputs'], 'causal')}"
                   for role, key in (("sliding", "sliding_model"), ("no_window", "no_window_model"))},
        "simulation_window": {v: f"{SIMULATION}/{v}" for v in [c8["simulation_reference"], c8["simulation_window"]]},
        "C9": {model: f"{model}/{run_name(c9['inputs'], 'causal')}" for model in models},
    }


def position_models(config: dict) -> list[str]:
    """The models claims C6-C9 read: those that read C7's token set (C6 and C9 read the same)."""
    return set_models(config, claim_arguments(config, "C7")["inputs"])


PAPER_CLAIMS = ("C1", "C2", "C3", "C4", *C5_CLAIMS)
POSITION_CLAIMS = ("C6", "C7", "C8", "C9")
REVISION_CLAIMS = ("R0", "R1", "R2", "R3", "R4", "R5")  # version 2's (behind_rope.claims.revision)


def competence_twins(config: dict) -> list[str]:
    """The twins whose competence C3 reads: every seed of its NoPE twin, and every seed of the RoPE twin."""
    c3 = claim_arguments(config, "C3")
    return [*seed_twins(config, c3["twin"]), *seed_twins(config, c3["rope_twin"])]


def hub_datasets(config: dict) -> list[str]:
    """The corpora of data.corpora that are files of a hub dataset."""
    return [name for name, spec in config["data"]["corpora"].items() if spec["source"] == "hub"]
