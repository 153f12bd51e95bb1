#!/usr/bin/env bash
# The tests: set up the environment from envs/ (Python, and LaTeX for the paper's tests), then run
# pytest (unit tests and a smoke run of the whole DAG, PDF included).
# Extra arguments go to pytest, e.g. ./test.sh -k metrics
source "$(dirname "$0")/envs/setup.sh"
bash envs/setup_tex.sh || echo "LaTeX is missing: the paper's tests will fail." >&2
exec python -m pytest "$@"
