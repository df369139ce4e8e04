"""The local etcd static Pod (kubeadm's phases/etcd/local.go, v1.33 with etcd 3.5).

Flags are kubeadm's defaults merged with `etcd.local.extraArgs`; probes go to the metrics listener (`http://127.0.0.1:2381`
or the first `listen-metrics-urls` the user gave). `initial_cluster` (name, peer URL) pairs make a joining member
(`--initial-cluster-state=existing`); empty means a new single-member cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pykubeadm import constants as c
from pykubeadm.api.images import etcd_image_for
from pykubeadm.manifests.args import Arg, arguments_to_command, get_arg_value, set_arg_value
from pykubeadm.manifests.inputs import ClusterInputs, LocalEtcdInputs
from pykubeadm.manifests.pod import (
    Mount,
    component_pod,
    liveness_probe,
    merge_env,
    readiness_probe,
    resources,
    startup_probe,
)
from pykubeadm.util.endpoint import join_host_port, loopback_for

__all__ = ["build_etcd_pod", "client_url", "etcd_command", "etcd_probe_endpoint", "peer_url"]

ETCD_DATA_VOLUME = "etcd-data"
ETCD_CERTS_VOLUME = "etcd-certs"


def client_url(address: str) -> str:
    return f"https://{join_host_port(address, c.ETCD_LISTEN_CLIENT_PORT)}"


def peer_url(address: str) -> str:
    return f"https://{join_host_port(address, c.ETCD_LISTEN_PEER_PORT)}"


def _local(inputs: ClusterInputs) -> LocalEtcdInputs:
    if inputs.local_etcd is None:
        raise ValueError("etcd static pod manifest cannot be generated for cluster using external etcd")
    return inputs.local_etcd


def etcd_command(inputs: ClusterInputs, initial_cluster: Sequence[tuple[str, str]] = ()) -> list[str]:
    local = _local(inputs)
    d = inputs.certificates_dir.rstrip("/")
    adv = inputs.advertise_address
    loopback = loopback_for(adv)
    args = [
        Arg("name", inputs.node_name),
        Arg("experimental-initial-corrupt-check", "true"),
        Arg("listen-client-urls", f"{client_url(loopback)},{client_url(adv)}"),
        Arg("advertise-client-urls", client_url(adv)),
        Arg("listen-peer-urls", peer_url(adv)),
        Arg("initial-advertise-peer-urls", peer_url(adv)),
        Arg("data-dir", local.data_dir),
        Arg("cert-file", f"{d}/etcd/server.crt"),
        Arg("key-file", f"{d}/etcd/server.key"),
        Arg("trusted-ca-file", f"{d}/etcd/ca.crt"),
        Arg("client-cert-auth", "true"),
        Arg("peer-cert-file", f"{d}/etcd/peer.crt"),
        Arg("peer-key-file", f"{d}/etcd/peer.key"),
        Arg("peer-trusted-ca-file", f"{d}/etcd/ca.crt"),
        Arg("peer-client-cert-auth", "true"),
        Arg("snapshot-count", "10000"),
        Arg("listen-metrics-urls", f"http://{join_host_port(loopback, c.ETCD_METRICS_PORT)}"),
        Arg("experimental-watch-progress-notify-interval", "5s"),
    ]
    if not initial_cluster:
        args = set_arg_value(args, "initial-cluster", f"{inputs.node_name}={peer_url(adv)}")
    else:
        args = set_arg_value(args, "initial-cluster", ",".join(f"{n}={u}" for n, u in initial_cluster))
        args = set_arg_value(args, "initial-cluster-state", "existing")
    return [c.ETCD, *arguments_to_command(args, local.extra_args)]


def etcd_probe_endpoint(inputs: ClusterInputs) -> tuple[str, int, str]:
    """(host, port, scheme) of the etcd probes: the metrics listener."""
    host = loopback_for(inputs.advertise_address)
    port, scheme = c.ETCD_METRICS_PORT, "HTTP"
    user = get_arg_value(inputs.local_etcd.extra_args if inputs.local_etcd else (), "listen-metrics-urls")
    if user is None:
        return host, port, scheme
    try:
        u = urlsplit(user.split(",")[0])
        u_port = u.port
    except ValueError:
        return host, port, scheme
    if u.scheme == "https":
        scheme = "HTTPS"
    return (u.hostname or host), (u_port or port), scheme


def build_etcd_pod(inputs: ClusterInputs, initial_cluster: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    local = _local(inputs)
    certs_dir = f"{inputs.certificates_dir.rstrip('/')}/etcd"
    mounts = [
        Mount(ETCD_DATA_VOLUME, local.data_dir, local.data_dir, False),
        Mount(ETCD_CERTS_VOLUME, certs_dir, certs_dir, False),
    ]
    host, port, scheme = etcd_probe_endpoint(inputs)
    container: dict[str, Any] = {
        "command": etcd_command(inputs, initial_cluster),
        "image": etcd_image_for(
            inputs.image_repository, inputs.kubernetes_version, local.image_repository, local.image_tag
        ),
        "imagePullPolicy": "IfNotPresent",
        "livenessProbe": liveness_probe(host, "/livez", port, scheme),
        "name": c.ETCD,
        "readinessProbe": readiness_probe(host, "/readyz", port, scheme),
        "resources": resources("100m", "100Mi"),
        "startupProbe": startup_probe(host, "/readyz", port, scheme, inputs.health_check_timeout),
        "env": merge_env(local.extra_envs),
        "volumeMounts": [m.volume_mount() for m in mounts],  # kubeadm's order: data, then certificates
    }
    annotations = {c.ANNOTATION_ETCD_ADVERTISE_CLIENT_URLS: client_url(inputs.advertise_address)}
    return component_pod(container, mounts, annotations)
