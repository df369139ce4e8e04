"""Local multi-node clusters (`pykubeadm lab up|join|status|down`): real `init` and `join` runs, one root per node.

Every node is a directory under the lab dir and a loopback address; `up` runs `pykubeadm init` for the control plane
and `pykubeadm join` (token discovery with the CA pin) for each worker in parallel, as separate processes — exactly the
commands a user would type — then waits until every Node is Ready. `down` runs `pykubeadm reset -f` on every node and
empties the lab dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm import constants as c
from pykubeadm.bootstrap.token import generate_token
from pykubeadm.errors import KubeadmError
from pykubeadm.lab.nodes import (
    CONTROL_PLANE,
    LAB_STATE_DIR,
    LabNode,
    init_config,
    join_config,
    lab_node,
    write_node_files,
)
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import kubelet_pid
from pykubeadm.pki.certs import try_load_cert
from pykubeadm.pki.keys import public_key_pin

__all__ = ["NodeStatus", "lab_down", "lab_join", "lab_nodes", "lab_status", "lab_up"]

Out = Callable[[str], None]
_READY_TIMEOUT = 180.0


def _pykubeadm(node: LabNode, *args: str) -> list[str]:
    return [sys.executable, "-m", "pykubeadm", "--root-dir", str(node.root), *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(c.ROOT_DIR_ENV, None)
    return env


def lab_nodes(lab_dir: Path) -> list[LabNode]:
    """The nodes that exist in a lab dir, control plane first."""
    nodes = []
    i = 0
    while True:
        node = lab_node(lab_dir, i)
        if not node.root.exists() and not node.config_file.exists():
            break
        nodes.append(node)
        i += 1
    return nodes


def _admin_kubeconfig(lab_dir: Path) -> Path:
    return Layout(lab_node(lab_dir, 0).root).admin_kubeconfig


def _ca_hash(cp: LabNode) -> str:
    layout = Layout(cp.root)
    return public_key_pin(try_load_cert(layout.pki_dir, c.CA_CERT_AND_KEY_BASE_NAME).public_key())  # type: ignore[arg-type]


def _token(cp: LabNode) -> str:
    import yaml

    docs = list(yaml.safe_load_all(cp.config_file.read_text()))
    return str(docs[0]["bootstrapTokens"][0]["token"])


def _start_join(node: LabNode, endpoint: str, token: str, ca_hash: str) -> subprocess.Popen[bytes]:
    write_node_files(node, join_config(node, endpoint, token, ca_hash))
    log = open(node.log_file, "wb")  # noqa: SIM115 - owned by the child
    try:
        return subprocess.Popen(
            _pykubeadm(node, "join", "--config", str(node.config_file)),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_env(),
        )
    finally:
        log.close()


def _wait_joins(procs: dict[str, tuple[LabNode, subprocess.Popen[bytes]]], out: Out) -> None:
    failed = []
    for name, (node, proc) in procs.items():
        if proc.wait() != 0:
            failed.append(name)
            tail = node.log_file.read_text(errors="replace").splitlines()[-15:]
            out(f"[lab] join of {name} failed:\n  " + "\n  ".join(tail))
        else:
            out(f"[lab] {name} ({node.address}) joined the cluster")
    if failed:
        raise KubeadmError(
            f"lab: joining {', '.join(failed)} failed; logs are in {next(iter(procs.values()))[0].state}"
        )


def _import_api_client() -> None:
    """Import what `wait_ready` needs (a few hundred ms of imports) while the child processes work."""
    import lightkube.resources.core_v1  # noqa: F401

    import pykubeadm.client  # noqa: F401


def _is_ready(node: Any) -> bool:
    """The Node's Ready condition is True."""
    return any(cd.type == "Ready" and cd.status == "True" for cd in (node.status.conditions or []))


def wait_ready(lab_dir: Path, names: list[str], out: Out, timeout: float = _READY_TIMEOUT) -> None:
    """Poll the API until every named Node is Ready."""
    from lightkube.resources.core_v1 import Node

    from pykubeadm.client import sync_client

    deadline = time.monotonic() + timeout
    last = ""
    with sync_client(_admin_kubeconfig(lab_dir)) as client:
        while True:
            try:
                ready = {n.metadata.name for n in client.list(Node) if _is_ready(n)}
                missing = [n for n in names if n not in ready]
                if not missing:
                    return
                last = f"not Ready yet: {', '.join(missing)}"
            except Exception as err:  # the API may still be settling
                last = str(err)
            if time.monotonic() > deadline:
                raise KubeadmError(f"lab: nodes did not become Ready within {timeout:g}s ({last})")
            time.sleep(0.05)


def lab_up(lab_dir: Path, workers: int, datastore: str, out: Out = print) -> list[LabNode]:
    """Create the lab: init the control plane, join `workers` workers, wait for every Node to be Ready."""
    if datastore not in ("sqlite", "etcd"):
        raise KubeadmError(f'invalid --datastore "{datastore}": use sqlite or etcd')
    if workers < 0:
        raise KubeadmError("--workers must be 0 or more")
    lab_dir = lab_dir.absolute()
    if lab_nodes(lab_dir):
        raise KubeadmError(f"a lab already exists in {lab_dir}: run 'pykubeadm lab down --dir {lab_dir}' first")
    lab_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    cp = lab_node(lab_dir, 0)
    token = generate_token()
    write_node_files(cp, init_config(cp, token, datastore), datastore)
    out(f"[lab] Creating {CONTROL_PLANE} on {cp.address} (root {cp.root}, datastore {datastore})")
    res = subprocess.run(
        _pykubeadm(cp, "init", "--config", str(cp.config_file)), env=_env(), stdin=subprocess.DEVNULL, check=False
    )
    if res.returncode != 0:
        raise KubeadmError(f"lab: 'pykubeadm init' on {CONTROL_PLANE} failed (exit {res.returncode})")
    nodes = [cp]
    if workers:
        endpoint = f"{cp.address}:{c.KUBE_APISERVER_PORT}"
        ca_hash = _ca_hash(cp)
        procs = {}
        for i in range(1, workers + 1):
            node = lab_node(lab_dir, i)
            out(f"[lab] Joining {node.name} on {node.address}")
            procs[node.name] = (node, _start_join(node, endpoint, token, ca_hash))
            nodes.append(node)
        _import_api_client()  # while the joins run
        _wait_joins(procs, out)
    wait_ready(lab_dir, [n.name for n in nodes], out)
    out(f"[lab] {len(nodes)} node(s) Ready after {time.monotonic() - start:.1f}s")
    out(_look_around(lab_dir))
    return nodes


def lab_join(lab_dir: Path, out: Out = print) -> LabNode:
    """Add one worker to an existing lab."""
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    if not nodes:
        raise KubeadmError(f"no lab in {lab_dir}: run 'pykubeadm lab up --dir {lab_dir}' first")
    cp = nodes[0]
    node = lab_node(lab_dir, len(nodes))
    out(f"[lab] Joining {node.name} on {node.address}")
    proc = _start_join(node, f"{cp.address}:{c.KUBE_APISERVER_PORT}", _token(cp), _ca_hash(cp))
    _import_api_client()  # while the join runs
    _wait_joins({node.name: (node, proc)}, out)
    wait_ready(lab_dir, [node.name], out)
    return node


@dataclass(frozen=True)
class NodeStatus:
    node: LabNode
    kubelet_pid: int | None
    ready: str


def lab_status(lab_dir: Path) -> list[NodeStatus]:
    lab_dir = lab_dir.absolute()
    ready: dict[str, str] = {}
    try:
        from lightkube.resources.core_v1 import Node

        from pykubeadm.client import sync_client

        with sync_client(_admin_kubeconfig(lab_dir), timeout=3.0) as client:
            for n in client.list(Node):
                ready[n.metadata.name] = "Ready" if _is_ready(n) else "NotReady"
    except Exception:  # noqa: S110 - status shows what it can
        pass
    return [NodeStatus(n, kubelet_pid(Layout(n.root)), ready.get(n.name, "unknown")) for n in lab_nodes(lab_dir)]


def lab_down(lab_dir: Path, out: Out = print) -> None:
    """`reset -f` every node (workers first, in parallel), then empty the lab dir."""
    lab_dir = lab_dir.absolute()
    nodes = lab_nodes(lab_dir)
    workers = [n for n in nodes if not n.control_plane and n.root.exists()]
    procs = [
        (
            n,
            subprocess.Popen(
                _pykubeadm(n, "reset", "-f"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env()
            ),
        )
        for n in workers
    ]
    for n, p in procs:
        _, err = p.communicate()
        out(f"[lab] reset {n.name}" + ("" if p.returncode == 0 else f" failed: {err.decode(errors='replace')[-500:]}"))
    for n in nodes:
        if n.control_plane and n.root.exists():
            res = subprocess.run(_pykubeadm(n, "reset", "-f"), capture_output=True, text=True, env=_env(), check=False)
            out(f"[lab] reset {n.name}" + ("" if res.returncode == 0 else f" failed: {res.stderr[-500:]}"))
    if lab_dir.exists():
        for child in lab_dir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
    out(f"[lab] {lab_dir} is empty")


def _look_around(lab_dir: Path) -> str:
    admin = _admin_kubeconfig(lab_dir)
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
