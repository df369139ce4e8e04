"""init phase `kubeconfig`: one sub-phase per row of kubeconfig.specs (plus `all`), each reusing or writing its file.

Declares the phase tree and adapts the config objects to kubeconfig's explicit arguments (`kubeconfig_params`).
Output matches kubeadm's `[kubeconfig]` lines, showing node paths (the dry-run folder in dry-run).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeconfigError
from pykubeadm.kubeconfig.create import create_kubeconfig_file, validate_kubeconfigs_for_external_ca
from pykubeadm.kubeconfig.specs import KUBECONFIG_LIST, KubeconfigParams, KubeconfigSpec
from pykubeadm.phases.init._common import shown
from pykubeadm.phases.init.certs import (
    MACRO_LONG,
    detect_external_ca,
    encryption_algorithm,
    pki_dir,
    pooled_key,
    start_key_pool,
    start_time,
)
from pykubeadm.phases.init.data import InitData
from pykubeadm.workflow import Phase, all_phase

if TYPE_CHECKING:
    from pykubeadm.api.v1beta4 import ClusterConfiguration, InitConfiguration

__all__ = ["PHASE", "kubeconfig_dir", "kubeconfig_params"]


def kubeconfig_params(init: InitConfiguration, cluster: ClusterConfiguration) -> KubeconfigParams:
    """The values kubeconfig files depend on, from a defaulted InitConfiguration + ClusterConfiguration."""
    from pykubeadm.api.features import enabled

    return KubeconfigParams(
        node_name=init.node_registration.name,
        advertise_address=init.local_api_endpoint.advertise_address,
        bind_port=init.local_api_endpoint.bind_port or c.KUBE_APISERVER_PORT,
        control_plane_endpoint=cluster.control_plane_endpoint,
        cluster_name=cluster.cluster_name or c.DEFAULT_CLUSTER_NAME,
        encryption_algorithm=encryption_algorithm(cluster),
        certificate_validity_period=cluster.certificate_validity_period or c.CERTIFICATE_VALIDITY_PERIOD,
        kubelet_local_mode=enabled(cluster.feature_gates, "ControlPlaneKubeletLocalMode"),
    )


def _node_dir(data: InitData) -> str:
    """--kubeconfig-dir as a node path (/etc/kubernetes unless set; join's data has no such flag)."""
    return str(getattr(data, "kubeconfig_dir", None) or c.KUBERNETES_DIR)


def kubeconfig_dir(data: InitData) -> Path:
    """The kubeconfig folder where this run writes (--kubeconfig-dir; the dry-run mirror in dry-run)."""
    return data.layout.host(_node_dir(data))


def _shown_dir(data: InitData) -> str:
    return shown(data, _node_dir(data))


def _run_kubeconfig(data: InitData) -> None:
    data.out(f'[kubeconfig] Using kubeconfig folder "{_shown_dir(data)}"')
    missing = sum(1 for s in KUBECONFIG_LIST if not (kubeconfig_dir(data) / s.file_name).exists())
    start_key_pool(data, encryption_algorithm(data.cfg.cluster), 0 if detect_external_ca(data) else missing)


def _run_file(spec: KubeconfigSpec) -> Callable[[InitData], None]:
    def run(data: InitData) -> None:
        params = kubeconfig_params(data.cfg.init, data.cfg.cluster)
        if detect_external_ca(data):
            data.out(f"[kubeconfig] External CA mode: Using user provided {spec.file_name}")
            real_dir = data.real_layout.host(_node_dir(data))
            if "external_ca_kubeconfigs_valid" not in data.state:
                real_pki = data.real_layout.with_cert_dir(data.cfg.cluster.certificates_dir).pki_dir
                validate_kubeconfigs_for_external_ca(real_dir, real_pki, params, _shown_dir(data))
                data.state["external_ca_kubeconfigs_valid"] = True
            if data.dry_run:
                target = kubeconfig_dir(data) / spec.file_name
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    shutil.copyfile(real_dir / spec.file_name, target)
                except OSError as err:
                    raise KubeconfigError(
                        f"could not copy {spec.file_name} to dry run directory {target.parent}: {err}"
                    ) from err
            return
        key = pooled_key(data, kubeconfig_dir(data) / spec.file_name, params.encryption_algorithm)
        create_kubeconfig_file(
            spec, params, kubeconfig_dir(data), pki_dir(data), data.out, _shown_dir(data), start_time(data), key=key
        )

    return run


_FLAGS = (
    "apiserver-advertise-address",
    "control-plane-endpoint",
    "apiserver-bind-port",
    "cert-dir",
    "config",
    "kubeconfig-dir",
    "kubernetes-version",
    "dry-run",
)


def _flags(name: str) -> tuple[str, ...]:
    return _FLAGS + (("node-name",) if name in ("all", "kubelet") else ())


PHASE: Phase[InitData] = Phase(
    name="kubeconfig",
    short="Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
    long=MACRO_LONG,
    run=_run_kubeconfig,
    children=(
        all_phase("Generate all kubeconfig files", _flags("all")),
        *(
            Phase(name=s.name, short=s.short, long=s.long, run=_run_file(s), inherit_flags=_flags(s.name))
            for s in KUBECONFIG_LIST
        ),
    ),
)
