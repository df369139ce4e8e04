"""The kubelet's boundaries, read from its imports: the kubelet is its own component (none of its modules imports
kubeadm's phases: the zygote and the kubelet's service control used to import each other through
phases/kubeletservice), and its runtimes sit behind the runtime boundary (`kubelet.runtimeapi`): `cri/` and
`builtin/` never import each other, and only the kubelet's selection points reach into `builtin/`."""

from __future__ import annotations

import ast
from pathlib import Path

import pykubeadm
import pykubeadm.kubelet

PACKAGE = Path(pykubeadm.__file__).parent
KUBELET = Path(pykubeadm.kubelet.__file__).parent
BUILTIN = "pykubeadm.kubelet.builtin"
CRI = "pykubeadm.kubelet.cri"

#: The kubelet's modules that choose or start the built-in runtime: the process entry (fork server, zygote), the
#: wiring (Pod network, component version), the service control (warm kubelets), the Pod managers (which worker runs
#: a Pod) and the runtime selection.
SELECTION_POINTS = {"cli.py", "kubelet.py", "service.py", "pods.py", "staticpods.py", "runtimeroute.py"}
#: Outside the kubelet: the lab (its zygote and reset's preloads), reset (it stops the built-in runtime's containers
#: and cgroups) and containerd's pause image (built from the built-in runtime's pause.c).
OUTSIDE_USERS = {"lab/cluster.py", "lab/down.py", "phases/reset/cleanup_node.py", "containerd/images.py"}


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, and every module named in a string (imported by name: preloads, import_module)."""
    names: set[str] = set()
    text = path.read_text()
    if "pykubeadm." not in text:
        return names
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("pykubeadm."):
            names.add(node.value)
    return names


def _importers(files: list[Path], prefix: str, root: Path) -> dict[str, list[str]]:
    files = [p for p in files if prefix.rsplit(".", 1)[-1] in p.read_text()]  # only these can name it
    found = {
        str(p.relative_to(root)): sorted(n for n in _imports(p) if n == prefix or n.startswith(prefix + "."))
        for p in files
    }
    return {k: v for k, v in found.items() if v}


def test_no_kubelet_module_imports_kubeadms_phases() -> None:
    assert _importers(list(KUBELET.rglob("*.py")), "pykubeadm.phases", KUBELET) == {}


def test_the_cri_runtime_knows_nothing_of_the_builtin_one() -> None:
    assert _importers(list((KUBELET / "cri").rglob("*.py")), BUILTIN, KUBELET) == {}


def test_the_builtin_runtime_knows_nothing_of_the_cri_one() -> None:
    assert _importers(list((KUBELET / "builtin").rglob("*.py")), CRI, KUBELET) == {}


def test_only_the_selection_points_reach_into_the_builtin_runtime() -> None:
    kubelet = [p for p in KUBELET.rglob("*.py") if (KUBELET / "builtin") not in p.parents]
    importers = _importers(kubelet, BUILTIN, KUBELET)
    assert set(importers) - SELECTION_POINTS == set(), importers


def test_outside_the_kubelet_only_the_lab_reset_and_the_pause_image_use_the_builtin_runtime() -> None:
    outside = [p for p in PACKAGE.rglob("*.py") if KUBELET not in p.parents]
    importers = _importers(outside, BUILTIN, PACKAGE)
    assert set(importers) - OUTSIDE_USERS == set(), importers


def test_the_builtin_runtime_keeps_what_is_only_its_own() -> None:
    """The process runtime's machinery is not loose in the kubelet's folder."""
    own = {"runtime", "images", "shim", "sandbox", "native", "forkserver", "zygote", "containerworker", "podworker"}
    own |= {"containment", "confinement", "cgroups", "podnetwork", "netns"}
    loose = {p.stem for p in KUBELET.iterdir() if p.stem in own}
    assert loose == set()
    assert {p.stem for p in (KUBELET / "builtin").iterdir()} >= own
