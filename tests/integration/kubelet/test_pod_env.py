"""A Pod's environment against a real apiserver, reaching real processes: volumes and env through the kubelet's
client (Node authorizer + NodeRestriction), the projected service-account token, the sandbox and the native pause."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pykubeadm.kubelet.api import ApiError, ClientConfig, KubeClient
from pykubeadm.kubelet.builtin import sandbox
from pykubeadm.kubelet.envvars import container_env
from pykubeadm.kubelet.volumes import Mount, PodVolumes
from pykubeadm.layout import Layout
from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration

NS = "podenv"
needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and mount/PID namespaces")


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("apiserver")) as server:
        objects = f"""
apiVersion: v1
kind: List
items:
- {{apiVersion: v1, kind: Namespace, metadata: {{name: {NS}}}}}
- {{apiVersion: v1, kind: ServiceAccount, metadata: {{name: default, namespace: {NS}}}}}
- {{apiVersion: v1, kind: ServiceAccount, metadata: {{name: robot, namespace: {NS}}}}}
- {{apiVersion: v1, kind: ServiceAccount, metadata: {{name: other, namespace: {NS}}}}}
- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: kube-root-ca.crt, namespace: {NS}}}, data: {{ca.crt: "the-ca"}}}}
- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: cfg, namespace: {NS}}}, data: {{key: from-configmap, GREETING: hello}}}}
- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: unrelated, namespace: {NS}}}, data: {{k: v}}}}
- {{apiVersion: v1, kind: Secret, metadata: {{name: creds, namespace: {NS}}}, stringData: {{password: s3cret}}}}
- {{apiVersion: v1, kind: Secret, metadata: {{name: elsewhere, namespace: {NS}}}, stringData: {{k: v}}}}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {{name: robot-view, namespace: {NS}}}
  roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
  subjects: [{{kind: ServiceAccount, name: robot, namespace: {NS}}}]
"""
        server.kubectl("apply", "-f", "-", input=objects)
        yield server


def pod_manifest(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {"nodeName": node, **spec},
    }


APP = {
    "name": "app",
    "image": "busybox",
    "workingDir": "/work/dir",
    "env": [
        {"name": "VAR", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
        {"name": "MSG", "value": "$(GREETING) from $(POD_NAME)"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ],
    "envFrom": [{"configMapRef": {"name": "cfg"}}],
    "volumeMounts": [
        {"name": "cfg", "mountPath": "/etc/cfg"},
        {"name": "cfg", "mountPath": "/etc/pykubeadm-test-app.conf", "subPath": "key"},
        {"name": "scratch", "mountPath": "/scratch-pykubeadm-test"},
    ],
}


def create_pod(api: ApiServer, manifest: dict[str, Any]) -> dict[str, Any]:
    api.kubectl("create", "-f", "-", input=json.dumps(manifest))
    out = api.kubectl("get", "pod", "-n", NS, manifest["metadata"]["name"], "-o", "json").stdout
    return dict(json.loads(out))


def node_client(api: ApiServer, node: str) -> KubeClient:
    cert, key = api.client_cert(f"system:node:{node}", ["system:nodes"])
    cfg = ClientConfig(api.url, ca_pem=api.pki.ca_cert.read_bytes(), cert_file=str(cert), key_file=str(key))
    return KubeClient(cfg)


@pytest_asyncio.fixture
async def kubelet_n1(api: ApiServer) -> AsyncIterator[KubeClient]:
    c = node_client(api, "n1")
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture(scope="module")
def app_pod(api: ApiServer) -> dict[str, Any]:
    return create_pod(
        api,
        pod_manifest(
            "app",
            "n1",
            serviceAccountName="robot",
            containers=[APP],
            volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}, {"name": "scratch", "emptyDir": {}}],
        ),
    )


def test_service_account_admission_adds_kube_api_access(app_pod: dict[str, Any]) -> None:
    vols = [v for v in app_pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]
    assert len(vols) == 1
    sources = vols[0]["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["expirationSeconds"] == 3607
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
    mounts = app_pod["spec"]["containers"][0]["volumeMounts"]
    assert {
        "name": vols[0]["name"],
        "readOnly": True,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    } in mounts


@needs_isolation
async def test_volumes_and_env_reach_a_sandboxed_process(
    api: ApiServer, app_pod: dict[str, Any], kubelet_n1: KubeClient, tmp_path: Path
) -> None:
    layout = Layout(tmp_path / "node")
    vols = PodVolumes(app_pod, layout.pod_dir(app_pod["metadata"]["uid"]), kubelet_n1, layout, "n1")
    await vols.setup()
    try:
        container = app_pod["spec"]["containers"][0]
        env = await container_env(
            app_pod, container, kubelet_n1, node_name="n1", host_ip="127.0.0.1", pod_ip="127.0.0.1"
        )
        assert env["MSG"] == "hello from $(POD_NAME)"  # defined later: not expanded, as kube does
        script = (
            "cat /etc/cfg/key; echo; cat /etc/pykubeadm-test-app.conf; echo; echo $VAR; echo $GREETING; echo $MSG; hostname; pwd; echo $$; "
            "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; "
            "cat /var/run/secrets/kubernetes.io/serviceaccount/ca.crt; echo; "
            "echo written > /scratch-pykubeadm-test/out"
        )
        argv = sandbox.sandboxed_argv(
            ["sh", "-c", script], vols.mounts_for(container), workdir=container["workingDir"], hostname="app"
        )
        res = subprocess.run(argv, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=30)
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines() == [
            "from-configmap",
            "from-configmap",
            "s3cret",
            "hello",
            "hello from $(POD_NAME)",
            "app",
            "/work/dir",
            "1",
            NS,
            "the-ca",
        ]
        scratch = Layout.pod_volume_dir(vols.pod_dir, "kubernetes.io~empty-dir", "scratch")
        assert (scratch / "out").read_text() == "written\n"  # the emptyDir is the container's directory
    finally:
        await vols.teardown()


async def test_projected_token_authenticates_until_the_pod_is_deleted(
    api: ApiServer, kubelet_n1: KubeClient, tmp_path: Path
) -> None:
    pod = create_pod(
        api, pod_manifest("tokenpod", "n1", serviceAccountName="robot", containers=[{"name": "c", "image": "busybox"}])
    )
    layout = Layout(tmp_path / "node")
    vols = PodVolumes(pod, layout.pod_dir(pod["metadata"]["uid"]), kubelet_n1, layout, "n1")
    await vols.setup()
    token_dir = next(m for m in vols.mounts_for(pod["spec"]["containers"][0]) if "serviceaccount" in m.container_path)
    token = (token_dir.host_path / "token").read_text()
    assert (token_dir.host_path / "namespace").read_text() == NS
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["kubernetes.io"]["pod"] == {"name": "tokenpod", "uid": pod["metadata"]["uid"]}
    # kube-apiserver's --service-account-extend-token-expiration for the kubelet's 3607 s tokens
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    as_pod = KubeClient(ClientConfig(api.url, ca_pem=api.pki.ca_cert.read_bytes(), token=token))
    try:
        review = await as_pod.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        user = review["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{NS}:robot"
        assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["tokenpod"]
        assert user["extra"]["authentication.kubernetes.io/pod-uid"] == [pod["metadata"]["uid"]]
        cm = await as_pod.get(f"/api/v1/namespaces/{NS}/configmaps/cfg")  # the SA may view its namespace
        assert cm["data"]["key"] == "from-configmap"

        api.kubectl("delete", "pod", "-n", NS, "tokenpod", "--grace-period=0", "--force")

        async def rejected() -> bool:
            try:
                await as_pod.get(f"/api/v1/namespaces/{NS}/configmaps/cfg")
            except ApiError as e:
                return e.status == 401
            return False

        deadline = time.monotonic() + 30
        while not await rejected():
            assert time.monotonic() < deadline, "the bound token still authenticates after its Pod was deleted"
            await asyncio.sleep(0.1)
    finally:
        await as_pod.close()
        await vols.teardown()


async def test_kubelet_reads_only_what_pods_bound_to_it_use(
    api: ApiServer, app_pod: dict[str, Any], tmp_path: Path
) -> None:
    create_pod(
        api,
        pod_manifest(
            "on-n2",
            "n2",
            serviceAccountName="other",
            containers=[{"name": "c", "image": "busybox", "envFrom": [{"secretRef": {"name": "elsewhere"}}]}],
        ),
    )
    n1, n2 = node_client(api, "n1"), node_client(api, "n2")
    try:
        assert (await n1.get(f"/api/v1/namespaces/{NS}/configmaps/cfg"))["data"]["key"] == "from-configmap"
        assert await n1.get(f"/api/v1/namespaces/{NS}/secrets/creds")  # env of the app Pod on n1
        assert await n1.get(f"/api/v1/namespaces/{NS}/configmaps/kube-root-ca.crt")  # its kube-api-access volume
        assert await n2.get(f"/api/v1/namespaces/{NS}/secrets/elsewhere")
        for client, path in (
            (n1, f"/api/v1/namespaces/{NS}/configmaps/unrelated"),
            (n1, f"/api/v1/namespaces/{NS}/secrets/elsewhere"),  # used by a Pod on n2 only
            (n2, f"/api/v1/namespaces/{NS}/secrets/creds"),
            (n2, f"/api/v1/namespaces/{NS}/configmaps/cfg"),
            (n1, f"/api/v1/namespaces/{NS}/secrets"),  # no listing
        ):
            with pytest.raises(ApiError) as e:
                await client.get(path)
            assert e.value.status == 403, path

        def token_request(pod: dict[str, Any] | None) -> dict[str, Any]:
            spec: dict[str, Any] = {"expirationSeconds": 3607}
            if pod is not None:
                meta = pod["metadata"]
                spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
            return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}

        ok = await n1.post(f"/api/v1/namespaces/{NS}/serviceaccounts/robot/token", token_request(app_pod))
        assert ok["status"]["token"]
        for client, sa, body in (
            (n1, "other", token_request(app_pod)),  # no Pod on n1 uses "other"
            (n1, "robot", token_request(None)),  # NodeRestriction: a node's token must be bound to a Pod
            (n2, "robot", token_request(app_pod)),  # not its Pod
        ):
            with pytest.raises(ApiError) as e:
                await client.post(f"/api/v1/namespaces/{NS}/serviceaccounts/{sa}/token", body)
            assert e.value.status == 403, (sa, e.value.message)
    finally:
        await n1.close()
        await n2.close()


def test_token_request_bound_pod_must_run_as_the_service_account(api: ApiServer, app_pod: dict[str, Any]) -> None:
    meta = app_pod["metadata"]
    bound = ["--bound-object-kind=Pod", f"--bound-object-name={meta['name']}"]
    res = api.kubectl("create", "token", "other", "-n", NS, *bound, f"--bound-object-uid={meta['uid']}", check=False)
    assert res.returncode != 0
    assert (
        'cannot bind token for serviceaccount "other" to pod running with different serviceaccount name.' in res.stderr
    )
    res = api.kubectl("create", "token", "robot", "-n", NS, *bound, "--bound-object-uid=not-its-uid", check=False)
    assert res.returncode != 0
    assert "the UID in the bound object reference (not-its-uid) does not match the UID in record" in res.stderr
    assert api.kubectl("create", "token", "robot", "-n", NS, *bound, f"--bound-object-uid={meta['uid']}").stdout.strip()


# --- sandbox and pause: real namespaces, real processes ------------------------------------------------------------


def pause_ready(pid: int, pause: str) -> bool:
    """`pid` runs pause (exe) and has installed its SIGTERM handler (SigCgt): pause is in its loop."""
    try:
        if os.readlink(f"/proc/{pid}/exe") != pause:
            return False
        status = Path(f"/proc/{pid}/status").read_text()  # after the exec: only later states can be seen here
    except OSError:
        return False
    caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


def mount_table() -> list[str]:
    """The host's mount points and options, less the network namespaces other tests running meanwhile pin under
    /run/netns (kube-proxy's): what a sandbox could leak to the host is compared, not what a neighbour does."""
    with open("/proc/self/mountinfo") as f:
        points = (line.split(" ", 4)[4].split(" - ")[0] for line in f)
        return sorted(p for p in points if not p.startswith("/run/netns"))


@needs_isolation
def test_sandbox_mounts_are_invisible_to_the_host(tmp_path: Path) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    (vol / "key").write_text("v")
    conf = tmp_path / "app.conf"
    conf.write_text("conf")
    new_paths = ["/pykubeadm-test-data", "/etc/pykubeadm-test-cfg", "/opt/pykubeadm-test/app.conf"]
    mounts = [
        Mount(vol, new_paths[0], False),  # a new top-level directory: the overlay becomes the root
        Mount(vol, new_paths[1], True),
        Mount(conf, new_paths[2], True),  # a file mount point
        Mount(vol, "/pykubeadm-test-data/nested", True),
    ]
    before = mount_table()
    script = (
        "cat /pykubeadm-test-data/key /etc/pykubeadm-test-cfg/key /opt/pykubeadm-test/app.conf "
        "/pykubeadm-test-data/nested/key; echo; "
        "touch /etc/pykubeadm-test-cfg/x 2>/dev/null && echo writable || echo read-only; "
        "echo from-container > /pykubeadm-test-data/out; ls /proc | grep -c '^[0-9]'; pwd"
    )
    res = subprocess.run(
        sandbox.sandboxed_argv(["sh", "-c", script], mounts, hostname="t"), capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["vvconfv", "read-only"]
    assert int(lines[2]) <= 4  # its own PID namespace: sh, ls, grep (and maybe a subshell)
    assert lines[3] == "/"  # no workingDir: the container starts in /, not in the kubelet's directory
    assert (vol / "out").read_text() == "from-container\n"  # writes to a rw volume reach the host directory
    assert (vol / "nested").is_dir()  # a mount point inside a volume is made in the volume, as runtimes do
    assert mount_table() == before
    for p in new_paths:
        assert not os.path.lexists(p), p
    assert not os.path.lexists("/opt/pykubeadm-test")


@needs_isolation
def test_private_root_keeps_writes_outside_volumes_in_the_namespace(tmp_path: Path) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    before = mount_table()
    script = (
        "echo layer > /etc/pykubeadm-test-private; cat /etc/pykubeadm-test-private; "
        "mkdir -p /var/lib/pykubeadm-test-private && echo ok > /data/out"
    )
    argv = sandbox.sandboxed_argv(["sh", "-c", script], [Mount(vol, "/data", False)], hostname="p", private_root=True)
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "layer\n"
    assert (vol / "out").read_text() == "ok\n"  # the volume is the host's directory
    assert not os.path.lexists("/etc/pykubeadm-test-private")
    assert not os.path.lexists("/var/lib/pykubeadm-test-private")
    assert not os.path.lexists("/data")
    assert mount_table() == before


@needs_isolation
def test_pause_is_small_exits_zero_on_sigterm_and_can_be_entered(tmp_path: Path) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    (vol / "key").write_text("inside")
    pause = str(sandbox.pause_path())
    argv = sandbox.sandboxed_argv([pause], [Mount(vol, "/etc/pykubeadm-test-pause", True)], hostname="pausepod")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:

        def pause_pid() -> int | None:
            try:
                children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
                pid = int(children[0]) if children else 0
                return pid if pid and pause_ready(pid, pause) else None
            except OSError:
                return None

        pid = wait_for(pause_pid, 30, "pause to start")
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
        assert rss_kb <= 2048, f"pause RSS {rss_kb} kB"
        assert f"NSpid:\t{pid}\t1" in status  # PID 1 of its own namespace

        entered = subprocess.run(
            [*sandbox.enter_argv(proc.pid), "sh", "-c", "hostname; cat /etc/pykubeadm-test-pause/key; echo; echo $$"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert entered.returncode == 0, entered.stderr
        host, key, inner_pid = entered.stdout.splitlines()
        assert (host, key) == ("pausepod", "inside")
        assert 1 < int(inner_pid) < 100  # a PID of the Pod's namespace

        os.kill(proc.pid, signal.SIGTERM)  # as the pod worker stops a container: forwarded to pause
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_pause_exits_zero_on_sigterm_without_a_sandbox() -> None:
    proc = subprocess.Popen([str(sandbox.pause_path())], stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: pause_ready(proc.pid, str(sandbox.pause_path())), 30, "pause to start")
        assert proc.poll() is None  # it blocks
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
