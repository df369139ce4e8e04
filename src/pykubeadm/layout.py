"""Every well-known path of a node, resolved under the node's root directory; the only module that builds paths.

kubeadm writes absolute paths (`/etc/kubernetes/pki/ca.crt`) into manifests, kubeconfigs and configs; those strings stay
as they are. Where *we* read or write the file on this machine, the path goes through `Layout.host()`, which places it
under `root` (default "/"). So `--root-dir=/tmp/n1` puts `/etc/kubernetes` at `/tmp/n1/etc/kubernetes`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pykubeadm import constants as c

__all__ = ["Layout", "default_root"]


def default_root() -> Path:
    """The root directory from $PYKUBEADM_ROOT_DIR, else "/"."""
    return Path(os.environ.get(c.ROOT_DIR_ENV) or "/")


@dataclass(frozen=True)
class Layout:
    """Paths of one node. `root` is the node's root dir; `cert_dir` is certificatesDir as configured (node path)."""

    root: Path = Path("/")
    cert_dir: str = c.DEFAULT_CERTIFICATES_DIR

    def host(self, node_path: str | os.PathLike[str]) -> Path:
        """Map an absolute node path (as written in configs) to the path on this machine."""
        p = PurePosixPath(os.fspath(node_path))
        if not p.is_absolute():
            return Path(p)
        return self.root.joinpath(*p.parts[1:]) if str(self.root) != "/" else Path(p)

    def with_cert_dir(self, cert_dir: str) -> Layout:
        return Layout(self.root, cert_dir)

    # --- /etc/kubernetes -----------------------------------------------------------------------------------------
    @property
    def kubernetes_dir(self) -> Path:
        return self.host(c.KUBERNETES_DIR)

    @property
    def manifests_dir(self) -> Path:
        return self.kubernetes_dir / c.MANIFESTS_SUBDIR

    @property
    def tmp_dir(self) -> Path:
        return self.kubernetes_dir / c.TEMP_SUBDIR

    def manifest(self, component: str) -> Path:
        """Static Pod manifest of a component (`kube-apiserver` → manifests/kube-apiserver.yaml)."""
        return self.manifests_dir / f"{component}.yaml"

    def kubeconfig(self, file_name: str) -> Path:
        """A kubeconfig file in /etc/kubernetes (`admin.conf`, …)."""
        return self.kubernetes_dir / file_name

    @property
    def admin_kubeconfig(self) -> Path:
        return self.kubeconfig(c.ADMIN_KUBECONFIG_FILE)

    @property
    def super_admin_kubeconfig(self) -> Path:
        return self.kubeconfig(c.SUPER_ADMIN_KUBECONFIG_FILE)

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.kubeconfig(c.KUBELET_KUBECONFIG_FILE)

    @property
    def bootstrap_kubelet_kubeconfig(self) -> Path:
        return self.kubeconfig(c.KUBELET_BOOTSTRAP_KUBECONFIG_FILE)

    # --- PKI -------------------------------------------------------------------------------------------------------
    @property
    def pki_dir(self) -> Path:
        """certificatesDir on this machine."""
        return self.host(self.cert_dir)

    def cert_path(self, base_name: str) -> Path:
        return self.pki_dir / f"{base_name}.crt"

    def key_path(self, base_name: str) -> Path:
        return self.pki_dir / f"{base_name}.key"

    def csr_path(self, base_name: str) -> Path:
        return self.pki_dir / f"{base_name}.csr"

    def node_cert_path(self, base_name: str) -> str:
        """The certificate path as written into manifests (node path, not mapped)."""
        return str(PurePosixPath(self.cert_dir) / f"{base_name}.crt")

    def node_key_path(self, base_name: str) -> str:
        return str(PurePosixPath(self.cert_dir) / f"{base_name}.key")

    @property
    def sa_key(self) -> Path:
        return self.pki_dir / c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME

    @property
    def sa_pub(self) -> Path:
        return self.pki_dir / c.SERVICE_ACCOUNT_PUBLIC_KEY_NAME

    # --- kubelet ---------------------------------------------------------------------------------------------------
    @property
    def kubelet_dir(self) -> Path:
        return self.host(c.KUBELET_RUN_DIR)

    @property
    def kubelet_config(self) -> Path:
        return self.kubelet_dir / c.KUBELET_CONFIG_FILE

    @property
    def kubelet_instance_config(self) -> Path:
        return self.kubelet_dir / c.KUBELET_INSTANCE_CONFIG_FILE

    @property
    def kubelet_env_file(self) -> Path:
        return self.kubelet_dir / c.KUBELET_ENV_FILE

    @property
    def kubelet_pki_dir(self) -> Path:
        return self.kubelet_dir / c.KUBELET_PKI_SUBDIR

    @property
    def kubelet_client_current(self) -> Path:
        return self.kubelet_pki_dir / c.KUBELET_CLIENT_CURRENT_FILE

    @property
    def node_kubelet_client_current(self) -> str:
        """kubelet-client-current.pem as written into kubelet.conf (node path)."""
        return f"{c.KUBELET_RUN_DIR}/{c.KUBELET_PKI_SUBDIR}/{c.KUBELET_CLIENT_CURRENT_FILE}"

    @property
    def kubelet_pods_dir(self) -> Path:
        """/var/lib/kubelet/pods: one directory per Pod UID (volumes, container state files), as the real kubelet."""
        return self.kubelet_dir / "pods"

    def pod_dir(self, uid: str) -> Path:
        return self.kubelet_pods_dir / uid

    @staticmethod
    def pod_volume_dir(pod_dir: Path, plugin: str, name: str) -> Path:
        """A Pod volume's directory, `<pod dir>/volumes/<plugin>/<name>` (plugin e.g. `kubernetes.io~configmap`)."""
        return pod_dir / "volumes" / plugin / name

    @property
    def native_cache_dir(self) -> Path:
        """Where the kubelet builds its native helpers (pause, pod-sandbox) when scripts/setup.sh has not."""
        return self.host(f"{c.PYKUBEADM_LIB_DIR}/native")

    @property
    def image_map_file(self) -> Path:
        """The node's image map (built-in mode): image reference or repository → program argv."""
        return self.host(f"{c.PYKUBEADM_ETC_DIR}/images.yaml")

    # --- etcd, logs, run state -------------------------------------------------------------------------------------
    def etcd_data_dir(self, data_dir: str = c.DEFAULT_ETCD_DATA_DIR) -> Path:
        return self.host(data_dir)

    @property
    def pod_log_dir(self) -> Path:
        return self.host(c.POD_LOG_DIR)

    @property
    def run_dir(self) -> Path:
        """Where pykubeadm keeps daemon state of this node (pid and log files of the built-in kubelet)."""
        return self.host(c.PYKUBEADM_RUN_DIR)

    @property
    def kubelet_pid_file(self) -> Path:
        return self.run_dir / "kubelet.pid"

    @property
    def kubelet_log_file(self) -> Path:
        return self.host(f"{c.PYKUBEADM_LOG_DIR}/kubelet.log")

    @property
    def state_db(self) -> Path:
        """The embedded SQLite datastore of the built-in apiserver (built-in mode)."""
        return self.host(f"{c.PYKUBEADM_LIB_DIR}/state.db")

    # --- containerd (the node's CRI runtime) -----------------------------------------------------------------------
    @property
    def containerd_config(self) -> Path:
        return self.host(c.CONTAINERD_CONFIG_FILE)

    @property
    def containerd_root(self) -> Path:
        return self.host(c.CONTAINERD_ROOT_DIR)

    @property
    def containerd_state(self) -> Path:
        return self.host(c.CONTAINERD_STATE_DIR)

    @property
    def containerd_socket(self) -> Path:
        """The node's containerd socket, as containerd and its clients name it. Under a node root whose path leaves no
        room for a unix socket address (`CONTAINERD_SOCKET_ADDRESS_MAX`), it is
        `/run/pykubeadm/cri/<digest of the root>/containerd.sock`, whose directory is a link to the node's
        `run/containerd` (`link_containerd_socket_dir`): the socket still lies in, and resolves into, the node root."""
        path = self.host(c.CONTAINERD_SOCKET_FILE)
        if len(f"{path}.ttrpc") <= c.CONTAINERD_SOCKET_ADDRESS_MAX:
            return path
        return self.containerd_socket_link / path.name

    @property
    def containerd_socket_link(self) -> Path:
        """The short link to the node's containerd socket directory (used when the node root's path is long)."""
        digest = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:16]
        return Path(c.CONTAINERD_SOCKET_LINK_DIR) / digest

    def link_containerd_socket_dir(self) -> None:
        """Make the node's containerd socket directory, and the short link to it when the socket is named through
        one (replacing a stale link of the same node root)."""
        real = self.host(PurePosixPath(c.CONTAINERD_SOCKET_FILE).parent)
        real.mkdir(parents=True, exist_ok=True)
        if self.containerd_socket.parent == real:
            return
        link = self.containerd_socket_link
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            if link.resolve() == real.resolve():
                return
            link.unlink()
        link.symlink_to(real.resolve(), target_is_directory=True)

    def unlink_containerd_socket_dir(self) -> None:
        """Remove the short link to the node's containerd socket directory, if this node has one."""
        link = self.containerd_socket_link
        if link.is_symlink():
            link.unlink()

    def owns(self, path: str | os.PathLike[str]) -> bool:
        """Whether a path on this machine is in this node's root, or leads into it (through a link)."""
        root = os.path.realpath(self.root).rstrip("/")
        return bool(root) and os.path.realpath(path).startswith(root + "/")

    @property
    def containerd_opt(self) -> Path:
        return self.host(c.CONTAINERD_OPT_DIR)

    @property
    def containerd_certs_dir(self) -> Path:
        return self.host(c.CONTAINERD_CERTS_DIR)

    @property
    def cni_conf_dir(self) -> Path:
        return self.host(c.CNI_CONF_DIR)
