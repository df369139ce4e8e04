"""Issue 9: the TLS-bootstrapping page followed literally against our kube-apiserver, kube-controller-manager and kubelet.

The operator makes a CA with openssl at /var/lib/kubernetes/ca.pem + ca-key.pem on the master, starts kube-apiserver
with --client-ca-file and either --token-auth-file (a `token,user,uid,"group"` line made with the page's
`head -c 16 /dev/urandom | od -An -t x | tr -d ' '`) or --enable-bootstrap-token-auth with a token Secret, creates the
page's ClusterRoleBindings with kubectl, runs kube-controller-manager with --cluster-signing-cert-file/-key-file/-duration,
writes the worker's bootstrap kubeconfig with the page's four `kubectl config` commands, and starts the kubelet with
--bootstrap-kubeconfig, --kubeconfig, --cert-dir and --rotate-certificates.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import secrets
import string
import time
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from tests.integration.tlsbootstrap.cluster import (
    AUTO_APPROVE_CSRS_FOR_GROUP,
    AUTO_APPROVE_RENEWALS_FOR_NODES,
    CA_PEM,
    CERT_DIR,
    CREATE_CSRS_FOR_BOOTSTRAPPING,
    PAGE_BOOTSTRAP_KUBECONFIG,
    TOKEN_FILE,
    ControllerManager,
    Machine,
    PageApiServer,
    Worker,
    kubectl_as,
    make_operator_ca,
    openssl,
    page_token,
    stopping,
    wait_until,
)

pytestmark = pytest.mark.integration

API_HOST = "127.0.0.1"


# --- building blocks -------------------------------------------------------------------------------------------------


def token_file_apiserver(tmp: Path) -> tuple[PageApiServer, str]:
    """The master with the page's token file; returns (apiserver (not started), the token)."""
    master = Machine(tmp / "master")
    make_operator_ca(master)
    token = page_token()
    # "the first three values can be anything and the quoted group name should be as depicted"
    master.write(TOKEN_FILE, f'{token},kubelet-bootstrap,10001,"system:bootstrappers"\n', 0o600)
    api = PageApiServer(master, tmp / "apiserver", host=API_HOST, auth_flags=[f"--token-auth-file={TOKEN_FILE}"])
    return api, token


def create_bindings(api: PageApiServer, tmp: Path, *docs: str) -> None:
    """`kubectl create -f` of the page's YAML, one file per binding as an operator would save them."""
    for i, doc in enumerate(docs):
        f = tmp / f"binding-{i}.yaml"
        f.write_text(doc)
        out = api.kubectl("create", "-f", str(f)).stdout
        assert "created" in out, out


def csrs(api: PageApiServer) -> list[dict]:
    return api.kubectl_json("get", "csr")["items"]


def csrs_of(api: PageApiServer, username: str) -> list[dict]:
    return [c for c in csrs(api) if c["spec"].get("username") == username]


def conditions(csr: dict) -> dict[str, dict]:
    return {c["type"]: c for c in (csr.get("status") or {}).get("conditions") or []}


def node_ready(api: PageApiServer, name: str) -> bool:
    res = api.kubectl("get", "node", name, "-o", "json", check=False)
    if res.returncode != 0:
        return False
    conds = {c["type"]: c["status"] for c in json.loads(res.stdout)["status"].get("conditions") or []}
    return conds.get("Ready") == "True"


def lease_renew_time(api: PageApiServer, name: str) -> str | None:
    res = api.kubectl("get", "lease", name, "-n", "kube-node-lease", "-o", "json", check=False)
    return json.loads(res.stdout)["spec"].get("renewTime") if res.returncode == 0 else None


def assert_kubelet_client_certificate(worker: Worker, ca: Path) -> x509.Certificate:
    """The page's outcome: a key and signed certificate in --cert-dir, a kubeconfig at --kubeconfig referencing
    them, the certificate signed by the operator's CA, CN system:node:<name>, O system:nodes, client auth only."""
    pem = worker.client_current
    assert pem.is_symlink() and pem.resolve().parent == worker.m.host(CERT_DIR)
    verify = openssl("verify", "-CAfile", str(ca), str(pem))
    assert verify.strip() == f"{pem}: OK", verify
    subject = openssl("x509", "-in", str(pem), "-noout", "-subject", "-issuer", "-nameopt", "RFC2253")
    assert f"subject=CN=system:node:{worker.name},O=system:nodes" in subject, subject
    assert "issuer=O=Operator CA,CN=Kubernetes" in subject, subject
    eku = openssl("x509", "-in", str(pem), "-noout", "-ext", "extendedKeyUsage,keyUsage,basicConstraints")
    assert "TLS Web Client Authentication" in eku and "TLS Web Server Authentication" not in eku, eku
    assert "CA:FALSE" in eku, eku
    cert = x509.load_pem_x509_certificate(pem.read_bytes())
    assert len(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == 1
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    # the kubeconfig written at --kubeconfig: the bootstrap cluster (its CA file) and the rotated key+cert file
    kc = yaml.safe_load(worker.kubeconfig.read_text())
    [cluster] = kc["clusters"]
    assert cluster["cluster"]["certificate-authority"] == CA_PEM
    [user] = kc["users"]
    assert user["user"] == {
        "client-certificate": f"{CERT_DIR}/kubelet-client-current.pem",
        "client-key": f"{CERT_DIR}/kubelet-client-current.pem",
    }
    assert "token" not in worker.kubeconfig.read_text()
    return cert


def node_kubeconfig(worker: Worker, api: PageApiServer, tmp: Path) -> Path:
    """The kubelet's --kubeconfig as seen from the test machine (its node paths made host paths) for kubectl."""
    kc = yaml.safe_load(worker.kubeconfig.read_text())
    kc["clusters"][0]["cluster"]["certificate-authority"] = str(worker.m.host(CA_PEM))
    for key in ("client-certificate", "client-key"):
        kc["users"][0]["user"][key] = str(worker.client_current)
    out = tmp / f"{worker.name}-as-node.kubeconfig"
    out.write_text(yaml.safe_dump(kc))
    return out


# --- the page's flow, two ways of authenticating the bootstrapping kubelet --------------------------------------------


def test_token_auth_file_flow(tmp_path: Path) -> None:
    """--token-auth-file: the bootstrapping kubelet is user kubelet-bootstrap in system:bootstrappers; its CSR is
    auto-approved through the page's bindings and signed with the operator's CA. Afterwards the operator removes the
    token-file line and restarts kube-apiserver: the token is rejected, the node keeps working on its certificate."""
    api, token = token_file_apiserver(tmp_path)
    kcm = ControllerManager(api, tmp_path / "kcm", signing_duration="24h")
    worker = Worker(Machine(tmp_path / "worker-a"), "worker-a", "127.0.30.11", logs=tmp_path)
    # rotation is optional on the page: a second kubelet without --rotate-certificates bootstraps too (blocking path)
    plain = Worker(Machine(tmp_path / "worker-n"), "worker-n", "127.0.30.13", logs=tmp_path)
    with stopping(api, kcm, worker, plain):
        api.start(timeout=60)
        create_bindings(
            api, tmp_path, CREATE_CSRS_FOR_BOOTSTRAPPING, AUTO_APPROVE_CSRS_FOR_GROUP, AUTO_APPROVE_RENEWALS_FOR_NODES
        )
        got = api.kubectl("get", "clusterrolebindings", "-o", "name").stdout.split()
        for name in ("create-csrs-for-bootstrapping", "auto-approve-csrs-for-group", "auto-approve-renewals-for-nodes"):
            assert f"clusterrolebinding.rbac.authorization.k8s.io/{name}" in got
        kcm.start()
        worker.distribute_ca(api.master)
        outs = worker.write_bootstrap_kubeconfig(api.url, token)
        assert outs[0].strip() == 'Cluster "bootstrap" set.' and outs[1].strip() == 'User "kubelet-bootstrap" set.'
        # exactly the page's sample file, with our server and token
        expected = PAGE_BOOTSTRAP_KUBECONFIG.replace("https://my.server.example.com:6443", api.url).replace(
            "07401b.f395accd246ae52d", token
        )
        boot = worker.m.host("/var/lib/kubelet/bootstrap-kubeconfig").read_text()
        assert yaml.safe_load(boot) == yaml.safe_load(expected), boot
        assert not worker.kubeconfig.exists()  # "a path to a kubeconfig file that does not yet exist"

        # the token authenticates as the file's user, in system:bootstrappers (+ system:authenticated)
        token_kc = api.kubeconfig_token(token, "kubelet-bootstrap")
        who = kubectl_as(api, token_kc, "auth", "whoami", "-o", "json")
        assert who.returncode == 0, who.stderr
        info = json.loads(who.stdout)["status"]["userInfo"]
        assert info["username"] == "kubelet-bootstrap" and info["uid"] == "10001"
        assert sorted(info["groups"]) == ["system:authenticated", "system:bootstrappers"]
        assert (
            kubectl_as(api, token_kc, "auth", "can-i", "create", "certificatesigningrequests").stdout.strip() == "yes"
        )
        assert kubectl_as(api, token_kc, "auth", "can-i", "list", "secrets", "-A").stdout.strip() == "no"

        worker.start()
        plain.distribute_ca(api.master)
        plain.write_bootstrap_kubeconfig(api.url, token)
        plain.start(rotate=False)
        wait_until(worker.client_current.exists, 60, f"the client certificate\n{worker.log()[-3000:]}")
        cert = assert_kubelet_client_certificate(worker, api.master.host(CA_PEM))
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert dt.timedelta(hours=24) <= lifetime <= dt.timedelta(hours=24, minutes=5)  # --cluster-signing-duration

        wait_until(plain.client_current.exists, 60, f"worker-n's certificate\n{plain.log()[-3000:]}")
        wait_until(plain.kubeconfig.exists, 10, "worker-n's kubeconfig")
        assert_kubelet_client_certificate(plain, api.master.host(CA_PEM))
        by_node = {}
        for c in csrs_of(api, "kubelet-bootstrap"):
            req = x509.load_pem_x509_csr(base64.b64decode(c["spec"]["request"]))
            by_node[req.subject.rfc4514_string()] = c
        assert set(by_node) == {"CN=system:node:worker-a,O=system:nodes", "CN=system:node:worker-n,O=system:nodes"}
        csr = by_node["CN=system:node:worker-a,O=system:nodes"]
        assert csr["metadata"]["name"].startswith("csr-")  # the rotating path: generateName csr-
        assert by_node["CN=system:node:worker-n,O=system:nodes"]["metadata"]["name"].startswith("node-csr-")
        assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
        assert csr["spec"]["uid"] == "10001"
        assert "system:bootstrappers" in csr["spec"]["groups"]
        approved = conditions(csr)["Approved"]
        assert approved["reason"] == "AutoApproved"
        assert approved["message"] == "Auto approving kubelet client certificate after SubjectAccessReview."
        row = api.kubectl("get", "csr", csr["metadata"]["name"], "--no-headers").stdout
        assert "kubelet-bootstrap" in row and "Approved,Issued" in row, row

        wait_until(lambda: node_ready(api, "worker-a"), 60, "Node worker-a Ready")
        as_node = node_kubeconfig(worker, api, tmp_path)
        assert kubectl_as(api, as_node, "auth", "can-i", "get", "nodes/worker-a").stdout.strip() == "yes"

        # the operator removes the bootstrap line and restarts kube-apiserver
        api.master.write(TOKEN_FILE, "# bootstrap done\n", 0o600)
        api.restart()
        rejected = kubectl_as(api, token_kc, "get", "csr")
        assert rejected.returncode != 0 and "Unauthorized" in rejected.stderr, rejected
        first = lease_renew_time(api, "worker-a")
        wait_until(lambda: lease_renew_time(api, "worker-a") != first, 30, "a Lease renewal after the restart")
        assert node_ready(api, "worker-a")
        assert kubectl_as(api, as_node, "get", "node", "worker-a").returncode == 0
        assert worker.alive() and plain.alive()
        assert len(csrs(api)) == 2  # no new bootstrap was needed


def test_bootstrap_token_flow_and_renewal(tmp_path: Path) -> None:
    """--enable-bootstrap-token-auth with a token Secret (created with kubectl) instead of the token file, and a short
    --cluster-signing-duration: after the Secret is deleted the kubelet renews its certificate as system:node:<name>
    (selfnodeclient, page binding auto-approve-renewals-for-nodes) before expiry, and its Lease never stops renewing."""
    master = Machine(tmp_path / "master")
    make_operator_ca(master)
    api = PageApiServer(
        master, tmp_path / "apiserver", host=API_HOST, auth_flags=["--enable-bootstrap-token-auth=true"]
    )
    kcm = ControllerManager(api, tmp_path / "kcm", signing_duration="2m")
    worker = Worker(Machine(tmp_path / "worker-b"), "worker-b", "127.0.30.12", logs=tmp_path)
    alphabet = string.ascii_lowercase + string.digits
    token_id = "".join(secrets.choice(alphabet) for _ in range(6))
    token_secret = "".join(secrets.choice(alphabet) for _ in range(16))
    with stopping(api, kcm, worker):
        api.start(timeout=60)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "stringData": {
                "token-id": token_id,
                "token-secret": token_secret,
                "usage-bootstrap-authentication": "true",
                "expiration": (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
        api.kubectl("create", "-f", "-", input=yaml.safe_dump(secret))
        create_bindings(
            api, tmp_path, CREATE_CSRS_FOR_BOOTSTRAPPING, AUTO_APPROVE_CSRS_FOR_GROUP, AUTO_APPROVE_RENEWALS_FOR_NODES
        )
        kcm.start()
        worker.distribute_ca(master)
        worker.write_bootstrap_kubeconfig(api.url, f"{token_id}.{token_secret}")
        worker.start()
        wait_until(worker.client_current.exists, 60, f"the client certificate\n{worker.log()[-3000:]}")
        assert_kubelet_client_certificate(worker, master.host(CA_PEM))
        [boot_csr] = csrs_of(api, f"system:bootstrap:{token_id}")
        assert "system:bootstrappers" in boot_csr["spec"]["groups"]
        assert conditions(boot_csr)["Approved"]["reason"] == "AutoApproved"
        wait_until(lambda: node_ready(api, "worker-b"), 60, "Node worker-b Ready")

        # the bootstrap credential goes away: the Secret is deleted and the token no longer authenticates
        before = {c["metadata"]["name"] for c in csrs(api)}
        current = x509.load_pem_x509_certificate(worker.client_current.read_bytes())
        api.kubectl("delete", "secret", f"bootstrap-token-{token_id}", "-n", "kube-system")
        token_kc = api.kubeconfig_token(f"{token_id}.{token_secret}", "gone")
        wait_until(lambda: "Unauthorized" in kubectl_as(api, token_kc, "get", "csr").stderr, 10, "the token rejected")

        def renewal_in_use() -> dict | None:
            for c in csrs_of(api, "system:node:worker-b"):
                issued = (c.get("status") or {}).get("certificate")
                if c["metadata"]["name"] in before or not issued:
                    continue
                leaf = x509.load_pem_x509_certificate(base64.b64decode(issued))
                if leaf == x509.load_pem_x509_certificate(worker.client_current.read_bytes()):
                    return c
            return None

        # watch the Lease while waiting for the renewal (due at 70–90 % of NotAfter − NotBefore: ≤ ~80 s here)
        renewal: dict | None = None
        seen: list[tuple[float, str]] = []
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and renewal is None:
            rt = lease_renew_time(api, "worker-b")
            if rt and (not seen or seen[-1][1] != rt):
                seen.append((time.monotonic(), rt))
            renewal = renewal_in_use()
            time.sleep(1)
        assert renewal is not None, f"no renewal after the token was deleted\n{worker.log()[-3000:]}"
        assert dt.datetime.now(dt.UTC) < current.not_valid_after_utc, "renewed only after expiry"
        renewed = assert_kubelet_client_certificate(worker, master.host(CA_PEM))
        assert renewed.serial_number != current.serial_number
        assert renewed.public_key().public_numbers() != current.public_key().public_numbers()  # a new key per CSR
        assert renewal["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
        assert "system:nodes" in renewal["spec"]["groups"]
        approved = conditions(renewal)["Approved"]
        assert approved["reason"] == "AutoApproved"
        assert approved["message"] == "Auto approving self kubelet client certificate after SubjectAccessReview."

        # heartbeats kept going: renewals of the Lease about every 10 s all along, and after the rotation
        t0 = time.monotonic()
        after = lease_renew_time(api, "worker-b")
        wait_until(lambda: lease_renew_time(api, "worker-b") != after, 25, "a Lease renewal on the new certificate")
        seen.append((time.monotonic(), lease_renew_time(api, "worker-b") or ""))
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
        assert gaps and max(gaps) < 25, (gaps, time.monotonic() - t0)
        assert node_ready(api, "worker-b")
        log = worker.log()
        assert "Unauthorized" not in log and "failed to update lease" not in log.lower(), log[-3000:]
        assert [line for line in log.splitlines() if line.startswith("E")] == []


def test_page_experimental_signing_duration_flag_is_gone(tmp_path: Path) -> None:
    """The page names `--experimental-cluster-signing-duration`; kube-controller-manager 1.33 (which we mirror) only
    has `--cluster-signing-duration` and refuses the old name at start, naming it."""
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "pykubeadm", "component", "kube-controller-manager", f"--kubeconfig={tmp_path}/none",
         "--experimental-cluster-signing-duration=8760h"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    assert "unknown flag: --experimental-cluster-signing-duration" in res.stderr, res.stderr
