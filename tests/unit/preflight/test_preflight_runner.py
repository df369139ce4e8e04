"""RunChecks output and --ignore-preflight-errors semantics (§11.1), and the init preflight phase."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pykubeadm.api import load_init_config
from pykubeadm.errors import PreflightError, ValidationError
from pykubeadm.layout import Layout
from pykubeadm.phases.init import InitData
from pykubeadm.phases.init.preflight import PHASE
from pykubeadm.preflight import FakeHost, ignore_set, run_checks
from pykubeadm.preflight.checks import MemCheck, NumCPUCheck, PortOpenCheck, SwapCheck

SWAPS = {"/proc/swaps": "Filename\n/swapfile file 1 0 -2\n"}


def checks(host: FakeHost) -> list:
    return [NumCPUCheck(host, 2), SwapCheck(host), PortOpenCheck(host, 6443, "10.0.0.1"), MemCheck(host, 1700)]


def test_errors_are_collected_and_warnings_printed() -> None:
    host = FakeHost(cpus=1, files=SWAPS, busy_ports={("10.0.0.1", 6443)})
    lines: list[str] = []
    with pytest.raises(PreflightError) as ei:
        run_checks(checks(host), (), lines.append)
    assert ei.value.exit_code == 2
    assert str(ei.value) == (
        "[preflight] Some fatal errors occurred:\n"
        "\t[ERROR NumCPU]: the number of available CPUs 1 is less than the required 2\n"
        "\t[ERROR Port-6443]: Port 6443 is in use\n"
        "[preflight] If you know what you are doing, you can make a check non-fatal with "
        "`--ignore-preflight-errors=...`"
    )
    assert len(lines) == 1 and lines[0].startswith("\t[WARNING Swap]: swap is supported for cgroup v2 only.")
    assert lines[0].endswith("\n")


def test_ignored_errors_become_warnings_case_insensitively() -> None:
    host = FakeHost(cpus=1, busy_ports={("10.0.0.1", 6443)})
    lines: list[str] = []
    run_checks(checks(host), ignore_set(["numcpu,PORT-6443"]), lines.append)
    assert lines == [
        "\t[WARNING NumCPU]: the number of available CPUs 1 is less than the required 2\n",
        "\t[WARNING Port-6443]: Port 6443 is in use\n",
    ]
    lines.clear()
    with pytest.raises(PreflightError, match=r"\[ERROR Port-6443\]"):
        run_checks(checks(host), ignore_set(["NumCPU"]), lines.append)
    run_checks(checks(host), ignore_set(["all"]), lines.append)


def test_ignore_set_merges_sources_and_rejects_all_with_others() -> None:
    assert ignore_set(["Swap,NumCPU"], ["mem"]) == {"swap", "numcpu", "mem"}
    with pytest.raises(ValidationError, match="don't specify individual checks if 'all' is used"):
        ignore_set(["all", "Swap"])


CFG = """
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.10.1
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
"""


def data_for(
    tmp_path: Path, host: FakeHost, ignore: frozenset[str] = frozenset()
) -> tuple[InitData, list[str], list[str]]:
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(CFG)
    cfg = load_init_config(cfg_file, {}, systemd_resolved=False)
    layout = Layout(root=tmp_path / "root")
    out: list[str] = []
    err: list[str] = []
    data = InitData(cfg=cfg, layout=layout, real_layout=layout, out=out.append, ignore_preflight_errors=ignore)
    data.state["preflight_host"] = host
    data.state["preflight_writer"] = err.append
    return data, out, err


def test_phase_builtin_mode(tmp_path: Path) -> None:
    host = FakeHost(uid=1000, hosts={"node1": ["127.0.10.1"]}, files=SWAPS)
    data, out, err = data_for(tmp_path, host)
    PHASE.run(data)  # type: ignore[misc]
    assert out == ["[preflight] Running pre-flight checks"]  # non-root is fine under a root dir; nothing to pull
    assert [e.split("]")[0] for e in err] == ["\t[WARNING Swap"]
    manifest = tmp_path / "root/etc/kubernetes/manifests/etcd.yaml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("x")
    data, out, err = data_for(tmp_path, FakeHost(hosts={"node1": ["127.0.10.1"]}, busy_ports={("127.0.10.1", 2380)}))
    with pytest.raises(PreflightError) as ei:
        PHASE.run(data)  # type: ignore[misc]
    msg = str(ei.value)
    assert (
        "\t[ERROR FileAvailable--etc-kubernetes-manifests-etcd.yaml]: /etc/kubernetes/manifests/etcd.yaml already exists\n"
        in msg
    )
    assert "\t[ERROR Port-2380]: Port 2380 is in use\n" in msg
    data, out, err = data_for(
        tmp_path, FakeHost(hosts={"node1": ["127.0.10.1"]}, busy_ports={("127.0.10.1", 2380)}), frozenset({"all"})
    )
    PHASE.run(data)  # type: ignore[misc]
    assert "\t[WARNING Port-2380]: Port 2380 is in use\n" in err


def test_phase_host_mode_runs_root_check_first_and_alone(tmp_path: Path) -> None:
    data, _out, _err = data_for(tmp_path, FakeHost(uid=1000, cpus=1))
    data.real_layout = Layout(root=Path("/"))
    with pytest.raises(PreflightError) as ei:
        PHASE.run(data)  # type: ignore[misc]
    assert str(ei.value).splitlines()[1:2] == ["\t[ERROR IsPrivilegedUser]: user is not running as root"]
    assert "NumCPU" not in str(ei.value)


def test_phase_host_mode_pulls_images_through_cri(tmp_path: Path) -> None:
    host = FakeHost(
        hosts={"node1": ["127.0.10.1"]},
        cri_images={"registry.k8s.io/etcd:3.5.21-0"},
        cri_pull_errors={"registry.k8s.io/pause:3.10": "image not found"},
    )
    data, out, err = data_for(tmp_path, host, frozenset({"all"}))
    data.real_layout = Layout(root=Path("/"))
    PHASE.run(data)  # type: ignore[misc]
    assert out == [
        "[preflight] Running pre-flight checks",
        "[preflight] Pulling images required for setting up a Kubernetes cluster",
        "[preflight] This might take a minute or two, depending on the speed of your internet connection",
        "[preflight] You can also perform this action beforehand using 'kubeadm config images pull'",
    ]
    # IfNotPresent (the default): etcd is already there, pause fails, the rest are pulled.
    assert host.pulled == [
        "registry.k8s.io/kube-apiserver:v1.33.0",
        "registry.k8s.io/kube-controller-manager:v1.33.0",
        "registry.k8s.io/kube-scheduler:v1.33.0",
        "registry.k8s.io/kube-proxy:v1.33.0",
        "registry.k8s.io/coredns/coredns:v1.12.0",
    ]
    assert "\t[WARNING ImagePull]: failed to pull image registry.k8s.io/pause:3.10: image not found\n" in err


@pytest.mark.parametrize(
    ("sandbox_image", "warning"),
    [
        (
            "registry.k8s.io/pause:3.6",
            'detected that the sandbox image "registry.k8s.io/pause:3.6" of the container runtime is inconsistent with '
            'that used by kubeadm.It is recommended to use "registry.k8s.io/pause:3.10" as the CRI sandbox image.',
        ),
        (
            "",
            "failed to detect the sandbox image for local container runtime, no 'sandboxImage' field in CRI info config",
        ),
        ("registry.k8s.io/pause:3.10", None),
    ],
)
def test_phase_host_mode_warns_when_the_runtimes_sandbox_image_is_not_kubeadms(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sandbox_image: str, warning: str | None
) -> None:
    host = FakeHost(hosts={"node1": ["127.0.10.1"]}, sandbox_image=sandbox_image)
    data, _out, _err = data_for(tmp_path, host, frozenset({"all"}))
    data.real_layout = Layout(root=Path("/"))
    with caplog.at_level(logging.WARNING):
        PHASE.run(data)  # type: ignore[misc]
    sandbox_warnings = [r.getMessage() for r in caplog.records if "sandbox image" in r.getMessage()]
    assert sandbox_warnings == ([warning] if warning else [])
