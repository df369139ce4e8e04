"""`lab up --config FILE`: a lab described in the manner of kind's `Cluster` file, so a lab can be a cluster built
with `extraArgs`/`extraVolumes` (encryption at rest, audit, OIDC, ...).

    kind: Cluster
    apiVersion: kind.x-k8s.io/v1alpha4          # or pykubeadm.dev/v1alpha1
    kubeadmConfigPatches:                        # every node
    - |
      kind: ClusterConfiguration
      apiServer:
        extraArgs:
        - {name: encryption-provider-config, value: /etc/kubernetes/enc/enc.yaml}
    nodes:
    - role: control-plane
      kubeadmConfigPatches: [...]                # this node only
      extraMounts:                               # files placed in the node before its init/join
      - {hostPath: ./enc.yaml, containerPath: /etc/kubernetes/enc/enc.yaml}
    - role: worker

A patch names the `kind` of the generated document it applies to (InitConfiguration, ClusterConfiguration,
JoinConfiguration, KubeletConfiguration, KubeProxyConfiguration) and is merged into it: maps key by key, lists of
`{name: ...}` items (extraArgs, extraVolumes, extraEnvs) item by name, other lists replaced. A KubeletConfiguration or
KubeProxyConfiguration patch on a node that has none becomes that document (init only: a join takes the cluster's).
The lab keeps the parsed file in its state dir; `write_node_files` applies it to every node's configuration.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "CLUSTER_CONFIG_FILE",
    "LabClusterConfig",
    "apply_cluster_config",
    "load_cluster_config",
    "merge",
    "save_cluster_config",
]

#: The parsed file, in the lab's state dir.
CLUSTER_CONFIG_FILE = "cluster-config.yaml"
_API_VERSIONS = ("kind.x-k8s.io/v1alpha4", "pykubeadm.dev/v1alpha1")
_ROLES = ("control-plane", "worker")
_STANDALONE = {
    "KubeletConfiguration": "kubelet.config.k8s.io/v1beta1",
    "KubeProxyConfiguration": "kubeproxy.config.k8s.io/v1alpha1",
}


@dataclass
class LabClusterConfig:
    patches: list[dict[str, Any]] = field(default_factory=list)
    #: role → per-node entries in order: {"patches": [...], "mounts": [(host path, node path), ...]}
    nodes: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {r: [] for r in _ROLES})

    def count(self, role: str) -> int:
        return len(self.nodes[role])

    def to_doc(self) -> dict[str, Any]:
        return {"patches": self.patches, "nodes": self.nodes}


def _err(path: Path, msg: str) -> KubeadmError:
    return KubeadmError(f"lab config {path}: {msg}")


def _patches(path: Path, where: str, raw: Any) -> list[dict[str, Any]]:
    out = []
    for i, p in enumerate(raw or []):
        try:
            doc = load_yaml(p) if isinstance(p, str) else p
        except yaml.YAMLError as e:
            raise _err(path, f"{where}[{i}]: not YAML: {e}") from None
        if not isinstance(doc, dict) or not doc.get("kind"):
            raise _err(path, f"{where}[{i}]: a patch is a YAML object with the kind of the document it patches")
        out.append(doc)
    return out


def load_cluster_config(path: Path) -> LabClusterConfig:
    try:
        doc = load_yaml(path.read_text())
    except OSError as e:
        raise _err(path, e.strerror or str(e)) from None
    except yaml.YAMLError as e:
        raise _err(path, f"not YAML: {e}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "Cluster" or doc.get("apiVersion") not in _API_VERSIONS:
        raise _err(path, f"want kind Cluster and apiVersion {' or '.join(_API_VERSIONS)}")
    unknown = sorted(set(doc) - {"kind", "apiVersion", "name", "nodes", "kubeadmConfigPatches"})
    if unknown:
        raise _err(path, f'unknown field "{unknown[0]}" (this lab supports nodes and kubeadmConfigPatches)')
    cfg = LabClusterConfig(_patches(path, "kubeadmConfigPatches", doc.get("kubeadmConfigPatches")))
    nodes = doc.get("nodes") or [{"role": "control-plane"}]
    for i, n in enumerate(nodes):
        role = (n or {}).get("role", "control-plane")
        if role not in _ROLES:
            raise _err(path, f'nodes[{i}].role: Unsupported value: "{role}": supported values: {", ".join(_ROLES)}')
        unknown = sorted(set(n) - {"role", "kubeadmConfigPatches", "extraMounts"})
        if unknown:
            raise _err(path, f'nodes[{i}]: unknown field "{unknown[0]}"')
        mounts = []
        for j, m in enumerate(n.get("extraMounts") or []):
            host, node_path = (m or {}).get("hostPath"), (m or {}).get("containerPath")
            if not host or not node_path or not str(node_path).startswith("/"):
                raise _err(path, f"nodes[{i}].extraMounts[{j}]: hostPath and an absolute containerPath are required")
            src = (path.parent / host).resolve()
            if not src.exists():
                raise _err(path, f"nodes[{i}].extraMounts[{j}].hostPath: {src} does not exist")
            mounts.append([str(src), str(node_path)])
        cfg.nodes[role].append(
            {
                "patches": _patches(path, f"nodes[{i}].kubeadmConfigPatches", n.get("kubeadmConfigPatches")),
                "mounts": mounts,
            }
        )
    if not cfg.nodes["control-plane"]:
        raise _err(path, "nodes: at least one node has role control-plane")
    return cfg


def merge(base: Any, patch: Any) -> Any:
    """`patch` merged into `base` (see the module docstring); neither is changed."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(x, dict) and "name" in x for x in [*base, *patch])
    ):
        items = {x["name"]: x for x in base}
        for x in patch:
            items[x["name"]] = merge(items[x["name"]], x) if x["name"] in items else x
        return list(items.values())
    return patch


def _ordinal(name: str, control_plane: bool) -> int:
    base = "lab-control-plane" if control_plane else "lab-worker"
    rest = name[len(base) :] if name.startswith(base) else ""
    return int(rest) - 1 if rest.isdigit() else 0


def apply_cluster_config(
    state_dir: Path, node_name: str, control_plane: bool, node_root: Path, docs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The node's kubeadm documents with the lab's patches (all nodes', then this node's) merged in, after placing the
    node's extraMounts under its root. No lab config: `docs` unchanged."""
    saved = state_dir / CLUSTER_CONFIG_FILE
    if not saved.exists():
        return docs
    cfg = load_yaml(saved.read_text())
    entries = cfg["nodes"]["control-plane" if control_plane else "worker"]
    i = _ordinal(node_name, control_plane)
    entry = entries[i] if i < len(entries) else {"patches": [], "mounts": []}
    for src, dst in entry["mounts"]:
        target = node_root / dst.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(src).is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target)
    out = [dict(d) for d in docs]
    initializing = any(d.get("kind") == "InitConfiguration" for d in out)
    for p in [*cfg["patches"], *entry["patches"]]:
        kind = p["kind"]
        matched = False
        for k, d in enumerate(out):
            if d.get("kind") == kind:
                out[k] = merge(d, {f: v for f, v in p.items() if f not in ("kind", "apiVersion")})
                matched = True
        if not matched and kind in _STANDALONE and initializing:
            out.append({"apiVersion": p.get("apiVersion", _STANDALONE[kind]), **p})
        elif not matched and kind not in (
            *_STANDALONE,
            "InitConfiguration",
            "ClusterConfiguration",
            "JoinConfiguration",
        ):
            raise KubeadmError(
                f"lab config: a patch for kind {kind!r} matches no document of the kubeadm configuration"
            )
    return out


def save_cluster_config(state_dir: Path, cfg: LabClusterConfig) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / CLUSTER_CONFIG_FILE).write_text(yaml.safe_dump(cfg.to_doc(), sort_keys=False))
