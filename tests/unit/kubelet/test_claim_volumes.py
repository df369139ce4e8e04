"""persistentVolumeClaim and generic ephemeral volumes: mounted through the bound PersistentVolume's directory."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from tests.unit.kubelet.fakeapi import FakeApi

from pykubeadm.kubelet.volumes import Mount, PodVolumes, VolumeError
from pykubeadm.layout import Layout


def pod(volumes: list[dict], mounts: list[dict]) -> dict:
    return {
        "metadata": {"name": "web-0", "namespace": "team", "uid": "pod-uid"},
        "spec": {"nodeName": "n1", "volumes": volumes, "containers": [{"name": "app", "volumeMounts": mounts}]},
    }


def bind(api: FakeApi, claim: str, pv: str, source: dict, owner: str = "") -> None:
    meta: dict = {"name": claim, "namespace": "team", "uid": f"uid-{claim}"}
    if owner:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "web-0", "uid": owner, "controller": True}]
    api.put("team", "persistentvolumeclaims", claim,
            {"metadata": meta, "spec": {"volumeName": pv}, "status": {"phase": "Bound"}})  # fmt: skip
    api.objects[f"/api/v1/persistentvolumes/{pv}"] = {
        "metadata": {"name": pv},
        "spec": {**source, "claimRef": {"namespace": "team", "name": claim, "uid": f"uid-{claim}"}},
    }


def volumes_of(p: dict, api: FakeApi, tmp_path: Path) -> PodVolumes:
    layout = Layout(tmp_path / "node")
    return PodVolumes(p, layout.pod_dir("pod-uid"), api, layout, "n1")


async def test_a_claim_mounts_its_hostpath_volume_with_subpath_and_read_only(tmp_path: Path) -> None:
    api = FakeApi()
    bind(
        api,
        "www-web-0",
        "pvc-1",
        {"hostPath": {"path": "/var/local-path-provisioner/pvc-1", "type": "DirectoryOrCreate"}},
    )
    p = pod(
        [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}}],
        [
            {"name": "www", "mountPath": "/usr/share/nginx/html"},
            {"name": "www", "mountPath": "/logs", "subPath": "logs"},
        ],
    )
    vols = volumes_of(p, api, tmp_path)
    await vols.setup()
    host = tmp_path / "node/var/local-path-provisioner/pvc-1"
    assert host.is_dir()  # DirectoryOrCreate under the node's root
    assert vols.mounts_for(p["spec"]["containers"][0]) == [
        Mount(host, "/usr/share/nginx/html"),
        Mount(host / "logs", "/logs"),
    ]
    p["spec"]["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True
    assert vols.mounts_for(p["spec"]["containers"][0])[0].read_only
    await vols.teardown()
    assert host.is_dir()  # the volume's data outlives the Pod


async def test_a_local_volume_must_exist(tmp_path: Path) -> None:
    api = FakeApi()
    bind(api, "data", "local-1", {"local": {"path": "/mnt/disk1"}})
    p = pod([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}], [])
    with pytest.raises(VolumeError, match="is not a directory"):
        await volumes_of(p, api, tmp_path).setup()
    (tmp_path / "node/mnt/disk1").mkdir(parents=True)
    await volumes_of(p, api, tmp_path).setup()


async def test_an_unbound_or_missing_claim_fails_the_mount(tmp_path: Path) -> None:
    api = FakeApi()
    p = pod([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}], [])
    with pytest.raises(VolumeError, match=r"error processing PVC team/data: failed to fetch PVC from API server"):
        await volumes_of(p, api, tmp_path).setup()
    api.put("team", "persistentvolumeclaims", "data",
            {"metadata": {"name": "data", "uid": "u"}, "spec": {}, "status": {"phase": "Pending"}})  # fmt: skip
    with pytest.raises(VolumeError) as err:
        await volumes_of(p, api, tmp_path).setup()
    assert (err.value.reason, err.value.message) == ("FailedMount", "error processing PVC team/data: PVC is not bound")


async def test_an_ephemeral_volume_uses_the_claim_the_pod_owns(tmp_path: Path) -> None:
    api = FakeApi()
    bind(api, "web-0-scratch", "pv-s", {"hostPath": {"path": "/srv/s", "type": "DirectoryOrCreate"}}, owner="other")
    p = pod([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}], [])
    with pytest.raises(VolumeError, match="pod is not owner"):
        await volumes_of(p, api, tmp_path).setup()
    bind(api, "web-0-scratch", "pv-s", {"hostPath": {"path": "/srv/s", "type": "DirectoryOrCreate"}}, owner="pod-uid")
    await volumes_of(p, api, tmp_path).setup()
    assert (tmp_path / "node/srv/s").is_dir()


async def test_fs_group_owns_a_local_volume(tmp_path: Path) -> None:
    api = FakeApi()
    bind(api, "data", "local-1", {"local": {"path": "/mnt/disk1"}})
    disk = tmp_path / "node/mnt/disk1"
    (disk / "sub").mkdir(parents=True)
    (disk / "sub/file").write_text("x")
    (disk / "sub/file").chmod(0o600)
    p = pod([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}], [])
    p["spec"]["securityContext"] = {"fsGroup": 2000}
    await volumes_of(p, api, tmp_path).setup()
    for path in (disk, disk / "sub", disk / "sub/file"):
        assert path.stat().st_gid == 2000
    assert stat.S_IMODE((disk / "sub/file").stat().st_mode) == 0o660
    assert (disk / "sub").stat().st_mode & stat.S_ISGID
