"""Acceptance for the certs and kubeconfig phases, checked with the real `openssl` and `kubectl` and with cryptography.

Runs `pykubeadm --root-dir <tmp> init phase certs all` and `init phase kubeconfig all` as a subprocess for four
configurations (default, controlPlaneEndpoint + extra SANs, IPv6 advertise address, ECDSA-P256) and compares every
certificate with the fact sheet (kubeadm-facts.md §2.1–2.3, §3.1–3.2).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.conftest import run_pykubeadm

pytestmark = pytest.mark.integration

SERVER, CLIENT = "TLS Web Server Authentication", "TLS Web Client Authentication"


@dataclass
class Case:
    name: str
    config: str
    node: str
    advertise: str
    dns_domain: str = "cluster.local"
    vip: str = "10.96.0.1"
    cpe_host: str = ""
    extra_dns: tuple[str, ...] = ()
    extra_ips: tuple[str, ...] = ()
    algorithm: str = "RSA-2048"
    server_url: str = ""
    flags: tuple[str, ...] = field(default=())


def _cfg(init: str, cluster: str) -> str:
    return (
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
        + init
        + "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.33.0\n"
        + cluster
    )


CASES = [
    Case(
        "default",
        _cfg("localAPIEndpoint:\n  advertiseAddress: 192.168.0.10\nnodeRegistration:\n  name: node1\n", ""),
        "node1",
        "192.168.0.10",
        server_url="https://192.168.0.10:6443",
    ),
    Case(
        "cpe-extra-sans",
        _cfg(
            "localAPIEndpoint:\n  advertiseAddress: 10.1.2.3\n  bindPort: 6444\nnodeRegistration:\n  name: cp-1\n",
            "controlPlaneEndpoint: lb.example.com:443\napiServer:\n  certSANs:\n  - 10.0.0.5\n  - API.Example.com\n"
            "  - '*.wild.example.com'\n  - 10.1.2.3\n  - kubernetes\n",
        ),
        "cp-1",
        "10.1.2.3",
        cpe_host="lb.example.com",
        extra_dns=("api.example.com", "*.wild.example.com"),
        extra_ips=("10.0.0.5",),
        server_url="https://lb.example.com:443",
    ),
    Case(
        "ipv6",
        _cfg(
            "localAPIEndpoint:\n  advertiseAddress: fd00:10::10\nnodeRegistration:\n  name: node6\n",
            "controlPlaneEndpoint: '[fd00:10::100]:6443'\nnetworking:\n  serviceSubnet: fd00:96::/108\n"
            "  dnsDomain: example.internal\n",
        ),
        "node6",
        "fd00:10::10",
        dns_domain="example.internal",
        vip="fd00:96::1",
        extra_ips=("fd00:10::100",),
        server_url="https://[fd00:10::100]:6443",
    ),
    Case(
        "ecdsa-p256",
        _cfg(
            "localAPIEndpoint:\n  advertiseAddress: 192.168.0.11\nnodeRegistration:\n  name: node-ec\n",
            "encryptionAlgorithm: ECDSA-P256\ncertificateValidityPeriod: 48h0m0s\ncaCertificateValidityPeriod: 8760h0m0s\n",
        ),
        "node-ec",
        "192.168.0.11",
        algorithm="ECDSA-P256",
        server_url="https://192.168.0.11:6443",
    ),
]

# name → (file base, CA base or None, CN ({node} = node name), O, extended usages as openssl prints them)
TABLE = {
    "ca": ("ca", None, "kubernetes", [], []),
    "apiserver": ("apiserver", "ca", "kube-apiserver", [], [SERVER]),
    "apiserver-kubelet-client": (
        "apiserver-kubelet-client",
        "ca",
        "kube-apiserver-kubelet-client",
        ["kubeadm:cluster-admins"],
        [CLIENT],
    ),
    "front-proxy-ca": ("front-proxy-ca", None, "front-proxy-ca", [], []),
    "front-proxy-client": ("front-proxy-client", "front-proxy-ca", "front-proxy-client", [], [CLIENT]),
    "etcd-ca": ("etcd/ca", None, "etcd-ca", [], []),
    "etcd-server": ("etcd/server", "etcd/ca", "{node}", [], [SERVER, CLIENT]),
    "etcd-peer": ("etcd/peer", "etcd/ca", "{node}", [], [SERVER, CLIENT]),
    "etcd-healthcheck-client": ("etcd/healthcheck-client", "etcd/ca", "kube-etcd-healthcheck-client", [], [CLIENT]),
    "apiserver-etcd-client": ("apiserver-etcd-client", "etcd/ca", "kube-apiserver-etcd-client", [], [CLIENT]),
}

KUBECONFIGS = {
    # file → (CN, O, endpoint kind)
    "admin.conf": ("kubernetes-admin", ["kubeadm:cluster-admins"], "cpe"),
    "super-admin.conf": ("kubernetes-super-admin", ["system:masters"], "cpe"),
    "kubelet.conf": ("system:node:{node}", ["system:nodes"], "local"),  # ControlPlaneKubeletLocalMode (beta, on)
    "controller-manager.conf": ("system:kube-controller-manager", [], "local"),
    "scheduler.conf": ("system:kube-scheduler", [], "local"),
}


def expected_sans(case: Case, name: str) -> tuple[list[str], list[str]]:
    if name == "apiserver":
        dns = {
            case.node,
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            f"kubernetes.default.svc.{case.dns_domain}",
            *case.extra_dns,
        }
        if case.cpe_host:
            dns.add(case.cpe_host)
        ips = list(dict.fromkeys([case.vip, case.advertise, *case.extra_ips]))
        return sorted(dns), ips
    if name in ("etcd-server", "etcd-peer"):
        return sorted({case.node, "localhost"}), [case.advertise, "127.0.0.1", "::1"]
    if name.endswith("ca") and name in ("ca", "front-proxy-ca", "etcd-ca"):
        return [TABLE[name][2]], []
    return [], []


def openssl(*args: str) -> str:
    res = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def parse_openssl_text(text: str) -> dict[str, object]:
    """The fields we check, from `openssl x509 -text -noout`."""

    def after(header: str) -> str:
        m = re.search(re.escape(header) + r".*\n\s+(.+)", text)
        return m.group(1).strip() if m else ""

    out: dict[str, object] = {
        "subject": re.search(r"Subject: (.*)", text).group(1).strip(),  # type: ignore[union-attr]
        "issuer": re.search(r"Issuer: (.*)", text).group(1).strip(),  # type: ignore[union-attr]
        "key_usage": after("X509v3 Key Usage: critical"),
        "eku": after("X509v3 Extended Key Usage"),
        "basic": after("X509v3 Basic Constraints: critical"),
        "san": after("X509v3 Subject Alternative Name"),
        "pubkey": re.search(r"Public Key Algorithm: (\S+)", text).group(1),  # type: ignore[union-attr]
        "ski": "X509v3 Subject Key Identifier" in text,
        "aki": "X509v3 Authority Key Identifier" in text,
    }
    bits = re.search(r"Public-Key: \((\d+) bit\)", text)
    out["bits"] = int(bits.group(1)) if bits else 0
    out["curve"] = (re.search(r"NIST CURVE: (\S+)", text) or re.search(r"ASN1 OID: (\S+)", text) or [None, ""])[1]
    return out


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, Path, str]:
    case: Case = request.param
    root = tmp_path_factory.mktemp(case.name)
    cfg = root.parent / f"{case.name}.yaml"
    cfg.write_text(case.config)
    res = run_pykubeadm("init", "phase", "certs", "all", "--config", str(cfg), root=root)
    assert res.returncode == 0, res.stdout + res.stderr
    res2 = run_pykubeadm("init", "phase", "kubeconfig", "all", "--config", str(cfg), root=root)
    assert res2.returncode == 0, res2.stdout + res2.stderr
    return case, root, res.stdout + res.stderr + "\n" + res2.stdout + res2.stderr


def pki(root: Path) -> Path:
    return root / "etc/kubernetes/pki"


@pytest.mark.parametrize("name", list(TABLE))
def test_certificate_matches_fact_sheet(generated: tuple[Case, Path, str], name: str) -> None:
    case, root, _ = generated
    base, ca_base, cn, orgs, ekus = TABLE[name]
    cn = cn.replace("{node}", case.node)
    crt = pki(root) / f"{base}.crt"
    key = pki(root) / f"{base}.key"

    # openssl verify against the signing CA (a CA verifies against itself)
    ca_file = pki(root) / f"{ca_base or base}.crt"
    assert openssl("verify", "-CAfile", str(ca_file), str(crt)).strip().endswith(": OK")

    # openssl x509 -text
    text = parse_openssl_text(openssl("x509", "-in", str(crt), "-noout", "-text"))
    exp_subject = ", ".join([*(f"O = {o}" for o in orgs), f"CN = {cn}"])
    assert text["subject"] == exp_subject
    if ca_base is None:
        assert text["issuer"] == exp_subject
        assert text["key_usage"] == "Digital Signature, Key Encipherment, Certificate Sign"
        assert text["basic"] == "CA:TRUE"
        assert text["ski"] and not text["aki"]
        assert text["eku"] == ""
    else:
        assert text["issuer"] == f"CN = {TABLE[next(k for k, v in TABLE.items() if v[0] == ca_base)][2]}"
        assert text["key_usage"] == "Digital Signature, Key Encipherment"
        assert text["basic"] == "CA:FALSE"
        assert text["aki"] and not text["ski"]
        assert text["eku"] == ", ".join(ekus)
    dns, ips = expected_sans(case, name)
    exp_san = ", ".join(
        [
            *(f"DNS:{d}" for d in dns),
            *(f"IP Address:{ipaddress.ip_address(i).exploded.upper() if ':' in i else i}" for i in ips),
        ]
    )
    if exp_san:
        got = text["san"]
        # openssl prints IPv6 fully expanded with upper-case hex groups without leading zeros
        got = re.sub(
            r"IP Address:([0-9A-F:]+:[0-9A-F:]+)",
            lambda m: "IP Address:" + ipaddress.ip_address(m.group(1)).exploded.upper(),
            str(got),
        )
        assert got == exp_san
    else:
        assert text["san"] == ""
    if case.algorithm == "RSA-2048":
        assert text["pubkey"] == "rsaEncryption" and text["bits"] == 2048
        assert openssl("rsa", "-in", str(key), "-check", "-noout").strip() == "RSA key ok"
    else:
        assert text["pubkey"] == "id-ecPublicKey" and text["curve"] == "P-256"

    # the same facts with cryptography
    cert = x509.load_pem_x509_certificate(crt.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == cn
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == orgs
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca is (ca_base is None) and bc.value.path_length is None
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert ku.critical and ku.value.digital_signature and ku.value.key_encipherment
    assert ku.value.key_cert_sign is (ca_base is None)
    if ekus:
        want = [ExtendedKeyUsageOID.SERVER_AUTH if e == SERVER else ExtendedKeyUsageOID.CLIENT_AUTH for e in ekus]
        assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == want
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        got_dns, got_ips = (
            san.get_values_for_type(x509.DNSName),
            [str(i) for i in san.get_values_for_type(x509.IPAddress)],
        )
    except x509.ExtensionNotFound:
        got_dns, got_ips = [], []
    assert (got_dns, got_ips) == (dns, [str(ipaddress.ip_address(i)) for i in ips])
    assert 1 <= cert.serial_number < 2**63 - 1
    # validity: NotBefore = start − 5m, NotAfter = start + period (one start time for the run)
    period = timedelta(hours=8760)
    if case.name == "ecdsa-p256":
        period = timedelta(hours=8760) if ca_base is None else timedelta(hours=48)
    elif ca_base is None:
        period = timedelta(hours=87600)
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == period + timedelta(minutes=5)
    assert abs(cert.not_valid_before_utc + timedelta(minutes=5) - datetime.now(UTC)) < timedelta(minutes=5)
    pub = cert.public_key()
    if case.algorithm == "RSA-2048":
        assert isinstance(pub, rsa.RSAPublicKey) and pub.key_size == 2048
        assert key.read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
    else:
        assert isinstance(pub, ec.EllipticCurvePublicKey) and pub.curve.name == "secp256r1"
        assert key.read_text().startswith("-----BEGIN EC PRIVATE KEY-----")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(crt.stat().st_mode) == 0o644


def test_sa_key_pair(generated: tuple[Case, Path, str]) -> None:
    case, root, _ = generated
    pub = (pki(root) / "sa.pub").read_text()
    assert pub.startswith("-----BEGIN PUBLIC KEY-----")
    for f in ("sa.key", "sa.pub"):
        assert stat.S_IMODE((pki(root) / f).stat().st_mode) == 0o600
    # the public key matches the private key (openssl derives the same PKIX public key)
    derived = openssl("pkey", "-in", str(pki(root) / "sa.key"), "-pubout")
    assert derived == pub
    if case.algorithm == "ECDSA-P256":
        assert (pki(root) / "sa.key").read_text().startswith("-----BEGIN EC PRIVATE KEY-----")


def test_console_output(generated: tuple[Case, Path, str]) -> None:
    case, _, out = generated
    assert '[certs] Generating "ca" certificate and key' in out
    assert '[certs] Generating "etcd/healthcheck-client" certificate and key' in out
    assert '[certs] Generating "sa" key and public key' in out
    dns, ips = expected_sans(case, "apiserver")
    assert f"[certs] apiserver serving cert is signed for DNS names [{' '.join(dns)}] and IPs [{' '.join(ips)}]" in out
    assert '[kubeconfig] Writing "admin.conf" kubeconfig file' in out
    if case.name == "cpe-extra-sans":
        assert "[endpoint] WARNING: port specified in controlPlaneEndpoint overrides bindPort" in out


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("file_name", list(KUBECONFIGS))
def test_kubeconfig_with_kubectl(generated: tuple[Case, Path, str], file_name: str, tmp_path: Path) -> None:
    case, root, _ = generated
    path = root / "etc/kubernetes" / file_name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    res = subprocess.run(
        ["kubectl", "config", "view", "--kubeconfig", str(path), "--raw", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    view = json.loads(res.stdout)
    cn, orgs, endpoint = KUBECONFIGS[file_name]
    cn = cn.replace("{node}", case.node)
    assert view["current-context"] == f"{cn}@kubernetes"
    [cluster] = view["clusters"]
    assert cluster["name"] == "kubernetes"
    ca_pem = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    assert ca_pem == (pki(root) / "ca.crt").read_bytes()
    local = (
        "https://"
        + (f"[{case.advertise}]" if ":" in case.advertise else case.advertise)
        + (":6444" if case.name == "cpe-extra-sans" else ":6443")
    )
    assert cluster["cluster"]["server"] == (case.server_url if endpoint == "cpe" else local)
    [user] = view["users"]
    assert user["name"] == cn
    cert_pem = base64.b64decode(user["user"]["client-certificate-data"])
    key_pem = base64.b64decode(user["user"]["client-key-data"])
    client_crt, client_key = tmp_path / "client.crt", tmp_path / "client.key"
    client_crt.write_bytes(cert_pem)
    client_key.write_bytes(key_pem)
    assert (
        openssl("verify", "-CAfile", str(pki(root) / "ca.crt"), "-purpose", "sslclient", str(client_crt))
        .strip()
        .endswith(": OK")
    )
    subject = parse_openssl_text(openssl("x509", "-in", str(client_crt), "-noout", "-text"))["subject"]
    assert subject == ", ".join([*(f"O = {o}" for o in orgs), f"CN = {cn}"])
    # the key belongs to the certificate
    assert openssl("pkey", "-in", str(client_key), "-pubout") == openssl(
        "x509", "-in", str(client_crt), "-noout", "-pubkey"
    )
    cert = x509.load_pem_x509_certificate(cert_pem)
    ca = x509.load_pem_x509_certificate(ca_pem)
    assert cert.not_valid_before_utc == ca.not_valid_before_utc  # kubeadm leaves NotBefore unset → the CA's
    if case.algorithm == "ECDSA-P256":
        assert key_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")


def test_second_run_reuses_every_pair(generated: tuple[Case, Path, str]) -> None:
    case, root, _ = generated
    cfg = root.parent / f"{case.name}.yaml"
    files = sorted(p for p in root.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in files}
    res = run_pykubeadm("init", "phase", "certs", "all", "--config", str(cfg), root=root)
    assert res.returncode == 0, res.stderr
    res2 = run_pykubeadm("init", "phase", "kubeconfig", "all", "--config", str(cfg), root=root)
    assert res2.returncode == 0, res2.stderr
    assert {p: p.read_bytes() for p in files} == before
    assert "Generating" not in res.stdout + res2.stdout
    for ca in ("ca", "front-proxy-ca", "etcd/ca"):
        assert f"[certs] Using existing {ca} certificate authority" in res.stdout
    for leaf in (
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
        "etcd/server",
        "etcd/peer",
        "etcd/healthcheck-client",
        "apiserver-etcd-client",
    ):
        assert f"[certs] Using existing {leaf} certificate and key on disk" in res.stdout
    assert '[certs] Using the existing "sa" key' in res.stdout
    for f in KUBECONFIGS:
        assert f'[kubeconfig] Using existing kubeconfig file: "/etc/kubernetes/{f}"' in res2.stdout
