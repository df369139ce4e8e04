"""Local multi-node clusters (`pykubeadm lab up|join|down`): real `init` and `join` runs, one root per node.

Every node is a directory under the lab dir and a loopback address; `up` runs `pykubeadm init` on the first control
plane and `pykubeadm join` (token discovery with the CA pin) for each other node, as separate processes — exactly the
commands a user would type — then waits until every Node is Ready. `down` (lab.down) resets every node at once,
stops the lab's own processes (load balancer, external etcd) by their pid files and empties the lab dir.

An HA lab (`--control-planes M` > 1, or an external etcd) follows kubeadm's HA guide: HAProxy on its own loopback
address is the controlPlaneEndpoint (lab.loadbalancer), the first control plane is made by `init --upload-certs`, the
others by `join --control-plane --certificate-key` one at a time (etcd admits one learner at a time), each added to
the load balancer once it has joined. A network-namespace lab's Pods get their own addresses: its kubelets run with
`--cni-conf-dir` and the lab applies the kindnet addon (lab.addons) as soon as `init` has made the joins' token, while
init applies its own addons and the nodes join. The lab's settings are in `.lab/lab.yaml`, its nodes in
`.lab/nodes.yaml`, the CA's public key pin for the joins in `.lab/ca-cert-hash` (beside the digest of the CA
certificate it belongs to).

The joins are forked rather than exec'd, their modules imported once: `up` forks them from the lab process
(lab.forkcli), `lab join` has the lab's kubelet zygote fork it (kubelet.builtin.zygote), each with its node's warm kubelet.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pykubeadm import constants as c
from pykubeadm.bootstrap.token import generate_token
from pykubeadm.errors import KubeadmError
from pykubeadm.lab import forkcli, network, topology
from pykubeadm.lab import registry as lab_registry
from pykubeadm.lab import runtime as lab_runtime
from pykubeadm.lab.clusterconfig import CLUSTER_CONFIG_FILE, LabClusterConfig, save_cluster_config
from pykubeadm.lab.loadbalancer import LB_OCTET, LOAD_BALANCER_NAME, LoadBalancer, haproxy_binary
from pykubeadm.lab.nodes import (
    LAB_STATE_DIR,
    POD_SUBNET,
    LabNode,
    address_prefix,
    control_plane_join_config,
    ha_init_config,
    init_config,
    join_config,
    lab_node,
    load_registry,
    new_node,
    save_registry,
    write_ha_patches,
    write_node_files,
)
from pykubeadm.lab.settings import LabSettings, lab_settings, load_balancer, save_settings, state_dir
from pykubeadm.lab.topology import host_kubeconfig
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import (
    discard_prewarmed_kubelets,
    prewarm_kubelet,
    release_prewarmed_kubelets,
)
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.namespaces import nsenter_prefix
from pykubeadm.util.yamlload import load_yaml, load_yaml_all

if TYPE_CHECKING:
    from lightkube import Client

    from pykubeadm.kubelet.builtin.zygote import Command

__all__ = [
    "DATASTORES",
    "admin_kubeconfig",
    "child_env",
    "find_node",
    "is_ready",
    "lab_join",
    "lab_nodes",
    "lab_up",
    "parse_image_flags",
    "pykubeadm_command",
    "start_runtime",
    "update_load_balancer",
    "wait_ready",
    "zygote_socket",
]

Out = Callable[[str], None]
_READY_TIMEOUT = 180.0
#: How often wait_ready looks at the joins while they run, and lists the Nodes then.
_CHILD_POLL = 0.02
_POLL_WHILE_JOINING = 0.25
#: --datastore values: the embedded SQLite store, stacked etcd members, a separate 3-member etcd cluster.
DATASTORES = ("sqlite", "etcd", "external-etcd")
_CERTIFICATE_KEY_FILE = "certificate-key"
#: The cluster CA's public key pin, with the digest of the CA certificate it belongs to (see _ca_hash).
_CA_HASH_FILE = "ca-cert-hash"


def pykubeadm_command(node: LabNode, *args: str) -> list[str]:
    """`pykubeadm --root-dir ROOT ARGS...` run as node `node` (in its namespaces, for a network-namespace lab)."""
    prefix = nsenter_prefix(node.namespaces or None)
    return [*prefix, sys.executable, "-m", "pykubeadm", "--root-dir", str(node.root), *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(c.ROOT_DIR_ENV, None)
    return env


def lab_nodes(lab_dir: Path) -> list[LabNode]:
    """The nodes of a lab dir in the order they were made (the first control plane first)."""
    registered = load_registry(lab_dir)
    if registered is not None:
        return registered
    nodes = []  # a lab from before .lab/nodes.yaml: node 0 the control plane, then workers
    i = 0
    while True:
        node = lab_node(lab_dir, i)
        if not node.root.exists() and not node.config_file.exists():
            break
        nodes.append(node)
        i += 1
    return nodes


def find_node(lab_dir: Path, name: str) -> LabNode:
    nodes = lab_nodes(lab_dir)
    for n in nodes:
        if n.name == name:
            return n
    known = ", ".join(n.name for n in nodes) or "none"
    raise KubeadmError(f'lab: no node "{name}" in {lab_dir} (nodes: {known})')


def admin_kubeconfig(lab_dir: Path) -> Path:
    """The kubeconfig with which the host reaches the lab: a network-namespace lab's `<lab>/kubeconfig` (its relay on
    127.0.0.1); else an admin.conf of the lab, the first control plane's that has one (in an HA lab each points at
    the load balancer)."""
    if lab_settings(lab_dir).netns:
        return host_kubeconfig(lab_dir)
    nodes = lab_nodes(lab_dir)
    for n in nodes:
        path = Layout(n.root).admin_kubeconfig
        if n.control_plane and path.exists():
            return path
    return Layout((nodes[0] if nodes else lab_node(lab_dir, 0)).root).admin_kubeconfig


#: The init phase after which a worker's join can succeed: the token, its RBAC rules and cluster-info exist.
_JOINABLE_AFTER_PHASE = "bootstrap-token"


def _ca_hash(lab_dir: Path) -> str:
    """The CA's public key pin for `--discovery-token-ca-cert-hash`. Kept in the lab's state dir beside the SHA-256 of
    the CA certificate it was computed from, so that `lab join` does not load cryptography (~50 ms, on its critical
    path) while the CA is unchanged."""
    import hashlib

    for n in lab_nodes(lab_dir):
        path = Layout(n.root).pki_dir / f"{c.CA_CERT_AND_KEY_BASE_NAME}.crt"
        if not n.control_plane or not path.exists():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        cache = state_dir(lab_dir) / _CA_HASH_FILE
        with contextlib.suppress(OSError, ValueError):
            cached_digest, pin = cache.read_text().split()
            if cached_digest == digest and pin.startswith("sha256:"):
                return pin
        computed = _compute_ca_hash(path.parent)
        if computed is not None:
            with contextlib.suppress(OSError):  # only a cache: computed again next time
                write_file_atomic(cache, f"{digest} {computed}\n", 0o644)
            return computed
    raise KubeadmError(f"lab: no control plane in {lab_dir} has a CA certificate left")


def _compute_ca_hash(pki_dir: Path) -> str | None:
    from pykubeadm.pki.certs import try_load_cert
    from pykubeadm.pki.keys import public_key_pin

    cert = try_load_cert(pki_dir, c.CA_CERT_AND_KEY_BASE_NAME)
    return public_key_pin(cert.public_key()) if cert is not None else None


def _token(lab_dir: Path) -> str:
    first = next(n for n in lab_nodes(lab_dir) if n.control_plane)
    docs = list(load_yaml_all(first.config_file.read_text()))
    return str(docs[0]["bootstrapTokens"][0]["token"])


def _start(node: LabNode, *args: str) -> forkcli.Child:
    """`pykubeadm --root-dir NODE ARGS...` with its output in the node's log file, run as the node."""
    return forkcli.start(node.root, list(args), node.log_file, namespaces=node.namespaces)


def _start_join(node: LabNode, endpoint: str, token: str, ca_hash: str) -> forkcli.Child:
    write_node_files(node, join_config(node, endpoint, token, ca_hash))
    # --v=1: the join's [discovery] steps as timestamped log lines (lab timeline reads them)
    return _start(node, "--v=1", "join", "--config", str(node.config_file))


Joins = dict[str, tuple[LabNode, "forkcli.Child | Command"]]


def _reap_joins(procs: Joins, failed: list[LabNode], out: Out, block: bool) -> None:
    """Report each join that has ended (every one with `block`), taking it out of `procs`; failures go to `failed`."""
    for name, (node, proc) in list(procs.items()):
        code = proc.wait() if block else proc.poll()
        if code is None:
            continue
        del procs[name]
        if code != 0:
            failed.append(node)
            tail = node.log_file.read_text(errors="replace").splitlines()[-15:]
            out(f"[lab] join of {name} failed:\n  " + "\n  ".join(tail))
        else:
            out(f"[lab] {name} ({node.address}) joined the cluster")
    if failed and not procs:
        names = ", ".join(n.name for n in failed)
        raise KubeadmError(f"lab: joining {names} failed; logs are in {failed[0].state}")


def _wait_joins(procs: Joins, out: Out) -> None:
    _reap_joins(dict(procs), [], out, block=True)


def zygote_socket(lab_dir: Path) -> Path:
    """The lab's kubelet zygote (kubelet.builtin.zygote): it forks each node's warm kubelet."""
    from pykubeadm.kubelet.builtin.zygote import SOCKET_NAME

    return state_dir(lab_dir) / SOCKET_NAME


def _prepare_joins(lab_dir: Path, nodes: list[LabNode]) -> None:
    """Before the joins (while init works, or at once for `lab join`): have each node's kubelet warm (forked by the
    lab's zygote, or a new interpreter) and import what `join` runs, so that the forked joins begin with both (see
    lab.forkcli); and have the zygote import the add-on components it forks for the kubelets. Nothing when the lab
    process cannot fork: then every join is a new interpreter that warms its own kubelet."""
    if not forkcli.can_fork():
        return
    from pykubeadm.kubelet.builtin import zygote

    for node in nodes:
        prewarm_kubelet(Layout(root=node.root), zygote=zygote_socket(lab_dir), namespaces=node.namespaces)
    zygote.preload(zygote_socket(lab_dir), zygote.ADDON_MODULES)  # it forks the add-ons' containers
    forkcli.preload_join()


def _import_api_client() -> None:
    """Import what `wait_ready` needs (a few hundred ms of imports) while the child processes work."""
    import lightkube.resources.core_v1  # noqa: F401

    import pykubeadm.client  # noqa: F401


def is_ready(node: Any) -> bool:
    """The Node's Ready condition is True."""
    return any(cd.type == "Ready" and cd.status == "True" for cd in (node.status.conditions or []))


def _apply_addons(lab_dir: Path, addons: tuple[str, ...], out: Out) -> None:
    """Apply each addon's objects with the admin kubeconfig (as a user applies metrics-server's components.yaml)."""
    if "metrics-server" in addons:
        from pykubeadm.client import sync_client
        from pykubeadm.metricsserver import manifest

        with sync_client(admin_kubeconfig(lab_dir)) as client:
            manifest.apply(client)
        out("[lab] Applied addon: metrics-server")


def wait_ready(
    lab_dir: Path, names: list[str], out: Out, timeout: float = _READY_TIMEOUT, joins: Joins | None = None
) -> None:
    """Wait until every join in `joins` has ended (each reported as it ends; a failed one is an error once the others
    have ended) and every named Node is Ready. While joins run it looks at them often and lists the Nodes now and
    then: the first request (a new TLS connection, lazy imports) is then out of the way when they end. Then it watches
    each Node that is not Ready yet until it is (a network-namespace lab's Nodes wait for their Pod network)."""
    from lightkube.resources.core_v1 import Node

    from pykubeadm.client import sync_client, wait_for_sync

    pending = dict(joins or {})
    failed: list[LabNode] = []
    deadline = time.monotonic() + timeout
    last = ""
    with sync_client(admin_kubeconfig(lab_dir)) as client:
        ready: set[str | None] = set()
        next_poll = 0.0
        while pending:
            _reap_joins(pending, failed, out, block=False)
            if time.monotonic() >= next_poll or not pending:  # a join just ended: look at once
                try:
                    ready = {n.metadata.name for n in client.list(Node) if n.metadata is not None and is_ready(n)}
                    missing = [n for n in names if n not in ready]
                    last = f"not Ready yet: {', '.join(missing)}" if missing else "joins still running"
                except Exception as err:  # the API may still be settling
                    last = str(err)
                next_poll = time.monotonic() + _POLL_WHILE_JOINING
            if time.monotonic() > deadline:
                raise KubeadmError(f"lab: nodes did not become Ready within {timeout:g}s ({last})")
            if pending:
                time.sleep(_CHILD_POLL)
        for name in names:
            if name in ready:
                continue
            try:
                wait_for_sync(client, Node, name, is_ready, timeout=max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                raise KubeadmError(
                    f"lab: nodes did not become Ready within {timeout:g}s (not Ready yet: {name})"
                ) from None


def parse_image_flags(flags: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """`--image IMAGE=PROGRAM` values → the image map (PROGRAM split like a shell command line)."""
    import shlex

    out: dict[str, list[str]] = {}
    for flag in flags:
        image, sep, program = flag.partition("=")
        argv = shlex.split(program) if sep else []
        if not image.strip() or not argv:
            raise KubeadmError(f'invalid --image "{flag}": use IMAGE=PROGRAM, e.g. --image nginx=/usr/sbin/nginx')
        out[image.strip()] = argv
    return out


def write_image_map(node: LabNode, image_map: dict[str, list[str]]) -> None:
    """The node's image map file (the built-in kubelet's image → program map), when there is one to write."""
    if not image_map:
        return
    path = Layout(node.root).image_map_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(image_map, default_flow_style=False))


def _image_map_of(node: LabNode) -> dict[str, list[str]]:
    try:
        data = load_yaml(Layout(node.root).image_map_file.read_text())
    except OSError:
        return {}
    return data if isinstance(data, dict) else {}


def _check_up_args(workers: int, datastore: str, control_planes: int, out: Out) -> None:
    if datastore not in DATASTORES:
        raise KubeadmError(f'invalid --datastore "{datastore}": use sqlite, etcd or external-etcd')
    if workers < 0:
        raise KubeadmError("--workers must be 0 or more")
    if control_planes < 1:
        raise KubeadmError("--control-planes must be 1 or more")
    if control_planes > 1 and datastore == "sqlite":
        raise KubeadmError(
            f"--control-planes {control_planes} needs --datastore etcd (stacked: an etcd member on every control "
            "plane) or --datastore external-etcd (a separate etcd cluster): the sqlite datastore is one file on one "
            "control plane"
        )
    if control_planes % 2 == 0:
        out(
            f"[lab] WARNING: {control_planes} control planes: an etcd cluster of an even size tolerates no more "
            f"failures than one member fewer ({control_planes // 2 - 1}); an odd number (3, 5) is recommended"
        )


_REGISTRY_NEEDS_CONTAINERD = (
    "--registry and --registry-mirror configure the nodes' containerd: use --runtime containerd (the netns "
    "topology, as root)"
)


def lab_up(
    lab_dir: Path,
    workers: int,
    datastore: str,
    out: Out = print,
    image_map: dict[str, list[str]] | None = None,
    control_planes: int = 1,
    with_load_balancer: bool | None = None,
    kubernetes_version: str | None = None,
    cluster_config: LabClusterConfig | None = None,
    topology_name: str | None = None,
    publish: list[tuple[int, int]] | None = None,
    addons: tuple[str, ...] = (),
    runtime_name: str | None = None,
    registry: bool = False,
    registry_mirrors: tuple[str, ...] = (),
) -> list[LabNode]:
    """Create the lab: init the first control plane, join the other control planes and `workers` workers, wait for
    every Node to be Ready. `with_load_balancer` (default: with more than one control plane or an external etcd)
    makes an HA lab, which can take more control planes later. `topology_name`: "netns" or "loopback" (default: netns
    where it can be made, lab.topology); `publish`: (host port, NodePort) pairs a netns lab publishes on 127.0.0.1;
    `addons` (metrics-server) are applied once init is done. `runtime_name`: "containerd" or "builtin" (default:
    containerd where it can run, lab.runtime); `registry`: the lab's registry on 127.0.0.1:5001, `registry_mirrors`:
    "REGISTRY=URL" (lab.registry)."""
    _check_up_args(workers, datastore, control_planes, out)
    lab_registry.parse_mirrors(registry_mirrors)  # a clear error before anything is made
    if (registry or registry_mirrors) and (runtime_name == lab_runtime.BUILTIN or topology_name == topology.LOOPBACK):
        raise KubeadmError(f"lab: {_REGISTRY_NEEDS_CONTAINERD}")
    lab_dir = lab_dir.absolute()
    if lab_nodes(lab_dir):
        raise KubeadmError(f"a lab already exists in {lab_dir}: run 'pykubeadm lab down --dir {lab_dir}' first")
    ha = control_planes > 1 or datastore == "external-etcd" if with_load_balancer is None else with_load_balancer
    if ha and datastore == "sqlite":
        raise KubeadmError("--load-balancer needs --datastore etcd or external-etcd (sqlite is one control plane)")
    if ha:
        haproxy_binary()  # a clear error before anything is made
    lab_dir.mkdir(parents=True, exist_ok=True)
    state = lab_dir / LAB_STATE_DIR
    (state / CLUSTER_CONFIG_FILE).unlink(missing_ok=True)  # a previous lab's
    if cluster_config is not None:
        save_cluster_config(state, cluster_config)
    start = time.monotonic()
    if datastore == "external-etcd" and topology_name is None:
        out("[lab] Topology: loopback, because the external etcd cluster runs in the host's network namespace")
        topology_name = topology.LOOPBACK
    elif datastore == "external-etcd" and topology_name == topology.NETNS:
        raise KubeadmError(
            "lab: --datastore external-etcd runs in the host's network namespace: use --topology loopback"
        )
    chosen = topology.choose(topology_name, state_dir(lab_dir), out)
    netns = chosen == topology.NETNS
    if publish and not netns:
        raise KubeadmError("lab: --publish needs the netns topology (a loopback lab's NodePorts are on 127.0.10.x)")
    prefix = network.NODE_PREFIX if netns else address_prefix()
    runtime = lab_runtime.choose(runtime_name, netns, out)
    containerd = runtime == lab_runtime.CONTAINERD
    if (registry or registry_mirrors) and not containerd:
        topology.remove(state_dir(lab_dir), lambda _: None)  # nothing of the lab stays
        raise KubeadmError(f"lab: {_REGISTRY_NEEDS_CONTAINERD}")
    settings = LabSettings(
        datastore,
        f"{prefix}{LB_OCTET}" if ha else "",
        chosen,
        runtime=runtime,
        registry=registry,
        mirrors=tuple(registry_mirrors),
    )
    save_settings(lab_dir, settings)
    nodes: list[LabNode] = []
    cp = new_node(lab_dir, nodes, control_plane=True, prefix=prefix, netns=netns, containerd=containerd)
    nodes.append(cp)
    save_registry(lab_dir, nodes)
    topology.make_nodes(state_dir(lab_dir), [cp])
    # The containerds start while the lab does its other work; each node's is waited for before its init or join.
    registry_hosts = lab_registry.hosts(registry, registry_mirrors)
    starting = lab_runtime.start(state_dir(lab_dir), [cp] if containerd else [], registry_hosts)
    if registry:
        out(
            f"[lab] Starting the registry on {lab_registry.lab_address()}, published on 127.0.0.1:{lab_registry.HOST_PORT}"
        )
        lab_registry.start(state_dir(lab_dir))
    token = generate_token()
    write_image_map(cp, image_map or {})
    lb = load_balancer(lab_dir, settings)
    if lb is not None and lb.namespaces:
        topology.make_load_balancer(state_dir(lab_dir), LOAD_BALANCER_NAME, lb.address)
    if netns:  # the relay, publishing the API server (and NodePorts) on the host's 127.0.0.1
        target = lb.endpoint if lb is not None else f"{cp.address}:{c.KUBE_APISERVER_PORT}"
        services = [(lab_registry.HOST_PORT, lab_registry.lab_address(), "the lab's registry")] if registry else []
        port = topology.publish(state_dir(lab_dir), target, publish or [], cp.address, services)
        settings = replace(settings, api_server_port=port, publish=tuple(f"{h}:{n}" for h, n in publish or []))
        save_settings(lab_dir, settings)
    if lb is None:
        docs = init_config(cp, token, datastore)
        if kubernetes_version:
            docs[1]["kubernetesVersion"] = kubernetes_version
        write_node_files(cp, docs, datastore)
        endpoint = f"{cp.address}:{c.KUBE_APISERVER_PORT}"
    else:
        endpoint = lb.endpoint
        _init_ha_first(lab_dir, cp, token, settings, lb, out, kubernetes_version)
    out(f"[lab] Creating {cp.name} on {cp.address} (root {cp.root}, datastore {datastore}, endpoint {endpoint})")
    args = ["init", "--config", str(cp.config_file)] + (["--upload-certs"] if ha else [])
    if forkcli.can_fork():  # the kubelets' zygote, for this lab's life: the first node's warm kubelet comes from it
        from pykubeadm.kubelet.builtin import zygote

        zygote.start(zygote_socket(lab_dir))
        if lb is None:
            prewarm_kubelet(
                Layout(root=cp.root), control_plane=True, zygote=zygote_socket(lab_dir), namespaces=cp.namespaces
            )
        forkcli.preload(forkcli.INIT_MODULES)
    # Workers can join once init has made the bootstrap token and the cluster-info ConfigMap (its bootstrap-token
    # phase): they start then, while init applies the addons.
    starting.wait_serving([cp.name])
    init = forkcli.start(cp.root, args, notify_after=_JOINABLE_AFTER_PHASE, namespaces=cp.namespaces)
    planned = list(nodes)
    joining = []
    for _ in range(workers):  # the names and addresses the workers will have, registered once init got that far
        joining.append(new_node(lab_dir, planned, control_plane=False))
        planned.append(joining[-1])
    topology.make_nodes(state_dir(lab_dir), joining)  # while init works
    starting_joins = lab_runtime.start(state_dir(lab_dir), joining if containerd else [], registry_hosts)
    _prepare_joins(lab_dir, joining)

    def init_failed() -> KubeadmError:
        return KubeadmError(f"lab: 'pykubeadm {' '.join(args)}' on {cp.name} failed (exit {init.wait()})")

    if not init.wait_phase():
        discard_prewarmed_kubelets()
        raise init_failed()
    ca_hash = _ca_hash(lab_dir)
    starting_joins.wait_serving([n.name for n in joining])
    procs: Joins = {}
    for node in joining:  # workers join while the control planes join one after another
        nodes.append(node)
        save_registry(lab_dir, nodes)
        write_image_map(node, image_map or {})
        procs[node.name] = (node, _start_join(node, endpoint, token, ca_hash))
    release_prewarmed_kubelets()  # each forked join has its own
    held: list[str] = []  # the lab's lines, said once init's output has ended
    try:
        _install_early(lab_dir, cp, endpoint, settings.api_server_port, netns, held.append)
    except BaseException:
        init.wait()  # nothing of the lab goes on behind the error
        for _, proc in procs.values():
            proc.wait()
        raise
    init_code = init.wait()  # init's output ends before the lab's own
    for node, _ in procs.values():
        out(f"[lab] Joining {node.name} on {node.address}")
    for line in held:
        out(line)
    if init_code != 0:
        _wait_joins(procs, out)
        raise init_failed()
    if registry:
        _publish_registry(lab_dir, out)
    _apply_addons(lab_dir, addons, out)
    starting.wait()  # every node's containerd has kubeadm's pause image
    starting_joins.wait()
    for _ in range(control_planes - 1):
        node = new_node(lab_dir, nodes, control_plane=True)
        nodes.append(node)
        save_registry(lab_dir, nodes)
        topology.make_nodes(state_dir(lab_dir), [node])
        start_runtime(lab_dir, [node])
        write_image_map(node, image_map or {})
        _join_control_plane(lab_dir, node, settings, token, ca_hash, out)
    wait_ready(lab_dir, [n.name for n in nodes], out, joins=procs)
    out(f"[lab] {len(nodes)} node(s) Ready after {time.monotonic() - start:.1f}s")
    from pykubeadm.kubelet.builtin import zygote

    zygote.preload(zygote_socket(lab_dir), forkcli.join_modules())  # `lab join` finds join imported
    out(_look_around(lab_dir))
    return nodes


def _install_early(lab_dir: Path, cp: LabNode, endpoint: str, api_server_port: int, netns: bool, out: Out) -> None:
    """Once init has registered and marked its Node and made the joins' token (the joins start then), while init
    applies its own addons and the nodes join: the host's kubeconfig, a network-namespace lab's Pod network, and the
    local-path storage addon. The Pod network first: every node is NotReady until its kindnetd has written the node's
    conflist, which a node that registers later gets from the DaemonSet at once (kind applies kindnet right after init;
    the lab does not wait for init's last phases, which are not on the Pod network's path)."""
    from pykubeadm.client import sync_client
    from pykubeadm.lab.addons import install_addons

    topology.write_host_kubeconfig(lab_dir, Layout(cp.root).admin_kubeconfig, api_server_port)
    with sync_client(admin_kubeconfig(lab_dir)) as client:
        if netns:
            _install_pod_network(client, cp, endpoint, out)
        install_addons(client, out)


def _install_pod_network(client: Client, cp: LabNode, endpoint: str, out: Out) -> None:
    """A network-namespace lab's Pod network, as kubeadm's output asks ("You should now deploy a pod network to the
    cluster"): say what the first control plane reports until then, then apply kindnet."""
    from pykubeadm.lab.addons import install_network_addon, ready_condition

    out(f"[lab] {cp.name} before the Pod network: {ready_condition(client, cp.name)}")
    install_network_addon(client, POD_SUBNET, endpoint, out)


def _publish_registry(lab_dir: Path, out: Out) -> None:
    """The registry answers on the host's 127.0.0.1:5001; the cluster says so in kind's ConfigMap (KEP-1755)."""
    from pykubeadm.lab.addons import apply_objects

    lab_registry.wait(state_dir(lab_dir))
    apply_objects(admin_kubeconfig(lab_dir), [lab_registry.local_registry_hosting()])
    out(
        f"[lab] The registry answers on 127.0.0.1:{lab_registry.HOST_PORT}: push to "
        f"{lab_registry.REGISTRY_HOST}/NAME, run localhost:5001/NAME (ConfigMap kube-public/"
        f"{lab_registry.CONFIGMAP_NAME})"
    )


def start_runtime(lab_dir: Path, nodes: list[LabNode]) -> None:
    """Start the containerd of each node of a containerd lab (with the lab's registry hosts) and wait until they
    serve; nothing for a builtin lab's nodes."""
    wanted = [n for n in nodes if n.containerd]
    if not wanted:
        return
    s = lab_settings(lab_dir)
    lab_runtime.start(state_dir(lab_dir), wanted, lab_registry.hosts(s.registry, s.mirrors)).wait()


def _certificate_key(lab_dir: Path) -> str:
    return (state_dir(lab_dir) / _CERTIFICATE_KEY_FILE).read_text().strip()


def _init_ha_first(
    lab_dir: Path, cp: LabNode, token: str, s: LabSettings, lb: LoadBalancer, out: Out, version: str | None
) -> None:
    """The first control plane's config and patches, the certificate key, the external etcd, HAProxy with it."""
    from pykubeadm.phases.copycerts import generate_certificate_key

    key = generate_certificate_key()
    write_file_atomic(state_dir(lab_dir) / _CERTIFICATE_KEY_FILE, f"{key}\n".encode(), 0o600)
    external = None
    if s.datastore == "external-etcd":
        from pykubeadm.lab.externaletcd import ExternalEtcd

        etcd = ExternalEtcd(lab_dir, s.prefix)
        out(f"[lab] Starting an external etcd cluster of 3 members on {', '.join(etcd.addresses)}")
        etcd.create(out)
        external = etcd.install_client_files(Layout(cp.root))
    docs = ha_init_config(cp, token, key, lb.endpoint, external)
    if version:
        docs[1]["kubernetesVersion"] = version
    write_node_files(cp, docs)
    write_ha_patches(cp, stacked_etcd=s.datastore == "etcd", joining=False)
    out(f"[lab] Starting the load balancer (HAProxy) on {lb.endpoint}")
    lb.apply({cp.name: cp.address})


def _join_control_plane(lab_dir: Path, node: LabNode, s: LabSettings, token: str, ca_hash: str, out: Out) -> None:
    """`join --control-plane --certificate-key` for `node`, then the load balancer takes it in."""
    lb = load_balancer(lab_dir, s)
    assert lb is not None
    docs = control_plane_join_config(node, lb.endpoint, token, ca_hash, _certificate_key(lab_dir))
    write_node_files(node, docs)
    write_ha_patches(node, stacked_etcd=s.datastore == "etcd", joining=True)
    out(f"[lab] Joining {node.name} on {node.address} as a control plane")
    proc = _start(node, "--v=1", "join", "--config", str(node.config_file))
    _wait_joins({node.name: (node, proc)}, out)
    update_load_balancer(lab_dir)


def _ensure_uploaded_certs(lab_dir: Path, out: Out) -> None:
    """The kubeadm-certs Secret lives two hours (its owner token's TTL); past that, do what kubeadm's message says:
    `init phase upload-certs --upload-certs` on a control plane (with the first one's config, so the lab's key)."""
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.client import sync_client

    with sync_client(admin_kubeconfig(lab_dir)) as client:
        try:
            client.get(Secret, c.KUBEADM_CERTS_SECRET, namespace=c.NAMESPACE_SYSTEM)
            return
        except ApiError as err:
            if err.status.code != 404:
                raise
    cps = [n for n in lab_nodes(lab_dir) if n.control_plane]
    live = next(n for n in cps if Layout(n.root).admin_kubeconfig.exists())
    out(f'[lab] The "{c.KUBEADM_CERTS_SECRET}" Secret has expired: uploading the certificates again from {live.name}')
    args = ["init", "phase", "upload-certs", "--upload-certs", "--config", str(cps[0].config_file)]
    res = subprocess.run(pykubeadm_command(live, *args), capture_output=True, text=True, env=child_env(), check=False)
    if res.returncode != 0:
        raise KubeadmError(f"lab: 'pykubeadm {' '.join(args)}' on {live.name} failed: {res.stderr[-1500:]}")


def update_load_balancer(lab_dir: Path) -> None:
    """Point the load balancer at every control plane that has joined (and has not been reset)."""
    lb = load_balancer(lab_dir)
    if lb is None:
        return
    servers = {
        n.name: n.address
        for n in lab_nodes(lab_dir)
        if n.control_plane and Layout(n.root).manifest(c.KUBE_APISERVER).exists()
    }
    lb.apply(servers)


def lab_join(lab_dir: Path, out: Out = print, control_plane: bool = False, name: str | None = None) -> LabNode:
    """Add a worker (or a control plane) to an existing lab; `name`: join a node of the lab again after its reset."""
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    if not nodes:
        raise KubeadmError(f"no lab in {lab_dir}: run 'pykubeadm lab up --dir {lab_dir}' first")
    s = lab_settings(lab_dir)
    if name is not None:
        node = find_node(lab_dir, name)
        if Layout(node.root).kubelet_kubeconfig.exists():
            raise KubeadmError(f"lab: {name} is a member of the cluster: 'pykubeadm lab reset {name}' first")
        if control_plane and not node.control_plane:
            raise KubeadmError(f"lab: {name} is a worker; it joins again as one (without --control-plane)")
        control_plane = node.control_plane
    if control_plane and not s.ha:
        raise KubeadmError(
            "lab: this lab has no load balancer, so no stable controlPlaneEndpoint for a second control plane: "
            "create it with 'pykubeadm lab up --control-planes 3 --datastore etcd' (or --load-balancer)"
        )
    if name is None:
        node = new_node(lab_dir, nodes, control_plane)
        nodes.append(node)
        save_registry(lab_dir, nodes)
    topology.make_nodes(state_dir(lab_dir), [node])  # a new node's namespaces; a node joined again keeps its own
    start_runtime(lab_dir, [node])
    first = next(n for n in nodes if n.control_plane)
    if not control_plane:
        _join_worker(lab_dir, node, first, s, out)
        return node
    write_image_map(node, _image_map_of(first))
    _import_api_client()
    _ensure_uploaded_certs(lab_dir, out)
    _join_control_plane(lab_dir, node, s, _token(lab_dir), _ca_hash(lab_dir), out)
    wait_ready(lab_dir, [node.name], out)
    return node


def _join_worker(lab_dir: Path, node: LabNode, first: LabNode, s: LabSettings, out: Out) -> None:
    """A worker's `join`, then wait for its Node to be Ready. The lab's zygote forks the join when the lab has one
    (kubelet.builtin.zygote: it has imported what `join` runs, and forks the node's warm kubelet for it); else this process
    does (lab.forkcli), or starts it as a new interpreter."""
    from pykubeadm.kubelet.builtin.zygote import Command

    write_image_map(node, _image_map_of(first))
    lb = load_balancer(lab_dir, s)
    endpoint = lb.endpoint if lb else f"{first.address}:{c.KUBE_APISERVER_PORT}"
    write_node_files(node, join_config(node, endpoint, _token(lab_dir), _ca_hash(lab_dir)))
    args = ["--v=1", "join", "--config", str(node.config_file)]  # --v=1: timestamped [discovery] lines (timeline)
    root_args = ["--root-dir", str(node.root), *args]
    forked = Command.request(
        zygote_socket(lab_dir), root_args, node.log_file, forkcli.join_modules(), str(node.root), node.namespaces
    )
    proc: forkcli.Child | Command | None = forked
    if proc is None:
        _prepare_joins(lab_dir, [node])
        proc = _start(node, *args)
        release_prewarmed_kubelets()
    try:
        out(f"[lab] Joining {node.name} on {node.address}")
        _import_api_client()  # while the join runs
        wait_ready(lab_dir, [node.name], out, joins={node.name: (node, proc)})
    except BaseException:
        if forked is not None:  # the zygote's join is in a session of its own; this process's child is in its group
            forked.terminate()
        raise


def _look_around(lab_dir: Path) -> str:
    admin = host_kubeconfig(lab_dir)
    return (
        "\nLook around:\n"
        f"  export KUBECONFIG={admin}\n"
        "  kubectl get nodes -o wide\n"
        "  kubectl get csr\n"
        "  kubectl -n kube-system get pods,configmaps,secrets\n"
        f"  pykubeadm lab status --dir {lab_dir}\n"
        f"  pykubeadm lab down --dir {lab_dir}\n"
        f"Node logs: {lab_dir / LAB_STATE_DIR}, kubelet logs: {Layout(Path('<node>')).kubelet_log_file}"
    )
