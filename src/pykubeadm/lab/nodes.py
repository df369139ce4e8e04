"""The nodes of a local lab: names, loopback addresses, root directories, and the kubeadm configuration of each.

Node i is on address 127.0.10.(i+1) with root `<dir>/<name>`, numbered in the order the lab made them; names follow
kind: `lab-control-plane`, `lab-control-plane2` … and `lab-worker`, `lab-worker2` …. Which nodes a lab has is kept in
`.lab/nodes.yaml` (a lab made before that file existed is one control plane, node 0, and workers 1…).

The kubeadm configuration is what a user would write for such a node: the advertise address and `node-ip`, a
`kubeletconfiguration` patch binding the kubelet's ports to the node's address, and, with the SQLite datastore, an
external "etcd" endpoint `sqlite:///var/lib/pykubeadm/state.db` mounted into the kube-apiserver Pod.

An HA lab (several control planes, or an external etcd) has a load balancer as its `controlPlaneEndpoint` and a
node-neutral ClusterConfiguration (a joining control plane downloads it from kubeadm-config, so a node address in it
would follow every node): each control plane carries its own addresses in its patches directory instead, kubeadm's
tool for per-node changes. Static Pod commands are lists of strings, which a strategic merge patch can only replace
whole, so the flag changes are RFC 6902 patches addressing the flag by index (kubeadm sorts flags by name), each
`replace` preceded by a `test` of kubeadm's default value so that a change in the generated flags fails loudly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.lab.trust import control_plane_kubelet_args, kubelet_configuration, secure_cluster_configuration
from pykubeadm.layout import Layout
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "CONTROL_PLANE",
    "LAB_STATE_DIR",
    "SQLITE_STATE_DIR",
    "LabNode",
    "address_prefix",
    "control_plane_join_config",
    "ha_init_config",
    "init_config",
    "join_config",
    "lab_node",
    "load_registry",
    "new_node",
    "save_registry",
    "write_ha_patches",
    "write_node_files",
]

#: Name of the (first) control-plane node.
CONTROL_PLANE = "lab-control-plane"
#: Name prefix of worker nodes.
WORKER = "lab-worker"
#: Lab bookkeeping (configs, patches, logs) inside the lab dir.
LAB_STATE_DIR = ".lab"
#: The lab's list of nodes inside the state dir.
REGISTRY_FILE = "nodes.yaml"
#: Where the built-in apiserver keeps its SQLite datastore (node path, mounted into the apiserver Pod).
SQLITE_STATE_DIR = c.PYKUBEADM_LIB_DIR
SQLITE_URL = f"sqlite://{SQLITE_STATE_DIR}/state.db"
#: First three octets of the lab's loopback addresses.
ADDRESS_PREFIX = "127.0.10."
#: The cluster's name in every lab.
CLUSTER_NAME = "lab"
#: Pod network of every lab.
POD_SUBNET = "10.244.0.0/16"
#: Service network of every lab: inside 127.0.0.0/8, so every ClusterIP (and kube-dns, .10) is a loopback address.
SERVICE_SUBNET = "127.96.0.0/16"


@dataclass(frozen=True)
class LabNode:
    index: int
    name: str
    address: str
    root: Path
    state: Path
    control_plane: bool = False
    #: A network-namespace lab's node (lab.network): its namespaces are in `namespaces`.
    netns: bool = False
    #: The node runs its own containerd (lab.runtime), kubeadm's criSocket.
    containerd: bool = False

    @property
    def namespaces(self) -> str:
        """The directory of the node's namespace files (util.namespaces), or "" for a loopback lab's node."""
        return str(self.state / "netns" / self.name) if self.netns else ""

    @property
    def config_file(self) -> Path:
        return self.state / f"{self.name}.yaml"

    @property
    def patches_dir(self) -> Path:
        return self.state / f"{self.name}-patches"

    @property
    def log_file(self) -> Path:
        return self.state / f"{self.name}.log"


def service_subnet(node_address: str, netns: bool = False) -> str:
    """The lab's Service network, from its address prefix: SERVICE_SUBNET for 127.0.10., another loopback /16 for
    another prefix (127.0.N. → 127.(96 + (N - 10) mod 160).0.0/16), so two labs side by side (whose kube-proxies share
    ClusterIP listeners on one host) never share a ClusterIP such as the `kubernetes` Service's or kube-dns's."""
    if netns:  # a network-namespace lab's nodes have networks of their own: kubeadm's default
        return c.DEFAULT_SERVICE_SUBNET
    third = int(node_address.split(".")[2])
    return f"127.{96 + (third - 10) % 160}.0.0/16"


def address_prefix(prefix: str | None = None) -> str:
    """127.0.10. (or $PYKUBEADM_LAB_ADDRESS_PREFIX, to run two labs side by side)."""
    return prefix or os.environ.get("PYKUBEADM_LAB_ADDRESS_PREFIX") or ADDRESS_PREFIX


def _name(control_plane: bool, ordinal: int) -> str:
    base = CONTROL_PLANE if control_plane else WORKER
    return base if ordinal == 1 else f"{base}{ordinal}"


def _make(
    lab_dir: Path,
    index: int,
    name: str,
    control_plane: bool,
    prefix: str | None,
    netns: bool = False,
    containerd: bool = False,
) -> LabNode:
    if index + 1 > 239:  # .240 and above: the load balancer and external etcd members
        raise ValueError("a lab has at most 239 nodes")
    address = f"{address_prefix(prefix)}{index + 1}"
    return LabNode(index, name, address, lab_dir / name, lab_dir / LAB_STATE_DIR, control_plane, netns, containerd)


def lab_node(lab_dir: Path, index: int, prefix: str | None = None) -> LabNode:
    """Node `index` of a lab with one control plane (node 0) and workers."""
    return _make(lab_dir, index, _name(index == 0, max(index, 1)), index == 0, prefix)


def new_node(
    lab_dir: Path,
    existing: list[LabNode],
    control_plane: bool,
    prefix: str | None = None,
    netns: bool = False,
    containerd: bool = False,
) -> LabNode:
    """The next node of the lab: the next free index and the next name of its role; the first node's address
    `prefix`, topology (`netns`) and runtime (`containerd`) are the lab's, which the others follow."""
    ordinal = 1 + sum(1 for n in existing if n.control_plane == control_plane)
    names = {n.name for n in existing}
    while _name(control_plane, ordinal) in names:
        ordinal += 1
    index = 1 + max((n.index for n in existing), default=-1)
    if existing:  # the lab's, whatever the env says
        prefix, netns = existing[0].address.rsplit(".", 1)[0] + ".", existing[0].netns
        containerd = existing[0].containerd
    return _make(lab_dir, index, _name(control_plane, ordinal), control_plane, prefix, netns, containerd)


def load_registry(lab_dir: Path) -> list[LabNode] | None:
    """The nodes recorded in `.lab/nodes.yaml` (with the addresses they were given), in order; None when the lab has
    no such file."""
    path = lab_dir / LAB_STATE_DIR / REGISTRY_FILE
    try:
        data = load_yaml(path.read_text()) or {}
    except OSError:
        return None
    nodes = []
    for e in data.get("nodes") or []:
        node = _make(
            lab_dir,
            int(e["index"]),
            str(e["name"]),
            bool(e.get("controlPlane")),
            None,
            bool(e.get("netns")),
            bool(e.get("containerd")),
        )
        nodes.append(replace(node, address=str(e.get("address") or node.address)))
    return nodes


def save_registry(lab_dir: Path, nodes: list[LabNode]) -> None:
    path = lab_dir / LAB_STATE_DIR / REGISTRY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {"name": n.name, "index": n.index, "address": n.address, "controlPlane": n.control_plane}
        | ({"netns": True} if n.netns else {})
        | ({"containerd": True} if n.containerd else {})
        for n in nodes
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump({"nodes": entries}, sort_keys=False))
    tmp.replace(path)


def _node_registration(node: LabNode) -> dict[str, Any]:
    """The node's name and kubelet flags (kubeadm writes them to kubeadm-flags.env): its `node-ip`, and in a
    network-namespace lab `cni-conf-dir`, so that its Pods get their own network namespaces and addresses through the
    CNI configuration the network addon writes (and the node is NotReady until it has); on a node with its own
    containerd, `criSocket` is that containerd's socket."""
    args = [{"name": "node-ip", "value": node.address}]
    if node.netns:
        args.append({"name": "cni-conf-dir", "value": c.DEFAULT_CNI_CONF_DIR})
    registration: dict[str, Any] = {"name": node.name, "kubeletExtraArgs": args}
    if node.containerd:  # the node's own containerd (lab.runtime), which kubeadm and the kubelet speak CRI to
        registration["criSocket"] = f"unix://{Layout(node.root).containerd_socket}"
    return registration


def init_config(node: LabNode, token: str, datastore: str) -> list[dict[str, Any]]:
    """InitConfiguration + ClusterConfiguration of the control-plane node of a single-control-plane lab."""
    cluster: dict[str, Any] = {
        "apiVersion": c.KUBEADM_API_VERSION,
        "kind": "ClusterConfiguration",
        "clusterName": CLUSTER_NAME,
        "kubernetesVersion": c.KUBERNETES_VERSION,  # the built-in components' version; no lookup on the internet
        "controlPlaneEndpoint": f"{node.address}:{c.KUBE_APISERVER_PORT}",
        "encryptionAlgorithm": "ECDSA-P256",
        "networking": {"podSubnet": POD_SUBNET, "serviceSubnet": service_subnet(node.address, node.netns)},
    }
    # A loopback node listens on its own address, so labs (and other programs) never collide; a node with a network
    # namespace of its own keeps kubeadm's --bind-address=127.0.0.1.
    bind = [] if node.netns else [{"name": "bind-address", "value": node.address}]
    # $PYKUBEADM_LAB_NODE_MONITOR_GRACE_PERIOD (e.g. 10s): how soon a stopped kubelet's Node turns NotReady (kube: 40s)
    grace = os.environ.get("PYKUBEADM_LAB_NODE_MONITOR_GRACE_PERIOD")
    kcm = bind + ([{"name": "node-monitor-grace-period", "value": grace}] if grace else [])
    if kcm:
        cluster["controllerManager"] = {"extraArgs": kcm}
    if bind:
        cluster["scheduler"] = {"extraArgs": bind}
    if datastore == "etcd" and not node.netns:  # a node of its own network keeps kubeadm's etcd URLs
        client_url = f"https://{node.address}:{c.ETCD_LISTEN_CLIENT_PORT}"
        cluster["etcd"] = {
            "local": {
                "extraArgs": [
                    {"name": "listen-client-urls", "value": client_url},
                    {"name": "advertise-client-urls", "value": client_url},
                    {"name": "listen-metrics-urls", "value": f"http://{node.address}:{c.ETCD_METRICS_PORT}"},
                ]
            }
        }
    if datastore == "sqlite":
        cluster["etcd"] = {"external": {"endpoints": [SQLITE_URL]}}
        cluster["apiServer"] = {
            "extraVolumes": [
                {
                    "name": "pykubeadm-state",
                    "hostPath": SQLITE_STATE_DIR,
                    "mountPath": SQLITE_STATE_DIR,
                    "pathType": "DirectoryOrCreate",
                }
            ]
        }
    registration = _node_registration(node)
    registration["kubeletExtraArgs"] = registration["kubeletExtraArgs"] + control_plane_kubelet_args()
    init = {
        "apiVersion": c.KUBEADM_API_VERSION,
        "kind": "InitConfiguration",
        "bootstrapTokens": [
            {"token": token, "description": "The default bootstrap token generated by 'kubeadm init'."}
        ],
        "localAPIEndpoint": {"advertiseAddress": node.address, "bindPort": c.KUBE_APISERVER_PORT},
        "nodeRegistration": registration,
        "patches": {"directory": str(node.patches_dir)},
    }
    return _with_topology(node, [init, secure_cluster_configuration(cluster), kubelet_configuration()])


#: The API server's extra names in a network-namespace lab: the host reaches it through the lab's relay on 127.0.0.1.
HOST_CERT_SANS = ("127.0.0.1", "localhost")


def _with_topology(node: LabNode, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A network-namespace lab's additions to the init documents, as kind makes them: the API server certificate names
    the host's loopback (`apiServer.certSANs`), and kube-proxy runs in nftables mode (each node has its own network)."""
    if not node.netns:
        return docs
    cluster = docs[1]
    cluster.setdefault("apiServer", {})["certSANs"] = list(HOST_CERT_SANS)
    proxy = {"apiVersion": c.KUBE_PROXY_CONFIG_API_VERSION, "kind": "KubeProxyConfiguration", "mode": "nftables"}
    return [*docs, proxy]


def ha_init_config(
    node: LabNode, token: str, certificate_key: str, endpoint: str, external_etcd: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The first control plane of an HA lab: `controlPlaneEndpoint` is the load balancer, the ClusterConfiguration is
    node-neutral (addresses in the patches), the certificates are uploaded with `certificate_key`; stacked etcd, or
    `etcd.external` (endpoints, caFile, certFile, keyFile) when given."""
    cluster: dict[str, Any] = {
        "apiVersion": c.KUBEADM_API_VERSION,
        "kind": "ClusterConfiguration",
        "clusterName": CLUSTER_NAME,
        "kubernetesVersion": c.KUBERNETES_VERSION,
        "controlPlaneEndpoint": endpoint,
        "encryptionAlgorithm": "ECDSA-P256",
        "networking": {"podSubnet": POD_SUBNET, "serviceSubnet": service_subnet(node.address, node.netns)},
        "etcd": {"external": external_etcd} if external_etcd else {"local": {"dataDir": c.DEFAULT_ETCD_DATA_DIR}},
    }
    init = {
        "apiVersion": c.KUBEADM_API_VERSION,
        "kind": "InitConfiguration",
        "bootstrapTokens": [
            {"token": token, "description": "The default bootstrap token generated by 'kubeadm init'."}
        ],
        "certificateKey": certificate_key,
        "localAPIEndpoint": {"advertiseAddress": node.address, "bindPort": c.KUBE_APISERVER_PORT},
        "nodeRegistration": _node_registration(node),
        "patches": {"directory": str(node.patches_dir)},
    }
    return _with_topology(node, [init, cluster])


def join_config(node: LabNode, endpoint: str, token: str, ca_hash: str) -> list[dict[str, Any]]:
    """JoinConfiguration of a worker: token discovery with the CA pin, as `kubeadm join` flags would give."""
    return [
        {
            "apiVersion": c.KUBEADM_API_VERSION,
            "kind": "JoinConfiguration",
            "discovery": {
                "bootstrapToken": {"apiServerEndpoint": endpoint, "token": token, "caCertHashes": [ca_hash]},
                "tlsBootstrapToken": token,
            },
            "nodeRegistration": _node_registration(node),
            "patches": {"directory": str(node.patches_dir)},
        }
    ]


def control_plane_join_config(
    node: LabNode, endpoint: str, token: str, ca_hash: str, certificate_key: str
) -> list[dict[str, Any]]:
    """JoinConfiguration of a control plane: `join ENDPOINT --token T --discovery-token-ca-cert-hash H --control-plane
    --certificate-key K` (the command `init` prints) with this node's advertise address, name and patches."""
    docs = join_config(node, endpoint, token, ca_hash)
    docs[0]["controlPlane"] = {
        "localAPIEndpoint": {"advertiseAddress": node.address, "bindPort": c.KUBE_APISERVER_PORT},
        "certificateKey": certificate_key,
    }
    return docs


#: Debian's etcd 3.4 serves /health but not the /livez and /readyz that kubeadm 1.33's etcd probes use (etcd 3.5.11+).
_ETCD_34_PROBES = {
    "spec": {
        "containers": [
            {
                "name": "etcd",
                "livenessProbe": {"httpGet": {"path": "/health"}},
                "readinessProbe": {"httpGet": {"path": "/health"}},
                "startupProbe": {"httpGet": {"path": "/health"}},
            }
        ]
    }
}


#: The head of every loopback lab node's kubeadm config file: why it differs from what kubeadm writes on a real node.
LOOPBACK_CONFIG_NOTE = """\
# A loopback lab node: every node of this lab shares the machine's network namespace and has its own loopback
# address, so everything of the node binds that address rather than kubeadm's defaults: the kube-controller-manager
# and kube-scheduler get --bind-address=<node address> (kubeadm: 127.0.0.1, which every node would share; set below,
# or in an HA lab in the node's patches directory), the kubelet its address and healthzBindAddress (the patches
# directory) and --node-ip. The node's name is not the
# machine's host name, so kubeadm gives the kubelet --hostname-override=<node name>, as on any such node.
"""


def write_node_files(node: LabNode, docs: list[dict[str, Any]], datastore: str = "sqlite") -> None:
    """The node's kubeadm config file and its patches: the kubelet's ports on the node's address and, for a local
    etcd, probes that etcd 3.4 answers."""
    node.state.mkdir(parents=True, exist_ok=True)
    from pykubeadm.lab.clusterconfig import apply_cluster_config  # `lab up --config`: its patches and files

    docs = apply_cluster_config(node.state, node.name, node.control_plane, node.root, docs)
    note = "" if node.netns else LOOPBACK_CONFIG_NOTE
    node.config_file.write_text(note + yaml.safe_dump_all(docs, sort_keys=False))
    node.patches_dir.mkdir(parents=True, exist_ok=True)
    if not node.netns:  # a node with a network of its own keeps the kubelet's default addresses
        patch = {"address": node.address, "healthzBindAddress": node.address}
        (node.patches_dir / "kubeletconfiguration+merge.yaml").write_text(yaml.safe_dump(patch))
    if datastore == "etcd" and node.control_plane:
        (node.patches_dir / "etcd.yaml").write_text(yaml.safe_dump(_ETCD_34_PROBES))


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


#: Index of `--bind-address` in kube-controller-manager's command: after allocate-node-cidrs (a podSubnet is set),
#: authentication-kubeconfig and authorization-kubeconfig.
_KCM_BIND_INDEX = 4
#: Index of `--bind-address` in kube-scheduler's command.
_SCHEDULER_BIND_INDEX = 3
#: Index of `--etcd-servers` in kube-apiserver's command with a local etcd.
_APISERVER_ETCD_SERVERS_INDEX = 10


def write_ha_patches(node: LabNode, *, stacked_etcd: bool, joining: bool) -> None:
    """The patches of an HA control plane (see the module docstring): its controller-manager and scheduler on its own
    address; with stacked etcd, its member's client and metrics URLs on its address, probes on /health (etcd 3.4),
    and its apiserver on its own member. `joining`: etcd's command has `--initial-cluster-state`, which sorts before
    `--listen-*`."""
    ip = node.address
    d = node.patches_dir
    d.mkdir(parents=True, exist_ok=True)
    targets: dict[str, list[dict[str, Any]]] = {
        "kube-controller-manager": [
            *_flag(_KCM_BIND_INDEX, "bind-address", "127.0.0.1", ip),
            *_probe("livenessProbe", ip),
            *_probe("startupProbe", ip),
        ],
        "kube-scheduler": [
            *_flag(_SCHEDULER_BIND_INDEX, "bind-address", "127.0.0.1", ip),
            *(op for p in ("livenessProbe", "readinessProbe", "startupProbe") for op in _probe(p, ip)),
        ],
    }
    if stacked_etcd:
        shift = 1 if joining else 0
        targets["etcd"] = [
            *_flag(10 + shift, "listen-client-urls", f"https://127.0.0.1:2379,https://{ip}:2379", f"https://{ip}:2379"),
            *_flag(11 + shift, "listen-metrics-urls", "http://127.0.0.1:2381", f"http://{ip}:2381"),
            *(op for p in ("livenessProbe", "readinessProbe", "startupProbe") for op in _probe(p, ip, "/health")),
        ]
        targets["kube-apiserver"] = _flag(
            _APISERVER_ETCD_SERVERS_INDEX, "etcd-servers", "https://127.0.0.1:2379", f"https://{ip}:2379"
        )
    for target, ops in targets.items():
        (d / f"{target}+json.yaml").write_text(yaml.safe_dump(ops, sort_keys=False))
    kubelet = {"address": ip, "healthzBindAddress": ip}
    (d / "kubeletconfiguration+merge.yaml").write_text(yaml.safe_dump(kubelet))
