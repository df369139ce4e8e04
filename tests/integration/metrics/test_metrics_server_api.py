"""The metrics server's requests to a real apiserver through its small aiohttp client (kubelet.api.KubeClient), as
`pykubeadm component metrics-server --kubeconfig=…` makes them: the Nodes and every Pod (listed page by page, more
Pods than a page holds), the front-proxy trust and client CA from extension-apiserver-authentication, TokenReviews
and SubjectAccessReviews of metrics.k8s.io resource attributes decided by the apiserver's RBAC."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.controllers.app.delegatedauth import User
from pykubeadm.kubelet.api import KubeClient
from pykubeadm.kubelet.kubeconfig import load_client_config
from pykubeadm.metricsserver.auth import ResourceRequest
from pykubeadm.metricsserver.server import POD_PAGE, MetricsServer, ServerOptions, new_auth
from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration

PODS = POD_PAGE + 7  # more than one page


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("api")) as server:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"zone": "a"}},
        }
        objects: list[dict[str, object]] = [node, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}]
        for ns in ("default", "b"):
            objects.append(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}
            )
        for i in range(PODS):
            objects.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"web-{i}", "namespace": "b" if i % 2 else "default", "labels": {"i": str(i)}},
                "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "busybox"}]},
            })  # fmt: skip
        server.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        status = {"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                             "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                             "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 1}]}}  # fmt: skip
        server.kubectl("patch", "node", "node-a", "--subresource=status", "--type=merge", "-p", json.dumps(status))
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "metrics-reader"},
                "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"]}]}  # fmt: skip
        server.kubectl("apply", "-f", "-", input=json.dumps(role))
        server.kubectl("create", "clusterrolebinding", "metrics-reader", "--clusterrole=metrics-reader", "--user=bob")
        yield server


def _server(api: ApiServer, tmp: Path) -> MetricsServer:
    client = KubeClient(load_client_config(api.kubeconfig()), timeout=10.0)
    return MetricsServer(client, new_auth(client), lambda: "", ServerOptions(cert_dir=tmp))


def test_nodes_and_every_pod_are_listed(api: ApiServer, tmp_path: Path) -> None:
    async def run() -> MetricsServer:
        server = _server(api, tmp_path)
        try:
            await server.refresh_objects()
        finally:
            await server.auth.close()
        return server

    server = asyncio.run(run())
    assert sorted(server.pods) == sorted(f"{'b' if i % 2 else 'default'}/web-{i}" for i in range(PODS))
    assert server.pods["default/web-0"] == {"name": "web-0", "namespace": "default", "labels": {"i": "0"}}
    node = server.nodes["node-a"]
    assert node["labels"]["zone"] == "a"
    # what the scraper needs of the Node, and no more of its status
    assert node["object"]["status"] == {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}  # fmt: skip


def test_authentication_and_authorization_ask_the_apiserver(api: ApiServer, tmp_path: Path) -> None:
    pods = ResourceRequest("list", "metrics.k8s.io", "v1beta1", "pods", "default")

    async def run() -> tuple[bool, bool, bool, bool, bool, User | None]:
        server = _server(api, tmp_path)
        auth = server.auth
        try:
            await auth.start()
            return (
                auth._requestheader is not None,  # the front-proxy trust, read from the ConfigMap
                auth.delegating._roots is not None,  # the cluster's client CA, from the same ConfigMap
                await auth.authorize(User("bob", ("system:authenticated",)), "list", "/apis/...", pods),
                await auth.authorize(User("alice", ("system:authenticated",)), "list", "/apis/...", pods),
                await auth.authorize(User("alice", ("system:authenticated",)), "get", "/metrics", None),
                await auth.delegating._review_token("not-a-token"),
            )
        finally:
            await auth.close()

    assert asyncio.run(run()) == (True, True, True, False, False, None)
