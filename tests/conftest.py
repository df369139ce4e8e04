"""Shared fixtures: running the real `pykubeadm` command in a subprocess against a node root under tmp_path."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

OFFLINE_SKIP = (
    "wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,addon,"
    "show-join-command"
)


def run_pykubeadm(
    *args: str,
    root: Path | None = None,
    check: bool = False,
    env: dict | None = None,
    input: str | None = None,
    netns: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """The real `pykubeadm ARGS` in a subprocess; `netns`: a command prefix (the `own_netns` fixture's) it runs under."""
    cmd = [*netns, sys.executable, "-m", "pykubeadm"]
    if root is not None:
        cmd += ["--root-dir", str(root)]
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYKUBEADM_ROOT_DIR", None)
    res = subprocess.run([*cmd, *args], capture_output=True, text=True, env=full_env, input=input, timeout=120)
    if check and res.returncode != 0:
        raise AssertionError(f"pykubeadm {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


#: Tests that share something of the host besides their own free ports, by the test paths (a module or a directory,
#: relative to the repo) that share it. Under pytest-xdist (`-n 2 --dist loadgroup`, as scripts/test.sh runs the suite)
#: each set is one unit of work: one worker runs its modules one after another, never two of them at once.
#: Every other module is a unit of its own (its module-scoped fixtures start once, on one worker), so a new module
#: runs beside the others: it must use free ports (`free_port()`), or loopback addresses no other module uses (labs:
#: an address prefix of their own, 127.0.N., which also gives them their own Service network), or be listed here.
SHARED_HOST_RESOURCES: dict[str, tuple[str, ...]] = {
    # The e2e labs run in two streams, this set and "e2e-labs" below, one lab at a time in each (a lab is some twenty
    # processes: two streams keep at most two on a 2-core runner, as one beside the other worker's integration tests
    # did). This stream: labs on address prefixes of their own (127.0.N.: nodes, their Service network, HAProxy on
    # .250, an external etcd on .241-243), nothing of the host shared with the other stream. Modules that share a
    # prefix stay in one stream: metrics and the external-etcd HA lab (127.0.36.), the modules on the shared lab
    # (127.0.58., tests/e2e/conftest.py: one lab per process). A module on a prefix of its own may move between the
    # streams to even them out (their lengths: `--durations`). Checked before "e2e-labs", which takes the rest of e2e.
    "e2e-labs-2": (
        "tests/e2e/test_exec_interactive.py",  # the shared lab
        "tests/e2e/test_pods.py",  # the shared lab
        "tests/e2e/test_services.py",  # the shared lab
        "tests/e2e/test_storage.py",  # the shared lab
        "tests/e2e/test_ha_external_etcd.py",  # 127.0.36.
        "tests/e2e/test_metrics.py",  # 127.0.36.
        "tests/e2e/test_ha_upgrade.py",  # 127.0.38. (the HA upgrade and the per-node upgrade procedure)
    ),
    # The other e2e labs, one at a time: the netns labs (nodes in namespaces of their own) and those on prefixes of
    # their own not in "e2e-labs-2" (admission 127.0.39., HA 127.0.33., workloads 127.0.16.). With them:
    # what shares 127.0.10.x with the default lab (test_lab, test_pods): its nodes 127.0.10.1 and up (kubelets
    # :10250/:10248, kube-proxies, etcd) and its Service network 127.96.0.0/16 (ClusterIP listeners with SO_REUSEPORT);
    # the external etcd of `lab stop` uses 127.0.10.241-243. (reset's node of test_reset_processes, kubeadm's default
    # control plane on 127.0.10.1 and 127.0.0.1, runs in a network namespace of its own: WILDCARD_KUBELET_MODULES.)
    "e2e-labs": (
        "tests/e2e/",
        "tests/integration/reset/test_remove_etcd_member.py",
        "tests/integration/reset/test_reset_cluster_config.py",
        "tests/integration/ha/test_lab_stop_servers.py",
    ),
    # Kubelets on fixed addresses (127.0.10.11-41, 127.0.0.1 with --node-ip); two modules share 127.0.10.31.
    "kubelets-127.0.10.1x": ("tests/integration/kubelet/",),
    # kube-proxies of nodes 127.0.10.201-203 whose ClusterIP listeners (SO_REUSEPORT) are on a /16 the module picks.
    "kube-proxy": ("tests/integration/proxy/",),
    # Nodes on 127.0.19.x; SIGSTOPped and clock-shifted processes.
    "faults-127.0.19": ("tests/integration/faults/",),
}


def xdist_unit(nodeid: str) -> str:
    """The unit of work of a test under `--dist loadgroup`: its set in SHARED_HOST_RESOURCES, else its module."""
    path = nodeid.split("::", 1)[0]
    for group, members in SHARED_HOST_RESOURCES.items():
        if any(path == m or (m.endswith("/") and path.startswith(m)) for m in members):
            return group
    return path


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` by SHARED_HOST_RESOURCES (and modules), with the units in collection order (e2e labs first,
    the many small unit-test modules last, which evens out the end). xdist's own loadgroup reads `xdist_group` marks
    into node ids, which pytest 9 no longer lets it rewrite, so the grouping is done here, from the node ids."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class SharedResourceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    config.option.loadscopereorder = False
    return SharedResourceScheduling(config, log)


#: Modules whose built-in kubelets listen on every address (an `init` without `node-ip`: :10250 on 0.0.0.0, healthz on
#: 127.0.0.1:10248, as on a real node) and whose control planes bind kubeadm's default ports on 127.0.0.1: they run those
#: nodes in a network namespace of their own (`own_netns`), where they share no address or port with the host's
#: kubelets, labs and preflight checks. Where none can be made (not root), such a module runs while no integration or e2e
#: module runs on another worker (`_kubelet_port_lock`).
WILDCARD_KUBELET_MODULES = (
    "tests/unit/cli/test_init.py",
    "tests/unit/cli/test_import_cost.py",
    "tests/unit/manifests/test_manifests_cli.py",
    "tests/integration/reset/test_reset_processes.py",
)


def own_netns_available() -> bool:
    """A network namespace of a test's own can be made and entered (root, util-linux's unshare and nsenter)."""
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ("unshare", "nsenter", "ip"))


@pytest.fixture
def own_netns() -> Iterator[list[str]]:
    """A command prefix that runs a command in a network namespace of this test's own, only its loopback (up) in it:
    the node a command starts there (a kubelet on 0.0.0.0:10250, etcd and the control plane on kubeadm's default ports)
    binds nothing of the host's. The namespace lives while a holder process (stopped at teardown) or the node's
    processes (the test's own teardown stops those) are in it. Without root: no prefix (the host's namespace), and the
    module holds the run's kubelet-port lock instead."""
    if not own_netns_available():
        yield []
        return
    holder = subprocess.Popen(
        ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && echo up && exec sleep infinity"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "up\n", "could not bring up the loopback of a new network namespace"
        yield ["nsenter", f"--net=/proc/{holder.pid}/ns/net", "--"]
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


@pytest.fixture(scope="module", autouse=True)
def _kubelet_port_lock(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under xdist, where no network namespace of a test's own can be made: a module of WILDCARD_KUBELET_MODULES runs
    while no integration or e2e module (kubelets, labs, their preflight checks of :10250 on their own addresses) runs on
    another worker, and the other way round. A lock file of the run shared by the workers: exclusive for the first,
    shared for the second (which never wait on each other), held for the whole module (its module-scoped labs
    included). With a namespace of their own (root, as CI runs) the first take no lock: no worker waits for another."""
    if not hasattr(request.config, "workerinput"):
        yield  # one process: one test at a time anyway
        return
    path = request.node.nodeid.split("::", 1)[0]
    if path in WILDCARD_KUBELET_MODULES:
        if own_netns_available():
            yield
            return
        mode = fcntl.LOCK_EX
    elif path.startswith(("tests/integration/", "tests/e2e/")):
        mode = fcntl.LOCK_SH
    else:
        yield
        return
    lock = tmp_path_factory.getbasetemp().parent / "kubelet-port.lock"  # the run's dir, above each worker's own
    with open(lock, "a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture
def pykubeadm() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_pykubeadm


@pytest.fixture(autouse=True)
def _stop_node_kubelets(request: pytest.FixtureRequest):
    """Stop every built-in kubelet daemon a test started under its tmp_path (by pid file, never by name), then what
    still runs for each node root there: Pod containers outlive their kubelet, as real containers do, so stopping a
    kubelet alone would leave them behind (found by the node's root, as reset finds them)."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None:
        return
    from pykubeadm.layout import Layout
    from pykubeadm.phases.kubeletservice import stop_kubelet
    from pykubeadm.phases.reset.processes import node_processes, stop_processes

    for pid_file in Path(tmp).glob("**/var/run/pykubeadm/kubelet.pid"):
        stop_kubelet(Layout(root=pid_file.parents[3]))
    for kubelet_dir in Path(tmp).glob("**/var/lib/kubelet"):
        stop_processes(node_processes(kubelet_dir.parents[2]), grace=5.0)


@pytest.fixture
def short_tmp_path() -> Iterator[Path]:
    """A fresh directory with a short path (`/tmp/pk-XXXXXXXX`), for what names unix sockets under it: xdist's
    `tmp_path` can leave no room for a socket address."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="pk-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
