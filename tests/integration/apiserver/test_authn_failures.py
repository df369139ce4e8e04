"""Bad credentials get kube-apiserver's answer, not a dropped handshake: 401 with the Unauthorized Status (kubectl:
`error: You must be logged in to the server (Unauthorized)`) and an audit entry.

Identities are made with our pki code: an expired certificate from the cluster CA (checked with openssl), one from a
foreign CA, a server-auth-only one; plus a bad bearer token. kubectl and the official Python client see 401.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID

from pykubeadm.pki.certs import CertConfig, encode_cert_pem, new_cert_and_key, new_self_signed_ca, try_load_cert
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key, parse_private_key_pem
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def _write(dir_: Path, name: str, cert, key) -> tuple[Path, Path]:
    cp, kp = dir_ / f"{name}.crt", dir_ / f"{name}.key"
    cp.write_bytes(encode_cert_pem(cert))
    kp.write_bytes(encode_private_key_pem(key))
    kp.chmod(0o600)
    return cp, kp


@pytest.fixture(scope="module")
def identities(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    out = tmp_path_factory.mktemp("identities")
    ca_cert = try_load_cert(api.pki.dir, "ca")
    ca_key = parse_private_key_pem(api.pki.ca_key.read_bytes())
    now = datetime.now(UTC)
    client = (ExtendedKeyUsageOID.CLIENT_AUTH,)
    expired = CertConfig("expired-admin", ("system:masters",), usages=client).with_validity(
        now - timedelta(days=400), now - timedelta(days=35)
    )
    foreign_ca_key = generate_private_key()
    foreign_ca = new_self_signed_ca(CertConfig("foreign-ca"), foreign_ca_key)
    server_only = CertConfig("server-only-admin", ("system:masters",), usages=(ExtendedKeyUsageOID.SERVER_AUTH,))
    return {
        "expired": _write(out, "expired", *new_cert_and_key(ca_cert, ca_key, expired)),
        "foreign": _write(
            out, "foreign", *new_cert_and_key(foreign_ca, foreign_ca_key, CertConfig("admin", ("system:masters",)))
        ),
        "server-only": _write(out, "server-only", *new_cert_and_key(ca_cert, ca_key, server_only)),
        "good": (api.pki.admin_cert, api.pki.admin_key),
    }


def _get(api: ApiServer, path: str, cert: tuple[Path, Path] | None = None, token: str | None = None):
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    req = urllib.request.Request(api.url + path)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_openssl_sees_the_expired_certificate_as_expired(api: ApiServer, identities) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, _ = identities["expired"]
    out = subprocess.run(
        ["openssl", "verify", "-CAfile", str(api.pki.ca_cert), str(cert)], capture_output=True, text=True, check=False
    )
    assert out.returncode != 0
    assert "certificate has expired" in out.stdout + out.stderr


@pytest.mark.parametrize("which", ["expired", "foreign", "server-only"])
def test_bad_client_certificate_is_401_with_kube_status(api: ApiServer, identities, which: str) -> None:
    code, body = _get(api, "/api/v1/namespaces", identities[which])
    assert code == 401
    assert json.loads(body) == UNAUTHORIZED


def test_good_certificate_still_works_and_no_certificate_is_anonymous(api: ApiServer, identities) -> None:
    code, _ = _get(api, "/api/v1/namespaces", identities["good"])
    assert code == 200
    code, body = _get(api, "/api/v1/namespaces")
    assert code == 403
    assert json.loads(body)["reason"] == "Forbidden"
    code, body = _get(api, "/healthz")
    assert (code, body) == (200, b"ok")


def test_bad_bearer_token_is_401(api: ApiServer) -> None:
    code, body = _get(api, "/api/v1/namespaces", token="abcdef.0123456789abcdef")
    assert code == 401
    assert json.loads(body) == UNAUTHORIZED


def test_failed_authentication_is_audited(api: ApiServer, identities) -> None:
    marker = f"/api/v1/namespaces?labelSelector=audit-marker%3D{time.monotonic_ns()}"
    assert _get(api, marker, identities["expired"])[0] == 401
    deadline = time.monotonic() + 10
    events: list[dict] = []
    while time.monotonic() < deadline:
        assert api.audit_log is not None
        lines = api.audit_log.read_text().splitlines() if api.audit_log.exists() else []
        events = [json.loads(line) for line in lines if marker in line]
        if events:
            break
        time.sleep(0.05)
    assert events, "no audit entry for the failed request"
    ev = events[-1]
    assert ev["responseStatus"]["code"] == 401
    assert ev["responseStatus"]["message"] == "Authentication failed, attempted: x509"
    assert ev["user"] == {}


def _kubectl(api: ApiServer, home: Path, cert: tuple[Path, Path], *args: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = api._write_kubeconfig(home / f"{cert[0].stem}.conf", "user", cert[0], cert[1], None)
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "KUBECACHEDIR": str(home / "cache")},
    )


def test_kubectl_after_the_certificate_expired_says_log_in(
    api: ApiServer, identities, kubectl_available, tmp_path: Path
) -> None:
    # A year after init: discovery is cached from when the certificate worked, then the certificate has expired.
    assert _kubectl(api, tmp_path, identities["good"], "get", "namespaces").returncode == 0
    out = _kubectl(api, tmp_path, identities["expired"], "get", "namespaces")
    assert out.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in out.stderr


@pytest.mark.parametrize("which", ["expired", "foreign"])
def test_kubectl_with_a_cold_cache_says_log_in(
    api: ApiServer, identities, kubectl_available, tmp_path: Path, which: str
) -> None:
    # Discovery fails first; kubectl then prints client-go's text for a 401 (as against kube-apiserver).
    out = _kubectl(api, tmp_path, identities[which], "get", "namespaces")
    assert out.returncode == 1
    assert (
        "error: You must be logged in to the server (the server has asked for the client to provide credentials)"
        in out.stderr
    )


def test_python_client_gets_401(api: ApiServer, identities) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    cfg = kubernetes.client.Configuration()
    cfg.host = api.url
    cfg.ssl_ca_cert = str(api.pki.ca_cert)
    cfg.cert_file, cfg.key_file = (str(p) for p in identities["expired"])
    with kubernetes.client.ApiClient(cfg) as client, pytest.raises(kubernetes.client.ApiException) as err:
        kubernetes.client.CoreV1Api(client).list_namespace()
    assert err.value.status == 401
    assert json.loads(err.value.body)["reason"] == "Unauthorized"


def test_the_handshake_names_the_cluster_ca(api: ApiServer) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    out = subprocess.run(
        ["openssl", "s_client", "-connect", f"{api.host}:{api.port}", "-CAfile", str(api.pki.ca_cert)],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert "Acceptable client certificate CA names" in out.stdout
    assert "CN = kubernetes" in out.stdout.split("Acceptable client certificate CA names", 1)[1]
