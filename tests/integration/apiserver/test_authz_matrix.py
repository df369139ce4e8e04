"""End-to-end authorization over HTTPS: anonymous, a bootstrap token, nodes A and B, an admin (kubeadm:cluster-admins),
the super-admin (system:masters) and a service account, each allowed/denied as kube-apiserver would be."""

import base64
import datetime as dt
import ssl

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

pytestmark = pytest.mark.integration


def _client(api, cert=None, token=None):
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=api.url, verify=ctx, headers=headers, timeout=10)


def _csr(cn, orgs=()):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [*[x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs], x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    pem = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(name)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    return base64.b64encode(pem).decode()


@pytest.fixture(scope="module")
def setup(api):
    admin = _client(api, (api.pki.admin_cert, api.pki.admin_key))
    exp = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    admin.post(
        "/api/v1/namespaces/kube-system/secrets",
        json={
            "metadata": {"name": "bootstrap-token-abcdef"},
            "type": "bootstrap.kubernetes.io/token",
            "stringData": {
                "token-id": "abcdef",
                "token-secret": "0123456789abcdef",
                "expiration": exp,
                "usage-bootstrap-authentication": "true",
                "usage-bootstrap-signing": "true",
                "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
            },
        },
    ).raise_for_status()
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    for crb in (
        {
            "metadata": {"name": "kubeadm:kubelet-bootstrap"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:node-bootstrapper",
            },
            "subjects": [
                {
                    "kind": "Group",
                    "apiGroup": "rbac.authorization.k8s.io",
                    "name": "system:bootstrappers:kubeadm:default-node-token",
                }
            ],
        },
        {
            "metadata": {"name": "kubeadm:cluster-admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "kubeadm:cluster-admins"}],
        },
    ):
        admin.post(f"{rbac}/clusterrolebindings", json=crb).raise_for_status()
    admin.post("/api/v1/namespaces/default/serviceaccounts", json={"metadata": {"name": "robot"}}).raise_for_status()
    for n in ("node-a", "node-b"):
        admin.post("/api/v1/nodes", json={"metadata": {"name": n}}).raise_for_status()
    token = admin.post("/api/v1/namespaces/default/serviceaccounts/robot/token", json={"spec": {}}).json()["status"][
        "token"
    ]
    clients = {
        "anonymous": _client(api),
        "bootstrap": _client(api, token="abcdef.0123456789abcdef"),
        "node-a": _client(api, api.client_cert("system:node:node-a", ["system:nodes"])),
        "admin": _client(api, api.client_cert("kubernetes-admin", ["kubeadm:cluster-admins"])),
        "super-admin": admin,
        "sa": _client(api, token=token),
    }
    yield clients
    for c in clients.values():
        c.close()


SECRETS = "/api/v1/namespaces/kube-system/secrets"


@pytest.mark.parametrize(
    ("who", "method", "path", "body", "code"),
    [
        ("anonymous", "GET", "/healthz", None, 200),
        ("anonymous", "GET", "/version", None, 200),
        ("anonymous", "GET", SECRETS, None, 403),
        ("bootstrap", "GET", SECRETS, None, 403),
        ("bootstrap", "GET", "/api/v1/nodes/node-a", None, 403),
        ("node-a", "GET", "/api/v1/nodes/node-a", None, 200),
        ("node-a", "PATCH", "/api/v1/nodes/node-b/status", {"status": {"phase": "x"}}, 403),
        ("node-a", "GET", SECRETS, None, 403),
        ("admin", "GET", SECRETS, None, 200),
        ("super-admin", "GET", SECRETS, None, 200),
        ("sa", "GET", SECRETS, None, 403),
        ("sa", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, 201),
    ],
)
def test_matrix(setup, who, method, path, body, code):
    c = setup[who]
    headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
    r = c.request(method, path, json=body, headers=headers) if body is not None else c.request(method, path)
    assert r.status_code == code, r.text
    if code == 403:
        st = r.json()
        assert st["reason"] == "Forbidden" and st["kind"] == "Status"


def test_forbidden_messages_name_the_user(setup):
    r = setup["anonymous"].get(SECRETS)
    assert r.json()["message"] == (
        'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API '
        'group "" in the namespace "kube-system"'
    )
    r = setup["bootstrap"].get(SECRETS)
    assert r.json()["message"].startswith('secrets is forbidden: User "system:bootstrap:abcdef" cannot list')


def test_bootstrap_token_creates_csr_with_its_identity(setup):
    r = setup["bootstrap"].post(
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        json={
            "metadata": {"generateName": "csr-"},
            "spec": {
                "request": _csr("system:node:node-c", ["system:nodes"]),
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "usages": ["digital signature", "client auth"],
                "username": "kubernetes-admin",
            },
        },
    )
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["username"] == "system:bootstrap:abcdef"
    assert "system:bootstrappers:kubeadm:default-node-token" in spec["groups"]
    name = r.json()["metadata"]["name"]
    assert setup["bootstrap"].get(f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}").status_code == 200
    # Approving needs update on /approval (and `approve` on the signer): the requester has neither.
    body = r.json()
    body["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Self", "message": "x"}]}
    r = setup["bootstrap"].put(f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval", json=body)
    assert r.status_code == 403


def test_client_certificate_from_an_intermediate_ca(api, tmp_path):
    """The TLS layer hands the verified chain (leaf, intermediate, root) to x509 authentication."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    root = x509.load_pem_x509_certificate(api.pki.ca_cert.read_bytes())
    root_key = serialization.load_pem_private_key(api.pki.ca_key.read_bytes(), None)
    now = dt.datetime.now(dt.UTC)
    ikey = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    iname = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "intermediate")])
    inter = (
        x509.CertificateBuilder()
        .subject_name(iname)
        .issuer_name(root.subject)
        .public_key(ikey.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ikey.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), critical=False)
        .sign(root_key, hashes.SHA256())
    )
    lkey = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "via-intermediate"),
                ]
            )
        )
        .issuer_name(iname)
        .public_key(lkey.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ikey.public_key()), critical=False)
        .sign(ikey, hashes.SHA256())
    )
    cert = tmp_path / "chain.crt"
    cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + inter.public_bytes(serialization.Encoding.PEM))
    key = tmp_path / "leaf.key"
    key.write_bytes(
        lkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    with _client(api, (cert, key)) as c:
        r = c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={})
        assert r.status_code == 201, r.text
        assert r.json()["status"]["userInfo"]["username"] == "via-intermediate"
