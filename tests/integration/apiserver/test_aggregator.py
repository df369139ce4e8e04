"""The aggregation layer with real processes: Local APIServices for every served group version (`kubectl get
apiservices`), an extension API server (aiohttp over TLS, one group with one kind) registered through an APIService +
Service + Endpoints and reached with kubectl through our apiserver (front-proxy client certificate, X-Remote-* headers),
discovery listing its group, and when it stops: Available=False (FailedDiscoveryCheck) and 503 for its group only.
Also our apiserver as the backend of a front proxy: --requestheader-* identities are believed from the front proxy only.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from pykubeadm.testing.apiserver import ApiServer, free_port

GROUP = "wardle.example.com"
NS = "wardle-system"


class ExtensionServer:
    """A tiny aggregated API server in a thread: group wardle.example.com/v1, kind Flunder (namespaced, get/list)."""

    def __init__(self, api: ApiServer):
        self.port = free_port()
        self.seen: list[dict[str, Any]] = []
        self.cert, self.key = api.pki.sign(
            "api", server=True, ips=["127.0.0.1"], dns=[f"api.{NS}.svc"], name="wardle-serving"
        )
        self.ca = api.pki.ca_cert
        self.front_proxy_ca = api.pki.front_proxy_ca_cert
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        cn = ""
        for rdn in (peer or {}).get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
        self.seen.append(
            {
                "path": request.path,
                "cn": cn,
                "user": request.headers.get("X-Remote-User"),
                "groups": request.headers.getall("X-Remote-Group", []),
                "authorization": request.headers.get("Authorization"),
            }
        )
        if request.path == f"/apis/{GROUP}/v1":
            return web.json_response(
                {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": f"{GROUP}/v1",
                    "resources": [
                        {
                            "name": "flunders",
                            "singularName": "flunder",
                            "namespaced": True,
                            "kind": "Flunder",
                            "verbs": ["get", "list"],
                        }
                    ],
                }
            )
        if request.path.endswith("/flunders"):
            ns = request.path.split("/")[5]
            item = {"metadata": {"name": "f1", "namespace": ns, "creationTimestamp": "2024-01-01T00:00:00Z"}}
            return web.json_response(
                {"kind": "FlunderList", "apiVersion": f"{GROUP}/v1", "metadata": {}, "items": [item]}
            )
        return web.json_response({"kind": "Status", "status": "Failure", "code": 404}, status=404)

    def start(self) -> None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self.cert), str(self.key))
        ctx.load_verify_locations(cafile=str(self.front_proxy_ca))
        ctx.verify_mode = ssl.CERT_REQUIRED
        started = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=ctx).start())
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        assert started.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None


@pytest.fixture(scope="module")
def agg_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    api = ApiServer(tmp_path_factory.mktemp("aggregator"))
    cert, key = api.pki.sign("front-proxy-client", front_proxy=True, name="front-proxy-client")
    api.extra_flags += [
        f"--proxy-client-cert-file={cert}",
        f"--proxy-client-key-file={key}",
        "--enable-aggregator-routing=true",  # what kubeadm users set; our aggregator routes to endpoints always
    ]
    try:
        api.start()
        yield api
    finally:
        api.stop()


def _get(api: ApiServer, path: str, accept: str = "application/json") -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(api.url + path, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, context=api._ssl(), timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def _wait(cond: Any, timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {last!r}")


def _available(api: ApiServer, name: str) -> dict[str, Any] | None:
    code, body, _ = _get(api, f"/apis/apiregistration.k8s.io/v1/apiservices/{name}")
    if code != 200:
        return None
    for c in (json.loads(body).get("status") or {}).get("conditions") or []:
        if c["type"] == "Available":
            return c
    return None


def test_local_apiservices_listed_by_kubectl(agg_api: ApiServer) -> None:
    _, body, _ = _get(agg_api, "/apis")
    gvs = ["v1."] + [f"{v['version']}.{g['name']}" for g in json.loads(body)["groups"] for v in g["versions"]]
    assert "v1.apiregistration.k8s.io" in gvs and "v1.apps" in gvs

    def all_listed() -> str | None:
        out = agg_api.kubectl("get", "apiservices").stdout
        return out if all(f"\n{gv} " in out for gv in gvs) else None

    out = _wait(all_listed, what="a Local APIService per served group version")
    assert out.splitlines()[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    apps = next(line.split() for line in out.splitlines() if line.startswith("v1.apps "))
    assert apps[1:3] == ["Local", "True"]
    obj = json.loads(_get(agg_api, "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")[1])
    assert obj["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    assert obj["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"] == "onstart"
    cond = obj["status"]["conditions"][0]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "Local",
        "Local APIServices are always available",
    )


def _register(api: ApiServer, ext: ExtensionServer) -> None:
    ca = base64.b64encode(Path(ext.ca).read_bytes()).decode()
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "api", "namespace": NS},
            "spec": {"ports": [{"port": 443, "targetPort": ext.port}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "api", "namespace": NS},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": ext.port}]}],
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": f"v1.{GROUP}"},
            "spec": {
                "group": GROUP,
                "version": "v1",
                "service": {"namespace": NS, "name": "api", "port": 443},
                "caBundle": ca,
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
            },
        },
    ]
    api.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in docs))


def test_extension_apiserver_through_the_aggregator(agg_api: ApiServer) -> None:
    ext = ExtensionServer(agg_api)
    ext.start()
    try:
        _register(agg_api, ext)
        cond = _wait(
            lambda: (c := _available(agg_api, f"v1.{GROUP}")) and c["status"] == "True" and c,
            what="APIService Available",
        )
        assert (cond["reason"], cond["message"]) == ("Passed", "all checks passed")
        lines = agg_api.kubectl("get", "flunders", "-n", "default").stdout.splitlines()
        assert lines[0].split() == ["NAME", "AGE"] and lines[1].split()[0] == "f1"
        proxied = [s for s in ext.seen if s["path"].endswith("/flunders")]
        assert proxied, ext.seen
        assert proxied[-1]["cn"] == "front-proxy-client"
        assert proxied[-1]["user"] == "kubernetes-admin"
        assert "system:masters" in proxied[-1]["groups"] and "system:authenticated" in proxied[-1]["groups"]
        assert proxied[-1]["authorization"] is None
        # Discovery lists the group, legacy and aggregated.
        groups = json.loads(_get(agg_api, "/apis")[1])["groups"]
        assert {"groupVersion": f"{GROUP}/v1", "version": "v1"} in next(
            g["versions"] for g in groups if g["name"] == GROUP
        )
        agg_accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        items = json.loads(_get(agg_api, "/apis", agg_accept)[1])["items"]
        entry = next(i for i in items if i["metadata"]["name"] == GROUP)
        assert entry["versions"][0]["resources"][0]["resource"] == "flunders"
        assert entry["versions"][0]["freshness"] == "Current"
    finally:
        ext.stop()
    cond = _wait(
        lambda: (c := _available(agg_api, f"v1.{GROUP}")) and c["status"] == "False" and c,
        what="APIService unavailable after the backend stopped",
    )
    assert cond["reason"] == "FailedDiscoveryCheck"
    assert cond["message"].startswith(f"failing or missing response from https://127.0.0.1:{ext.port}/apis/{GROUP}/v1")
    code, body, _ = _get(agg_api, f"/apis/{GROUP}/v1/namespaces/default/flunders")
    assert (code, body) == (503, "service unavailable\n")
    assert _get(agg_api, "/api/v1/namespaces/default")[0] == 200
    assert _get(agg_api, "/apis/apps/v1/namespaces/default/deployments")[0] == 200
    agg_accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    items = json.loads(_get(agg_api, "/apis", agg_accept)[1])["items"]
    assert next(i for i in items if i["metadata"]["name"] == GROUP)["versions"][0]["freshness"] == "Stale"
    out = agg_api.kubectl("get", "apiservices", f"v1.{GROUP}").stdout
    assert f"{NS}/api" in out and "False (FailedDiscoveryCheck)" in out
    # Removing the APIService removes the group from discovery.
    agg_api.kubectl("delete", "apiservice", f"v1.{GROUP}")
    _wait(
        lambda: GROUP not in [g["name"] for g in json.loads(_get(agg_api, "/apis")[1])["groups"]],
        what="group gone from /apis",
    )


def test_requestheader_identity_from_front_proxy_only(agg_api: ApiServer) -> None:
    """Our apiserver as an aggregated backend: X-Remote-* believed with the front-proxy client certificate only."""
    cert, key = agg_api.pki.dir / "front-proxy-client.crt", agg_api.pki.dir / "front-proxy-client.key"
    review = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Remote-User": "alice",
        "X-Remote-Group": "team-a",
        "X-Remote-Extra-Scopes": "s1",
    }

    def post(cert_key: tuple[Path, Path]) -> dict[str, Any]:
        ctx = ssl.create_default_context(cafile=str(agg_api.pki.ca_cert))
        ctx.load_cert_chain(str(cert_key[0]), str(cert_key[1]))
        req = urllib.request.Request(
            agg_api.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", data=review, headers=headers
        )
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.loads(r.read())["status"]["userInfo"]

    info = post((cert, key))
    assert info["username"] == "alice"
    assert info["groups"] == ["team-a", "system:authenticated"]
    assert info["extra"] == {"scopes": ["s1"]}
    # The same headers from an ordinary client certificate are ignored: the certificate's user is the identity.
    info = post(agg_api.client_cert("bob", ["devs"]))
    assert info["username"] == "bob"


def test_unavailable_reasons(agg_api: ApiServer) -> None:
    """ServiceNotFound, then MissingEndpoints once the Service exists without addresses; 503 meanwhile."""
    doc = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.ghost.example.com"},
        "spec": {
            "group": "ghost.example.com",
            "version": "v1",
            "service": {"namespace": "default", "name": "ghost"},
            "insecureSkipTLSVerify": True,
            "groupPriorityMinimum": 100,
            "versionPriority": 10,
        },
    }
    agg_api.kubectl("apply", "-f", "-", input=json.dumps(doc))
    cond = _wait(
        lambda: (c := _available(agg_api, "v1.ghost.example.com")) and c["status"] == "False" and c,
        what="ServiceNotFound",
    )
    assert (cond["reason"], cond["message"]) == ("ServiceNotFound", 'service/ghost in "default" is not present')
    assert _get(agg_api, "/apis/ghost.example.com/v1/namespaces/default/things")[0] == 503
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ghost", "namespace": "default"},
           "spec": {"ports": [{"name": "https", "port": 443}]}}  # fmt: skip
    eps = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ghost", "namespace": "default"},
           "subsets": []}  # fmt: skip
    agg_api.kubectl("apply", "-f", "-", input=json.dumps(svc) + "\n---\n" + json.dumps(eps))
    cond = _wait(
        lambda: (c := _available(agg_api, "v1.ghost.example.com")) and c["reason"] == "MissingEndpoints" and c,
        what="MissingEndpoints",
    )
    assert cond["message"] == 'endpoints for service/ghost in "default" have no addresses with port name "https"'
    agg_api.kubectl("delete", "apiservice", "v1.ghost.example.com")
