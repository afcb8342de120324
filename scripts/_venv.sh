# Sourced by the scripts in this folder: create .venv on first use and (re)install the project
# whenever pyproject.toml changes, so a fresh machine with only Python 3.11 needs nothing else.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.faidecs-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "faidecs: installing into .venv (log: .venv/install.log)" >&2
  if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e ".[test,lint,bench,compare,spark,overlay,metrics,nats,mqtt]"; } \
      >.venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
