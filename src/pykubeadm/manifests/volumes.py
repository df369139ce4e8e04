"""hostPath volumes of the control-plane static Pods (kubeadm's phases/controlplane/volumes.go).

The apiserver and the controller-manager get the certificates dir, /etc/ssl/certs and the CA-trust directories that
exist on the node; the KCM and scheduler get their kubeconfig files (FileOrCreate) and the KCM the flexvolume dir
(read-write); external etcd certificate directories outside those get `etcd-certs-N` volumes; user extraVolumes come
last and replace defaults of the same name.
"""

from __future__ import annotations

import posixpath

from pykubeadm import constants as c
from pykubeadm.manifests.args import get_arg_value
from pykubeadm.manifests.inputs import CA_CERTS_EXTRA_DIRS, ClusterInputs, ExternalEtcdInputs
from pykubeadm.manifests.pod import HOST_PATH_DIRECTORY_OR_CREATE, HOST_PATH_FILE_OR_CREATE, Mount

__all__ = ["CA_CERTS_DIR", "control_plane_mounts", "etcd_cert_mounts"]

CA_CERTS_DIR = "/etc/ssl/certs"
K8S_CERTS_VOLUME = "k8s-certs"
CA_CERTS_VOLUME = "ca-certs"
KUBECONFIG_VOLUME = "kubeconfig"
FLEXVOLUME_VOLUME = "flexvolume-dir"


def _ro_dir(name: str, path: str) -> Mount:
    return Mount(name, path, path, True, HOST_PATH_DIRECTORY_OR_CREATE)


def etcd_cert_mounts(etcd: ExternalEtcdInputs, certificates_dir: str) -> list[Mount]:
    """Read-only `etcd-certs-N` mounts for the directories of the external etcd files not already mounted."""
    dirs: set[str] = set()
    for path in (etcd.ca_file, etcd.cert_file, etcd.key_file):
        d = posixpath.dirname(path) if path else "."
        d = d or "."
        covered = any(d.startswith(p) for p in CA_CERTS_EXTRA_DIRS)
        if d == "." or covered or d.startswith(CA_CERTS_DIR) or d.startswith(certificates_dir):
            continue
        already = False
        for existing in sorted(dirs):
            if existing.startswith(d):
                dirs.discard(existing)
            elif d.startswith(existing):
                already = True
        if not already:
            dirs.add(d)
    return [_ro_dir(f"etcd-certs-{i}", d) for i, d in enumerate(sorted(dirs))]


def control_plane_mounts(inputs: ClusterInputs) -> dict[str, list[Mount]]:
    """component name → its mounts (unsorted; `component_pod` sorts and de-duplicates by name, last wins)."""
    cert_dir = inputs.certificates_dir
    apiserver = [_ro_dir(K8S_CERTS_VOLUME, cert_dir), _ro_dir(CA_CERTS_VOLUME, CA_CERTS_DIR)]
    if inputs.external_etcd is not None:
        apiserver += etcd_cert_mounts(inputs.external_etcd, cert_dir)

    kcm_kubeconfig = f"{c.KUBERNETES_DIR}/{c.CONTROLLER_MANAGER_KUBECONFIG_FILE}"
    flex = get_arg_value(inputs.controller_manager.extra_args, "flex-volume-plugin-dir") or c.FLEXVOLUME_DIR
    kcm = [
        _ro_dir(K8S_CERTS_VOLUME, cert_dir),
        _ro_dir(CA_CERTS_VOLUME, CA_CERTS_DIR),
        Mount(KUBECONFIG_VOLUME, kcm_kubeconfig, kcm_kubeconfig, True, HOST_PATH_FILE_OR_CREATE),
        Mount(FLEXVOLUME_VOLUME, flex, flex, False, HOST_PATH_DIRECTORY_OR_CREATE),
    ]

    sched_kubeconfig = f"{c.KUBERNETES_DIR}/{c.SCHEDULER_KUBECONFIG_FILE}"
    scheduler = [Mount(KUBECONFIG_VOLUME, sched_kubeconfig, sched_kubeconfig, True, HOST_PATH_FILE_OR_CREATE)]

    for path in CA_CERTS_EXTRA_DIRS:
        if path in inputs.ca_cert_dirs_present:
            name = path.replace("/", "-")[1:]
            apiserver.append(_ro_dir(name, path))
            kcm.append(_ro_dir(name, path))

    apiserver += inputs.api_server.extra_volumes
    kcm += inputs.controller_manager.extra_volumes
    scheduler += inputs.scheduler.extra_volumes
    return {c.KUBE_APISERVER: apiserver, c.KUBE_CONTROLLER_MANAGER: kcm, c.KUBE_SCHEDULER: scheduler}
