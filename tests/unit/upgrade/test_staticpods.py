"""The static Pod upgrade sequence with a fake kubelet observer: moves, backups, skipped components, rollback."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.manifests import ClusterInputs, ExternalEtcdInputs, LocalEtcdInputs
from pykubeadm.phases.upgrade.control_plane import components_to_upgrade
from pykubeadm.phases.upgrade.staticpods import upgrade_static_pods, write_new_manifests

COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]
OLD = ClusterInputs(
    advertise_address="127.0.30.1",
    node_name="cp1",
    kubernetes_version="v1.32.4",
    local_etcd=None,
    external_etcd=ExternalEtcdInputs(("https://127.0.30.1:2379",)),
)
NEW = dataclasses.replace(OLD, kubernetes_version="v1.33.0")
NOW = datetime(2026, 11, 22, 10, 11, 12)


class FakeWaiter:
    def __init__(self, fail_on: str | None = None):
        self.fail_on = fail_on
        self.calls: list[tuple[str, str]] = []

    def pod_hash(self, component: str) -> str:
        self.calls.append(("hash", component))
        return f"old-{component}"

    def wait_hash_change(self, component: str, old_hash: str, timeout: float) -> None:
        assert old_hash == f"old-{component}" and timeout == 300
        self.calls.append(("change", component))
        if component == self.fail_on:
            raise KubeadmError(f"static Pod hash for component {component} on Node cp1 did not change")

    def wait_ready(self, component: str, timeout: float) -> None:
        self.calls.append(("ready", component))


def _image(path: Path) -> str:
    return yaml.safe_load(path.read_text())["spec"]["containers"][0]["image"]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    layout = Layout(tmp_path)
    write_new_manifests(layout.manifests_dir, OLD, COMPONENTS, None)
    return layout


def test_components_order() -> None:
    assert components_to_upgrade(True, True) == ["etcd", *COMPONENTS]
    assert components_to_upgrade(True, False) == COMPONENTS
    assert components_to_upgrade(False, True) == COMPONENTS


def test_upgrade_moves_backs_up_and_waits(layout: Layout) -> None:
    lines: list[str] = []
    renewed: list[str] = []
    waiter = FakeWaiter()
    backup = upgrade_static_pods(
        layout, NEW, COMPONENTS, waiter, renew=renewed.append, out=lines.append, now=lambda: NOW
    )
    assert backup == layout.tmp_dir / "kubeadm-backup-manifests-2026-11-22-10-11-12"
    for comp in COMPONENTS:
        assert _image(layout.manifest(comp)).endswith(":v1.33.0")
        assert _image(backup / f"{comp}.yaml").endswith(":v1.32.4")
    assert renewed == COMPONENTS
    assert waiter.calls[:3] == [("hash", comp) for comp in COMPONENTS]  # hashes are read before anything moves
    assert waiter.calls[3:5] == [("change", "kube-apiserver"), ("ready", "kube-apiserver")]
    assert [p.name for p in layout.tmp_dir.iterdir()] == [backup.name]  # the upgraded-manifests dir is removed
    assert lines[0].startswith('[upgrade/staticpods] Writing new Static Pod manifests to "/etc/kubernetes/tmp/')
    assert lines[0][len('[upgrade/staticpods] Writing new Static Pod manifests to "/etc/kubernetes/tmp/') :].startswith(
        "kubeadm-upgraded-manifests"
    )
    assert lines[1:7] == [
        '[upgrade/staticpods] Preparing for "kube-apiserver" upgrade',
        '[upgrade/staticpods] Moving new manifest to "/etc/kubernetes/manifests/kube-apiserver.yaml" and backing up '
        'old manifest to "/etc/kubernetes/tmp/kubeadm-backup-manifests-2026-11-22-10-11-12/kube-apiserver.yaml"',
        "[upgrade/staticpods] Waiting for the kubelet to restart the component",
        "[upgrade/staticpods] This can take up to 5m0s",
        '[upgrade/staticpods] Component "kube-apiserver" upgraded successfully!',
        '[upgrade/staticpods] Preparing for "kube-controller-manager" upgrade',
    ]
    assert (layout.manifest("kube-apiserver").stat().st_mode & 0o777) == 0o600


def test_unchanged_manifests_are_skipped(layout: Layout) -> None:
    lines: list[str] = []
    waiter = FakeWaiter()
    assert upgrade_static_pods(layout, OLD, COMPONENTS, waiter, renew=lambda _c: None, out=lines.append) is None
    assert "[upgrade/staticpods] Current and new manifests of kube-scheduler are equal, skipping upgrade" in lines
    assert not any(call[0] == "change" for call in waiter.calls)
    assert list(layout.tmp_dir.iterdir()) == []


def test_failure_rolls_back_every_moved_manifest(layout: Layout) -> None:
    before = {comp: layout.manifest(comp).read_text() for comp in COMPONENTS}
    with pytest.raises(KubeadmError) as info:
        upgrade_static_pods(layout, NEW, COMPONENTS, FakeWaiter("kube-controller-manager"), out=lambda _l: None)
    assert str(info.value).startswith(
        "couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. "
        "Errors faced: [static Pod hash for component kube-controller-manager on Node cp1 did not change"
    )
    for comp in COMPONENTS:  # kube-apiserver (already upgraded) and kube-controller-manager are restored
        assert layout.manifest(comp).read_text() == before[comp]
    assert not any(p.name.startswith("kubeadm-upgraded-manifests") for p in layout.tmp_dir.iterdir())


ETCD_OLD = dataclasses.replace(OLD, external_etcd=None, local_etcd=LocalEtcdInputs())
ETCD_NEW = dataclasses.replace(ETCD_OLD, kubernetes_version="v1.33.0")
WITH_ETCD = ["etcd", *COMPONENTS]


@pytest.fixture
def etcd_layout(tmp_path: Path) -> Layout:
    layout = Layout(tmp_path)
    write_new_manifests(layout.manifests_dir, ETCD_OLD, WITH_ETCD, None)
    data = layout.etcd_data_dir()
    (data / "member" / "snap").mkdir(parents=True)
    (data / "member" / "snap" / "db").write_text("v1.32 data")
    return layout


def test_etcd_data_is_backed_up_before_etcd_restarts(etcd_layout: Layout) -> None:
    lines: list[str] = []
    upgrade_static_pods(
        etcd_layout,
        ETCD_NEW,
        WITH_ETCD,
        FakeWaiter(),
        out=lines.append,
        now=lambda: NOW,
        etcd_data_dir=etcd_layout.etcd_data_dir(),
    )
    assert _image(etcd_layout.manifest("etcd")) == "registry.k8s.io/etcd:3.5.21-0"
    backup = etcd_layout.tmp_dir / "kubeadm-backup-etcd-2026-11-22-10-11-12" / "etcd"
    assert (backup / "member" / "snap" / "db").read_text() == "v1.32 data"
    assert lines.index('[upgrade/staticpods] Component "etcd" upgraded successfully!') + 1 == lines.index(
        "[upgrade/etcd] Waiting for etcd to become available"
    )


def test_failed_etcd_restores_its_data_and_manifest(etcd_layout: Layout) -> None:
    before = etcd_layout.manifest("etcd").read_text()

    class Corrupting(FakeWaiter):
        def wait_hash_change(self, component: str, old_hash: str, timeout: float) -> None:
            (etcd_layout.etcd_data_dir() / "member" / "snap" / "db").write_text("half-migrated")
            raise KubeadmError("etcd did not come back")

    with pytest.raises(KubeadmError, match="etcd did not come back"):
        upgrade_static_pods(
            etcd_layout,
            ETCD_NEW,
            WITH_ETCD,
            Corrupting(),
            out=lambda _l: None,
            etcd_data_dir=etcd_layout.etcd_data_dir(),
        )
    assert etcd_layout.manifest("etcd").read_text() == before
    assert (etcd_layout.etcd_data_dir() / "member" / "snap" / "db").read_text() == "v1.32 data"


def test_etcd_is_never_downgraded(etcd_layout: Layout) -> None:
    older = dataclasses.replace(ETCD_NEW, local_etcd=LocalEtcdInputs(image_tag="3.5.0-0"))
    lines: list[str] = []
    upgrade_static_pods(etcd_layout, older, WITH_ETCD, FakeWaiter(), out=lines.append)
    assert _image(etcd_layout.manifest("etcd")) == "registry.k8s.io/etcd:3.5.16-0"
    assert any("Won't downgrade etcd, instead just continue" in line for line in lines)
