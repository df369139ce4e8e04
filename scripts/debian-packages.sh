#!/usr/bin/env bash
# Prints, one per line, the Debian packages this machine lacks for pykubeadm and its tests (empty when nothing is
# missing). scripts/setup.sh installs what it prints; the decision is kept here, apart from apt, so it can be tested.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

have openssl || echo openssl
have etcd || [ -x /usr/bin/etcd ] || echo etcd-server
have kubectl || echo kubernetes-client
have ip || echo iproute2
# The HA lab: HAProxy is its load balancer; etcdctl (etcd-client) is what its tests and users query etcd with.
have haproxy || [ -x /usr/sbin/haproxy ] || echo haproxy
have etcdctl || echo etcd-client
# kube-proxy's nftables mode programs the kernel through nft.
have nft || [ -x /usr/sbin/nft ] || echo nftables
# The fault tests shift the clock of our processes with libfaketime (LD_PRELOAD).
have faketime || echo faketime
# `lab timeline --svg`: the tests render the SVG with rsvg-convert.
have rsvg-convert || echo librsvg2-bin
# Pods get their own address through Debian's CNI plugins (bridge, host-local, portmap, loopback in /usr/lib/cni).
[ -x /usr/lib/cni/bridge ] || echo containernetworking-plugins
# Real containers: containerd (its CRI plugin) with runc, and what the tests build OCI images offline with (skopeo,
# umoci, a static busybox); a local registry (docker-registry; htpasswd from apache2-utils for one that wants
# credentials).
have containerd || echo containerd
have runc || [ -x /usr/sbin/runc ] || echo runc
have skopeo || echo skopeo
have umoci || echo umoci
have docker-registry || echo docker-registry
have htpasswd || echo apache2-utils
[ -f /var/lib/dpkg/info/busybox-static.list ] || echo busybox-static  # the static busybox the test images are built from
# The sandbox launcher's seccomp RuntimeDefault profile is built with libseccomp.
[ -e /usr/include/seccomp.h ] || echo libseccomp-dev
# The kubelet's native helpers (pause, pod-sandbox, cri-log) are built with the C compiler pykubeadm.kubelet.builtin.native
# looks for: $CC, else cc, gcc or clang. Debian images without build tools have none: gcc, and libc6-dev for the C
# library's headers and crt files.
if ! { [ -n "${CC:-}" ] && have "$CC"; } && ! have cc && ! have gcc && ! have clang; then
  echo gcc
  echo libc6-dev
fi
