"""upgrade phase `kubelet-config`: back up /var/lib/kubelet/config.yaml into /etc/kubernetes/tmp/kubeadm-kubelet-config
<random>/ and rewrite it from the cluster's kubelet-config ConfigMap (with `kubeletconfiguration` patches).

The kubelet keeps running with its old configuration until it is restarted (kubeadm does not restart it either).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import yaml

from pykubeadm import constants as c
from pykubeadm.phases.kubelet import kubelet_config_yaml, write_kubelet_config
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.phases.upgrade.staticpods import create_temp_dir
from pykubeadm.phases.upgrade.upload_config import kubelet_config_text
from pykubeadm.util.fs import ensure_dir
from pykubeadm.util.patches import PatchManager
from pykubeadm.workflow import Phase

__all__ = ["KUBELET_CONFIG_BACKUP_PREFIX", "PHASE"]

log = logging.getLogger(__name__)
KUBELET_CONFIG_BACKUP_PREFIX = "kubeadm-kubelet-config"


def _node_path(data: UpgradeData, path: Path) -> str:
    root = str(data.layout.root)
    return str(path)[len(root) :] if root != "/" and str(path).startswith(root) else str(path)


def _run(data: UpgradeData) -> None:
    text, _ = kubelet_config_text(data)
    cfg = yaml.safe_load(text) or {}

    def content() -> str:
        patches = PatchManager.load(data.patches_dir, out=data.out) if data.patches_dir else None
        return kubelet_config_yaml(cfg, patches, out=data.out)

    if data.dry_run:
        data.out(f'[dryrun] Would write file "{c.KUBELET_RUN_DIR}/{c.KUBELET_CONFIG_FILE}" with content:')
        data.out("\n".join("\t" + line for line in content().splitlines()))
        return
    layout = data.layout
    override = os.environ.get(c.DRYRUN_DIR_ENV["upgrade"])
    if override:
        backup_dir = Path(override)
        ensure_dir(backup_dir, c.PRIVATE_DIR_MODE)
    else:
        backup_dir = create_temp_dir(layout.tmp_dir, KUBELET_CONFIG_BACKUP_PREFIX)
    log.warning(
        "Using temporary directory %s for kubelet config. To override it set the environment variable %s",
        _node_path(data, backup_dir),
        c.DRYRUN_DIR_ENV["upgrade"],
    )
    if layout.kubelet_config.exists():
        backup = backup_dir / c.KUBELET_CONFIG_FILE
        data.out(f"[upgrade] Backing up kubelet config file to {_node_path(data, backup)}")
        shutil.copy2(layout.kubelet_config, backup)
    write_kubelet_config(layout, content(), data.out)
    data.out("[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!")


PHASE: Phase[UpgradeData] = Phase(
    name="kubelet-config",
    short="Upgrade the kubelet configuration for this node",
    long="Upgrade the kubelet configuration for this node by downloading it from the kubelet-config ConfigMap stored "
    "in the cluster",
    run=_run,
    inherit_flags=("config", "dry-run", "kubeconfig", "patches"),
)
