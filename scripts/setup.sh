#!/usr/bin/env bash
# Installs what pykubeadm and its tests need on a fresh Debian machine, idempotently:
# the Debian packages scripts/debian-packages.sh finds missing (openssl, etcd, a C compiler, a kubectl where none is
# found, ...) and a virtualenv in .venv with the project in it.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t need_apt < <(bash scripts/debian-packages.sh)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "[setup] installing Debian packages: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "[setup] WARNING: missing ${need_apt[*]} and not root; some tests will be skipped" >&2
  fi
fi
# Debian's etcd-server starts a system etcd on 127.0.0.1:2379; we run our own etcd processes, so stop it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  systemctl stop etcd || true
fi
# Debian's docker-registry starts a system registry on :5000 of every interface; tests and the lab run their own on
# loopback, so stop it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker-registry 2>/dev/null; then
  systemctl stop docker-registry || true
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e '.[test]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
# The project is installed in editable mode, so pip compiled none of its modules; with PYTHONDONTWRITEBYTECODE set
# (as on our machines) every pykubeadm process would compile them again at start (~70 ms per process).
.venv/bin/python -m compileall -q src >/dev/null
# The built-in runtime's native helpers (pause, pod-sandbox) need a C compiler; without one the kubelet says so.
.venv/bin/python -m pykubeadm.kubelet.builtin.native || true
