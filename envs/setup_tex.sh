#!/usr/bin/env bash
# Make sure LaTeX (for the `paper` rule) is there: install Debian's packages in envs/tex-packages.txt
# when we are root on a machine with apt-get, otherwise say which are missing and how to get them.
# Exit status 0 when everything is in place.  Called by run.sh and test.sh; BEHIND_ROPE_NO_APT=1
# turns the install off (check only).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mapfile -t packages < <(grep -v '^#' "$here/tex-packages.txt" | grep -v '^$')
latex_tools=(latexmk pdflatex bibtex kpsewhich)  # the paper's build
test_tools=(pdftotext pdftoppm)                   # poppler-utils: only the paper's tests read PDFs
tools=("${latex_tools[@]}" "${test_tools[@]}")

missing_tools() {
  for tool in "$@"; do command -v "$tool" >/dev/null || echo "$tool"; done
}

[ -z "$(missing_tools "${tools[@]}")" ] && exit 0
if [ "${BEHIND_ROPE_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing LaTeX for the paper from Debian (once; about a minute): ${packages[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
still_missing=$(missing_tools "${latex_tools[@]}" | tr '\n' ' ')
if [ -n "$still_missing" ]; then
  echo "LaTeX is missing (${still_missing% }): the \`paper\` target will fail; every other target builds." >&2
  echo "Install it with: sudo apt-get install --no-install-recommends ${packages[*]}" >&2
  exit 1
fi
still_missing=$(missing_tools "${test_tools[@]}" | tr '\n' ' ')
if [ -n "$still_missing" ]; then
  # The paper builds; a warning, not a failure, so run.sh does not say otherwise.
  echo "poppler-utils is missing (${still_missing% }): the paper builds, but the paper's tests, which read the PDF," \
    "will fail. Install it with: sudo apt-get install --no-install-recommends poppler-utils" >&2
fi
