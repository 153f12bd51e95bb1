"""The registration: every value that decides a claim, frozen by its content hash, and the seeds it draws.

A registration names every deciding constant, size, seed rule and control (the claims' deciding paths in the
config) by the hash of their values.  A confirmatory run (``seed: registered``, the default) draws every seed
from that hash: the seed of every draw (the simulations, the token sets' choice and order of documents, the
i.i.d. probes, the twins' corpus split) and each twin's seed, so that nobody chose them and a new registration
draws new data.  The exploratory arm (config/exploratory.yaml) names its seeds, as every run did before.

Pure functions of the config: git, the record of registrations that have been run and the claims step's use of
them are in behind_rope.claims.preregistration.
"""

from __future__ import annotations

import copy
import hashlib
import json

CLAIM_PARTS = ("runs", "controls", "criteria", "preconditions", "recorded", "depends_on")
OPTIONAL_PARTS = ("preconditions", "recorded")  # deciding paths only where a claim has them
# What decides every claim: the shared measures, the seed that draws every claim's inputs (the simulations,
# the twins' weights and batches, the token sets) and the corpus the LLMs read.
EVERY_CLAIM = ("measures", "seed", "llm.corpus")
# The top-level `seed` of a confirmatory run: every seed drawn from the registration's hash.
REGISTERED = "registered"


def deciding_paths(claims_config: dict, name: str) -> list[str]:
    """The dotted config paths whose values decide claim ``name``: its own parts, what decides every claim
    (``EVERY_CLAIM``) and its depends_on.  ``preconditions`` decide whether its criteria decide it (its outcome);
    ``recorded`` decides no claim's own verdict, but it holds the constants of checks reported beside it, which the
    verdict gate holds too; each counts where a claim has it.

    ``claims_config`` is the merged config (config.yaml with claims.yaml over it).
    """
    claim = claims_of(claims_config).get(name)
    optional = [part for part in OPTIONAL_PARTS if not (isinstance(claim, dict) and part in claim)]
    paths = [f"claims.{name}.{part}" for part in CLAIM_PARTS if part not in optional] + list(EVERY_CLAIM)
    depends_on = claim.get("depends_on") if isinstance(claim, dict) else None
    for path in depends_on if isinstance(depends_on, list) else []:
        if isinstance(path, str) and path not in paths:
            paths.append(path)
    return paths


def registration_paths(config: dict) -> list[str]:
    """Every dotted config path whose value decides some claim: the union of the claims' deciding paths."""
    return sorted({path for name in claims_of(config) for path in deciding_paths(config, name)})


def registration_hash(config: dict) -> str:
    """The registration: a content hash (16 hex characters) of every deciding value (:func:`registration_paths`),
    so that changing any deciding constant, size, seed or rule makes a new registration, while a comment, the
    order of keys or a setting that decides nothing (threads, say) does not."""
    paths = registration_paths(config)
    text = json.dumps(dict(zip(paths, values_at(config, paths), strict=True)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def drawn_seed(registration: str, label: str) -> int:
    """The seed a registration draws for ``label``: the first 31 bits of sha256("<hash>/<label>"), a number
    below 2**31 that every generator takes (NumPy's, PyTorch's, Python's)."""
    return int(hashlib.sha256(f"{registration}/{label}".encode()).hexdigest()[:8], 16) >> 1


def twin_seed_label(seed: int) -> str:
    """A twin's seed ``k`` of ``training.twins.<name>.seeds`` in a confirmatory run: ``twin seed k``, the same
    for every twin, so that the NoPE and RoPE twins of seed k start from the same draw as they do with named seeds."""
    return f"twin seed {seed}"


def embedding_seed_label(seed: int) -> str:
    return f"random embedding {seed}"


def draw(config: dict) -> dict:
    """A copy of a validated config whose seeds are drawn from its registration when ``seed`` is ``registered``:
    the top-level seed (every draw that reads it), each twin's seed (its label in ``seeds`` keeps its name,
    ``<name>_seed<k>``) and each random embedding of llm.variants.  A config with a named seed is returned as
    it is: the exploratory arm's seeds are the ones it names."""
    if config.get("seed") != REGISTERED:
        return config
    registration = registration_hash(config)
    drawn = copy.deepcopy(config)
    drawn["seed"] = drawn_seed(registration, "seed")
    for spec in drawn["training"]["twins"].values():
        if "seed" in spec:
            spec["seed_label"] = spec["seed"]
            spec["seed"] = drawn_seed(registration, twin_seed_label(spec["seed"]))
    for spec in drawn["llm"].get("variants", {}).values():
        replacement = spec.get("replace_embedding") or {}
        if replacement.get("with") == "random":
            replacement["seed"] = drawn_seed(registration, embedding_seed_label(replacement.get("seed", 0)))
    return drawn


def values_at(config: dict, paths: list[str]) -> list:
    """The value at each dotted path, None where the path is missing."""
    values = []
    for path in paths:
        node = config
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        values.append(node)
    return values


def claims_of(config: dict) -> dict:
    claims = config.get("claims") if isinstance(config, dict) else None
    return claims if isinstance(claims, dict) else {}


CONFIRMATORY, EXPLORATORY = "confirmatory", "exploratory"
SEED_RULES = {CONFIRMATORY: "drawn from the registration: the first 31 bits of sha256('<hash>/<label>') for the labels "
                            "'seed' and 'twin seed <k>' (behind_rope.registration.drawn_seed)",
              EXPLORATORY: "named in the config (config/exploratory.yaml)"}
# The data each claim group decides on, of :func:`run_data`'s: every claim reads draws of the run's seed; C3 the
# twins (their corpus and seeds), C5a-C9 the LLMs' token sets (their corpus).
LLM_CLAIMS = ("C5a", "C5b", "C5c", "C5d", "C6", "C7", "C8a", "C8b", "C9")


def run_data(config: dict) -> dict:
    """What a run's claims are decided on, for results/claims.json: the arm (confirmatory where the seeds are drawn
    from the registration), how the seeds were drawn, the seeds themselves and the corpora by their pins.
    ``config`` is validated and not yet drawn (:func:`draw`)."""
    arm = CONFIRMATORY if config.get("seed") == REGISTERED else EXPLORATORY
    drawn = draw(config)
    corpora = config["data"]["corpora"]

    def pinned(name: str) -> dict:
        return {"corpus": name, **{key: corpora[name][key] for key in ("source", "package", "version", "sha256")
                                   if key in corpora[name]}}

    return {"arm": arm, "seed_rule": SEED_RULES[arm], "seed": drawn["seed"],
            "twin_seeds": {name: spec["seed"] for name, spec in drawn["training"]["twins"].items() if "seed" in spec},
            "llm_text": pinned(config["llm"]["corpus"]), "twin_text": pinned(config["data"]["corpus"])}


def claim_data(data: dict, name: str) -> dict:
    """The part of :func:`run_data` that claim ``name`` decides on."""
    keys = ["arm", "seed_rule", "seed"]
    if name == "C3":
        keys += ["twin_seeds", "twin_text"]
    if name in LLM_CLAIMS:
        keys += ["llm_text"]
    return {key: data[key] for key in keys if key in data}


def status_word(registration: dict, data: dict) -> str:
    """What a run's outcomes may be called, for a table's cell: confirmatory only where the deciding values were
    committed and the seeds drawn from them; else exploratory only, or not registered."""
    if data.get("arm") != CONFIRMATORY:
        return "exploratory only"
    if registration.get("commit", "unknown") in ("unknown", "uncommitted") or not registration.get("date"):
        return "not registered"
    return "confirmatory"


def status(registration: dict, data: dict) -> str:
    """:func:`status_word` in one phrase, from a run's registration (hash, commit, date) and its data
    (:func:`claim_data`)."""
    commit, date = registration.get("commit", "unknown"), registration.get("date")
    return {"exploratory only": "exploratory only: decided on the named draws the criteria were shaped on",
            "not registered": f"not registered: its deciding values are {commit}, so its draws are not yet a confirmation",
            "confirmatory": f"registered at {commit[:7]} on {date}; decided on data drawn afterwards"}[
        status_word(registration, data)]
