#!/usr/bin/env bash
# The test command: bash scripts/test.sh [--fast] [pytest args...]
#
# Sets up .venv (reused while pyproject.toml is unchanged), starts PostgreSQL with
# pgvector, a Chroma server, a Bolt server and Redis (with search) on 127.0.0.1 (scripts/engines.sh), runs
# every test against them, in two or more processes, and stops them on exit. This is what CI
# runs (.ci/run).
#
# --fast: the tier to run before a commit. No engine is started and none is used
# (the MEMKIT_TEST_* addresses are unset): -m "not engine and not slow", i.e. the
# in-memory and SQLite stores, through the sync and the async shell.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv

pip_install() {
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input "$@"
}

setup_venv() {
    local stamp_file="$VENV/.memkit-installed" stamp
    stamp="$(python3 -c 'import sys; print(sys.version)') $(cat pyproject.toml scripts/constraints.txt | sha256sum | cut -c1-16)"
    if [[ -x "$VENV/bin/python" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" ]]; then
        return 0
    fi
    echo "[test] installing memkit-ai[dev] into $VENV (log: $VENV/install.log)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    if ! {
        pip_install --upgrade pip &&
        pip_install -c scripts/constraints.txt -e '.[dev]'
    } >"$VENV/install.log" 2>&1; then
        tail -n 40 "$VENV/install.log" >&2
        echo "[test] pip install failed; see $VENV/install.log" >&2
        return 1
    fi
    echo "$stamp" >"$stamp_file"
}

fast=0
if [[ "${1:-}" == "--fast" ]]; then
    fast=1
    shift
fi

setup_venv
export PATH="$PWD/$VENV/bin:$PATH"
if ((fast)); then
    for variable in $(compgen -v | grep -E '^MEMKIT_TEST_[A-Z0-9_]+_(URL|DSN)$' || true); do
        unset "$variable"
    done
    set -- -m "not engine and not slow" "$@"
else
    # mem0's and CrewAI's own virtualenvs (tests/mem0, tests/integrations/crewai: neither
    # installs beside memkit's dev set) install from PyPI while the engines start and the
    # other tests run; their tests wait for them (a file lock) if they are not done by then.
    python -m tests.mem0.environment >/dev/null 2>&1 &
    python -m tests.integrations.crewai.environment >/dev/null 2>&1 &
    # shellcheck source=scripts/engines.sh
    source scripts/engines.sh
    engines_start
fi

readme_pid=""
if ((!fast)) && (($# == 0)); then
    # The whole suite: the README's install test (two pip installs into a fresh venv, mostly
    # waiting on the package index and pip) runs beside the rest, on the core they leave idle.
    readme_log="$VENV/readme-install.log"
    python -m pytest -p no:cacheprovider -q -rs --basetemp "$(mktemp -d)" \
        tests/test_readme_install.py >"$readme_log" 2>&1 &
    readme_pid=$!
    set -- --ignore=tests/test_readme_install.py
fi

# Two processes (pytest-xdist), or one per core up to four: the suite alone keeps one core
# busy. Cases that must share a process are grouped in tests/conftest.py (xdist_group);
# add -n 0 to run in this process (e.g. for --pdb).
workers=$(nproc 2>/dev/null || echo 2)
((workers < 2)) && workers=2
((workers > 4)) && workers=4

set +e
python -m pytest -p no:cacheprovider -q -rs -n "$workers" --dist loadgroup "$@"
status=$?
if [[ -n "$readme_pid" ]]; then
    wait "$readme_pid"
    readme_status=$?
    echo "[test] tests/test_readme_install.py (run beside the suite):" >&2
    tail -n 15 "$readme_log" >&2
    ((status == 0)) && status=$readme_status
fi
set -e
exit "$status"
