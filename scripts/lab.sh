#!/usr/bin/env bash
# Sets up a fresh machine and runs the main job: the offline phases of `pykubeadm init` into ./lab/node1
# (becomes `pykubeadm lab up` once the built-in control plane lands).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ROOT=${LAB_DIR:-$PWD/lab}/node1
rm -rf "$ROOT" && mkdir -p "$ROOT"
.venv/bin/pykubeadm --root-dir "$ROOT" init --node-name node1 --apiserver-advertise-address 127.0.10.1 \
  --skip-phases=wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,addon,show-join-command \
  --ignore-preflight-errors=all "$@"
echo
echo "Files written under $ROOT:"
(cd "$ROOT" && find . -type f | sort)
echo
echo "Look around:"
echo "  openssl x509 -noout -text -in $ROOT/etc/kubernetes/pki/apiserver.crt"
echo "  kubectl config view --kubeconfig $ROOT/etc/kubernetes/admin.conf"
echo "  .venv/bin/pykubeadm --root-dir $ROOT certs check-expiration"
