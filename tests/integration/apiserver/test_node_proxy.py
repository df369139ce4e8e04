"""nodes/{name}/proxy through the API server to our KubeletServer (its real /metrics/resource, /pods and 404s), as
`kubectl get --raw /api/v1/nodes/<node>/proxy/metrics/resource` does on kube; RBAC guards nodes/proxy."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator

import pytest
from aiohttp import web

from pykubeadm.kubelet.server import KubeletServer
from pykubeadm.testing.apiserver import running_apiserver
from pykubeadm.testing.webapp import serve_app_in_thread

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]


class Kubelet:
    """Our KubeletServer (node n1, one Pod), recording the CN of each client certificate."""

    def __init__(self) -> None:
        self.client_cns: list[str] = []
        self.port = 0

    def app(self) -> web.Application:
        pod = {"metadata": {"namespace": "default", "name": "web"}, "spec": {"containers": [{"name": "app"}]}}
        server = KubeletServer(
            node_name="n1",
            client=lambda: None,
            pods=lambda: [pod],
            anonymous=False,
            webhook_authn=False,
            authorization_mode="AlwaysAllow",
            resource_targets=lambda: [],
        )

        @web.middleware
        async def record(request: web.Request, handler):  # type: ignore[no-untyped-def]
            peer = request.transport.get_extra_info("peercert") if request.transport else None
            cn = next((v for rdn in (peer or {}).get("subject", ()) for k, v in rdn if k == "commonName"), "")
            self.client_cns.append(cn)
            return await handler(request)

        app = server.app()
        app.middlewares.insert(0, record)
        return app


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Kubelet]]:
    with running_apiserver(tmp_path_factory.mktemp("nodeproxy")) as api:
        cert, key = api.pki.sign("kubelet-n1", server=True, ips=["127.0.0.1"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        ctx.load_verify_locations(str(api.pki.ca_cert))
        ctx.verify_mode = ssl.CERT_REQUIRED
        kubelet = Kubelet()
        with serve_app_in_thread(kubelet.app, ssl_context=ctx) as url:
            kubelet.port = int(url.rsplit(":", 1)[1])
            from kubernetes import client

            c = api.python_client()
            client.CoreV1Api(c).create_node(
                {
                    "metadata": {"name": "n1"},
                    "status": {
                        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
                    },
                }
            )
            c.close()
            yield api, kubelet


def test_kubectl_get_raw_metrics_resource_through_the_node_proxy(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubelet = cluster
    out = api.kubectl("get", "--raw", "/api/v1/nodes/n1/proxy/metrics/resource").stdout  # type: ignore[attr-defined]
    assert "# TYPE node_cpu_usage_seconds_total counter" in out
    assert any(line.startswith("node_memory_working_set_bytes ") for line in out.splitlines())
    assert kubelet.client_cns[-1].endswith("kubelet-client")  # the apiserver's --kubelet-client-certificate
    pods = json.loads(api.kubectl("get", "--raw", f"/api/v1/nodes/n1:{kubelet.port}/proxy/pods").stdout)  # type: ignore[attr-defined]
    assert pods["kind"] == "PodList" and [p["metadata"]["name"] for p in pods["items"]] == ["web"]


def test_kubelet_answers_pass_through_and_rbac_guards(cluster) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    core = json.loads(api.kubectl("get", "--raw", "/api/v1").stdout)  # type: ignore[attr-defined]
    proxy = next(r for r in core["resources"] if r["name"] == "nodes/proxy")
    assert proxy["kind"] == "NodeProxyOptions" and proxy["verbs"] == ["create", "delete", "get", "patch", "update"]
    missing = api.kubectl("get", "--raw", "/api/v1/nodes/n1/proxy/no/such/path", check=False)  # type: ignore[attr-defined]
    assert missing.returncode != 0 and "NotFound" in missing.stderr
    gone = api.kubectl("get", "--raw", "/api/v1/nodes/n2/proxy/metrics/resource", check=False)  # type: ignore[attr-defined]
    assert gone.returncode != 0 and 'nodes "n2" not found' in gone.stderr
    nobody = api.kubeconfig_for("mallory")  # type: ignore[attr-defined]
    denied = api.kubectl("get", "--raw", "/api/v1/nodes/n1/proxy/metrics/resource", kubeconfig=nobody, check=False)  # type: ignore[attr-defined]
    assert denied.returncode != 0 and 'cannot get resource "nodes/proxy"' in denied.stderr
