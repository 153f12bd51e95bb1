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

ENV = "../../envs/behind_rope.yaml"
VARIANTS = config["simulation"]["variants"]


wildcard_constraints:
    variant="|".join(re.escape(name) for name in VARIANTS),


def simulation_files(names):
    return expand("results/simulation/{variant}.npz", variant=names)


def claim_variants():
    claims = config["claims"]
    return sorted({name for claim in ("C2", "C4") for role in ("variants", "controls") for name in claims[claim][role]})


def figure_files(name):
    return [f"figures/{name}.pdf", f"figures/{name}.png"]


def print_claims_summary(path):
    if not os.path.exists(path):
        return
    claims = json.loads(Path(path).read_text())
    print(f"Claims ({path}):")
    for name, claim in claims.items():
        print(f"  {name}: {'PASS' if claim['passed'] else 'FAIL'}  {claim['threshold']}")
