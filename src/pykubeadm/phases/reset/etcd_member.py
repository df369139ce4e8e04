"""The local stacked etcd member as reset sees it: read from etcd.yaml, removed from its cluster over the v3 JSON API.

`read_etcd_pod(layout)` extracts what reset needs from the static Pod manifest (data dir, client and peer URLs,
member name). `remove_member(layout, pod)` lists the members through the local endpoint with the healthcheck-client
certificate; when this member is the only one it does nothing (kubeadm's RemoveStackedEtcdMemberFromCluster),
otherwise it removes it, asking the other members first (a member can remove itself, but a peer answers even when
the local one is already unhealthy). The etcd client is `phases.etcdmember`'s, shared with join's etcd-join.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout

if TYPE_CHECKING:
    from etcd3gw.client import Etcd3Client

__all__ = ["EtcdPod", "read_etcd_pod", "remove_member"]

log = logging.getLogger(__name__)

#: Name of the data volume in kubeadm's etcd manifest.
ETCD_DATA_VOLUME = "etcd-data"
#: How long a refused member removal is retried.
REMOVE_TIMEOUT = 20.0


@dataclass(frozen=True)
class EtcdPod:
    """What reset reads from /etc/kubernetes/manifests/etcd.yaml."""

    data_dir: str  # node path (hostPath of the etcd-data volume, else --data-dir)
    name: str = ""
    client_urls: tuple[str, ...] = ()
    peer_urls: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)


def _flags(container: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in [*(container.get("command") or []), *(container.get("args") or [])]:
        if isinstance(arg, str) and arg.startswith("--") and "=" in arg:
            k, v = arg[2:].split("=", 1)
            out[k] = v
    return out


def _urls(value: str) -> tuple[str, ...]:
    return tuple(u.strip() for u in value.split(",") if u.strip())


def read_etcd_pod(layout: Layout) -> EtcdPod | None:
    """The local etcd member's settings, or None when there is no etcd manifest (external etcd or a worker)."""
    path = layout.manifest(c.ETCD)
    if not path.is_file():
        return None
    try:
        pod = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise KubeadmError(f"failed to read the etcd Pod manifest {path}: {err}") from err
    if not isinstance(pod, dict):
        raise KubeadmError(f"invalid etcd pod manifest {path}")
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    flags = _flags(containers[0])
    data_dir = ""
    for vol in spec.get("volumes") or []:
        if vol.get("name") == ETCD_DATA_VOLUME and (vol.get("hostPath") or {}).get("path"):
            data_dir = vol["hostPath"]["path"]
            break
    data_dir = data_dir or flags.get("data-dir", "")
    if not data_dir or not PurePosixPath(data_dir).is_absolute():
        raise KubeadmError(f"invalid etcd pod manifest {path}: no {ETCD_DATA_VOLUME} volume or --data-dir")
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    clients = annotations.get(c.ANNOTATION_ETCD_ADVERTISE_CLIENT_URLS) or flags.get("advertise-client-urls", "")
    return EtcdPod(
        data_dir=data_dir,
        name=flags.get("name", ""),
        client_urls=_urls(clients),
        peer_urls=_urls(flags.get("initial-advertise-peer-urls", "")),
        flags=flags,
    )


def remove_member(layout: Layout, pod: EtcdPod) -> bool:
    """Remove this node's member from the etcd cluster; False when it is the only member (nothing to do)."""
    from pykubeadm.phases.etcdmember import call as _call  # the etcd client (~0.3 s of imports): only when needed

    local = list(pod.client_urls)
    if not local:
        raise KubeadmError("the etcd Pod manifest has no advertise client URL")
    members: list[dict[str, Any]] = _call(layout, local, "list etcd members", lambda cl: cl.members())
    ours = [
        m
        for m in members
        if set(m.get("peerURLs") or ()) & set(pod.peer_urls) or (pod.name and m.get("name") == pod.name)
    ]
    if not ours:
        raise KubeadmError(f"etcd member with peer URL(s) {','.join(pod.peer_urls)} not found in the etcd cluster")
    if len(members) == 1:
        log.info("[etcd] This is the only remaining etcd member in the etcd cluster, skip removing it")
        return False
    member_id = ours[0]["ID"]
    others = [u for m in members if m is not ours[0] for u in (m.get("clientURLs") or ())]
    log.info("[etcd] removing etcd member: %s, id: %s", ",".join(pod.peer_urls), member_id)

    def remove(cl: Etcd3Client) -> Any:
        return cl.post(cl.get_url("/cluster/member/remove"), json={"ID": member_id})

    # etcd refuses to remove a member while its peers have been connected only briefly ("unhealthy cluster"):
    # retry like kubeadm's RemoveMember, but not for its full two minutes.
    deadline = time.monotonic() + REMOVE_TIMEOUT
    while True:
        try:
            _call(layout, [*others, *local], "remove the etcd member", remove)
            return True
        except KubeadmError as err:
            if "member not found" in str(err):
                return True
            if time.monotonic() >= deadline:
                raise
        time.sleep(c.ETCD_API_CALL_RETRY_INTERVAL.total_seconds())
