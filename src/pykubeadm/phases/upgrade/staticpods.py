"""Upgrade the static Pod-hosted control plane of this node (kubeadm's phases/upgrade/staticpods.go).

New manifests are written to /etc/kubernetes/tmp/kubeadm-upgraded-manifests<random>/; then, one component at a time
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler): skip it if its manifest does not change, renew its
certificates, back the old manifest up into /etc/kubernetes/tmp/kubeadm-backup-manifests-<timestamp>/, move the new one
into place and wait (timeouts.upgradeManifests) for the kubelet to replace the mirror Pod (its `kubernetes.io/config.hash`
changes) and for the component to run. If that fails, every manifest moved so far is put back. A local etcd is never
downgraded, and its data directory is copied to /etc/kubernetes/tmp/kubeadm-backup-etcd-<timestamp>/etcd before it
restarts (and restored if it does not come back). The waiting goes through a `Waiter`, so the sequencing is testable
without a cluster; the temporary directory of new manifests is removed at the end, the backups are kept.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from pykubeadm import constants as c
from pykubeadm.api._base import format_duration
from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.manifests import ClusterInputs, create_local_etcd_file, create_static_pod_files, load_static_pod
from pykubeadm.util.fs import ensure_dir
from pykubeadm.util.patches import PatchManager

__all__ = [
    "BACKUP_ETCD_PREFIX",
    "BACKUP_MANIFESTS_PREFIX",
    "UPGRADED_MANIFESTS_PREFIX",
    "Waiter",
    "backup_dir_name",
    "create_temp_dir",
    "upgrade_static_pods",
    "write_new_manifests",
]

Reporter = Callable[[str], None]
UPGRADED_MANIFESTS_PREFIX = "kubeadm-upgraded-manifests"
BACKUP_MANIFESTS_PREFIX = "kubeadm-backup-manifests"
BACKUP_ETCD_PREFIX = "kubeadm-backup-etcd"


class Waiter(Protocol):
    """How the upgrade observes the kubelet: the mirror Pod's config hash, its change, and the component running."""

    def pod_hash(self, component: str) -> str: ...
    def wait_hash_change(self, component: str, old_hash: str, timeout: float) -> None: ...
    def wait_ready(self, component: str, timeout: float) -> None: ...


def create_temp_dir(parent: Path, prefix: str) -> Path:
    """`<parent>/<prefix><random digits>` created 0700, like Go's os.MkdirTemp (kubeadm's CreateTempDir)."""
    ensure_dir(parent, c.PRIVATE_DIR_MODE)
    while True:
        path = parent / f"{prefix}{secrets.randbelow(2**32)}"
        try:
            path.mkdir(mode=c.PRIVATE_DIR_MODE)
            return path
        except FileExistsError:
            continue


def backup_dir_name(now: datetime) -> str:
    """`kubeadm-backup-manifests-2006-01-02-15-04-05` (Go's timestamp layout)."""
    return f"{BACKUP_MANIFESTS_PREFIX}-{now.strftime('%Y-%m-%d-%H-%M-%S')}"


def _node_path(layout: Layout, host_path: Path) -> str:
    """A host path under the node's root as the node path kubeadm prints."""
    root = str(layout.root)
    text = str(host_path)
    return text[len(root) :] if root != "/" and text.startswith(root) else text


def write_new_manifests(
    target_dir: Path, inputs: ClusterInputs, components: Sequence[str], patches: PatchManager | None
) -> None:
    """The manifests the target version needs, written into `target_dir` (etcd only if listed)."""
    cp = [comp for comp in components if comp != c.ETCD]
    create_static_pod_files(target_dir, inputs, cp, patches, out=lambda _line: None)
    if c.ETCD in components:
        create_local_etcd_file(target_dir, inputs, patches)


def _same(a: Path, b: Path) -> bool:
    try:
        return load_static_pod(a) == load_static_pod(b)
    except (OSError, ValueError):
        return False


def _etcd_version(image: str) -> tuple[int, ...]:
    tag = image.rsplit(":", 1)[-1].split("-", 1)[0]
    try:
        return tuple(int(p) for p in tag.split("."))
    except ValueError:
        return ()


def _etcd_downgrade(current: Path, new: Path, kubernetes_version: str) -> str | None:
    """kubeadm's refusal to downgrade etcd: the message when the running etcd is newer than the target's."""
    try:
        cur = load_static_pod(current)["spec"]["containers"][0]["image"]
        want = load_static_pod(new)["spec"]["containers"][0]["image"]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    if _etcd_version(cur) and _etcd_version(want) and _etcd_version(cur) > _etcd_version(want):
        return (
            f'[upgrade/etcd] The desired etcd version "{want.rsplit(":", 1)[-1]}" for this Kubernetes version '
            f'"{kubernetes_version}" is lower than the current etcd version "{cur.rsplit(":", 1)[-1]}". '
            "Won't downgrade etcd, instead just continue"
        )
    return None


def _restore_etcd_data(backup: Path, data_dir: Path) -> None:
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(backup, data_dir, symlinks=True)


def _rollback(
    moved: dict[str, tuple[Path, Path]], err: BaseException, etcd_data: tuple[Path, Path] | None = None
) -> KubeadmError:
    errors = [str(err)]
    if etcd_data is not None:
        try:
            _restore_etcd_data(*etcd_data)
        except OSError as e:
            errors.append(f"couldn't restore the etcd data directory {etcd_data[1]} from {etcd_data[0]}: {e}")
    for _component, (backup, real) in moved.items():
        try:
            os.replace(backup, real)
        except OSError as e:
            errors.append(f"couldn't move backup manifest {backup} to {real}: {e}")
    return KubeadmError(
        "couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. "
        f"Errors faced: [{', '.join(errors)}]"
    )


def upgrade_static_pods(
    layout: Layout,
    inputs: ClusterInputs,
    components: Sequence[str],
    waiter: Waiter,
    *,
    renew: Callable[[str], None] | None = None,
    patches: PatchManager | None = None,
    timeout: timedelta = c.UPGRADE_MANIFESTS_TIMEOUT,
    out: Reporter = print,
    now: Callable[[], datetime] = datetime.now,
    etcd_data_dir: Path | None = None,
) -> Path | None:
    """Upgrade `components` in order; returns the backup directory (None when nothing had to change).

    Before a local etcd is restarted its data directory (`etcd_data_dir`, host path) is copied to
    /etc/kubernetes/tmp/kubeadm-backup-etcd-<timestamp>/etcd, and put back if etcd does not come up."""
    hashes = {comp: waiter.pod_hash(comp) for comp in components}
    upgraded = create_temp_dir(layout.tmp_dir, UPGRADED_MANIFESTS_PREFIX)
    stamp = now()
    backup = layout.tmp_dir / backup_dir_name(stamp)
    etcd_backup = layout.tmp_dir / f"{BACKUP_ETCD_PREFIX}-{stamp.strftime('%Y-%m-%d-%H-%M-%S')}" / c.ETCD
    moved: dict[str, tuple[Path, Path]] = {}
    dur = format_duration(timeout)
    try:
        out(f'[upgrade/staticpods] Writing new Static Pod manifests to "{_node_path(layout, upgraded)}"')
        write_new_manifests(upgraded, inputs, components, patches)
        for comp in components:
            out(f'[upgrade/staticpods] Preparing for "{comp}" upgrade')
            real = layout.manifest(comp)
            new = upgraded / f"{comp}.yaml"
            if _same(real, new):
                out(f"[upgrade/staticpods] Current and new manifests of {comp} are equal, skipping upgrade")
                continue
            etcd_data = None
            if comp == c.ETCD:
                refusal = _etcd_downgrade(real, new, inputs.kubernetes_version)
                if refusal:
                    out(refusal)
                    continue
                if etcd_data_dir is not None and etcd_data_dir.is_dir():
                    ensure_dir(etcd_backup.parent, c.PRIVATE_DIR_MODE)
                    shutil.copytree(etcd_data_dir, etcd_backup, symlinks=True)
                    etcd_data = (etcd_backup, etcd_data_dir)
            if renew is not None:
                renew(comp)
            ensure_dir(backup, c.PRIVATE_DIR_MODE)
            saved = backup / f"{comp}.yaml"
            out(
                f'[upgrade/staticpods] Moving new manifest to "{_node_path(layout, real)}" and backing up old '
                f'manifest to "{_node_path(layout, saved)}"'
            )
            shutil.copy2(real, saved)
            moved[comp] = (saved, real)
            os.replace(new, real)
            out("[upgrade/staticpods] Waiting for the kubelet to restart the component")
            out(f"[upgrade/staticpods] This can take up to {dur}")
            try:
                waiter.wait_hash_change(comp, hashes[comp], timeout.total_seconds())
                waiter.wait_ready(comp, timeout.total_seconds())
            except Exception as err:  # any failure puts the old manifests back
                raise _rollback(moved, err, etcd_data) from err
            out(f'[upgrade/staticpods] Component "{comp}" upgraded successfully!')
            if comp == c.ETCD:
                out("[upgrade/etcd] Waiting for etcd to become available")
    finally:
        shutil.rmtree(upgraded, ignore_errors=True)
    return backup if moved else None
