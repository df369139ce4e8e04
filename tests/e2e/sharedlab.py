"""The e2e suites' shared lab (its fixture and ordering: tests/e2e/conftest.py): one ordinary loopback lab, a control
plane and two workers on 127.0.58.x, brought up once for the modules that need only an ordinary cluster; what a module
made in `default` is deleted when it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for

#: Nodes on 127.0.58.x (their own Service network, tests/conftest.py's "e2e-labs-own-prefix" stream).
SHARED_PREFIX = "127.0.58."
SHARED_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"},
    "PYKUBEADM_LAB_ADDRESS_PREFIX": SHARED_PREFIX,
}
#: test_pods runs an image of this map (`lab up --image`)
IMAGE_MAP = "example.com/hello=/bin/echo hi from the image map"
#: what a module may leave in `default`, deleted when it ends (controllers first, then what they made)
NAMESPACED = (
    "deployments,statefulsets,daemonsets,jobs,replicasets,poddisruptionbudgets,horizontalpodautoscalers",
    "pods",
    "services,persistentvolumeclaims,configmaps,secrets,serviceaccounts",
)


def shared_pykubeadm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`pykubeadm ARGS` with the shared lab's address prefix."""
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=SHARED_ENV)


class _SharedLab:
    """The one shared lab of this process (a pytest-xdist worker runs all of its users: one stream of e2e-labs)."""

    def __init__(self) -> None:
        self.lab: Lab | None = None

    def up(self, tmp_path_factory: pytest.TempPathFactory) -> Lab:
        if self.lab is None:
            lab_dir = tmp_path_factory.mktemp("shared-lab")
            lab = Lab(lab_dir)
            self.lab = lab  # before `lab up`: down() cleans up a half-made lab too
            res = shared_pykubeadm(
                "lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--workers", "2", "--image", IMAGE_MAP
            )
            assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
            wait_for(lambda: _coredns_ready(lab), 180, "coredns 2/2 Ready")
        return self.lab

    def down(self) -> None:
        lab, self.lab = self.lab, None
        if lab is None:
            return
        res = shared_pykubeadm("lab", "down", "--dir", str(lab.dir))
        left = _kill_leftovers(lab.dir)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert not left, f"lab down left processes running: {left}"


SHARED = _SharedLab()


def _coredns_ready(lab: Lab) -> bool:
    res = lab.kubectl("-n", "kube-system", "get", "deploy", "coredns", "-o", "json", check=False)
    return res.returncode == 0 and json.loads(res.stdout)["status"].get("readyReplicas") == 2


def names(lab: Lab, kinds: str) -> set[str]:
    """`kind/name` of what `default` holds of `kinds` (kubectl's names)."""
    return set(lab.kubectl("-n", "default", "get", kinds, "-o", "name").stdout.split())


def clean_default_namespace(lab: Lab, before: dict[str, set[str]]) -> None:
    """Delete what a module made in `default` (what was not there `before`), and wait until its Pods are gone."""
    for kinds in NAMESPACED:
        new = sorted(names(lab, kinds) - before[kinds])
        if new:
            lab.kubectl("-n", "default", "delete", *new, "--wait=false", "--grace-period=1", check=False)
    # Pods of the deleted controllers go by garbage collection; each once more with a short grace period
    pods = NAMESPACED[1]
    deadline = time.monotonic() + 120
    while left := sorted(names(lab, pods) - before[pods]):
        if time.monotonic() > deadline:
            wide = lab.kubectl("-n", "default", "get", "pods", "-o", "wide", check=False).stdout
            raise AssertionError(f"the module's Pods {left} still in the shared lab after 120s:\n{wide}")
        lab.kubectl("-n", "default", "delete", *left, "--wait=false", "--grace-period=1", check=False)
        time.sleep(0.5)
