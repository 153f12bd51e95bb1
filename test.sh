#!/usr/bin/env bash
# The tests: set up the environment from envs/ (Python, and LaTeX for the paper's tests), then run
# pytest (unit tests and a smoke run of the whole DAG, PDF included).
# Extra arguments go to pytest, e.g. ./test.sh -k metrics
source "$(dirname "$0")/envs/setup.sh"
tmp=${TMPDIR:-/tmp}
if [ "${CI:-}" = true ] || [ "${BEHIND_ROPE_VERDICT_GATE:-}" = 1 ]; then
  # The verdict gate's default run writes into results/: where that is the temporary folder's disk, both count.
  mkdir -p results
  if [ "$(stat -c %d "$tmp")" = "$(stat -c %d results)" ]; then
    require_free_disk "$tmp" $(( TESTS_GB + $(gb_to_add_to_results results) )) "The test session, with the verdict gate's default run,"
  else
    require_free_disk results "$(gb_to_add_to_results results)" "The verdict gate's default run"
  fi
fi
require_free_disk "$tmp" "$TESTS_GB" "The test session"
bash envs/setup_tex.sh || echo "LaTeX is missing: the paper's tests will fail." >&2
# --durations: the slowest tests, at the end, show where the time went on a slow day.
exec python -m pytest --durations=15 "$@"
