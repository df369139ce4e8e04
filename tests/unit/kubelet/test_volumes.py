"""Pod volumes in the kubelet's layout: API-data volumes written atomically, tokens renewed, mounts per container."""

from __future__ import annotations

import base64
import os
import socket
import stat
from pathlib import Path

import pytest
from tests.unit.kubelet.fakeapi import FakeApi

from pykubeadm.kubelet.volumes import Mount, PodVolumes, VolumeError, write_atomic
from pykubeadm.layout import Layout


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def make_pod(volumes: list[dict], mounts: list[dict] | None = None, **spec) -> dict:
    return {
        "metadata": {"name": "web", "namespace": "team", "uid": "uid-1", "labels": {"app": "web"}},
        "spec": {
            "nodeName": "n1",
            "serviceAccountName": "robot",
            "volumes": volumes,
            "containers": [{"name": "app", "volumeMounts": mounts or []}],
            **spec,
        },
    }


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api() -> FakeApi:
    a = FakeApi(now=1_000_000.0)
    a.put("team", "configmaps", "cfg", {"data": {"key": "v1", "other": "o"}, "binaryData": {"bin": b64(b"\x00\x01")}})
    a.put("team", "configmaps", "kube-root-ca.crt", {"data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n"}})
    a.put("team", "secrets", "creds", {"data": {"password": b64("s3cret")}})
    return a


def volumes_of(pod: dict, api: FakeApi, tmp_path: Path, clock: Clock | None = None) -> PodVolumes:
    layout = Layout(tmp_path / "node")
    return PodVolumes(pod, layout.pod_dir("uid-1"), api, layout, "n1", clock=clock or Clock())


def vol_dir(tmp_path: Path, plugin: str, name: str) -> Path:
    return tmp_path / "node/var/lib/kubelet/pods/uid-1/volumes" / plugin / name


def test_atomic_writer_layout_and_update(tmp_path: Path) -> None:
    target = tmp_path / "v"
    assert write_atomic(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o600)})
    data = os.readlink(target / "..data")
    assert data.startswith("..") and (target / data).is_dir()
    assert os.readlink(target / "a") == "..data/a" and os.readlink(target / "dir") == "..data/dir"
    assert (target / "a").read_text() == "1" and (target / "dir/b").read_text() == "2"
    assert stat.S_IMODE((target / "dir/b").stat().st_mode) == 0o600
    assert not write_atomic(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o600)})  # unchanged: nothing written
    assert write_atomic(target, {"a": (b"new", 0o644)})
    assert (target / "a").read_text() == "new"
    assert not os.path.lexists(target / "dir")  # a name that left the payload is gone
    assert not (target / data).exists()  # the previous generation was removed
    assert sorted(p.name for p in target.iterdir() if p.name.startswith("..") and not p.is_symlink()) == [
        os.readlink(target / "..data")
    ]
    with pytest.raises(ValueError):
        write_atomic(target, {"../escape": (b"x", 0o644)})


async def test_configmap_and_secret_volumes(api: FakeApi, tmp_path: Path) -> None:
    pod = make_pod(
        [
            {"name": "all", "configMap": {"name": "cfg"}},
            {
                "name": "some",
                "configMap": {"name": "cfg", "items": [{"key": "key", "path": "sub/k.txt", "mode": 0o600}]},
            },
            {"name": "sec", "secret": {"secretName": "creds"}},
            {"name": "sec400", "secret": {"secretName": "creds", "defaultMode": 0o400}},
        ]
    )
    vols = volumes_of(pod, api, tmp_path)
    await vols.setup()
    all_ = vol_dir(tmp_path, "kubernetes.io~configmap", "all")
    assert (all_ / "key").read_text() == "v1" and (all_ / "bin").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((all_ / "key").stat().st_mode) == 0o644
    some = vol_dir(tmp_path, "kubernetes.io~configmap", "some")
    assert (some / "sub/k.txt").read_text() == "v1" and not (some / "other").exists()
    assert stat.S_IMODE((some / "sub/k.txt").stat().st_mode) == 0o600
    sec = vol_dir(tmp_path, "kubernetes.io~secret", "sec")
    assert (sec / "password").read_text() == "s3cret"
    assert stat.S_IMODE((sec / "password").stat().st_mode) == 0o644  # defaultMode 420
    assert stat.S_IMODE((vol_dir(tmp_path, "kubernetes.io~secret", "sec400") / "password").stat().st_mode) == 0o400

    api.put("team", "configmaps", "cfg", {"data": {"key": "v2"}})
    await vols.refresh()
    assert (all_ / "key").read_text() == "v2" and not os.path.lexists(all_ / "other")
    assert (some / "sub/k.txt").read_text() == "v2"


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        (
            {"name": "cfg", "configMap": {"name": "x"}},
            'MountVolume.SetUp failed for volume "cfg" : configmap "x" not found',
        ),
        (
            {"name": "s", "secret": {"secretName": "x"}},
            'MountVolume.SetUp failed for volume "s" : secret "x" not found',
        ),
        (
            {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "K", "path": "k"}]}},
            'MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: K',
        ),
        (
            {"name": "h", "hostPath": {"path": "/missing", "type": "Directory"}},
            'MountVolume.SetUp failed for volume "h" : hostPath type check failed: /missing is not a directory',
        ),
        (
            {"name": "h", "hostPath": {"path": "/missing", "type": "Socket"}},
            'MountVolume.SetUp failed for volume "h" : hostPath type check failed: /missing is not a socket file',
        ),
    ],
)
async def test_setup_failures_are_failed_mount(api: FakeApi, tmp_path: Path, volume: dict, message: str) -> None:
    with pytest.raises(VolumeError) as e:
        await volumes_of(make_pod([volume]), api, tmp_path).setup()
    assert e.value.reason == "FailedMount"
    assert e.value.message == message


async def test_optional_missing_sources_give_empty_volumes(api: FakeApi, tmp_path: Path) -> None:
    pod = make_pod(
        [
            {"name": "c", "configMap": {"name": "x", "optional": True}},
            {"name": "i", "configMap": {"name": "cfg", "optional": True, "items": [{"key": "K", "path": "k"}]}},
        ]
    )
    await volumes_of(pod, api, tmp_path).setup()
    assert [p for p in os.listdir(vol_dir(tmp_path, "kubernetes.io~configmap", "c")) if not p.startswith("..")] == []
    assert [p for p in os.listdir(vol_dir(tmp_path, "kubernetes.io~configmap", "i")) if not p.startswith("..")] == []


def kube_api_access() -> dict:
    """What ServiceAccount admission adds to a Pod."""
    return {
        "name": "kube-api-access-abcde",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }


async def test_projected_service_account_volume_and_token_renewal(api: FakeApi, tmp_path: Path) -> None:
    clock = Clock()
    vols = volumes_of(make_pod([kube_api_access()]), api, tmp_path, clock)
    await vols.setup()
    d = vol_dir(tmp_path, "kubernetes.io~projected", "kube-api-access-abcde")
    assert (d / "token").read_text() == "token-1"
    assert (d / "ca.crt").read_text().startswith("-----BEGIN CERTIFICATE")
    assert (d / "namespace").read_text() == "team"
    path, body = api.token_requests[0]
    assert path == "/api/v1/namespaces/team/serviceaccounts/robot/token"
    assert body["spec"] == {
        "expirationSeconds": 3607,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "uid-1"},
    }
    clock.now += 0.79 * 3607
    await vols.refresh()
    assert len(api.token_requests) == 1 and (d / "token").read_text() == "token-1"
    clock.now += 0.02 * 3607  # past 80 % of the token's life
    api.now = clock.now
    await vols.refresh()
    assert len(api.token_requests) == 2 and (d / "token").read_text() == "token-2"


async def test_token_audience_and_missing_service_account(api: FakeApi, tmp_path: Path) -> None:
    vol = {
        "name": "tok",
        "projected": {
            "sources": [{"serviceAccountToken": {"audience": "vault", "path": "t", "expirationSeconds": 600}}]
        },
    }
    await volumes_of(make_pod([vol]), api, tmp_path).setup()
    assert api.token_requests[0][1]["spec"]["audiences"] == ["vault"]
    assert api.token_requests[0][1]["spec"]["expirationSeconds"] == 600

    async def refuse(path: str, body: dict) -> dict:
        from pykubeadm.kubelet.api import ApiError

        raise ApiError(404, "NotFound", 'serviceaccounts "robot" not found')

    api.post = refuse  # type: ignore[method-assign]
    with pytest.raises(VolumeError) as e:
        await volumes_of(make_pod([vol]), api, tmp_path / "again").setup()
    assert e.value.message == (
        'MountVolume.SetUp failed for volume "tok" : failed to fetch token: serviceaccounts "robot" not found'
    )


async def test_downward_api_volume_follows_label_changes(api: FakeApi, tmp_path: Path) -> None:
    vol = {
        "name": "info",
        "downwardAPI": {
            "items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                {
                    "path": "mem",
                    "resourceFieldRef": {"containerName": "app", "resource": "limits.memory", "divisor": "1Mi"},
                },
            ]
        },
    }
    pod = make_pod([vol])
    pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": "128Mi"}}
    vols = volumes_of(pod, api, tmp_path)
    await vols.setup()
    d = vol_dir(tmp_path, "kubernetes.io~downward-api", "info")
    assert (d / "labels").read_text() == 'app="web"'
    assert (d / "name").read_text() == "web" and (d / "mem").read_text() == "128"
    pod2 = {**pod, "metadata": {**pod["metadata"], "labels": {"app": "web", "v": "2"}}}
    await vols.refresh(pod2)
    assert (d / "labels").read_text() == 'app="web"\nv="2"'


async def test_empty_dir_host_path_and_mounts(api: FakeApi, tmp_path: Path) -> None:
    sock_dir = tmp_path / "node/run"
    sock_dir.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_dir / "x.sock"))
        pod = make_pod(
            [
                {"name": "scratch", "emptyDir": {}},
                {"name": "data", "hostPath": {"path": "/srv/data", "type": "DirectoryOrCreate"}},
                {"name": "sock", "hostPath": {"path": "/run/x.sock", "type": "Socket"}},
                {"name": "cfg", "configMap": {"name": "cfg"}},
            ],
            [
                {"name": "scratch", "mountPath": "/scratch"},
                {"name": "scratch", "mountPath": "/logs", "subPath": "logs/app"},
                {"name": "data", "mountPath": "/data", "readOnly": True},
                {"name": "sock", "mountPath": "/var/run/x.sock"},
                {"name": "cfg", "mountPath": "/etc/cfg"},
                {"name": "cfg", "mountPath": "/etc/app.conf", "subPath": "key"},
            ],
        )
        vols = volumes_of(pod, api, tmp_path)
        await vols.setup()
    scratch = vol_dir(tmp_path, "kubernetes.io~empty-dir", "scratch")
    assert scratch.is_dir() and stat.S_IMODE(scratch.stat().st_mode) == 0o777
    assert (tmp_path / "node/srv/data").is_dir()
    cfg = vol_dir(tmp_path, "kubernetes.io~configmap", "cfg")
    assert vols.mounts_for(pod["spec"]["containers"][0]) == [
        Mount(scratch, "/scratch", False),
        Mount(scratch / "logs/app", "/logs", False),
        Mount(tmp_path / "node/srv/data", "/data", True),
        Mount(tmp_path / "node/run/x.sock", "/var/run/x.sock", False),
        Mount(cfg, "/etc/cfg", True),  # API-data volumes are always read-only
        Mount(cfg / "key", "/etc/app.conf", True),
    ]
    assert (scratch / "logs/app").is_dir()  # a missing subPath is created
    with pytest.raises(VolumeError) as e:
        vols.mounts_for({"name": "bad", "volumeMounts": [{"name": "scratch", "mountPath": "/x", "subPath": "../up"}]})
    assert e.value.reason == "CreateContainerConfigError"
    with pytest.raises(VolumeError):
        vols.mounts_for({"name": "bad", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]})
    os.symlink("/etc", scratch / "evil")  # what a container could plant in its emptyDir
    with pytest.raises(VolumeError) as e:
        vols.mounts_for({"name": "bad", "volumeMounts": [{"name": "scratch", "mountPath": "/x", "subPath": "evil"}]})
    assert "resolves outside the volume" in e.value.message
    env_mounts = vols.mounts_for(
        {"name": "x", "volumeMounts": [{"name": "scratch", "mountPath": "/p", "subPathExpr": "$(POD)/out"}]},
        env={"POD": "web"},
    )
    assert env_mounts == [Mount(scratch / "web/out", "/p", False)]

    await vols.teardown()
    assert not (tmp_path / "node/var/lib/kubelet/pods/uid-1/volumes").exists()
    assert (tmp_path / "node/srv/data").is_dir()  # hostPath content is never removed


@pytest.mark.skipif(os.geteuid() != 0, reason="a memory-backed emptyDir is a tmpfs only when the kubelet is root")
async def test_memory_empty_dir_is_tmpfs_and_unmounted_at_teardown(api: FakeApi, tmp_path: Path) -> None:
    vols = volumes_of(make_pod([{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}]), api, tmp_path)
    await vols.setup()
    d = vol_dir(tmp_path, "kubernetes.io~empty-dir", "m")
    try:
        assert os.path.ismount(d)
        assert os.statvfs(d).f_blocks * os.statvfs(d).f_frsize == 16 * 1024 * 1024
    finally:
        await vols.teardown()
    assert not d.exists()
