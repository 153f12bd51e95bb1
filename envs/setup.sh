# Sourced by run.sh and test.sh: create (or refresh) .venv from the pinned lock, then activate it.
# The environment is rebuilt only when envs/requirements.txt or pyproject.toml change.  BEHIND_ROPE_VENV puts it
# elsewhere: CI keeps one per lock in its cache (.ci/run).
set -euo pipefail

# shellcheck source=envs/disk.sh
source "$(dirname "${BASH_SOURCE[0]}")/disk.sh"
project_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${BEHIND_ROPE_VENV:-$project_root/.venv}
want=$(cat "$project_root/envs/requirements.txt" "$project_root/pyproject.toml" | sha256sum | cut -c1-64)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.lock-sha256" 2>/dev/null)" != "$want" ]; then
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "behind-rope needs Python >= 3.11 as python3; found $(python3 --version 2>&1)." >&2
    exit 1
  fi
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "python3 cannot create a virtual environment (no ensurepip): on Debian or Ubuntu, apt-get install python3-venv." >&2
    exit 1
  fi
  # A new environment needs room for torch; refreshing one after a lock change adds little.
  [ -x "$venv/bin/python" ] || require_free_disk "$(dirname "$venv")" "$VENV_GB" "Setting up .venv"
  echo "Setting up $venv from envs/requirements.txt (once; a few minutes) ..." >&2
  python3 -m venv "$venv"
  rm -f "$venv/.checkout"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$project_root/envs/requirements.txt"
  echo "$want" > "$venv/.lock-sha256"
fi
# The package itself is installed from this checkout (editable): a .venv shared by checkouts of one lock
# (BEHIND_ROPE_VENV, as in CI) is pointed at the checkout that uses it, in seconds.
if [ "$(cat "$venv/.checkout" 2>/dev/null)" != "$project_root" ]; then
  if ! (cd / && "$venv/bin/python" -c 'import sys, behind_rope; sys.exit(not behind_rope.__file__.startswith(sys.argv[1]))' \
      "$project_root/src/") 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e "$project_root"
  fi
  echo "$project_root" > "$venv/.checkout"
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
# Offline unless the caller says otherwise (HF_HUB_OFFLINE=0 for the paper-scale hub models).
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-${HF_HUB_OFFLINE:-1}}
cd "$project_root"
