"""The lab end to end: `lab up` (init + joins with real processes), what kubectl, openssl and the official Python client
see, kubeadm's own e2e assertions (anchors §4.5), token create/delete, join failures, reset and `lab up` again."""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import itertools
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

PREFIX = os.environ.get("PYKUBEADM_LAB_ADDRESS_PREFIX", "127.0.10.")
WORKERS = ["lab-worker", "lab-worker2"]


def pykubeadm(*args: str, root: Path | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm"] + (["--root-dir", str(root)] if root else []) + list(args)
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _processes_under(path: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        args = cmdline.split("\0")
        inside = any(
            a == str(path) or a.startswith(f"{path}/") or f"={path}/" in a or a.endswith(f"={path}") for a in args
        )
        if inside and int(entry.name) != os.getpid():
            pids.append(int(entry.name))
    return pids


def _kill_leftovers(path: Path) -> list[str]:
    """Processes still running with the lab dir in their command line (a cleanup bug: reported with their command
    lines, then stopped)."""
    left = _processes_under(path)
    described = []
    for pid in left:
        try:
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")[:300]
            described.append(f"{pid}: {argv!r}")
        except OSError:
            described.append(str(pid))
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return described


@dataclass
class Lab:
    dir: Path

    def root(self, node: str) -> Path:
        return self.dir / node

    @property
    def admin(self) -> Path:
        return self.root("lab-control-plane") / "etc/kubernetes/admin.conf"

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.admin), *args], capture_output=True, text=True, timeout=60
        )
        if check:
            assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res

    @property
    def token(self) -> str:
        docs = list(yaml.safe_load_all((self.dir / ".lab/lab-control-plane.yaml").read_text()))
        return str(docs[0]["bootstrapTokens"][0]["token"])


def _lab_up(lab_dir: Path, *args: str) -> Lab:
    res = pykubeadm("lab", "up", "--topology", "loopback", "--dir", str(lab_dir), *args)
    assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return Lab(lab_dir)


def _lab_down(lab: Lab) -> None:
    res = pykubeadm("lab", "down", "--dir", str(lab.dir))
    left = _kill_leftovers(lab.dir)
    assert res.returncode == 0, res.stderr
    assert not left, f"processes left running after lab down: {left}"
    assert list(lab.dir.iterdir()) == []


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("lab")
    try:
        yield _lab_up(lab_dir, "--workers", "2")
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        _kill_leftovers(lab_dir)


@pytest.fixture(scope="module")
def api(lab: Lab):  # type: ignore[no-untyped-def]
    from kubernetes import client, config

    return config.new_client_from_config(str(lab.admin)), client


def test_nodes_ready_with_control_plane_role_and_taint(lab: Lab) -> None:
    rows = [line.split() for line in lab.kubectl("get", "nodes").stdout.splitlines()]
    assert rows[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    by_name = {r[0]: r for r in rows[1:]}
    assert set(by_name) == {"lab-control-plane", *WORKERS}
    assert all(r[1] == "Ready" for r in by_name.values())
    assert by_name["lab-control-plane"][2] == "control-plane"
    assert by_name["lab-worker"][2] == "<none>"
    node = json.loads(lab.kubectl("get", "node", "lab-control-plane", "-o", "json").stdout)
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in node["spec"]["taints"]


def test_worker_csrs_approved_and_issued_for_the_bootstrap_token(lab: Lab) -> None:
    out = lab.kubectl("get", "csr").stdout.splitlines()
    assert out[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    token_id = lab.token.split(".")[0]
    bootstrap = [line.split() for line in out[1:] if f"system:bootstrap:{token_id}" in line]
    assert len(bootstrap) == 2, out
    for row in bootstrap:
        assert row[2] == "kubernetes.io/kube-apiserver-client-kubelet"
        assert row[-1] == "Approved,Issued"


def test_kubelet_serving_certificates_are_ca_signed_for_exactly_their_nodes_addresses(lab: Lab) -> None:
    """serverTLSBootstrap: each kubelet serves a certificate the csrservingapproving controller approved and the
    cluster CA signed, naming exactly its Node's addresses; the API server verifies it (--kubelet-certificate-authority)."""
    from cryptography import x509

    manifest = lab.root("lab-control-plane") / "etc/kubernetes/manifests/kube-apiserver.yaml"
    assert "--kubelet-certificate-authority=/etc/kubernetes/pki/ca.crt" in manifest.read_text()
    ca = x509.load_pem_x509_certificate((lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt").read_bytes())
    nodes = json.loads(lab.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    csrs = json.loads(lab.kubectl("get", "csr", "-o", "json").stdout)["items"]
    assert len(nodes) == 3
    for node in nodes:
        name = node["metadata"]["name"]
        pem = (lab.root(name) / "var/lib/kubelet/pki/kubelet-server-current.pem").read_bytes()
        cert = x509.load_pem_x509_certificate(pem)
        cert.verify_directly_issued_by(ca)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        addresses = node["status"]["addresses"]
        assert sorted(sans.get_values_for_type(x509.DNSName)) == [
            a["address"] for a in addresses if a["type"] == "Hostname"
        ]
        assert sorted(str(i) for i in sans.get_values_for_type(x509.IPAddress)) == sorted(
            a["address"] for a in addresses if a["type"] == "InternalIP"
        )
        serving = [
            c
            for c in csrs
            if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
            and c["spec"]["username"] == f"system:node:{name}"
        ]
        assert serving, name
        approved = [c for c in serving[0]["status"]["conditions"] if c["type"] == "Approved"]
        assert approved[0]["reason"] == "AutoApproved" and "(csrservingapproving)" in approved[0]["message"]


def test_lab_timeline_gives_each_worker_its_bootstrap_in_order_with_who_approved(lab: Lab, tmp_path: Path) -> None:
    from datetime import datetime

    from pykubeadm.lab.timeline import BOOTSTRAP_STEPS

    svg = tmp_path / "timeline.svg"
    res = pykubeadm("lab", "timeline", "--dir", str(lab.dir), "-o", "json", "--svg", str(svg))
    assert res.returncode == 0, res.stderr
    nodes = {n["node"]: n for n in json.loads(res.stdout)["nodes"]}
    assert set(nodes) == {"lab-control-plane", *WORKERS}
    csrs = {c["metadata"]["name"]: c for c in json.loads(lab.kubectl("get", "csr", "-o", "json").stdout)["items"]}

    def second(stamp: str) -> datetime:  # API objects have whole seconds, logs milliseconds
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).replace(microsecond=0)

    for worker in WORKERS:
        steps = nodes[worker]["steps"]
        assert [s["step"] for s in steps] == list(BOOTSTRAP_STEPS)
        assert all(s["time"] for s in steps), [s for s in steps if not s["time"]]
        # In order to within the records' resolution: API timestamps are whole seconds, and a condition's time is
        # taken on the kubelet's clock before the object it is posted with gets the apiserver's (Node Ready's
        # lastTransitionTime may read one second before the Node's creationTimestamp).
        times = [second(s["time"]) for s in steps]
        assert all((b - a).total_seconds() >= -1 for a, b in itertools.pairwise(times)), steps
        assert times[-1] >= times[0], steps
        by = {s["step"]: s for s in steps}
        csr = csrs[by["client CSR created"]["source"].removeprefix("CSR ")]
        assert by["client CSR created"]["time"] == csr["metadata"]["creationTimestamp"]
        assert by["client CSR created"]["detail"] == f"requested by {csr['spec']['username']}"
        (approved,) = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
        assert by["client CSR approved"]["time"] == approved["lastUpdateTime"]
        assert by["client CSR approved"]["detail"] == (
            "AutoApproved: Auto approving kubelet client certificate after SubjectAccessReview."
        )
        serving = [s for s in nodes[worker]["later"] if s["step"] == "serving CSR approved"]
        assert serving and serving[0]["detail"].endswith(f"against Node {worker} (csrservingapproving).")
    text = svg.read_text()
    for name in nodes:
        assert f'id="lane-{name}"' in text and f">{name}</text>" in text
    assert "Node Ready +" in text and "client CSR approved +" in text
    png = tmp_path / "timeline.png"
    subprocess.run(["rsvg-convert", "-o", str(png), str(svg)], check=True, capture_output=True, timeout=60)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_kubectl_logs_of_static_pods_through_the_kubelet(lab: Lab, api) -> None:  # type: ignore[no-untyped-def]
    """`kubectl logs` goes API server → kubelet :10250 (apiserver-kubelet-client certificate) → the container's log."""
    pod = "kube-controller-manager-lab-control-plane"
    out = lab.kubectl("-n", "kube-system", "logs", pod, "--tail=200").stdout
    assert "kube-controller-manager" in out and "serving securely on" in out
    assert len(lab.kubectl("-n", "kube-system", "logs", pod, "--tail=2").stdout.splitlines()) == 2
    assert len(lab.kubectl("-n", "kube-system", "logs", pod, "--limit-bytes=10").stdout) == 10
    res = lab.kubectl("-n", "kube-system", "logs", pod, "-c", "nope", check=False)
    assert res.returncode != 0 and "container nope is not valid for pod" in res.stderr
    res = lab.kubectl("-n", "kube-system", "logs", pod, "--previous", check=False)
    assert res.returncode != 0 and "previous terminated container" in res.stderr
    api_client, client = api
    text = client.CoreV1Api(api_client).read_namespaced_pod_log(pod, "kube-system", tail_lines=5)
    assert len(text.splitlines()) == 5
    # a worker without log rights is refused by the API server before any kubelet is asked
    res = lab.kubectl(
        "--as", "system:node:lab-worker", "--as-group", "system:nodes", "-n", "kube-system", "logs", pod, check=False
    )
    assert res.returncode != 0 and "forbidden" in res.stderr.lower()


@pytest.mark.parametrize("worker", WORKERS)
def test_worker_files_after_tls_bootstrap(lab: Lab, worker: str) -> None:
    root = lab.root(worker)
    assert not (root / "etc/kubernetes/bootstrap-kubelet.conf").exists()
    kubeconf = yaml.safe_load((root / "etc/kubernetes/kubelet.conf").read_text())
    user = kubeconf["users"][0]["user"]
    assert user == {
        "client-certificate": "/var/lib/kubelet/pki/kubelet-client-current.pem",
        "client-key": "/var/lib/kubelet/pki/kubelet-client-current.pem",
    }
    pem = root / "var/lib/kubelet/pki/kubelet-client-current.pem"
    ca = root / "etc/kubernetes/pki/ca.crt"
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(ca), str(pem)], capture_output=True, text=True)
    assert verify.returncode == 0 and ": OK" in verify.stdout, verify.stdout + verify.stderr
    subject = subprocess.run(
        ["openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", str(pem)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert subject.strip() == f"subject=CN=system:node:{worker},O=system:nodes"
    # the worker's CA is the control plane's
    assert ca.read_bytes() == (lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt").read_bytes()


def _sar_allowed(
    client, api_client, *, user: str = "", groups: list[str] | None = None, ns: str, resource: str, name: str
) -> bool:  # type: ignore[no-untyped-def]
    body = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user or None,
            groups=groups,
            resource_attributes=client.V1ResourceAttributes(namespace=ns, verb="get", resource=resource, name=name),
        )
    )
    return bool(client.AuthorizationV1Api(api_client).create_subject_access_review(body).status.allowed)


def test_kubeadm_e2e_suite_assertions(lab: Lab, api) -> None:  # type: ignore[no-untyped-def]
    """Every assertion of kubeadm's test/e2e_kubeadm (anchors.md §4.5) that applies to this cluster."""
    api_client, client = api
    core = client.CoreV1Api(api_client)
    rbac = client.RbacAuthorizationV1Api(api_client)
    apps = client.AppsV1Api(api_client)
    bootstrappers = "system:bootstrappers:kubeadm:default-node-token"

    def crb(name: str, kind: str, subject: str, role: str) -> None:
        b = rbac.read_cluster_role_binding(name)
        assert any(s.kind == kind and s.name == subject for s in b.subjects), b.subjects
        assert b.role_ref.name == role

    # bootstrap token
    secrets = core.list_namespaced_secret("kube-system").items
    assert any(s.type == "bootstrap.kubernetes.io/token" for s in secrets)
    crb("kubeadm:kubelet-bootstrap", "Group", bootstrappers, "system:node-bootstrapper")
    crb(
        "kubeadm:node-autoapprove-bootstrap",
        "Group",
        bootstrappers,
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    )
    # cluster-info
    info = core.read_namespaced_config_map("cluster-info", "kube-public")
    assert "kubeconfig" in info.data
    assert any(k.startswith("jws-kubeconfig-") for k in info.data)
    rbac.read_namespaced_role("kubeadm:bootstrap-signer-clusterinfo", "kube-public")
    rbac.read_namespaced_role_binding("kubeadm:bootstrap-signer-clusterinfo", "kube-public")
    assert _sar_allowed(
        client, api_client, user="system:anonymous", ns="kube-public", resource="configmaps", name="cluster-info"
    )
    # ... and readable by a real anonymous request
    server = yaml.safe_load(lab.admin.read_text())["clusters"][0]["cluster"]["server"]
    ctx = ssl.create_default_context(cafile=str(lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt"))
    import urllib.request

    with urllib.request.urlopen(f"{server}/api/v1/namespaces/kube-public/configmaps/cluster-info", context=ctx) as r:
        assert "jws-kubeconfig-" in r.read().decode()
    # bootstrap signer
    rbac.read_namespaced_role("system:controller:bootstrap-signer", "kube-system")
    # kubeadm-config and kubelet-config
    for cm_name, role in (
        ("kubeadm-config", "kubeadm:nodes-kubeadm-config"),
        ("kubelet-config", "kubeadm:kubelet-config"),
    ):
        cm = core.read_namespaced_config_map(cm_name, "kube-system")
        assert ("ClusterConfiguration" if cm_name == "kubeadm-config" else "kubelet") in cm.data
        rbac.read_namespaced_role(role, "kube-system")
        rbac.read_namespaced_role_binding(role, "kube-system")
        for group in (bootstrappers, "system:nodes"):
            assert _sar_allowed(
                client, api_client, user="x", groups=[group], ns="kube-system", resource="configmaps", name=cm_name
            )
    # nodes: CRI annotation (NodeLocalCRISocket is off in 1.33), certificate rotation, control-plane label/taint
    for node in core.list_node().items:
        assert node.metadata.annotations["kubeadm.alpha.kubernetes.io/cri-socket"].startswith("unix://")
    crb(
        "kubeadm:node-autoapprove-certificate-rotation",
        "Group",
        "system:nodes",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    )
    cps = core.list_node(label_selector="node-role.kubernetes.io/control-plane").items
    assert [n.metadata.name for n in cps] == ["lab-control-plane"]
    assert any(
        t.key == "node-role.kubernetes.io/control-plane" and t.effect == "NoSchedule" for t in cps[0].spec.taints
    )
    # admin
    crb("kubeadm:cluster-admins", "Group", "kubeadm:cluster-admins", "cluster-admin")
    # DNS addon
    core.read_namespaced_service_account("coredns", "kube-system")
    rbac.read_cluster_role("system:coredns")
    rbac.read_cluster_role_binding("system:coredns")
    assert "Corefile" in core.read_namespaced_config_map("coredns", "kube-system").data
    assert (
        apps.read_namespaced_deployment("coredns", "kube-system").spec.template.spec.service_account_name == "coredns"
    )
    core.read_namespaced_service("kube-dns", "kube-system")
    # proxy addon
    core.read_namespaced_service_account("kube-proxy", "kube-system")
    crb("kubeadm:node-proxier", "ServiceAccount", "kube-proxy", "system:node-proxier")
    assert {"config.conf", "kubeconfig.conf"} <= set(core.read_namespaced_config_map("kube-proxy", "kube-system").data)
    rbac.read_namespaced_role("kube-proxy", "kube-system")
    rbac.read_namespaced_role_binding("kube-proxy", "kube-system")
    assert _sar_allowed(
        client, api_client, user="x", groups=[bootstrappers], ns="kube-system", resource="configmaps", name="kube-proxy"
    )
    assert (
        apps.read_namespaced_daemon_set("kube-proxy", "kube-system").spec.template.spec.service_account_name
        == "kube-proxy"
    )
    # networking: podCIDRs inside podSubnet, the kubernetes Service inside serviceSubnet
    cluster_cfg = yaml.safe_load(
        core.read_namespaced_config_map("kubeadm-config", "kube-system").data["ClusterConfiguration"]
    )
    pod_subnet = ipaddress.ip_network(cluster_cfg["networking"]["podSubnet"])
    deadline = time.monotonic() + 30
    while True:
        nodes = core.list_node().items
        if all(n.spec.pod_cidr for n in nodes) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for n in nodes:
        assert ipaddress.ip_network(n.spec.pod_cidr).subnet_of(pod_subnet), n.spec.pod_cidr
    svc = core.read_namespaced_service("kubernetes", "default")
    assert ipaddress.ip_address(svc.spec.cluster_ip) in ipaddress.ip_network(cluster_cfg["networking"]["serviceSubnet"])


def _jws_keys(lab: Lab) -> set[str]:
    data = json.loads(lab.kubectl("-n", "kube-public", "get", "cm", "cluster-info", "-o", "json").stdout)["data"]
    return {k for k in data if k.startswith("jws-kubeconfig-")}


def _token_rejected(lab: Lab, token: str) -> bool:
    """Whether the apiserver answers 401 to `token` (kube-apiserver caches a successful token authentication for
    10 s, so a deleted token keeps authenticating that long, as on a real cluster)."""
    import urllib.error
    import urllib.request

    server = yaml.safe_load(lab.admin.read_text())["clusters"][0]["cluster"]["server"]
    ctx = ssl.create_default_context(cafile=str(lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt"))
    req = urllib.request.Request(f"{server}/api", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10):
            return False
    except urllib.error.HTTPError as e:
        return e.code == 401


def _wait(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return bool(predicate())


def test_token_create_print_join_command_joins_a_node_and_delete_removes_it(lab: Lab) -> None:
    cp = lab.root("lab-control-plane")
    res = pykubeadm("token", "create", "--print-join-command", root=cp)
    assert res.returncode == 0, res.stderr
    command = res.stdout.strip()
    m = re.fullmatch(r"kubeadm join (\S+) --token (\S+) --discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})", command)
    assert m, command
    endpoint, token, ca_hash = m.groups()
    token_id = token.split(".")[0]
    assert _wait(lambda: f"jws-kubeconfig-{token_id}" in _jws_keys(lab))
    # the printed command, run on a new node (its kubelet bound to its own address through a kubelet patch)
    name, address = "lab-worker3", f"{PREFIX}4"
    patches = lab.dir / ".lab" / f"{name}-patches"
    patches.mkdir(parents=True)
    (patches / "kubeletconfiguration+merge.yaml").write_text(f"address: {address}\nhealthzBindAddress: {address}\n")
    args = command.split()[2:]
    # the new node's kubelet listens on its own address, so the port check of all addresses is relaxed for it
    res = pykubeadm(
        "join",
        *args,
        "--node-name",
        name,
        "--patches",
        str(patches),
        "--ignore-preflight-errors=Port-10250",
        root=lab.root(name),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "This node has joined the cluster" in res.stdout
    assert _wait(lambda: "Ready" in lab.kubectl("get", "node", name, check=False).stdout, 60)
    # token delete removes the Secret and its signature
    res = pykubeadm("token", "delete", token_id, root=cp)
    assert res.returncode == 0, res.stderr
    assert f'bootstrap token "{token_id}" deleted' in res.stdout
    assert lab.kubectl("-n", "kube-system", "get", "secret", f"bootstrap-token-{token_id}", check=False).returncode != 0
    assert _wait(lambda: f"jws-kubeconfig-{token_id}" not in _jws_keys(lab))
    assert _wait(lambda: _token_rejected(lab, token), 30)
    # joining with the deleted token now fails with the token named as the cause, and writes nothing
    _assert_join_fails(lab, "after-delete", endpoint, token, ca_hash, "rejected the token")
    # the node joined by hand is not one of the lab's: reset and delete it as its admin would
    res = pykubeadm("reset", "-f", root=lab.root(name))
    assert res.returncode == 0, res.stderr
    assert not _processes_under(lab.root(name))
    lab.kubectl("delete", "node", name)


def _join_config(path: Path, name: str, endpoint: str, token: str, ca_hash: str, timeout: str = "3s") -> None:
    path.write_text(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "kubeadm.k8s.io/v1beta4",
                    "kind": "JoinConfiguration",
                    "discovery": {
                        "bootstrapToken": {"apiServerEndpoint": endpoint, "token": token, "caCertHashes": [ca_hash]},
                        "tlsBootstrapToken": token,
                    },
                    "nodeRegistration": {"name": name},
                    "timeouts": {"discovery": timeout},
                }
            ]
        )
    )


def _assert_join_fails(lab: Lab, case: str, endpoint: str, token: str, ca_hash: str, message: str) -> str:
    root = lab.dir / ".lab" / f"failing-{case}"
    root.mkdir(parents=True, exist_ok=True)
    cfg = lab.dir / ".lab" / f"failing-{case}.yaml"
    _join_config(cfg, f"failing-{case}", endpoint, token, ca_hash)
    res = pykubeadm("join", "--config", str(cfg), "--ignore-preflight-errors=all", root=root, timeout=60)
    assert res.returncode != 0, res.stdout
    assert message in res.stderr, res.stderr
    assert list(root.iterdir()) == [], "a failed join left files behind"
    return res.stderr


def _openssl_ca_pin(lab: Lab) -> str:
    """The cluster CA's public key pin, computed with the openssl CLI (kubeadm's documented recipe)."""
    ca = lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt"
    return (
        "sha256:"
        + subprocess.run(
            f"openssl x509 -pubkey -noout -in {ca} | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex",
            shell=True,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
    )


def test_join_failures_each_say_what_is_wrong(lab: Lab) -> None:
    cp = lab.root("lab-control-plane")
    endpoint = f"{PREFIX}1:6443"
    ca_hash = _openssl_ca_pin(lab)
    # wrong CA hash
    _assert_join_fails(lab, "wrong-hash", endpoint, lab.token, "sha256:" + "0" * 64, "are pinned")
    # expired token (the token cleaner deletes it; a short TTL stands in for "expired")
    res = pykubeadm("token", "create", "--ttl", "1s", root=cp)
    assert res.returncode == 0, res.stderr
    expired = res.stdout.strip()
    time.sleep(2)
    _assert_join_fails(lab, "expired", endpoint, expired, ca_hash, "rejected the token")
    # a token without the signing usage
    res = pykubeadm("token", "create", "--usages", "authentication", root=cp)
    assert res.returncode == 0, res.stderr
    _assert_join_fails(lab, "no-signing", endpoint, res.stdout.strip(), ca_hash, "lacks the 'signing' usage")
    # tampered cluster-info: a man in the middle serves altered content with the real signature
    _assert_tampered_cluster_info_is_refused(lab, ca_hash)


def _assert_tampered_cluster_info_is_refused(lab: Lab, ca_hash: str) -> None:
    real = json.loads(lab.kubectl("-n", "kube-public", "get", "cm", "cluster-info", "-o", "json").stdout)
    tampered = dict(real)
    tampered["data"] = dict(real["data"])
    tampered["data"]["kubeconfig"] = real["data"]["kubeconfig"].replace(
        f"https://{PREFIX}1:6443", "https://127.0.0.1:1"
    )
    body = json.dumps(tampered).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    pki = lab.root("lab-control-plane") / "etc/kubernetes/pki"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"127.0.0.1:{server.server_address[1]}"
        _assert_join_fails(lab, "tampered", endpoint, lab.token, ca_hash, "failed to verify JWS signature")
    finally:
        server.shutdown()
        server.server_close()


def test_lab_join_adds_a_ready_worker_pinned_to_the_cluster_ca(lab: Lab) -> None:
    """`lab join` (its `join` forked by the lab's zygote) adds a Ready worker that joined with the CA pin openssl
    computes; the lab keeps that pin beside the digest of the CA certificate it belongs to."""
    res = pykubeadm("lab", "join", "--dir", str(lab.dir))

    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "[lab] lab-worker3 is Ready" in res.stdout
    node = json.loads(lab.kubectl("get", "node", "lab-worker3", "-o", "json").stdout)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert "This node has joined the cluster" in (lab.dir / ".lab/lab-worker3.log").read_text()
    pin = _openssl_ca_pin(lab)
    config = next(yaml.safe_load_all((lab.dir / ".lab/lab-worker3.yaml").read_text()))
    assert config["discovery"]["bootstrapToken"]["caCertHashes"] == [pin]
    ca = (lab.root("lab-control-plane") / "etc/kubernetes/pki/ca.crt").read_bytes()
    assert (lab.dir / ".lab/ca-cert-hash").read_text().split() == [hashlib.sha256(ca).hexdigest(), pin]


def test_zz_reset_every_node_then_lab_up_again_in_the_same_dir(lab: Lab) -> None:
    """Runs last in this module: `lab down` resets every node (no kubeadm file, no process left), then `lab up`."""
    for node in ["lab-worker", "lab-control-plane"]:
        assert (lab.root(node) / "etc/kubernetes/kubelet.conf").exists()
    res = pykubeadm("reset", "-f", root=lab.root("lab-worker"))
    assert res.returncode == 0, res.stderr
    # kube-proxy's DaemonSet mounts the host's /run/xtables.lock (FileOrCreate): host state shared with iptables,
    # which kubeadm reset leaves on a real node too
    # What is not the node's state: the host's xtables lock, and the installed kubelet's version (a kubelet package
    # outlives `kubeadm reset`, pykubeadm.kubelet.package).
    host_files = {lab.root("lab-worker") / "run/xtables.lock", lab.root("lab-worker") / "etc/pykubeadm/kubelet-version"}
    leftover = [p for p in (lab.root("lab-worker")).rglob("*") if p.is_file() and p not in host_files]
    assert leftover == [], leftover
    assert not _processes_under(lab.root("lab-worker"))
    _lab_down(lab)
    again = _lab_up(lab.dir, "--workers", "0")  # a control plane shows the same: the dir takes a new lab
    _lab_down(again)
