"""`pykubeadm lab status`: what each node of a lab runs and, for an HA lab, who leads and what the load balancer sees.

Per node: its kubelet (pid file) and its Node's Ready condition. Per control plane of an HA lab: its apiserver's
`/readyz`, its etcd member (leader or follower, from each member's status), whether it holds the
kube-controller-manager and kube-scheduler Leases, and HAProxy's view of its server (`show stat`).

Which node holds a Lease: the Lease names its holder `<hostname>_<uuid>`, the identity kube-controller-manager and
kube-scheduler use; the nodes of a lab share the machine's hostname, so the holder is matched to a node by the
component's own log instead — the node whose container last logged "successfully acquired lease kube-system/NAME"
holds it (an acquisition is only possible once the previous holder's lease expired, so the latest one wins).
"""

from __future__ import annotations

import contextlib
import re
import ssl
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.lab.cluster import admin_kubeconfig, is_ready, lab_nodes
from pykubeadm.lab.network import network_namespace
from pykubeadm.lab.nodes import LAB_STATE_DIR, LabNode
from pykubeadm.lab.settings import lab_settings, load_balancer
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import kubelet_pid
from pykubeadm.util.namespaces import entered

__all__ = ["ControlPlaneStatus", "LabStatus", "NodeStatus", "lab_status", "lease_holder_node"]

#: The timestamp a log line starts with: the components' own "2026-11-25 14:56:30,994" or a CRI log's RFC 3339.
_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)")
#: Components elected through a Lease in kube-system.
LEADER_ELECTED = (c.KUBE_CONTROLLER_MANAGER, c.KUBE_SCHEDULER)


@dataclass(frozen=True)
class NodeStatus:
    node: LabNode
    kubelet_pid: int | None
    ready: str


@dataclass(frozen=True)
class ControlPlaneStatus:
    node: LabNode
    apiserver: str  # "ok" or what /readyz answered
    etcd: str  # leader, follower, down, external
    leads: tuple[str, ...]  # components whose Lease it holds
    load_balancer: str  # HAProxy's status of its server, or "-"


@dataclass
class LabStatus:
    nodes: list[NodeStatus]
    control_planes: list[ControlPlaneStatus] = field(default_factory=list)
    load_balancer: str = ""
    #: The external etcd's members: (name, client URL, leader/follower/down).
    etcd_members: list[tuple[str, str, str]] = field(default_factory=list)


def _ready_map(lab_dir: Path) -> dict[str, str]:
    ready: dict[str, str] = {}
    with contextlib.suppress(Exception):  # status shows what it can
        from lightkube.resources.core_v1 import Node

        from pykubeadm.client import sync_client

        with sync_client(admin_kubeconfig(lab_dir), timeout=3.0) as client:
            for n in client.list(Node):
                if n.metadata is not None and n.metadata.name:
                    ready[n.metadata.name] = "Ready" if is_ready(n) else "NotReady"
    return ready


def _readyz(node: LabNode, ca: Path) -> str:
    ctx = ssl.create_default_context(cafile=str(ca))
    url = f"https://{node.address}:{c.KUBE_APISERVER_PORT}/readyz"
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=2.0) as r:
            return "ok" if r.status == 200 else f"HTTP {r.status}"
    except OSError as err:
        return "down" if isinstance(getattr(err, "reason", None), ConnectionRefusedError) else "not ready"


def _etcd_role(layout: Layout, url: str) -> str:
    """leader, follower or down: the member at `url` asked with `layout`'s etcd client certificate."""
    from pykubeadm.phases import etcdmember

    try:
        st = etcdmember.client(layout, url).status()
    except Exception:
        return "down"
    return "leader" if str(st.get("header", {}).get("member_id")) == str(st.get("leader")) else "follower"


def _etcd_roles(lab_dir: Path, cps: list[LabNode]) -> dict[str, str]:
    """node name → leader/follower/down/reset for stacked members."""
    live = [n for n in cps if Layout(n.root).cert_path(c.ETCD_HEALTHCHECK_CLIENT_CERT_AND_KEY_BASE_NAME).exists()]
    if not live:
        return {}
    return {
        n.name: _etcd_role(Layout(live[0].root), f"https://{n.address}:{c.ETCD_LISTEN_CLIENT_PORT}")
        if n in live
        else "reset"
        for n in cps
    }


def _last_acquired(node: LabNode, component: str) -> str:
    """The timestamp of the node's last 'successfully acquired lease kube-system/<component>' log line, or ''."""
    needle = f"successfully acquired lease {c.NAMESPACE_SYSTEM}/{component}"
    last = ""
    pattern = f"{c.NAMESPACE_SYSTEM}_{component}-{node.name}_*/{component}/*.log"
    for log in Layout(node.root).pod_log_dir.glob(pattern):
        with contextlib.suppress(OSError), open(log, errors="replace") as f:
            for line in f:
                if needle in line and (m := _TIMESTAMP.match(line)):
                    last = max(last, m.group(1).replace("T", " ").replace(",", "."))
    return last


def lease_holder_node(lab_dir: Path, component: str) -> str | None:
    """The name of the control plane holding `component`'s Lease (see the module docstring), or None."""
    best, holder = "", None
    for n in lab_nodes(lab_dir.absolute()):
        if n.control_plane and (t := _last_acquired(n, component)) > best:
            best, holder = t, n.name
    return holder


def lab_status(lab_dir: Path) -> LabStatus:
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    ready = _ready_map(lab_dir)
    status = LabStatus([NodeStatus(n, kubelet_pid(Layout(n.root)), ready.get(n.name, "unknown")) for n in nodes])
    settings = lab_settings(lab_dir)
    lb = load_balancer(lab_dir, settings)
    if lb is None:
        return status
    stats: dict[str, str] = {}
    try:
        stats = {s.name: f"{s.status} ({s.check})" if s.check else s.status for s in lb.show_stat()}
        status.load_balancer = f"HAProxy pid {lb.pid()} on {lb.endpoint}"
    except OSError as err:
        status.load_balancer = f"HAProxy on {lb.endpoint}: stats socket unavailable ({err})"
    cps = [n for n in nodes if n.control_plane]
    if settings.datastore == "external-etcd":
        from pykubeadm.lab.externaletcd import ExternalEtcd

        etcd = ExternalEtcd(lab_dir, settings.prefix)
        layout = Layout(etcd.root(0))
        status.etcd_members = [(n, u, _etcd_role(layout, u)) for n, u in zip(etcd.names, etcd.endpoints, strict=True)]
    live = [n for n in cps if Layout(n.root).admin_kubeconfig.exists()] or cps
    ca = Layout(live[0].root).cert_path(c.CA_CERT_AND_KEY_BASE_NAME)
    # a network-namespace lab's control planes are reached from the lab's own namespace (its bridge)
    with entered(network_namespace(lab_dir / LAB_STATE_DIR) if settings.netns else None):
        roles = _etcd_roles(lab_dir, cps) if settings.datastore == "etcd" else {}
        readyz = {
            n.name: _readyz(n, ca) if Layout(n.root).manifest(c.KUBE_APISERVER).exists() else "reset" for n in cps
        }
    leaders = {comp: lease_holder_node(lab_dir, comp) for comp in LEADER_ELECTED}
    for n in cps:
        status.control_planes.append(
            ControlPlaneStatus(
                n,
                readyz[n.name],
                roles.get(n.name, "external" if settings.datastore == "external-etcd" else "-"),
                tuple(comp for comp, who in leaders.items() if who == n.name),
                stats.get(n.name, "not a server"),
            )
        )
    return status
