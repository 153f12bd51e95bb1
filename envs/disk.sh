# Sourced by envs/setup.sh: the disk checks of run.sh and test.sh (tests/test_disk_check.py).

# Stop at once, in one sentence, when a run would fill the disk: a full disk stops it late, in many jobs
# and tests at once, with errors that do not say why.  BEHIND_ROPE_DISK_CHECK=0 turns it off.
require_free_disk() {  # <folder> <GB it needs> <what needs them, in the singular>
  [ "${BEHIND_ROPE_DISK_CHECK:-1}" = 0 ] && return 0
  mkdir -p "$1"
  local free
  free=$(df -Pk "$1" | awk 'NR == 2 {print int($4 * 1024 / 1e9)}')  # GB of 10^9 bytes, as the tests count
  if [ "$2" -gt "$free" ]; then
    echo "Error: $3 needs about $2 GB of free disk in $1, where $free GB are free." \
      "Free some space, or set BEHIND_ROPE_DISK_CHECK=0 to go on anyway." >&2
    exit 1
  fi
}

# A cold run at the default scale leaves about 9 GB in results/ (docs/performance.md's cold run), most of it the LLMs
# dequantised to float32 and their per-head score arrays; the check asks a third more, for the partial files a job
# writes before it renames them (CI's verdict gate checks that a default run wrote no more, tests/test_verdict_gate.py);
# what is there already counts.  The tests write 1.6 GB at most into the temporary folder (the peak of one CI run).
DEFAULT_RUN_GB=12 TESTS_GB=3
# .venv: room for the CUDA build of torch that plain PyPI gives on Linux x86-64 (the CPU build takes about 1.5 GB).
VENV_GB=6
gb_to_add_to_results() {  # <the results folder>
  local have=0
  [ -d "$1" ] && have=$(du -sk "$1" | awk '{print int($1 * 1024 / 1e9)}')
  echo $(( DEFAULT_RUN_GB > have ? DEFAULT_RUN_GB - have : 0 ))
}
