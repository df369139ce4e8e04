"""The kubelet's TLS bootstrap, Node registration, Lease, kubelet API and node security against a real kube-apiserver.

CSRs are approved and signed by a test-side admin (what kube-controller-manager's csrapproving/csrsigning do), so these
tests prove the kubelet's half of the flow; tests/integration/kubelet/test_with_kcm.py covers the real controllers.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import aiohttp
import httpx
import pytest
import yaml
from tests.integration.kubelet.controlplane import ControlPlane, run_signer, setup_bootstrap
from tests.integration.kubelet.kubelet_procs import KubeletProcess

from pykubeadm.kubelet.api import ApiError, ClientConfig, KubeClient
from pykubeadm.testing.etcd import free_port

pytestmark = pytest.mark.integration

TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"


def _apiserver_available() -> bool:
    try:
        import pykubeadm.apiserver.server  # noqa: F401
    except ImportError:
        return False
    return True


if not _apiserver_available():
    pytest.skip("the built-in kube-apiserver is not there yet", allow_module_level=True)


async def eventually(pred, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = await pred()
            if value:
                return value
        except (ApiError, aiohttp.ClientError, OSError) as e:  # the API may be restarting
            last = e
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last})" if last else ""))


class Node:
    """A node root dir prepared as `kubeadm join` leaves it, and its kubelet process."""

    def __init__(self, tmp: Path, server: ControlPlane, name: str, ip: str, *, extra_config: dict | None = None):
        self.root = tmp / name
        self.name = name
        self.ip = ip
        self.port = free_port(ip)
        self.healthz = free_port(ip)
        pki = self.root / "etc/kubernetes/pki"
        pki.mkdir(parents=True)
        shutil.copy(server.ca_cert, pki / "ca.crt")
        (self.root / "etc/kubernetes/manifests").mkdir(parents=True)
        server.write_bootstrap_kubeconfig(
            self.root / "etc/kubernetes/bootstrap-kubelet.conf", f"{TOKEN_ID}.{TOKEN_SECRET}"
        )
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
            },
            "authorization": {"mode": "Webhook"},
            "clusterDNS": ["10.96.0.10"],
            "clusterDomain": "cluster.local",
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.healthz,
            "port": self.port,
            "rotateCertificates": True,
            "staticPodPath": "/etc/kubernetes/manifests",
            **(extra_config or {}),
        }
        (self.root / "var/lib/kubelet").mkdir(parents=True)
        (self.root / "var/lib/kubelet/config.yaml").write_text(yaml.safe_dump(config))
        self.kubelet = KubeletProcess(
            self.root,
            [
                "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                "--kubeconfig=/etc/kubernetes/kubelet.conf",
                "--config=/var/lib/kubelet/config.yaml",
                f"--node-ip={ip}",
                f"--hostname-override={name}",
                "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
                "--pod-infra-container-image=registry.k8s.io/pause:3.10",
            ],
            tmp / f"kubelet-{name}.log",
        )

    @property
    def kubeconfig(self) -> Path:
        return self.root / "etc/kubernetes/kubelet.conf"

    @property
    def current_pem(self) -> Path:
        return self.root / "var/lib/kubelet/pki/kubelet-client-current.pem"

    def node_client(self, server: ControlPlane) -> KubeClient:
        pem = self.current_pem.read_bytes()
        return KubeClient(ClientConfig(server=server.url, ca_pem=server.ca_pem, cert_pem=pem, key_pem=pem))


@pytest.fixture
async def apiserver(tmp_path):
    server = ControlPlane(tmp_path / "cp")
    await asyncio.to_thread(server.start)
    admin = server.admin()
    await setup_bootstrap(admin, TOKEN_ID, TOKEN_SECRET, dt.timedelta(hours=1))
    try:
        yield server, admin
    finally:
        await admin.close()
        server.stop()


def openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=True).stdout


async def test_bootstrap_register_lease_and_node_security(apiserver, tmp_path):
    server, admin = apiserver
    node = Node(tmp_path, server, "node-a", "127.0.10.11")
    signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
    node.kubelet.start()
    try:
        # kubelet.conf is written and, once the certificate is there, valid
        await eventually(lambda: _true(node.current_pem.exists()), 30, "kubelet-client-current.pem")
        kc = yaml.safe_load(node.kubeconfig.read_text())
        assert kc["users"][0]["user"]["client-certificate"] == "/var/lib/kubelet/pki/kubelet-client-current.pem"
        assert "token" not in node.kubeconfig.read_text()
        assert node.current_pem.is_symlink()
        subject = openssl("x509", "-in", str(node.current_pem), "-noout", "-subject")
        assert "CN = system:node:node-a" in subject and "O = system:nodes" in subject
        assert "OK" in openssl("verify", "-CAfile", str(server.ca_cert), str(node.current_pem))

        # the CSR: generateName csr-, requested with the bootstrap token, kubelet client signer, issued
        csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
        [csr] = [x for x in csrs if x["spec"].get("username") == f"system:bootstrap:{TOKEN_ID}"]
        assert csr["metadata"]["name"].startswith("csr-")
        assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
        assert csr["spec"]["usages"] == ["digital signature", "client auth"]
        assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"] and csr["status"]["certificate"]

        # the Node registers and is Ready, with the kubelet's labels, addresses and version
        n = await eventually(lambda: _ready_node(admin, "node-a"), 30, "Node node-a Ready")
        labels = n["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == "node-a" and labels["kubernetes.io/os"] == "linux"
        assert labels["beta.kubernetes.io/arch"] == labels["kubernetes.io/arch"]
        assert {"type": "InternalIP", "address": "127.0.10.11"} in n["status"]["addresses"]
        assert n["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.")
        assert n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == node.port
        assert int(n["status"]["capacity"]["pods"]) == 110

        # the Lease exists with a 40 s duration and is renewed
        lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a"
        lease = await eventually(lambda: admin.get(lease_path), 20, "Lease")
        assert lease["spec"]["holderIdentity"] == "node-a" and lease["spec"]["leaseDurationSeconds"] == 40
        first = lease["spec"]["renewTime"]
        renewed = await eventually(lambda: _renewed(admin, lease_path, first), 15, "Lease renewal")
        assert renewed["metadata"]["ownerReferences"][0]["kind"] == "Node"

        # node credentials: itself yes, another Node or an unrelated Secret no
        await admin.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "other"}})
        nc = node.node_client(server)
        try:
            await nc.get("/api/v1/nodes/node-a")
            with pytest.raises(ApiError) as e:
                await nc.patch("/api/v1/nodes/other", {"metadata": {"labels": {"x": "y"}}})
            assert e.value.status == 403
            with pytest.raises(ApiError) as e:
                await nc.get(f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{TOKEN_ID}")
            assert e.value.status == 403
        finally:
            await nc.close()

        # the kubelet API on the node's own address: TLS, client certs against the CA, SubjectAccessReview
        admin_ctx = ssl.create_default_context()
        admin_ctx.check_hostname = False
        admin_ctx.verify_mode = ssl.CERT_NONE
        admin_ctx.load_cert_chain(str(server.pki.admin_cert), str(server.pki.admin_key))
        base = f"https://{node.ip}:{node.port}"
        async with httpx.AsyncClient(verify=admin_ctx) as cl:
            r = await eventually(lambda: cl.get(f"{base}/healthz"), 20, "kubelet API")
            assert r.status_code == 200 and r.text == "ok"
            pods = (await cl.get(f"{base}/pods")).json()
            assert pods["kind"] == "PodList"
        anon_ctx = ssl.create_default_context()
        anon_ctx.check_hostname = False
        anon_ctx.verify_mode = ssl.CERT_NONE
        async with httpx.AsyncClient(verify=anon_ctx) as cl:
            assert (await cl.get(f"{base}/pods")).status_code == 401  # anonymous disabled
        # a node identity is not allowed to read another kubelet's API (SAR denies)
        other_ctx = ssl.create_default_context()
        other_ctx.check_hostname = False
        other_ctx.verify_mode = ssl.CERT_NONE
        other_ctx.load_cert_chain(str(node.current_pem))
        async with httpx.AsyncClient(verify=other_ctx) as cl:
            assert (await cl.get(f"{base}/pods")).status_code == 403
        # healthz on the node's address
        async with httpx.AsyncClient() as cl:
            assert (await cl.get(f"http://{node.ip}:{node.healthz}/healthz")).text == "ok"

        # restart without the bootstrap kubeconfig: kubelet.conf alone is enough
        node.kubelet.stop()
        (node.root / "etc/kubernetes/bootstrap-kubelet.conf").unlink()
        before = node.current_pem.resolve()
        node.kubelet.start()
        await eventually(lambda: _renewed(admin, lease_path, renewed["spec"]["renewTime"]), 20, "Lease after restart")
        assert node.current_pem.resolve() == before
        assert "bootstrap kubeconfig" not in node.kubelet.log().split("starting kubelet")[-1]
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def _true(v):
    return v


async def cancel(task):
    """Cancel a helper task and let it close its connections (the apiserver then stops at once)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _ready_node(admin, name):
    n = await admin.get(f"/api/v1/nodes/{name}")
    conds = {c["type"]: c for c in n.get("status", {}).get("conditions", [])}
    return n if conds.get("Ready", {}).get("status") == "True" else None


async def _renewed(admin, path, previous):
    lease = await admin.get(path)
    return lease if lease["spec"]["renewTime"] != previous else None


async def test_bootstrap_survives_apiserver_restart(apiserver, tmp_path):
    server, admin = apiserver
    node = Node(tmp_path, server, "node-b", "127.0.10.12")
    node.kubelet.start()
    signer = None
    try:
        # the kubelet created its CSR and waits (nobody approves yet)
        await eventually(lambda: _has_csr(admin, f"system:bootstrap:{TOKEN_ID}"), 30, "pending CSR")
        server.kill()  # the apiserver dies while the kubelet waits
        await asyncio.sleep(3)
        await asyncio.to_thread(server.start)
        signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
        await eventually(lambda: _true(node.current_pem.exists()), 60, "certificate after apiserver restart")
        await eventually(lambda: _ready_node(admin, "node-b"), 30, "Node node-b Ready")
        assert node.kubelet.proc.poll() is None
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def _has_csr(admin, username):
    csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
    return [c for c in csrs if c["spec"].get("username") == username]


async def test_denied_csr_is_logged_and_retried(apiserver, tmp_path):
    server, admin = apiserver
    node = Node(tmp_path, server, "node-d", "127.0.10.14")
    node.kubelet.start()
    signer = None
    try:
        [csr] = await eventually(lambda: _has_csr(admin, f"system:bootstrap:{TOKEN_ID}"), 30, "CSR")
        csr["status"] = {
            "conditions": [{"type": "Denied", "status": "True", "reason": "TestDeny", "message": "denied by the test"}]
        }
        name = csr["metadata"]["name"]
        await admin.put(f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval", csr)
        await eventually(lambda: _true("TestDeny" in node.kubelet.log()), 15, "denial in the kubelet log")
        signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
        await eventually(lambda: _true(node.current_pem.exists()), 30, "certificate from the retried CSR")
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def test_client_certificate_rotation(apiserver, tmp_path):
    server, admin = apiserver
    node = Node(tmp_path, server, "node-r", "127.0.10.13")
    # short-lived certificates without backdating: rotation falls at 70–90 % of 12 s
    signer = asyncio.ensure_future(run_signer(server, dt.timedelta(seconds=12), backdate=False))
    node.kubelet.start()
    try:
        await eventually(lambda: _true(node.current_pem.exists()), 30, "first certificate")
        first = node.current_pem.resolve()
        # the bootstrap token can go: rotation uses the node's own certificate
        await admin.delete(f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{TOKEN_ID}")
        await eventually(lambda: _true(node.current_pem.resolve() != first), 30, "rotated certificate")
        csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
        renewals = [c for c in csrs if c["spec"].get("username") == "system:node:node-r"]
        assert renewals, "the renewal CSR must be requested with the node's certificate (selfnodeclient)"
        assert "system:nodes" in renewals[0]["spec"]["groups"]
        await eventually(lambda: _ready_node(admin, "node-r"), 15, "Node still Ready after rotation")
        log = node.kubelet.log()
        errors = [line for line in log.splitlines() if line.startswith("E")]
        assert "Unauthorized" not in log and not errors, errors[:5]
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def test_serving_certificate_through_csr(apiserver, tmp_path):
    """serverTLSBootstrap: a kubelet-serving CSR with the node's addresses; :10250 serves the issued certificate."""
    server, admin = apiserver
    node = Node(tmp_path, server, "node-s", "127.0.10.15", extra_config={"serverTLSBootstrap": True})
    signer = asyncio.ensure_future(
        run_signer(
            server,
            dt.timedelta(days=1),
            signers=("kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"),
        )
    )
    node.kubelet.start()
    serving = node.root / "var/lib/kubelet/pki/kubelet-server-current.pem"
    try:
        await eventually(lambda: _true(serving.exists()), 40, "kubelet-server-current.pem")
        csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
        [csr] = [c for c in csrs if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"]
        assert csr["spec"]["username"] == "system:node:node-s"
        assert csr["spec"]["usages"] == ["digital signature", "server auth"]
        text = openssl("x509", "-in", str(serving), "-noout", "-subject", "-ext", "subjectAltName")
        assert "CN = system:node:node-s" in text and "IP Address:127.0.10.15" in text and "DNS:node-s" in text
        assert not (node.root / "var/lib/kubelet/pki/kubelet.crt").exists()  # no self-signed pair in this mode

        async def served_cert():
            ctx = ssl.create_default_context(cafile=str(server.ca_cert))
            ctx.check_hostname = False
            _, writer = await asyncio.open_connection(node.ip, node.port, ssl=ctx)
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            writer.close()
            return der

        der = await eventually(served_cert, 20, "the kubelet API with the issued serving certificate")
        from cryptography import x509

        served = x509.load_der_x509_certificate(der)
        issued = x509.load_pem_x509_certificates(serving.read_bytes())[0]
        assert served == issued
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def test_explicit_tls_cert_file_is_served(apiserver, tmp_path):
    server, _admin = apiserver
    cert, key = server.pki.sign("node-t", server=True, ips=["127.0.10.16"], name="kubelet-serving-node-t")
    node = Node(
        tmp_path,
        server,
        "node-t",
        "127.0.10.16",
        extra_config={
            "tlsCertFile": "/etc/kubernetes/pki/kubelet-serving.crt",
            "tlsPrivateKeyFile": "/etc/kubernetes/pki/kubelet-serving.key",
        },
    )
    shutil.copy(cert, node.root / "etc/kubernetes/pki/kubelet-serving.crt")
    shutil.copy(key, node.root / "etc/kubernetes/pki/kubelet-serving.key")
    signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
    node.kubelet.start()
    try:

        async def served_cert():
            ctx = ssl.create_default_context(cafile=str(server.ca_cert))
            ctx.check_hostname = False
            _, writer = await asyncio.open_connection(node.ip, node.port, ssl=ctx)
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            writer.close()
            return der

        der = await eventually(served_cert, 30, "the kubelet API")
        from cryptography import x509

        assert x509.load_der_x509_certificate(der) == x509.load_pem_x509_certificate(cert.read_bytes())
        assert not (node.root / "var/lib/kubelet/pki/kubelet.crt").exists()
    finally:
        await cancel(signer)
        node.kubelet.stop()


async def test_blocking_bootstrap_without_rotation(apiserver, tmp_path):
    """rotateCertificates: false: the blocking path, CSR named node-csr-<digest>, kubeconfig written afterwards."""
    server, admin = apiserver
    node = Node(tmp_path, server, "node-p", "127.0.10.17", extra_config={"rotateCertificates": False})
    node.kubelet.start()
    signer = None
    try:
        [csr] = await eventually(lambda: _has_csr(admin, f"system:bootstrap:{TOKEN_ID}"), 30, "CSR")
        assert csr["metadata"]["name"].startswith("node-csr-") and len(csr["metadata"]["name"]) == 52
        assert not node.kubeconfig.exists()  # written only once the certificate is there
        assert (node.root / "var/lib/kubelet/pki/kubelet-client.key.tmp").exists()
        signer = asyncio.ensure_future(run_signer(server, dt.timedelta(days=1)))
        await eventually(lambda: _true(node.kubeconfig.exists() and node.current_pem.exists()), 30, "kubelet.conf")
        assert not (node.root / "var/lib/kubelet/pki/kubelet-client.key.tmp").exists()
        await eventually(lambda: _ready_node(admin, "node-p"), 30, "Node node-p Ready")
    finally:
        await cancel(signer)
        node.kubelet.stop()
