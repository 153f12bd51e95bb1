#!/usr/bin/env bash
# The main job: set up the environment from envs/, then run the whole workflow at the default scale.
# Extra arguments go to Snakemake, e.g. ./run.sh fig2   or   ./run.sh --configfile config/paper.yaml
source "$(dirname "$0")/envs/setup.sh"
exec snakemake --cores all "$@"
