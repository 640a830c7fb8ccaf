# Sourced by scripts/run and scripts/test: make .venv and install the project into it,
# again only when pyproject.toml changed (a stamp file records its hash).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras=${1:-}
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Python 3.11 or newer is required (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)${extras:+-$extras}"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
  touch "$stamp"
fi
