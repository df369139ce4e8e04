"""A containerd lab's configuration: which runtime `lab up` picks and the line saying why, each node's criSocket,
the registry's hosts.toml and mirrors, kind's local-registry-hosting ConfigMap, the archives `lab load` accepts.
The daemons, the registry and the loads themselves run in tests/e2e/test_lab_containerd.py."""

from __future__ import annotations

import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml

from pykubeadm.containerd.config import render_registry_hosts
from pykubeadm.errors import KubeadmError
from pykubeadm.lab import registry, runtime
from pykubeadm.lab.load import archive_format, lab_load
from pykubeadm.lab.nodes import init_config, join_config, load_registry, new_node, save_registry
from pykubeadm.lab.settings import LabSettings, lab_settings, save_settings


def test_builtin_when_asked_and_for_a_loopback_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    assert runtime.choose("builtin", True, said.append) == "builtin"
    assert said[0].startswith("[lab] Runtime: builtin (asked for)")
    assert runtime.choose(None, False, said.append) == "builtin"
    assert said[1] == "[lab] Runtime: builtin, because the loopback topology shares one network among all nodes"
    with pytest.raises(KubeadmError, match="--runtime containerd cannot run here: the loopback topology"):
        runtime.choose("containerd", False, said.append)


def test_containerd_by_default_where_it_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "unavailable_reason", lambda: None)
    said: list[str] = []
    assert runtime.choose(None, True, said.append) == "containerd"
    assert said[0].startswith("[lab] Runtime: containerd (root, and containerd is installed)")
    monkeypatch.setattr(runtime, "unavailable_reason", lambda: "not running as root")
    assert runtime.choose(None, True, said.append) == "builtin"
    with pytest.raises(KubeadmError, match=r"--runtime containerd cannot run here: not running as root; use --runtime"):
        runtime.choose("containerd", True, said.append)
    with pytest.raises(KubeadmError, match='invalid --runtime "docker"'):
        runtime.choose("docker", True, said.append)


def test_a_containerd_node_gives_kubeadm_its_own_socket(short_tmp_path: Path) -> None:
    cp = new_node(short_tmp_path, [], control_plane=True, prefix="172.18.1.", netns=True, containerd=True)
    worker = new_node(short_tmp_path, [cp], control_plane=False)
    assert worker.containerd  # the lab's runtime, which every node follows
    init = init_config(cp, "abcdef.0123456789abcdef", "sqlite")[0]
    socket = f"unix://{short_tmp_path}/lab-control-plane/run/containerd/containerd.sock"
    assert init["nodeRegistration"]["criSocket"] == socket == runtime.endpoint(cp)
    join = join_config(worker, "172.18.1.1:6443", "abcdef.0123456789abcdef", "sha256:00")[0]
    assert join["nodeRegistration"]["criSocket"] == f"unix://{short_tmp_path}/lab-worker/run/containerd/containerd.sock"
    save_registry(short_tmp_path, [cp, worker])
    assert [n.containerd for n in load_registry(short_tmp_path) or []] == [True, True]
    builtin = new_node(short_tmp_path / "b", [], control_plane=True, prefix="172.18.1.", netns=True)
    assert "criSocket" not in init_config(builtin, "abcdef.0123456789abcdef", "sqlite")[0]["nodeRegistration"]


def test_settings_keep_the_runtime_registry_and_mirrors(tmp_path: Path) -> None:
    s = LabSettings("sqlite", "", "netns", 1234, (), "containerd", True, ("docker.io=http://m:5000",))
    save_settings(tmp_path, s)
    assert lab_settings(tmp_path) == s
    assert lab_settings(tmp_path).containerd


def test_the_registry_host_reaches_the_registry_on_the_lab_network() -> None:
    hosts = registry.hosts(True, [])
    assert hosts == {"localhost:5001": ("http://172.18.0.1:5000", [])}
    server, mirrors = hosts["localhost:5001"]
    assert tomllib.loads(render_registry_hosts(server, mirrors)) == {
        "server": "http://172.18.0.1:5000",
        "host": {"http://172.18.0.1:5000": {"capabilities": ["pull", "resolve"]}},
    }


def test_mirrors_are_asked_before_the_registry_itself() -> None:
    hosts = registry.hosts(False, ["docker.io=http://m1:5000", "docker.io=https://m2/", "quay.io=http://q:5000"])
    assert hosts == {
        "docker.io": ("https://registry-1.docker.io", ["http://m1:5000", "https://m2"]),
        "quay.io": ("https://quay.io", ["http://q:5000"]),
    }
    doc = tomllib.loads(render_registry_hosts(*hosts["docker.io"]))
    assert doc["server"] == "https://registry-1.docker.io"
    assert list(doc["host"]) == ["http://m1:5000", "https://m2"]  # in the order given: containerd tries them so
    assert all(h["capabilities"] == ["pull", "resolve"] for h in doc["host"].values())


@pytest.mark.parametrize("bad", ["docker.io", "=http://m", "docker.io=m:5000", "docker.io/library=http://m"])
def test_a_bad_mirror_flag_names_the_flag_and_the_form(bad: str) -> None:
    with pytest.raises(KubeadmError, match=rf'invalid --registry-mirror "{bad}": use REGISTRY=URL'):
        registry.parse_mirrors([bad])


def test_the_local_registry_hosting_configmap_is_keps() -> None:
    cm = registry.local_registry_hosting()
    assert (cm["apiVersion"], cm["kind"]) == ("v1", "ConfigMap")
    assert cm["metadata"] == {"name": "local-registry-hosting", "namespace": "kube-public"}
    assert list(cm["data"]) == ["localRegistryHosting.v1"]
    value = yaml.safe_load(cm["data"]["localRegistryHosting.v1"])
    assert value["host"] == "localhost:5001"
    assert value["help"].startswith("https://")
    assert value["hostFromClusterNetwork"] == "172.18.0.1:5000"


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_archive_formats_and_what_is_not_one(tmp_path: Path) -> None:
    oci = _tar(tmp_path / "oci.tar", {"oci-layout": b"{}", "index.json": b"{}"})
    docker = _tar(tmp_path / "docker.tar", {"manifest.json": json.dumps([]).encode()})
    assert archive_format(oci) == "oci-archive"
    assert archive_format(docker) == "docker-archive"
    with pytest.raises(KubeadmError, match=r"nothing\.tar: no such file"):
        archive_format(tmp_path / "nothing.tar")
    (tmp_path / "text").write_text("hello")
    with pytest.raises(KubeadmError, match="is not an image archive"):
        archive_format(tmp_path / "text")
    with pytest.raises(KubeadmError, match="a tar file but not an image archive"):
        archive_format(_tar(tmp_path / "other.tar", {"README": b"x"}))


def test_load_without_a_lab_or_into_a_builtin_lab_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(KubeadmError, match=r"no lab in .*: run .pykubeadm lab up"):
        lab_load(tmp_path, [tmp_path / "x.tar"], print)
    save_registry(tmp_path, [new_node(tmp_path, [], control_plane=True, prefix="172.18.1.", netns=True)])
    save_settings(tmp_path, LabSettings(topology="netns", runtime="builtin"))
    with pytest.raises(KubeadmError, match="runs the built-in runtime"):
        lab_load(tmp_path, [tmp_path / "x.tar"], print)


def test_a_registry_without_containerd_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    from pykubeadm.lab.cluster import lab_up

    for args in ({"runtime_name": "builtin"}, {"topology_name": "loopback"}):
        with pytest.raises(KubeadmError, match="--registry and --registry-mirror configure the nodes' containerd"):
            lab_up(tmp_path / "lab", 1, "sqlite", print, registry=True, **args)  # type: ignore[arg-type]
        assert not (tmp_path / "lab").exists()
    with pytest.raises(KubeadmError, match="invalid --registry-mirror"):
        lab_up(tmp_path / "lab", 1, "sqlite", print, registry_mirrors=("docker.io",))
