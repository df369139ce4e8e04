"""Watching the kubelet replace a static Pod through the API (kubeadm's apiclient waiter for upgrades).

`ApiWaiter` reads the mirror Pod `<component>-<node>` in kube-system: its `kubernetes.io/config.hash` before the
manifest moves, polls until the hash differs (the API server itself may be restarting: errors count as "not yet"), then
waits for the component's Pods to run (`[apiclient] Found N Pods for label selector component=<name>`) and, for the
control-plane components and etcd, for the health endpoint their manifest's probe names.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.phases.upgrade.cluster import mirror_pod_name
from pykubeadm.phases.waitcontrolplane import ComponentCheck, component_checks, wait_healthy
from pykubeadm.util.endpoint import join_host_port

__all__ = ["ApiWaiter"]

Reporter = Callable[[str], None]


class ApiWaiter:
    def __init__(self, client: Client, node: str, layout: Layout, out: Reporter, interval: float = 0.2):
        self.client, self.node, self.layout, self.out, self.interval = client, node, layout, out, interval

    def _hash(self, component: str) -> str:
        pod = self.client.get(Pod, mirror_pod_name(component, self.node), namespace=c.NAMESPACE_SYSTEM)
        ann = pod.metadata.annotations or {} if pod.metadata else {}
        value = ann.get(c.ANNOTATION_CONFIG_HASH) or ann.get("kubernetes.io/config.mirror") or ""
        if not value:
            raise KubeadmError(f"the mirror Pod of {component} has no {c.ANNOTATION_CONFIG_HASH} annotation")
        return value

    def pod_hash(self, component: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._hash(component)
            except Exception as err:
                if time.monotonic() >= deadline:
                    raise KubeadmError(
                        f"failed to obtain static Pod hash for component {component} on Node {self.node}: {err}"
                    ) from err
            time.sleep(self.interval)

    def wait_hash_change(self, component: str, old_hash: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                if self._hash(component) != old_hash:
                    return
                last = "the hash did not change"
            except Exception as err:  # the API server may be the component restarting
                last = str(err)
            time.sleep(self.interval)
        raise KubeadmError(f"static Pod hash for component {component} on Node {self.node} did not change: {last}")

    def wait_ready(self, component: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        reported = False
        while True:
            try:
                pods = list(self.client.list(Pod, namespace=c.NAMESPACE_SYSTEM, labels={"component": component}))
                if pods and not reported:
                    self.out(f"[apiclient] Found {len(pods)} Pods for label selector component={component}")
                    reported = True
                if pods and all(p.status is not None and p.status.phase == "Running" for p in pods):
                    break
            except Exception:  # noqa: S110 - the API may still be coming back
                pass
            if time.monotonic() >= deadline:
                raise KubeadmError(f"the Pods of {component} did not become Running within {timeout:g}s")
            time.sleep(self.interval)
        manifest = self.layout.manifest(component)
        if component == c.ETCD:
            etcd = _etcd_check(manifest)
            checks = [etcd] if etcd is not None else []
        else:
            checks = component_checks({component: manifest})
        if checks:
            wait_healthy(checks, max(1.0, deadline - time.monotonic()), lambda _line: None)


def _etcd_check(manifest: Path) -> ComponentCheck | None:
    """etcd's health URL as its liveness probe names it (kubeadm waits for etcd to be available before going on)."""
    try:
        pod = yaml.safe_load(manifest.read_text()) or {}
        get = pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError):
        return None
    scheme = str(get.get("scheme") or "HTTP").lower()
    url = f"{scheme}://{join_host_port(get.get('host') or '127.0.0.1', get.get('port'))}{get.get('path') or '/health'}"
    return ComponentCheck(c.ETCD, url)
