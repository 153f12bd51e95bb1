#!/usr/bin/env bash
# The tests: set up the environment from envs/, then run pytest (unit tests and a smoke run of the DAG).
# Extra arguments go to pytest, e.g. ./test.sh -k metrics
source "$(dirname "$0")/envs/setup.sh"
exec python -m pytest "$@"
