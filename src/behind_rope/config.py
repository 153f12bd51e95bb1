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
    if error.validator == "pattern" or error.validator == "propertyNames":
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
    references += [(f"figures.{figure}", names) for figure, names in config["figures"].items()]
    for key, names in references:
        for name in names:
            if name not in variants:
                raise ConfigError(f"Config error: '{key}' names the unknown variant {name!r}; it must be one of {', '.join(variants)}.")
    return config
