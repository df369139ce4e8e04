"""API Pods on the built-in kubelet, end to end: one lab (a control plane and one worker), the machine's kubectl, real
processes. Pods run, complete, crash-loop, fail readiness, fail to pull, are deleted gracefully, and survive a
kubelet restart (adopted: same process, no duplicate)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_lab import Lab

pytestmark = pytest.mark.e2e

WORKER = "lab-worker"
OTHER_WORKER = "lab-worker2"
PAUSE = "registry.k8s.io/pause:3.10"


@pytest.fixture(scope="module")
def lab(shared_lab: Lab) -> Iterator[Lab]:
    """The e2e suites' shared lab (tests/e2e/conftest.py, `lab up --image example.com/hello=...`), its other worker
    cordoned meanwhile: every Pod of this module runs on WORKER, whose files and processes the tests look at."""
    shared_lab.kubectl("cordon", OTHER_WORKER)
    try:
        yield shared_lab
    finally:
        shared_lab.kubectl("uncordon", OTHER_WORKER)


def wait_for(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def apply(lab: Lab, pod: dict[str, Any]) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "apply", "-f", "-"],
        input=json.dumps(pod),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def pod_json(lab: Lab, name: str) -> dict[str, Any] | None:
    res = lab.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def container_status(lab: Lab, name: str) -> dict[str, Any]:
    pod = pod_json(lab, name) or {}
    return ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]


def condition(pod: dict[str, Any], kind: str) -> str:
    return next((c["status"] for c in pod["status"].get("conditions") or [] if c["type"] == kind), "")


def simple_pod(name: str, image: str, command: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image}
    if command:
        container["command"] = command
    container.update(spec.pop("container", {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def main_pid(lab: Lab, pod: dict[str, Any]) -> int:
    """The container's host pid, from its shim's record in the Pod's directory on the worker."""
    uid = pod["metadata"]["uid"]
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    name = pod["spec"]["containers"][0]["name"]
    node = pod["spec"].get("nodeName") or WORKER
    shim = lab.root(node) / "var/lib/kubelet/pods" / uid / "containers" / name / cid / "shim.json"
    return int(json.loads(shim.read_text())["pid"])


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_of(pod_dir: str) -> list[int]:
    """Processes whose command line names the Pod's directory (its shims and sandbox launchers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if pod_dir.encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def running_and_ready(lab: Lab, name: str) -> dict[str, Any] | None:
    pod = pod_json(lab, name)
    if pod and pod["status"].get("phase") == "Running" and condition(pod, "Ready") == "True":
        return pod
    return None


def test_busybox_runs_to_completion_with_its_service_account_volume(lab: Lab) -> None:
    lab.kubectl(
        "run", "t", "--image=busybox", "--restart=Never", "--",
        "sh", "-c", "echo hello; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace",
    )  # fmt: skip
    pod = wait_for(lambda: (p := pod_json(lab, "t")) and p["status"].get("phase") == "Succeeded" and p, 60, "t done")
    assert pod["spec"]["nodeName"] == WORKER
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert condition(pod, "Ready") == "False" and condition(pod, "Initialized") == "True"
    logs = lab.kubectl("logs", "t").stdout.split()
    assert logs == ["hello", "default"]


def test_pause_pod_runs_and_is_ready_with_the_kubelets_status(lab: Lab) -> None:
    lab.kubectl("run", "p1", f"--image={PAUSE}")
    pod = wait_for(lambda: running_and_ready(lab, "p1"), 60, "p1 Running and Ready")
    st = pod["status"]
    address = lab.kubectl("get", "node", WORKER, "-o", "jsonpath={.status.addresses[0].address}").stdout
    assert st["podIP"] == st["hostIP"] == address and st["podIPs"] == [{"ip": address}]
    assert [c["type"] for c in st["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled",
    ]  # fmt: skip
    assert st["qosClass"] == "BestEffort" and st["startTime"]
    cs = st["containerStatuses"][0]
    assert cs["ready"] and cs["started"] and cs["restartCount"] == 0 and "running" in cs["state"]
    assert cs["containerID"].startswith("pykubeadm://")
    events = lab.kubectl("get", "events", "--field-selector", "involvedObject.name=p1", "-o", "json").stdout
    reasons = {e["reason"]: e for e in json.loads(events)["items"]}
    assert {"Pulled", "Created", "Started"} <= set(reasons)
    assert reasons["Pulled"]["message"] == f'Container image "{PAUSE}" already present on machine'
    assert reasons["Started"]["source"] == {"component": "kubelet", "host": WORKER}


def test_delete_is_graceful_confirmed_by_the_kubelet_and_leaves_no_process(lab: Lab) -> None:
    grace = 3
    apply(
        lab,
        simple_pod("stubborn", "busybox", ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"],
                   terminationGracePeriodSeconds=grace),
    )  # fmt: skip
    pod = wait_for(lambda: running_and_ready(lab, "stubborn"), 60, "stubborn Running")
    pid = main_pid(lab, pod)
    pod_dir = str(lab.root(WORKER) / "var/lib/kubelet/pods" / pod["metadata"]["uid"])
    assert alive(pid) and processes_of(pod_dir)
    start = time.monotonic()
    lab.kubectl("delete", "pod", "stubborn", "--wait=true")
    took = time.monotonic() - start
    assert grace - 0.5 <= took <= grace + 2 + 2, f"delete took {took:.1f}s"  # SIGTERM ignored: SIGKILL after grace
    assert pod_json(lab, "stubborn") is None
    assert not alive(pid) and processes_of(pod_dir) == []


def test_crashing_container_goes_into_crash_loop_back_off(lab: Lab) -> None:
    lab.kubectl("run", "crash", "--image=busybox", "--", "sh", "-c", "echo boom; exit 3")
    cs = wait_for(
        lambda: (
            (s := container_status(lab, "crash")).get("state", {}).get("waiting", {}).get("reason")
            == "CrashLoopBackOff"
            and s
        ),
        60,
        "CrashLoopBackOff",
    )
    assert cs["restartCount"] >= 1 and cs["lastState"]["terminated"]["exitCode"] == 3
    assert "back-off 10s restarting failed container=crash" in cs["state"]["waiting"]["message"]
    later = wait_for(
        lambda: (
            "back-off 20s"
            in ((s := container_status(lab, "crash")).get("state", {}).get("waiting") or {}).get("message", "")
            and s
        ),
        90,
        "the back-off to double",
    )
    assert later["restartCount"] > cs["restartCount"]
    assert lab.kubectl("logs", "crash", "--previous").stdout.strip() == "boom"
    pod = pod_json(lab, "crash")
    assert pod is not None and pod["status"]["phase"] == "Running" and condition(pod, "Ready") == "False"
    lab.kubectl("delete", "pod", "crash", "--wait=true")


def test_failing_readiness_probe_keeps_ready_false(lab: Lab) -> None:
    probe = {"exec": {"command": ["sh", "-c", "exit 1"]}, "periodSeconds": 1}  # run in the container
    apply(lab, simple_pod("unready", "busybox", ["sh", "-c", "sleep 3600"], container={"readinessProbe": probe}))
    wait_for(
        lambda: "Readiness probe failed" in lab.kubectl("describe", "pod", "unready").stdout, 60, "Unhealthy event"
    )
    pod = pod_json(lab, "unready")
    assert pod is not None and pod["status"]["phase"] == "Running"
    assert condition(pod, "Ready") == "False" and condition(pod, "ContainersReady") == "False"
    cs = pod["status"]["containerStatuses"][0]
    assert cs["started"] and not cs["ready"] and "running" in cs["state"]
    lab.kubectl("delete", "pod", "unready", "--wait=true", "--grace-period=1")


def test_unknown_image_is_image_pull_back_off_saying_how_to_map_it(lab: Lab) -> None:
    lab.kubectl("run", "nope", "--image=nginx:1.25")
    waiting = wait_for(
        lambda: (
            (w := container_status(lab, "nope").get("state", {}).get("waiting") or {}).get("reason")
            == "ImagePullBackOff"
            and w
        ),
        60,
        "ImagePullBackOff",
    )
    message = waiting["message"]
    assert '"nginx:1.25"' in message and "etc/pykubeadm/images.yaml" in message and "--image nginx=" in message
    assert pod_json(lab, "nope")["status"]["phase"] == "Pending"  # type: ignore[index]
    lab.kubectl("delete", "pod", "nope", "--wait=true")


def test_image_map_from_lab_up_runs_the_mapped_program(lab: Lab) -> None:
    lab.kubectl("run", "mapped", "--image=example.com/hello:v1", "--restart=Never")
    wait_for(lambda: (p := pod_json(lab, "mapped")) and p["status"].get("phase") == "Succeeded", 60, "mapped done")
    assert lab.kubectl("logs", "mapped").stdout.strip() == "hi from the image map"


def test_restarted_kubelet_adopts_running_pods(lab: Lab) -> None:
    lab.kubectl("run", "keep", f"--image={PAUSE}")
    pod = wait_for(lambda: running_and_ready(lab, "keep"), 60, "keep Running")
    pid = main_pid(lab, pod)
    pod_dir = str(lab.root(WORKER) / "var/lib/kubelet/pods" / pod["metadata"]["uid"])
    before = sorted(processes_of(pod_dir))
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from pykubeadm.layout import Layout; "
            "from pykubeadm.phases.kubeletservice import start_kubelet; print(start_kubelet(Layout(Path(sys.argv[1]))))",
            str(lab.root(WORKER)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"},
    )
    assert res.returncode == 0, res.stderr
    new_pid = res.stdout.split()[-1]
    log = lab.root(WORKER) / "var/log/pykubeadm/kubelet.log"
    synced = f" {new_pid} pykubeadm.kubelet.pods] synced"
    wait_for(lambda: synced in log.read_text(errors="replace"), 60, "the restarted kubelet to sync its Pods")
    wait_for(lambda: running_and_ready(lab, "keep"), 30, "keep still Running")
    pod = pod_json(lab, "keep")
    assert pod is not None and main_pid(lab, pod) == pid and alive(pid)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert sorted(processes_of(pod_dir)) == before  # no second shim or sandbox
    lab.kubectl("delete", "pod", "keep", "--wait=true")  # the adopted container is stopped and confirmed
    assert not alive(pid)


def test_init_containers_run_in_order_before_the_containers(lab: Lab) -> None:
    pod = simple_pod("inits", "busybox", ["sh", "-c", "echo main"], restartPolicy="Never")
    pod["spec"]["initContainers"] = [
        {"name": "one", "image": "busybox", "command": ["sh", "-c", "echo one"]},
        {"name": "two", "image": "busybox", "command": ["sh", "-c", "echo two"]},
    ]
    apply(lab, pod)
    done = wait_for(lambda: (p := pod_json(lab, "inits")) and p["status"].get("phase") == "Succeeded" and p, 60, "done")
    inits = done["status"]["initContainerStatuses"]
    assert [s["name"] for s in inits] == ["one", "two"]
    assert all(s["state"]["terminated"]["exitCode"] == 0 for s in inits)
    one = inits[0]["state"]["terminated"]["finishedAt"]
    two = inits[1]["state"]["terminated"]["startedAt"]
    main = done["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"]
    assert one <= two <= main
    assert lab.kubectl("logs", "inits").stdout.strip() == "main"


def test_active_deadline_fails_the_pod_and_stops_its_process(lab: Lab) -> None:
    # the kubelet stops it as a deleted Pod is stopped, with its grace period: sh (pid 1 of its namespace) ignores TERM,
    # so that is SIGKILL after 1 s here rather than the default 30 s
    deadline = simple_pod("deadline", "busybox", ["sh", "-c", "sleep 3600"], activeDeadlineSeconds=2)
    deadline["spec"]["terminationGracePeriodSeconds"] = 1
    apply(lab, deadline)
    pod = wait_for(lambda: (p := pod_json(lab, "deadline")) and p["status"].get("phase") == "Failed" and p, 60, "fail")
    assert pod["status"]["reason"] == "DeadlineExceeded"
    assert pod["status"]["message"] == "Pod was active on the node longer than the specified deadline"
    uid = pod["metadata"]["uid"]
    wait_for(lambda: not processes_of(str(lab.root(WORKER) / "var/lib/kubelet/pods" / uid)), 30, "no process left")


def test_container_environment_has_service_links_and_downward_api(lab: Lab) -> None:
    pod = simple_pod("envs", "busybox", ["sh", "-c", 'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT $NODE"'])
    pod["spec"]["restartPolicy"] = "Never"
    pod["spec"]["containers"][0]["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    apply(lab, pod)
    wait_for(lambda: (p := pod_json(lab, "envs")) and p["status"].get("phase") == "Succeeded", 60, "envs done")
    ip = lab.kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert lab.kubectl("logs", "envs").stdout.strip() == f"{ip}:443 {WORKER}"


def test_pre_stop_hook_runs_in_the_container_before_it_is_stopped(lab: Lab) -> None:
    pod = simple_pod("hooked", "busybox", ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"])
    pod["spec"]["volumes"] = [{"name": "out", "hostPath": {"path": "/var/hook-out", "type": "DirectoryOrCreate"}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "out", "mountPath": "/out"}]
    pod["spec"]["containers"][0]["lifecycle"] = {
        "preStop": {"exec": {"command": ["sh", "-c", "echo bye > /out/prestop"]}}
    }
    apply(lab, pod)
    wait_for(lambda: running_and_ready(lab, "hooked"), 60, "hooked Running")
    lab.kubectl("delete", "pod", "hooked", "--wait=true")
    assert (lab.root(WORKER) / "var/hook-out/prestop").read_text().strip() == "bye"


def run_to_completion(lab: Lab, pod: dict[str, Any]) -> dict[str, Any]:
    name = pod["metadata"]["name"]
    pod["spec"]["restartPolicy"] = "Never"
    apply(lab, pod)
    return wait_for(
        lambda: (p := pod_json(lab, name)) and p["status"].get("phase") in ("Succeeded", "Failed") and p,
        60,
        f"{name} done",
    )


def kubelet_config(lab: Lab) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((lab.root(WORKER) / "var/lib/kubelet/config.yaml").read_text())


def test_pods_get_the_kubelets_resolv_conf_and_hosts_file_per_dns_policy(lab: Lab) -> None:
    show = ["sh", "-c", "cat /etc/resolv.conf; echo ---; cat /etc/hosts"]
    first = simple_pod("dns-cluster", "busybox", show, hostname="db", subdomain="dbs")
    first["spec"]["hostAliases"] = [{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar"]}]
    config = {"nameservers": ["1.1.1.1"], "searches": ["a.example"], "options": [{"name": "ndots", "value": "2"}]}
    none = simple_pod("dns-none", "busybox", show, dnsPolicy="None", dnsConfig=config)
    default = simple_pod("dns-default", "busybox", show, dnsPolicy="Default")
    done = {p["metadata"]["name"]: run_to_completion(lab, p) for p in (first, none, default)}
    assert all(p["status"]["phase"] == "Succeeded" for p in done.values())
    cfg = kubelet_config(lab)
    domain, dns = cfg["clusterDomain"], cfg["clusterDNS"][0]
    resolv, hosts = lab.kubectl("logs", "dns-cluster").stdout.split("---\n")
    assert resolv.startswith(f"search default.svc.{domain} svc.{domain} {domain}")
    assert f"\nnameserver {dns}\noptions ndots:5\n" in resolv
    ip = done["dns-cluster"]["status"]["podIP"]
    assert hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert f"\n{ip}\tdb.dbs.default.svc.{domain}\tdb\n" in hosts
    assert hosts.endswith("# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar\n")
    resolv, _ = lab.kubectl("logs", "dns-none").stdout.split("---\n")
    assert resolv == "search a.example\nnameserver 1.1.1.1\noptions ndots:2\n"
    resolv, hosts = lab.kubectl("logs", "dns-default").stdout.split("---\n")
    assert [line for line in resolv.splitlines() if line.startswith("nameserver")] == [
        line for line in Path("/etc/resolv.conf").read_text().splitlines() if line.startswith("nameserver")
    ]  # the host's (resolvConf)
    assert f"{ip}\tdns-default\n" in hosts
    for name in done:
        lab.kubectl("delete", "pod", name, "--wait=true")


def test_a_port_taken_by_another_pod_keeps_the_container_waiting_and_a_host_port_conflict_is_rejected(
    lab: Lab,
) -> None:
    ports = {"ports": [{"containerPort": 7777}]}
    apply(lab, simple_pod("port-a", "busybox", ["sh", "-c", "sleep 3600"], container=ports))
    wait_for(lambda: running_and_ready(lab, "port-a"), 60, "port-a Running")
    apply(lab, simple_pod("port-b", "busybox", ["sh", "-c", "sleep 3600"], container=ports))
    waiting = wait_for(
        lambda: (
            (w := container_status(lab, "port-b").get("state", {}).get("waiting") or {}).get("reason")
            == "CreateContainerError"
            and w
        ),
        60,
        "port-b Waiting on its port",
    )
    assert (
        (waiting["message"])
        == 'port 7777/TCP on the node\'s address is already used by container "port-a" of pod default/port-a'
    )
    assert "already used by container" in lab.kubectl("describe", "pod", "port-b").stdout  # the Failed event
    host = {"ports": [{"containerPort": 7778, "hostPort": 7778}]}
    apply(lab, simple_pod("host-a", f"{PAUSE}", container=host))
    wait_for(lambda: running_and_ready(lab, "host-a"), 60, "host-a Running")
    apply(lab, simple_pod("host-b", f"{PAUSE}", container=host))
    rejected = wait_for(lambda: (p := pod_json(lab, "host-b")) and p["status"].get("phase") == "Failed" and p, 60, "b")
    assert rejected["status"]["reason"] == "NodePorts"
    assert rejected["status"]["message"].startswith("Pod was rejected: Predicate NodePorts failed")
    lab.kubectl("delete", "pod", "port-a", "--wait=true", "--grace-period=1")
    wait_for(lambda: running_and_ready(lab, "port-b"), 60, "port-b Running once the port is free")
    lab.kubectl("delete", "pod", "port-b", "host-a", "host-b", "--wait=true", "--grace-period=1")


def test_logs_have_cri_timestamps_for_timestamps_and_since_and_init_container_logs(lab: Lab) -> None:
    import re

    pod = simple_pod("stamps", "busybox", ["sh", "-c", "echo one; echo two >&2"])
    pod["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["sh", "-c", "echo from init"]}]
    assert run_to_completion(lab, pod)["status"]["phase"] == "Succeeded"
    assert lab.kubectl("logs", "stamps").stdout.split("\n") == ["one", "two", ""]
    stamped = lab.kubectl("logs", "stamps", "--timestamps").stdout.splitlines()
    assert len(stamped) == 2
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z (one|two)", line) for line in stamped)
    assert lab.kubectl("logs", "stamps", "--since=1h").stdout.split() == ["one", "two"]
    assert lab.kubectl("logs", "stamps", "--since-time=2999-01-01T00:00:00Z").stdout == ""
    assert lab.kubectl("logs", "stamps", "-c", "init").stdout == "from init\n"
    static = f"kube-apiserver-{lab_control_plane(lab)}"
    line = lab.kubectl("logs", "-n", "kube-system", static, "--timestamps", "--tail=1").stdout
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z ", line), line  # static Pods' logs too
    lab.kubectl("delete", "pod", "stamps", "--wait=true")


def lab_control_plane(lab: Lab) -> str:
    return (
        lab.kubectl("get", "nodes", "-l", "node-role.kubernetes.io/control-plane", "-o", "name")
        .stdout.split("/")[-1]
        .strip()
    )


def test_run_interactive_feeds_stdin_and_removes_the_pod(lab: Lab) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "run", "-i", "--rm", "--image=busybox", "--restart=Never",
         "ask", "--", "sh", "-c", "read x; echo got $x"],
        input="hello\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "got hello" in res.stdout
    wait_for(lambda: pod_json(lab, "ask") is None, 60, "the pod to be removed")


def test_run_with_a_tty_gives_the_container_a_terminal(lab: Lab) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "run", "-i", "-t", "--rm", "--image=busybox", "--restart=Never",
         "askt", "--", "sh", "-c", "read x; test -t 0 && echo got $x on a tty"],
        input="hello\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "got hello on a tty" in res.stdout  # the container's terminal (kubectl's own input is none: no -t there)
    wait_for(lambda: pod_json(lab, "askt") is None, 60, "the pod to be removed")


def test_security_context_and_limits_are_honoured_as_the_issue_tried_them(lab: Lab) -> None:
    """The four Pods a new user tried: runAsUser/runAsGroup, runAsNonRoot, a memory limit, readOnlyRootFilesystem;
    and a plain Pod's write to /etc stays in its own layer."""
    host_file = "/etc/pykubeadm-e2e-x"
    sc_pods = [
        simple_pod("ids", "busybox", ["sh", "-c", "id"], restartPolicy="Never",
                   securityContext={"runAsUser": 1000, "runAsGroup": 3000}),
        simple_pod("nonroot", "busybox", ["sh", "-c", "id"], restartPolicy="Never",
                   securityContext={"runAsNonRoot": True}),
        simple_pod("hog", "python:3", ["python3", "-c", "b = b'x' * (200 << 20)"], restartPolicy="Never",
                   container={"resources": {"limits": {"memory": "32Mi"}}}),
        simple_pod("rofs", "busybox", ["sh", "-c", "touch /etc/x"], restartPolicy="Never",
                   container={"securityContext": {"readOnlyRootFilesystem": True}}),
        simple_pod("writes", "busybox", ["sh", "-c", f"touch {host_file} && ls {host_file}"], restartPolicy="Never"),
    ]  # fmt: skip
    for pod in sc_pods:
        apply(lab, pod)

    def phase(name: str) -> str:
        return str(((pod_json(lab, name) or {}).get("status") or {}).get("phase") or "")

    wait_for(lambda: all(phase(p) in ("Succeeded", "Failed") for p in ("ids", "hog", "rofs", "writes")), 90, "ends")
    assert re.match(r"uid=1000(\(\S+\))? gid=3000", lab.kubectl("logs", "ids").stdout), "not uid=1000 gid=3000"
    waiting = wait_for(lambda: container_status(lab, "nonroot").get("state", {}).get("waiting"), 60, "refusal")
    uid = pod_json(lab, "nonroot")["metadata"]["uid"]  # type: ignore[index]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": f'container has runAsNonRoot and image will run as root (pod: "nonroot_default({uid})", container: '
        "nonroot)",
    }
    assert "CreateContainerConfigError" in lab.kubectl("get", "pod", "nonroot", "--no-headers").stdout
    hog = container_status(lab, "hog")["state"]["terminated"]
    assert (hog["reason"], hog["exitCode"]) == ("OOMKilled", 137)
    assert "OOMKilled" in lab.kubectl("get", "pod", "hog", "--no-headers").stdout
    assert "Read-only file system" in lab.kubectl("logs", "rofs").stdout
    assert container_status(lab, "rofs")["state"]["terminated"]["exitCode"] == 1
    assert lab.kubectl("logs", "writes").stdout.strip() == host_file  # written inside
    assert not os.path.lexists(host_file)  # and never on the host
    lab.kubectl("delete", "pod", "ids", "nonroot", "hog", "rofs", "writes", "--wait=false")
