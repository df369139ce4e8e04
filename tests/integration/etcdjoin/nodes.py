"""Two built-in control-plane nodes with stacked etcd on one machine (127.0.40.1 and 127.0.40.2): their kubeadm
configuration and their per-node `--patches`.

kubeadm's defaults make every control-plane node bind some ports on 127.0.0.1 (etcd's client URL 127.0.0.1:2379 and
metrics 127.0.0.1:2381, the controller-manager's 10257 and the scheduler's 10259) and point its apiserver at
`https://127.0.0.1:2379`. On separate machines that is right; two nodes on one machine collide. The ClusterConfiguration
is shared by every control plane (a joining node downloads it from kubeadm-config), so node-specific addresses cannot
go into `etcd.local.extraArgs` / `controllerManager.extraArgs` the way the single-control-plane lab does it: the
second node would inherit the first node's addresses (an etcd listening on another node's IP, an apiserver whose
`--etcd-servers` follows `advertise-client-urls` to the first node's etcd). So the ClusterConfiguration stays
node-neutral and each node carries its differences in its own patches directory (`patches.directory` for init,
`--patches` for join), which is kubeadm's tool for per-node changes:

* `etcd+json.yaml`: `--listen-client-urls=https://<ip>:2379`, `--listen-metrics-urls=http://<ip>:2381`, probes on
  `<ip>` and `/health` (Debian's etcd 3.4 has no /livez or /readyz).
* `kube-apiserver+json.yaml`: `--etcd-servers=https://<ip>:2379` (its local member, which no longer listens on
  127.0.0.1).
* `kube-controller-manager+json.yaml`, `kube-scheduler+json.yaml`: `--bind-address=<ip>` and probes on `<ip>`.
* `kubeletconfiguration+merge.yaml`: the kubelet's address and healthz address (as the lab does).

Static Pod commands are lists of strings, which a strategic merge patch can only replace whole, so the flag changes are
RFC 6902 patches addressing the flag by index (kubeadm sorts flags by name, so indices are stable). Every `replace`
is preceded by a `test` of kubeadm's default value, so a change in the generated flags fails loudly instead of
patching the wrong flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PREFIX = "127.0.40."
TOKEN = "abcdef.0123456789abcdef"
CERTIFICATE_KEY = "4f0b8c2e9d1a7365b2c4e8f1a3d5c7e9b0a2c4e6f8d1b3a5c7e9f0b2d4a6c8e1"
KUBERNETES_VERSION = "v1.33.0"


def address(i: int) -> str:
    return f"{PREFIX}{i}"


def name(i: int) -> str:
    return f"etcdjoin-cp{i}"


def _flag(index: int, flag: str, default: str, value: str) -> list[dict[str, Any]]:
    path = f"/spec/containers/0/command/{index}"
    return [
        {"op": "test", "path": path, "value": f"--{flag}={default}"},
        {"op": "replace", "path": path, "value": f"--{flag}={value}"},
    ]


def _probe(probe: str, host: str, path: str | None = None) -> list[dict[str, Any]]:
    base = f"/spec/containers/0/{probe}/httpGet"
    ops = [{"op": "replace", "path": f"{base}/host", "value": host}]
    if path:
        ops.append({"op": "replace", "path": f"{base}/path", "value": path})
    return ops


def write_patches(directory: Path, ip: str, *, joining: bool) -> None:
    """The node's patches (see the module docstring). `joining`: its etcd command has `--initial-cluster-state`,
    which sorts before `--listen-*`."""
    directory.mkdir(parents=True, exist_ok=True)
    shift = 1 if joining else 0
    etcd = [
        *_flag(10 + shift, "listen-client-urls", f"https://127.0.0.1:2379,https://{ip}:2379", f"https://{ip}:2379"),
        *_flag(11 + shift, "listen-metrics-urls", "http://127.0.0.1:2381", f"http://{ip}:2381"),
        *(op for p in ("livenessProbe", "readinessProbe", "startupProbe") for op in _probe(p, ip, "/health")),
    ]
    apiserver = _flag(10, "etcd-servers", "https://127.0.0.1:2379", f"https://{ip}:2379")
    kcm = [*_flag(3, "bind-address", "127.0.0.1", ip), *_probe("livenessProbe", ip), *_probe("startupProbe", ip)]
    scheduler = [
        *_flag(3, "bind-address", "127.0.0.1", ip),
        *(op for p in ("livenessProbe", "readinessProbe", "startupProbe") for op in _probe(p, ip)),
    ]
    for target, ops in (
        ("etcd", etcd),
        ("kube-apiserver", apiserver),
        ("kube-controller-manager", kcm),
        ("kube-scheduler", scheduler),
    ):
        (directory / f"{target}+json.yaml").write_text(yaml.safe_dump(ops, sort_keys=False))
    kubelet = {"address": ip, "healthzBindAddress": ip}
    (directory / "kubeletconfiguration+merge.yaml").write_text(yaml.safe_dump(kubelet))


def init_config(patches: Path) -> list[dict[str, Any]]:
    """The first node: stacked etcd, controlPlaneEndpoint on its own address, certificates uploaded with a known key."""
    ip = address(1)
    return [
        {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "InitConfiguration",
            "bootstrapTokens": [{"token": TOKEN}],
            "certificateKey": CERTIFICATE_KEY,
            "localAPIEndpoint": {"advertiseAddress": ip, "bindPort": 6443},
            "nodeRegistration": {"name": name(1), "kubeletExtraArgs": [{"name": "node-ip", "value": ip}]},
            "patches": {"directory": str(patches)},
        },
        {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "ClusterConfiguration",
            "kubernetesVersion": KUBERNETES_VERSION,
            "controlPlaneEndpoint": f"{ip}:6443",
            "encryptionAlgorithm": "ECDSA-P256",
            "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
        },
    ]
