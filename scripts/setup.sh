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
# Pods get their own address through Debian's CNI plugins (bridge, host-local, portmap, loopback in /usr/lib/cni).
[ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
# The fault tests shift the clock of our processes with libfaketime (LD_PRELOAD).
command -v faketime >/dev/null 2>&1 || need_apt+=(faketime)
# `lab timeline --svg`: the tests render the SVG with rsvg-convert
command -v rsvg-convert >/dev/null 2>&1 || need_apt+=(librsvg2-bin)
# Real containers: containerd (its CRI plugin) with runc, the CNI plugins in /usr/lib/cni, and what the tests build
# OCI images offline with (skopeo, umoci, a static busybox); a local registry (docker-registry; htpasswd from
# apache2-utils for one that wants credentials).
command -v containerd >/dev/null 2>&1 || need_apt+=(containerd)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || need_apt+=(runc)
[ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
command -v skopeo >/dev/null 2>&1 || need_apt+=(skopeo)
command -v umoci >/dev/null 2>&1 || need_apt+=(umoci)
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need_apt+=(apache2-utils)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need_apt+=(busybox-static)
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
.venv/bin/python -m pykubeadm.kubelet.native || true
