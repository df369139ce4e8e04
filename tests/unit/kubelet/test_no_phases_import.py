"""The kubelet is its own component: none of its modules imports kubeadm's phases (the zygote and the kubelet's
service control used to import each other through phases/kubeletservice)."""

from __future__ import annotations

import ast
from pathlib import Path

import pykubeadm.kubelet

KUBELET = Path(pykubeadm.kubelet.__file__).parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_no_kubelet_module_imports_kubeadms_phases() -> None:
    offenders = {
        str(path.relative_to(KUBELET)): sorted(n for n in _imports(path) if n.startswith("pykubeadm.phases"))
        for path in KUBELET.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
