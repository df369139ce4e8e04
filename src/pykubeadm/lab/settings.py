"""A lab's settings, `.lab/lab.yaml` (the datastore, topology and runtime `lab up` chose, for an HA lab the load
balancer's address, for a network-namespace lab the host ports of its relay, the registry and its mirrors), and the
HA lab's load balancer; read by every lab command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from pykubeadm.lab.loadbalancer import LOAD_BALANCER_NAME, LoadBalancer
from pykubeadm.lab.nodes import LAB_STATE_DIR
from pykubeadm.util.yamlload import load_yaml

__all__ = ["LabSettings", "lab_settings", "load_balancer", "save_settings", "state_dir"]

_SETTINGS_FILE = "lab.yaml"


@dataclass(frozen=True)
class LabSettings:
    """What `lab up` chose, kept in `.lab/lab.yaml`."""

    datastore: str = "sqlite"
    #: The load balancer's address (HA labs), else "".
    load_balancer: str = ""
    #: "netns" (nodes in network namespaces, lab.network) or "loopback" (nodes on 127.0.10.x in the host's).
    topology: str = "loopback"
    #: A network-namespace lab: the API server's port on the host's 127.0.0.1 (lab.relay).
    api_server_port: int = 0
    #: A network-namespace lab: NodePorts published on the host's 127.0.0.1, as "PORT:NODEPORT".
    publish: tuple[str, ...] = ()
    #: The nodes' container runtime (lab.runtime): "containerd" (each node its own) or "builtin".
    runtime: str = "builtin"
    #: `lab up --registry`: the lab's registry runs (lab.registry).
    registry: bool = False
    #: `--registry-mirror` values, "REGISTRY=URL".
    mirrors: tuple[str, ...] = ()

    @property
    def netns(self) -> bool:
        return self.topology == "netns"

    @property
    def containerd(self) -> bool:
        return self.runtime == "containerd"

    @property
    def ha(self) -> bool:
        return bool(self.load_balancer)

    @property
    def prefix(self) -> str | None:
        """The first three octets of the lab's addresses (from the load balancer's), for an HA lab."""
        return self.load_balancer.rsplit(".", 1)[0] + "." if self.load_balancer else None


def state_dir(lab_dir: Path) -> Path:
    return lab_dir / LAB_STATE_DIR


def lab_settings(lab_dir: Path) -> LabSettings:
    try:
        data = load_yaml((state_dir(lab_dir) / _SETTINGS_FILE).read_text()) or {}
    except OSError:
        return LabSettings()
    return LabSettings(
        str(data.get("datastore") or "sqlite"),
        str(data.get("loadBalancer") or ""),
        str(data.get("topology") or "loopback"),
        int(data.get("apiServerPort") or 0),
        tuple(str(p) for p in data.get("publish") or ()),
        str(data.get("runtime") or "builtin"),
        bool(data.get("registry")),
        tuple(str(m) for m in data.get("registryMirrors") or ()),
    )


def save_settings(lab_dir: Path, s: LabSettings) -> None:
    path = state_dir(lab_dir) / _SETTINGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {"datastore": s.datastore, "loadBalancer": s.load_balancer, "topology": s.topology}
    if s.netns:
        data |= {"apiServerPort": s.api_server_port, "publish": list(s.publish)}
    data |= {"runtime": s.runtime, "registry": s.registry, "registryMirrors": list(s.mirrors)}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def load_balancer(lab_dir: Path, settings: LabSettings | None = None) -> LoadBalancer | None:
    """The HA lab's load balancer, or None for a single-control-plane lab."""
    s = settings or lab_settings(lab_dir)
    if not s.ha:
        return None
    ns = str(state_dir(lab_dir) / "netns" / LOAD_BALANCER_NAME) if s.netns else ""
    return LoadBalancer(state_dir(lab_dir), s.load_balancer, namespaces=ns)
