"""reset phase `remove-etcd-member`: take a stacked etcd member out of its cluster and delete its data directory.

With an etcd manifest on the node: the data dir is the ClusterConfiguration's `etcd.local.dataDir` when the cluster
was read, else the manifest's (kubeadm's warning "No kubeadm config, using etcd pod spec…"); this node's member is
removed when other members exist (a failure is a warning: remove it by hand with etcdctl); then the data directory's
contents are deleted. Without a manifest the etcd is external (or this is a worker): kubeadm's two lines, nothing else.
The data dir is remembered in `data.state` so cleanup-node can empty it again once the etcd process is stopped (a
kubelet may restart etcd on an empty dir in between).
"""

from __future__ import annotations

import logging

from pykubeadm.errors import KubeadmError
from pykubeadm.phases.reset.cleanup import clean_dir, is_dir_empty
from pykubeadm.phases.reset.data import ResetData
from pykubeadm.phases.reset.etcd_member import read_etcd_pod, remove_member
from pykubeadm.workflow import Phase

__all__ = ["ETCD_DATA_DIR_KEY", "PHASE"]

log = logging.getLogger(__name__)

#: data.state key: the etcd data dir (node path) this reset deletes.
ETCD_DATA_DIR_KEY = "etcd_data_dir"


def _clean(data: ResetData, data_dir: str) -> None:
    try:
        clean_dir(data.layout, data_dir)
    except OSError as err:
        log.warning('[reset] Failed to delete contents of the etcd directory: "%s", error: %s', data_dir, err)
    else:
        data.out(f"[reset] Deleted contents of the etcd data directory: {data_dir}")


def _run(data: ResetData) -> None:
    log.info("[reset] Checking for etcd config")
    try:
        pod = read_etcd_pod(data.layout)
    except KubeadmError as err:
        log.warning("[reset] %s", err)
        pod = None
    if pod is None:
        data.out("[reset] No etcd config found. Assuming external etcd")
        data.out("[reset] Please, manually reset etcd to prevent further issues")
        return
    local = data.cluster.etcd.local if data.cluster is not None else None
    if local is not None and local.data_dir:
        data_dir = local.data_dir
    else:
        log.warning("[reset] No kubeadm config, using etcd pod spec to get data directory")
        data_dir = pod.data_dir
    data.state[ETCD_DATA_DIR_KEY] = data_dir
    if data.dry_run:
        data.out("[reset] Would remove the etcd member on this node from the etcd cluster")
        data.out(f"[reset] Would delete contents of the etcd data directory: {data_dir}")
        return
    try:
        remove_member(data.layout, pod)
    except KubeadmError as err:
        log.warning(
            "[reset] Failed to remove etcd member: %s, please manually remove this etcd member using etcdctl", err
        )
    if not is_dir_empty(data.layout, data_dir):
        _clean(data, data_dir)


PHASE: Phase[ResetData] = Phase(
    name="remove-etcd-member",
    short="Remove a local etcd member.",
    long="Remove a local etcd member for a control plane node.",
    run=_run,
    inherit_flags=("kubeconfig", "dry-run"),
)
