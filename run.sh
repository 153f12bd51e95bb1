#!/usr/bin/env bash
# The main job: set up the environment from envs/ (Python, and LaTeX for the PDF), then run the
# whole workflow at the default scale; it ends with paper/build/main.pdf.
# Extra arguments go to Snakemake, e.g. ./run.sh fig2   or   ./run.sh --configfile config/paper.yaml
source "$(dirname "$0")/envs/setup.sh"
require_free_disk results "$(gb_to_add_to_results results)" "The default run"
bash envs/setup_tex.sh || echo "Going on without LaTeX: every target but the paper builds." >&2
exec snakemake --cores all "$@"
