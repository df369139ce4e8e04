#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: a local cluster with `pykubeadm lab up` — a control plane and two
# workers on 127.0.10.1-3, each node in its own root directory under ./lab, bootstrapped by the real init/join flows.
# Extra arguments go to `lab up` (e.g. `bash scripts/lab.sh --workers 3 --datastore etcd`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
LAB_DIR=${LAB_DIR:-$PWD/lab}
if [ -d "$LAB_DIR" ] && [ -n "$(ls -A "$LAB_DIR" 2>/dev/null)" ]; then
  echo "[lab] tearing down the previous lab in $LAB_DIR"
  .venv/bin/pykubeadm lab down --dir "$LAB_DIR"
fi
exec .venv/bin/pykubeadm lab up --dir "$LAB_DIR" "$@"
