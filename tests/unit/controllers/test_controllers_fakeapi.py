"""Controllers end to end against a scripted API (httpx MockTransport behind a real lightkube client)."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from csrfixtures import csr_object, make_ca, make_request
from lightkube import AsyncClient, KubeConfig
from lightkube.config.models import Cluster, User

from pykubeadm.controllers.app.manager import run_controllers
from pykubeadm.controllers.certificates.approver.controller import CSRApprovingController
from pykubeadm.controllers.certificates.signer.controller import CSRSigningController
from pykubeadm.controllers.runtime import ControllerContext


class FakeAPI:
    """Serves LIST of fixed collections, hangs WATCHes, answers SARs, records writes."""

    def __init__(self, collections: dict[str, list[dict]], allowed_subresources: set[str]):
        self.collections = collections
        self.allowed = allowed_subresources
        self.writes: list[tuple[str, str, dict]] = []
        self.reviews: list[dict] = []
        self.wrote = asyncio.Event()

    async def handler(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "GET":
            if request.url.params.get("watch") == "true":
                await asyncio.sleep(3600)
            plural = path.rstrip("/").split("/")[-1]
            items = self.collections.get(plural, [])
            return httpx2.Response(200, json={"metadata": {"resourceVersion": "100"}, "items": items})
        body = json.loads(request.content)
        if path.endswith("/subjectaccessreviews"):
            self.reviews.append(body["spec"])
            sub = body["spec"]["resourceAttributes"]["subresource"]
            body["status"] = {"allowed": sub in self.allowed}
            return httpx2.Response(201, json=body)
        self.writes.append((request.method, path, body))
        self.wrote.set()
        return httpx2.Response(200, json=body)


def client_for(api: FakeAPI) -> AsyncClient:
    config = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
    return AsyncClient(config, transport=httpx2.MockTransport(api.handler))


async def run_until_write(ctx: ControllerContext, names: list[str], api: FakeAPI, wait: float = 2.0) -> None:
    task = asyncio.create_task(run_controllers(ctx, names))
    try:
        await asyncio.wait_for(api.wrote.wait(), wait)
        await asyncio.sleep(0.05)
    except TimeoutError:
        pass
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def with_rv(obj: dict) -> dict:
    obj["metadata"]["resourceVersion"] = "7"
    return obj


async def test_approver_sends_sar_and_approval() -> None:
    _, pem = make_request()
    api = FakeAPI({"certificatesigningrequests": [with_rv(csr_object(pem, name="csr-1"))]}, {"nodeclient"})
    await run_until_write(ControllerContext(client=client_for(api)), ["csrapproving"], api)
    assert [r["resourceAttributes"]["subresource"] for r in api.reviews] == ["nodeclient"]
    assert api.reviews[0]["user"] == "system:bootstrap:abcdef"
    (method, path, body) = api.writes[0]
    assert (method, path) == ("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1/approval")
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["status"]["conditions"] == [
        {
            "type": "Approved",
            "status": "True",
            "reason": "AutoApproved",
            "message": "Auto approving kubelet client certificate after SubjectAccessReview.",
        }
    ]


async def test_approver_never_writes_when_reviews_deny() -> None:
    _, pem = make_request()
    api = FakeAPI({"certificatesigningrequests": [with_rv(csr_object(pem, name="csr-2"))]}, set())
    await run_until_write(ControllerContext(client=client_for(api)), ["csrapproving"], api, wait=0.5)
    assert api.reviews and api.writes == []


def signing_options(tmp_path: Path, with_key: bool = True) -> SimpleNamespace:
    ca = make_ca()
    cert_file, key_file = tmp_path / "ca.crt", tmp_path / "ca.key"
    cert_file.write_bytes(ca.certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        ca.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return SimpleNamespace(
        cluster_signing_cert_file=cert_file,
        cluster_signing_key_file=key_file if with_key else None,
        cluster_signing_duration=timedelta(hours=8760),
        ca=ca,
    )


APPROVED: list[dict[str, Any]] = [{"type": "Approved", "status": "True", "reason": "AutoApproved", "message": "m"}]


async def test_signer_puts_status_with_certificate(tmp_path: Path) -> None:
    opts = signing_options(tmp_path)
    req, pem = make_request()
    api = FakeAPI({"certificatesigningrequests": [with_rv(csr_object(pem, name="csr-3", conditions=APPROVED))]}, set())
    await run_until_write(ControllerContext(client=client_for(api), options=opts), ["csrsigning"], api)
    (method, path, body) = api.writes[0]
    assert (method, path) == ("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-3/status")
    cert = x509.load_pem_x509_certificate(base64.b64decode(body["status"]["certificate"]))
    assert cert.subject == req.subject and cert.issuer == opts.ca.certificate.subject
    assert body["status"]["conditions"] == APPROVED


async def test_signer_refusal_and_external_ca(tmp_path: Path) -> None:
    opts = signing_options(tmp_path)
    _, pem = make_request(orgs=("system:masters",))
    bad = with_rv(csr_object(pem, name="csr-4", conditions=APPROVED))
    api = FakeAPI({"certificatesigningrequests": [bad]}, set())
    await run_until_write(ControllerContext(client=client_for(api), options=opts), ["csrsigning"], api)
    (_, _, body) = api.writes[0]
    assert "certificate" not in body["status"]
    failed = body["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"], failed["message"]) == (
        "Failed",
        "SignerValidationFailure",
        "subject organization is not system:nodes",
    )

    _, pem = make_request()
    api = FakeAPI({"certificatesigningrequests": [with_rv(csr_object(pem, name="csr-5", conditions=APPROVED))]}, set())
    external = signing_options(tmp_path, with_key=False)
    await run_until_write(ControllerContext(client=client_for(api), options=external), ["csrsigning"], api, wait=0.5)
    assert api.writes == []
    assert CSRSigningController.name == "csrsigning" and CSRApprovingController.name == "csrapproving"
