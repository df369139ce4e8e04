"""join phases of a new control-plane instance: control-plane-prepare, etcd-join, control-plane-join, wait-control-plane.

They reuse init's phases through an InitData built from the JoinConfiguration and the cluster's ClusterConfiguration
(as kubeadm does with its initCfg), and are no-ops for worker joins.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.phases.join.cluster import bootstrap_client, cluster_configuration
from pykubeadm.workflow import Phase, Runner, all_phase

if TYPE_CHECKING:
    from lightkube.resources.core_v1 import Pod

    from pykubeadm.phases.init.data import InitData
    from pykubeadm.phases.join.data import JoinData

# These phases are no-ops for a worker join, so what they use is imported when they run for a control-plane join:
# init's phases (importing any module of pykubeadm.phases.init imports the whole init tree, with pki and manifests),
# the Kubernetes client (lightkube, httpx2), the config API and the certificates' decryption. A worker's join phase
# tree is declared without them.

__all__ = ["CONTROL_PLANE_JOIN", "CONTROL_PLANE_PREPARE", "ETCD_JOIN", "WAIT_CONTROL_PLANE", "as_init_data"]

log = logging.getLogger(__name__)


def as_init_data(data: JoinData) -> InitData:
    """init's run data for this control-plane join (built once)."""
    from pykubeadm.api import InitConfig, InitConfiguration, component_configs
    from pykubeadm.phases.init.data import InitData

    cached = data.state.get("init_data")
    if cached is not None:
        return cached
    cluster = cluster_configuration(data)
    if not cluster.control_plane_endpoint:
        raise KubeadmError(
            "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint "
            "address. Please ensure that: * the cluster has a stable controlPlaneEndpoint address; * the certificates "
            "that must be shared among control plane instances are provided."
        )
    cp = data.cfg.control_plane
    assert cp is not None
    init = InitConfiguration(
        node_registration=data.cfg.node_registration,
        local_api_endpoint=cp.local_api_endpoint,
        certificate_key=cp.certificate_key,
        patches=data.cfg.patches,
        timeouts=data.cfg.timeouts,
    )
    kubelet, proxy = component_configs(init, cluster)
    idata = InitData(
        cfg=InitConfig(init=init, cluster=cluster, kubelet=kubelet, kube_proxy=proxy),
        layout=data.layout.with_cert_dir(cluster.certificates_dir),
        real_layout=data.real_layout.with_cert_dir(cluster.certificates_dir),
        out=data.out,
        dry_run=data.dry_run,
        ignore_preflight_errors=data.ignore_preflight_errors,
        patches_dir=data.patches_dir,
    )
    data.state["init_data"] = idata
    return idata


def _cp_only(data: JoinData) -> bool:
    return data.control_plane


def _download_certs(data: JoinData) -> None:
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.phases.apply import retry_api_call
    from pykubeadm.phases.copycerts import decode_certificate_key, decrypt, shared_cert_files
    from pykubeadm.util.fs import write_file_atomic

    cp = data.cfg.control_plane
    if cp is None or not cp.certificate_key:
        data.out("[download-certs] Skipping phase. Please see --certificate-key")
        return
    idata = as_init_data(data)
    key = decode_certificate_key(cp.certificate_key)
    data.out(
        f'[download-certs] Downloading the certificates in Secret "{c.KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace'
    )
    client = bootstrap_client(data)
    try:
        secret = retry_api_call(
            lambda: client.get(Secret, c.KUBEADM_CERTS_SECRET, namespace=c.NAMESPACE_SYSTEM),
            "download the certificates",
        )
    except KubeadmError as err:
        if "not found" in str(err).lower():
            raise KubeadmError(
                f'Secret "{c.KUBEADM_CERTS_SECRET}" was not found in the "kube-system" Namespace. This Secret might '
                "have expired. Please, run `kubeadm init phase upload-certs --upload-certs` on a control plane to "
                "generate a new one"
            ) from err
        raise
    cluster = idata.cfg.cluster
    ext = cluster.etcd.external
    data.out(f'[download-certs] Saving the certificates to the folder: "{cluster.certificates_dir}"')
    for f in shared_cert_files((ext.ca_file, ext.cert_file, ext.key_file) if ext else None):
        blob = (secret.data or {}).get(f.key)
        if blob is None:
            continue
        content = decrypt(base64.b64decode(blob), key)
        node = f.path if f.path.startswith("/") else str(PurePosixPath(cluster.certificates_dir) / f.path)
        write_file_atomic(data.layout.host(node), content, c.PRIVATE_FILE_MODE if f.private else c.CERT_FILE_MODE)


def _init_phase(name: str) -> Phase[InitData]:
    """init's top-level phase `name` (imported on first use: the init phase tree)."""
    from pykubeadm.phases.init import init_phases

    return next(p for p in init_phases() if p.name == name)


def _run_init_phase(path: str) -> Callable[[JoinData], None]:
    """Run init's phase `path` (`certs`, `control-plane`, ...) with this join's init data; a worker join skips it."""

    def run(data: JoinData) -> None:
        if not data.control_plane:
            return
        Runner([_init_phase(path.split("/")[0])], lambda: as_init_data(data)).run_phase(path)

    return run


def _kubeconfigs(data: JoinData) -> None:
    if not data.control_plane:
        return
    idata = as_init_data(data)
    runner = Runner([_init_phase("kubeconfig")], lambda: idata)
    for name in ("admin", "controller-manager", "scheduler"):
        runner.run_phase(f"kubeconfig/{name}")


def _annotation(obj: Pod, key: str) -> str:
    return str(((obj.metadata.annotations if obj.metadata else None) or {}).get(key) or "")


def _etcd_endpoints(idata: InitData) -> list[str]:
    """kubeadm's getRawEtcdEndpointsFromPodAnnotation: the advertise-client-urls annotation of every etcd Pod in
    kube-system (mirror Pods of the stacked members), retried until each Pod carries one."""
    import httpx2
    from lightkube import ApiError
    from lightkube.resources.core_v1 import Pod

    from pykubeadm.manifests.pod import CONTROL_PLANE_TIER
    from pykubeadm.phases.init.cluster import admin_client

    client = admin_client(idata)
    deadline = time.monotonic() + c.KUBERNETES_API_CALL_TIMEOUT.total_seconds()
    last = ""
    while True:
        try:
            pods = list(
                client.list(
                    Pod,
                    namespace=c.NAMESPACE_SYSTEM,
                    labels={"component": c.ETCD, "tier": CONTROL_PLANE_TIER},
                )
            )
            urls = [u for p in pods if (u := _annotation(p, c.ANNOTATION_ETCD_ADVERTISE_CLIENT_URLS))]
            if urls and len(urls) == len(pods):
                return [u for joined in urls for u in joined.split(",") if u]
            last = f"found {len(pods)} etcd Pods and the endpoints {urls}"
        except (ApiError, httpx2.TransportError) as err:
            last = str(err)
        if time.monotonic() >= deadline:
            raise KubeadmError(f"could not retrieve the list of etcd endpoints: {last}")
        time.sleep(c.API_CALL_RETRY_INTERVAL.total_seconds())


def _etcd_join(data: JoinData) -> None:
    """kubeadm's CreateStackedEtcdStaticPodManifestFile: add this node as an etcd learner, write etcd.yaml with
    `--initial-cluster-state=existing`, then promote the learner and wait for the cluster."""
    if not data.control_plane:
        return
    idata = as_init_data(data)
    cluster = idata.cfg.cluster
    if cluster.etcd.external is not None or cluster.etcd.local is None:
        return
    from pykubeadm.manifests import create_local_etcd_file
    from pykubeadm.manifests.etcd import peer_url
    from pykubeadm.phases import etcdmember  # etcd3gw + requests: only a stacked control-plane join pays for them
    from pykubeadm.phases.init._common import cluster_inputs, patch_manager
    from pykubeadm.util.fs import ensure_dir

    name = idata.cfg.init.node_registration.name
    inputs = cluster_inputs(idata)
    peer = peer_url(inputs.advertise_address)
    if data.dry_run:
        data.out(f"[etcd] Would add etcd member: {peer}")
        members = [(name, peer)]
    else:
        endpoints = _etcd_endpoints(idata)
        log.info("[etcd] Adding etcd member as learner: %s (endpoints %s)", peer, ",".join(endpoints))
        members = etcdmember.add_learner(idata.layout, endpoints, name, peer)
        data.out("[etcd] Announced new etcd member joining to the existing etcd cluster")
        log.info("Updated etcd member list: %s", members)
    data.out(f'[etcd] Creating static Pod manifest for "{c.ETCD}"')
    ensure_dir(idata.layout.etcd_data_dir(cluster.etcd.local.data_dir), c.PRIVATE_DIR_MODE)
    create_local_etcd_file(idata.layout.manifests_dir, inputs, patch_manager(idata), initial_cluster=members)
    if data.dry_run:
        data.out("[etcd] Would wait for the new etcd member to join the cluster")
        return
    timeout = etcdmember.JOIN_TIMEOUT
    data.out(f"[etcd] Waiting for the new etcd member to join the cluster. This can take up to {timeout:g}s")
    etcdmember.wait_joined(idata.layout, endpoints, name, peer, timeout)


_CP_FLAGS = ("config", "control-plane", "certificate-key", "dry-run", "node-name", "apiserver-advertise-address")

CONTROL_PLANE_PREPARE: Phase[JoinData] = Phase(
    name="control-plane-prepare",
    short="Prepare the machine for serving a control plane",
    children=(
        all_phase("Prepare the machine for serving a control plane", _CP_FLAGS),
        Phase(
            "download-certs",
            "Download certificates shared among control-plane nodes from the kubeadm-certs Secret",
            run=_download_certs,
            run_if=_cp_only,
            inherit_flags=_CP_FLAGS,
        ),
        Phase(
            "certs",
            "Generate the certificates for the new control plane components",
            run=_run_init_phase("certs"),
            inherit_flags=_CP_FLAGS,
        ),
        Phase(
            "kubeconfig",
            "Generate the kubeconfig for the new control plane components",
            run=_kubeconfigs,
            inherit_flags=_CP_FLAGS,
        ),
        Phase(
            "control-plane",
            "Generate the manifests for the new control plane components",
            run=_run_init_phase("control-plane"),
            inherit_flags=_CP_FLAGS,
        ),
    ),
)

ETCD_JOIN: Phase[JoinData] = Phase(
    name="etcd-join", short="Join etcd for control plane nodes", run=_etcd_join, inherit_flags=_CP_FLAGS
)

CONTROL_PLANE_JOIN: Phase[JoinData] = Phase(
    name="control-plane-join",
    short="Join a machine as a control plane instance",
    children=(
        all_phase("Join a machine as a control plane instance", _CP_FLAGS),
        Phase(
            "mark-control-plane",
            "Mark a node as a control-plane",
            run=_run_init_phase("mark-control-plane"),
            inherit_flags=_CP_FLAGS,
        ),
    ),
)

WAIT_CONTROL_PLANE: Phase[JoinData] = Phase(
    name="wait-control-plane",
    short="Wait for the control plane to start",
    run=_run_init_phase("wait-control-plane"),
    inherit_flags=("config", "dry-run"),
)
