#!/usr/bin/env bash
# Installs what pykubeadm and its tests need on a fresh Debian machine, idempotently:
# Debian packages (openssl, etcd, a kubectl where none is found) and a virtualenv in .venv with the project in it.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || need_apt+=(etcd-server)
command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# The HA lab: HAProxy is its load balancer; etcdctl (etcd-client) is what its tests and users query etcd with.
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need_apt+=(haproxy)
command -v etcdctl >/dev/null 2>&1 || need_apt+=(etcd-client)
# kube-proxy's nftables mode programs the kernel through nft.
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || need_apt+=(nftables)
# The fault tests shift the clock of our processes with libfaketime (LD_PRELOAD).
command -v faketime >/dev/null 2>&1 || need_apt+=(faketime)
# The sandbox launcher's seccomp RuntimeDefault profile is built with libseccomp.
[ -e /usr/include/seccomp.h ] || need_apt+=(libseccomp-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "[setup] installing Debian packages: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "[setup] WARNING: missing ${need_apt[*]} and not root; some tests will be skipped" >&2
  fi
fi
# Debian's etcd-server starts a system etcd on 127.0.0.1:2379; we run our own etcd processes, so stop it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  systemctl stop etcd || true
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
.venv/bin/python -m pykubeadm.kubelet.native || true
