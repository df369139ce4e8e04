#!/usr/bin/env bash
# Sets up a fresh machine (Debian packages, .venv) and runs the whole test suite: lint, unit, integration, e2e.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/unit -k certs`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "[test] ruff check"
.venv/bin/ruff check src tests benchmarks
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
set +e
# Two workers (pytest-xdist); tests that share a host resource (fixed loopback addresses, kubeadm's default ports) run
# in one worker one after another: SHARED_HOST_RESOURCES in tests/conftest.py.
.venv/bin/pytest -q -rfEs --durations=15 -n 2 --dist loadgroup "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "[test] no tests collected"
  exit 1
fi
exit "$rc"
