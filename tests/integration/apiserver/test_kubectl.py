"""A scripted session of the real `kubectl` against the built-in apiserver (the dispatcher picks kubectl 1.33,
which sends protobuf bodies for typed commands)."""

import base64
import json
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
    "status": {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "ok",
                "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
        "nodeInfo": {
            "kubeletVersion": "v1.33.0",
            "osImage": "Debian",
            "kernelVersion": "6.1",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "containerRuntimeVersion": "x://1",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "kubeProxyVersion": "",
        },
        "addresses": [{"type": "InternalIP", "address": "127.0.10.1"}],
    },
}


def header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def csr_yaml(name: str, cn: str = "alice") -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .sign(key, hashes.SHA256())
    )
    req = base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()
    return json.dumps(
        {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {
                "request": req,
                "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth"],
                "expirationSeconds": 86400,
            },
        }
    )


def test_version_and_discovery(api):
    out = api.kubectl("version", "-o", "json").stdout
    assert json.loads(out)["serverVersion"]["gitVersion"] == "v1.33.0"
    res = api.kubectl("api-resources").stdout
    for name in (
        "configmaps",
        "certificatesigningrequests",
        "deployments",
        "leases",
        "priorityclasses",
        "clusterroles",
    ):
        assert name in res
    assert "Kubernetes control plane is running at" in api.kubectl("cluster-info").stdout


def test_builtin_namespaces_and_priority_classes(api):
    out = api.kubectl("get", "ns").stdout
    assert header(out) == ["NAME", "STATUS", "AGE"]
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert ns in out
    pcs = api.kubectl("get", "priorityclasses", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    assert {"system-node-critical", "system-cluster-critical"} <= set(pcs)
    err = api.kubectl("delete", "ns", "kube-system", check=False)
    assert err.returncode != 0
    assert (
        'Error from server (Forbidden): namespaces "kube-system" is forbidden: this namespace may not be deleted'
        in err.stderr
    )


def test_nodes_table_label_annotate_cordon_describe(api, tmp_path):
    f = tmp_path / "node.json"
    f.write_text(json.dumps(NODE))
    api.kubectl("create", "-f", str(f))
    out = api.kubectl("get", "nodes").stdout
    assert header(out) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert out.splitlines()[1].split()[:3] == ["n1", "Ready", "control-plane"]
    assert out.splitlines()[1].split()[4] == "v1.33.0"
    api.kubectl("label", "node", "n1", "tier=a")
    api.kubectl("annotate", "node", "n1", "note=hello")
    api.kubectl("cordon", "n1")
    out = api.kubectl("get", "node", "n1", "-L", "tier").stdout
    assert "Ready,SchedulingDisabled" in out and " a" in out.splitlines()[1]
    desc = api.kubectl("describe", "node", "n1").stdout
    assert "note: hello" in desc and "Unschedulable:      true" in desc
    api.kubectl("label", "node", "n1", "tier-")
    assert "tier" not in api.kubectl("get", "node", "n1", "-o", "jsonpath={.metadata.labels}").stdout


def test_create_typed_objects_protobuf_and_get_tables(api):
    api.kubectl("create", "ns", "demo")
    api.kubectl("create", "configmap", "c1", "-n", "demo", "--from-literal=a=b")
    api.kubectl("create", "secret", "generic", "s1", "-n", "demo", "--from-literal=password=hunter2")
    api.kubectl("create", "serviceaccount", "robot", "-n", "demo")
    api.kubectl("create", "deployment", "web", "-n", "demo", "--image=nginx:1.25", "--replicas=2")
    api.kubectl("create", "service", "clusterip", "web", "-n", "demo", "--tcp=80:8080")
    api.kubectl("create", "role", "r", "-n", "demo", "--verb=get", "--resource=pods")
    api.kubectl("create", "rolebinding", "rb", "-n", "demo", "--role=r", "--user=bob")
    api.kubectl("create", "clusterrole", "cr", "--verb=list", "--resource=nodes")
    api.kubectl("create", "clusterrolebinding", "crb", "--clusterrole=cr", "--group=devs")
    api.kubectl("create", "priorityclass", "high", "--value=1000")
    assert header(api.kubectl("get", "cm", "-n", "demo").stdout) == ["NAME", "DATA", "AGE"]
    assert header(api.kubectl("get", "secrets", "-n", "demo").stdout) == ["NAME", "TYPE", "DATA", "AGE"]
    assert header(api.kubectl("get", "sa", "-n", "demo").stdout) == ["NAME", "SECRETS", "AGE"]
    assert header(api.kubectl("get", "deploy", "-n", "demo").stdout) == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
    ]
    assert "0/2" in api.kubectl("get", "deploy", "web", "-n", "demo").stdout
    svc = api.kubectl("get", "svc", "web", "-n", "demo").stdout
    assert header(svc) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"] and "80/TCP" in svc
    assert header(api.kubectl("get", "rolebinding", "-n", "demo").stdout) == ["NAME", "ROLE", "AGE"]
    assert "ClusterRole/cr" in api.kubectl("get", "clusterrolebinding", "crb").stdout
    assert header(api.kubectl("get", "role", "-n", "demo").stdout) == ["NAME", "CREATED", "AT"]
    secret = json.loads(api.kubectl("get", "secret", "s1", "-n", "demo", "-o", "json").stdout)
    assert base64.b64decode(secret["data"]["password"]) == b"hunter2"
    dep = json.loads(api.kubectl("get", "deploy", "web", "-n", "demo", "-o", "json").stdout)
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert dep["metadata"]["generation"] == 1
    err = api.kubectl("create", "configmap", "c1", "-n", "demo", check=False)
    assert 'configmaps "c1" already exists' in err.stderr
    err = api.kubectl("create", "configmap", "x", "-n", "nope", check=False)
    assert 'namespaces "nope" not found' in err.stderr
    err = api.kubectl("get", "cm", "missing", "-n", "demo", check=False)
    assert 'Error from server (NotFound): configmaps "missing" not found' in err.stderr


APPLY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: two, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: two}}
  template:
    metadata: {labels: {app: two}}
    spec:
      containers:
      - name: a
        image: IMAGE
        env: [{name: FIRST, value: "1"}, {name: SECOND, value: "VALUE"}]
      - name: b
        image: busybox:1
"""


def test_apply_diff_patch_and_server_side_apply(api, tmp_path):
    f = tmp_path / "dep.yaml"
    f.write_text(APPLY.replace("IMAGE", "nginx:1").replace("VALUE", "2"))
    assert "created" in api.kubectl("apply", "-f", str(f)).stdout
    assert "unchanged" in api.kubectl("apply", "-f", str(f)).stdout
    f.write_text(APPLY.replace("IMAGE", "nginx:3").replace("VALUE", "4"))
    diff = api.kubectl("diff", "-f", str(f), check=False)
    assert diff.returncode == 1 and "nginx:3" in diff.stdout
    assert "configured" in api.kubectl("apply", "-f", str(f)).stdout
    dep = json.loads(api.kubectl("get", "deploy", "two", "-o", "json").stdout)
    cs = dep["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["a", "b"]  # the strategic merge kept container b
    assert cs[0]["env"] == [{"name": "FIRST", "value": "1"}, {"name": "SECOND", "value": "4"}]
    assert dep["metadata"]["generation"] == 2
    assert "$setElementOrder" not in json.dumps(dep)
    api.kubectl("patch", "deploy", "two", "-p", '{"spec":{"replicas":3}}')
    api.kubectl("patch", "deploy", "two", "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}')
    api.kubectl("patch", "deploy", "two", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":4}]')
    dep = json.loads(api.kubectl("get", "deploy", "two", "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 4 and dep["metadata"]["labels"] == {"x": "y"}
    err = api.kubectl(
        "patch", "deploy", "two", "--type=json", "-p", '[{"op":"replace","path":"/nope","value":1}]', check=False
    )
    assert err.returncode != 0 and "doc is missing key: /nope" in err.stderr
    g = tmp_path / "cm.yaml"
    g.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\ndata: {a: '1'}\n")
    assert "serverside-applied" in api.kubectl("apply", "--server-side", "-f", str(g)).stdout
    g.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\ndata: {a: '2'}\n")
    api.kubectl("apply", "--server-side", "-f", str(g))
    assert api.kubectl("get", "cm", "ssa", "-o", "jsonpath={.data.a}").stdout == "2"
    out = api.kubectl("create", "cm", "dry", "--dry-run=server", "-o", "name").stdout
    assert out.strip() == "configmap/dry"
    assert api.kubectl("get", "cm", "dry", check=False).returncode != 0


def test_csr_create_approve_deny_table(api, tmp_path):
    for name in ("csr-a", "csr-d"):
        f = tmp_path / f"{name}.json"
        f.write_text(csr_yaml(name))
        api.kubectl("create", "-f", str(f))
    out = api.kubectl("get", "csr").stdout
    assert header(out) == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    row = next(line.split() for line in out.splitlines() if line.startswith("csr-a"))
    assert row[2:] == ["kubernetes.io/kube-apiserver-client", "kubernetes-admin", "24h", "Pending"]
    assert "approved" in api.kubectl("certificate", "approve", "csr-a").stdout
    assert "denied" in api.kubectl("certificate", "deny", "csr-d").stdout
    out = api.kubectl("get", "csr").stdout
    assert any(line.startswith("csr-a") and line.endswith("Approved") for line in out.splitlines())
    assert any(line.startswith("csr-d") and line.endswith("Denied") for line in out.splitlines())
    err = api.kubectl("certificate", "approve", "csr-d", check=False)
    assert err.returncode != 0 and "already Denied" in err.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "apiVersion": "certificates.k8s.io/v1",
                "kind": "CertificateSigningRequest",
                "metadata": {"name": "bad"},
                "spec": {
                    "request": "bm90IGEgY3NyCg==",
                    "signerName": "kubernetes.io/kube-apiserver-client",
                    "usages": ["client auth"],
                },
            }
        )
    )
    err = api.kubectl("create", "-f", str(bad), check=False)
    assert (
        'The CertificateSigningRequest "bad" is invalid: spec.request: Invalid value: []byte{...}: PEM block type '
        "must be CERTIFICATE REQUEST"
    ) in err.stderr


def test_auth_can_i_and_whoami(api):
    assert api.kubectl("auth", "can-i", "create", "deployments", "-n", "default").stdout.strip() == "yes"
    who = api.kubectl("auth", "whoami").stdout
    assert "kubernetes-admin" in who and "system:masters" in who
    bob = api.kubeconfig_for("bob")
    res = api.kubectl("auth", "can-i", "list", "secrets", "-n", "default", kubeconfig=bob, check=False)
    assert res.stdout.strip() == "no" and res.returncode == 1
    rules = api.kubectl("auth", "can-i", "--list", "-n", "default").stdout
    assert rules.splitlines()[0].split()[:2] == ["Resources", "Non-Resource"]
    api.kubectl("create", "serviceaccount", "tokenbot")
    token = api.kubectl("create", "token", "tokenbot").stdout.strip()
    assert token.count(".") == 2
    sa = api.kubectl(
        "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=api.kubeconfig_token(token)
    ).stdout
    assert sa == "system:serviceaccount:default:tokenbot"
    err = api.kubectl("get", "secrets", "-n", "default", kubeconfig=bob, check=False)
    assert (
        'Error from server (Forbidden): secrets is forbidden: User "bob" cannot list resource "secrets" in API '
        'group "" in the namespace "default"'
    ) in err.stderr


def test_impersonation_with_as_and_as_group(api):
    """kubectl --as/--as-group: allowed for the admin, refused for a user without the impersonate verb, and the
    request then runs with the impersonated user's (and only its) permissions."""
    who = api.kubectl("auth", "whoami", "--as", "carol", "--as-group", "qa", "-o", "json").stdout
    info = json.loads(who)["status"]["userInfo"]
    assert info["username"] == "carol" and info["groups"] == ["qa", "system:authenticated"]
    res = api.kubectl("get", "secrets", "-n", "default", "--as", "carol", check=False)
    assert 'User "carol" cannot list resource "secrets"' in res.stderr
    sa = json.loads(
        api.kubectl("auth", "whoami", "--as", "system:serviceaccount:kube-system:bot", "-o", "json").stdout
    )["status"]["userInfo"]
    assert sa["groups"] == ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]
    dave = api.kubeconfig_for("dave")
    res = api.kubectl("get", "pods", "--as", "system:admin", kubeconfig=dave, check=False)
    assert res.returncode != 0
    assert (
        'users "system:admin" is forbidden: User "dave" cannot impersonate resource "users" in API group "" at the '
        "cluster scope"
    ) in res.stderr
    api.kubectl("create", "clusterrole", "impersonate-qa", "--verb=impersonate", "--resource=users,groups")
    api.kubectl("create", "clusterrolebinding", "dave-impersonates", "--clusterrole=impersonate-qa", "--user=dave")
    deadline = time.monotonic() + 10
    while True:  # RBAC objects reach the authorizer through its informer
        res = api.kubectl("auth", "whoami", "--as", "erin", "-o", "json", kubeconfig=dave, check=False)
        if res.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert json.loads(res.stdout)["status"]["userInfo"]["username"] == "erin"


def test_get_watch_and_delete_wait(api):
    api.kubectl("create", "ns", "wns")
    api.kubectl("create", "cm", "w1", "-n", "wns")
    coll = subprocess.Popen(
        ["kubectl", "get", "cm", "-n", "wns", "-w", "--request-timeout=6s"],
        env=api.kubectl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    one = subprocess.Popen(
        ["kubectl", "get", "cm", "w1", "-n", "wns", "-w", "-o", "name", "--request-timeout=6s"],
        env=api.kubectl_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        api.kubectl("label", "cm", "w1", "-n", "wns", "x=1")
        api.kubectl("create", "cm", "w2", "-n", "wns")
        api.kubectl("delete", "cm", "w2", "-n", "wns")
        out_coll, _ = coll.communicate(timeout=15)
        out_one, _ = one.communicate(timeout=15)
    finally:
        coll.kill()
        one.kill()
    lines = out_coll.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert sum(1 for line in lines if line.startswith("w1")) == 2  # listed, then modified
    assert sum(1 for line in lines if line.startswith("w2")) >= 2  # added, deleted
    assert out_one.splitlines() == ["configmap/w1", "configmap/w1"]  # initial get + the label change
    start = time.monotonic()
    assert 'namespace "wns" deleted' in api.kubectl("delete", "ns", "wns", timeout=60).stdout
    assert time.monotonic() - start < 30
    assert api.kubectl("get", "ns", "wns", check=False).returncode != 0


def _versioned_kubectl(minor: int) -> str | None:
    import shutil
    from pathlib import Path

    kubectl = shutil.which("kubectl")
    candidates = [Path(kubectl).resolve().parent / f"kubectl.1.{minor}"] if kubectl else []
    candidates.append(Path(f"/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}"))
    return next((str(p) for p in candidates if p.exists()), None)


@pytest.mark.parametrize("minor", [27, 31])
def test_older_kubectl_json_bodies(api, tmp_path, minor):
    binary = _versioned_kubectl(minor)
    if binary is None:
        pytest.skip(f"kubectl 1.{minor} is not installed")

    def run(*args, check=True):
        res = subprocess.run([binary, *args], env=api.kubectl_env(), capture_output=True, text=True, timeout=60)
        assert not check or res.returncode == 0, res.stderr
        return res

    ns = f"old{minor}"
    run("create", "ns", ns)
    run("create", "configmap", "c", "-n", ns, "--from-literal=a=b")
    run("create", "secret", "generic", "s", "-n", ns, "--from-literal=a=b")
    assert header(run("get", "cm", "-n", ns).stdout) == ["NAME", "DATA", "AGE"]
    assert run("auth", "can-i", "get", "pods", "-n", ns).stdout.strip() == "yes"
    f = tmp_path / "csr.json"
    f.write_text(csr_yaml(f"csr-old-{minor}"))
    run("create", "-f", str(f))
    assert "approved" in run("certificate", "approve", f"csr-old-{minor}").stdout
    assert "Approved" in run("get", "csr", f"csr-old-{minor}").stdout
    run("delete", "ns", ns)
