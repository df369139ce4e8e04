"""Well-known names of kubeadm v1.33: paths, file names, ports, users, groups, labels, timeouts (kubeadm's constants.go).

Everything here is a plain value; nothing does I/O. Paths are *container/host absolute* paths as kubeadm writes them
into manifests and configs; `layout.py` maps them under a node's root directory.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

# --- versions -------------------------------------------------------------------------------------------------------

#: The Kubernetes release this kubeadm mirrors; the default control-plane version (the "stable-1" fallback).
KUBERNETES_VERSION: Final = "v1.33.0"
#: kubeadm's own git version as printed by `pykubeadm version`.
KUBEADM_VERSION: Final = "v1.33.0"
#: Lowest control-plane version this kubeadm deploys (current minor − 1).
MINIMUM_CONTROL_PLANE_VERSION: Final = "v1.32.0"
#: Lowest kubelet version supported (current minor − 3).
MINIMUM_KUBELET_VERSION: Final = "v1.30.0"
#: etcd image tag kubeadm 1.33 deploys.
DEFAULT_ETCD_VERSION: Final = "3.5.21-0"
#: etcd version per control-plane minor (SupportedEtcdVersion).
SUPPORTED_ETCD_VERSION: Final[dict[int, str]] = {31: "3.5.15-0", 32: "3.5.16-0", 33: "3.5.21-0", 34: "3.6.4-0"}
#: CoreDNS image tag.
COREDNS_VERSION: Final = "v1.12.0"
#: pause image tag.
PAUSE_VERSION: Final = "3.10"
#: Default kubernetesVersion label.
DEFAULT_KUBERNETES_VERSION_LABEL: Final = "stable-1"

# --- directories ----------------------------------------------------------------------------------------------------

#: kubeadm's configuration directory.
KUBERNETES_DIR: Final = "/etc/kubernetes"
#: Static Pod manifests sub-directory of KUBERNETES_DIR.
MANIFESTS_SUBDIR: Final = "manifests"
#: Temporary/backup sub-directory of KUBERNETES_DIR (mode 0700).
TEMP_SUBDIR: Final = "tmp"
#: Default certificatesDir.
DEFAULT_CERTIFICATES_DIR: Final = "/etc/kubernetes/pki"
#: etcd certificates sub-directory of certificatesDir.
ETCD_CERTS_SUBDIR: Final = "etcd"
#: Default local etcd data directory.
DEFAULT_ETCD_DATA_DIR: Final = "/var/lib/etcd"
#: The kubelet's run directory.
KUBELET_RUN_DIR: Final = "/var/lib/kubelet"
#: The kubelet's configuration file name in KUBELET_RUN_DIR.
KUBELET_CONFIG_FILE: Final = "config.yaml"
#: The kubelet's instance configuration file name in KUBELET_RUN_DIR.
KUBELET_INSTANCE_CONFIG_FILE: Final = "instance-config.yaml"
#: The kubelet environment file name in KUBELET_RUN_DIR.
KUBELET_ENV_FILE: Final = "kubeadm-flags.env"
#: The variable kubeadm writes into the kubelet environment file.
KUBELET_ENV_VARIABLE: Final = "KUBELET_KUBEADM_ARGS"
#: The kubelet's certificate directory (relative to KUBELET_RUN_DIR).
KUBELET_PKI_SUBDIR: Final = "pki"
#: The rotated kubelet client certificate+key file name in the kubelet's cert dir.
KUBELET_CLIENT_CURRENT_FILE: Final = "kubelet-client-current.pem"
#: kube-proxy's config mount inside its Pod.
KUBE_PROXY_CONFIG_MOUNT: Final = "/var/lib/kube-proxy"
#: The flexvolume directory mounted into kube-controller-manager.
FLEXVOLUME_DIR: Final = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
#: Pod log directory of the kubelet.
POD_LOG_DIR: Final = "/var/log/pods"
#: Built-in mode's own state (node paths): SQLite datastore, daemon pid files, daemon logs (reset removes them).
PYKUBEADM_LIB_DIR: Final = "/var/lib/pykubeadm"
PYKUBEADM_RUN_DIR: Final = "/var/run/pykubeadm"
PYKUBEADM_LOG_DIR: Final = "/var/log/pykubeadm"
#: pykubeadm's node configuration directory (built-in mode: the image map of the kubelet).
PYKUBEADM_ETC_DIR: Final = "/etc/pykubeadm"
#: Environment variables overriding dry-run directories.
DRYRUN_DIR_ENV: Final[dict[str, str]] = {
    "init": "KUBEADM_INIT_DRYRUN_DIR",
    "join": "KUBEADM_JOIN_DRYRUN_DIR",
    "upgrade": "KUBEADM_UPGRADE_DRYRUN_DIR",
}
#: Environment variable for the node root directory (pykubeadm's --root-dir).
ROOT_DIR_ENV: Final = "PYKUBEADM_ROOT_DIR"
#: Set by the built-in kubelet for every container: the Pod's IP (a lab node's 127.0.10.x); servers of Pods that share
#: the node's network bind it where the real component binds all addresses (the CoreDNS image's `.:53`).
POD_IP_ENV: Final = "PYKUBEADM_POD_IP"

# --- certificate and key base names (relative to certificatesDir) ---------------------------------------------------

CA_CERT_AND_KEY_BASE_NAME: Final = "ca"
APISERVER_CERT_AND_KEY_BASE_NAME: Final = "apiserver"
APISERVER_KUBELET_CLIENT_CERT_AND_KEY_BASE_NAME: Final = "apiserver-kubelet-client"
FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME: Final = "front-proxy-ca"
FRONT_PROXY_CLIENT_CERT_AND_KEY_BASE_NAME: Final = "front-proxy-client"
ETCD_CA_CERT_AND_KEY_BASE_NAME: Final = "etcd/ca"
ETCD_SERVER_CERT_AND_KEY_BASE_NAME: Final = "etcd/server"
ETCD_PEER_CERT_AND_KEY_BASE_NAME: Final = "etcd/peer"
ETCD_HEALTHCHECK_CLIENT_CERT_AND_KEY_BASE_NAME: Final = "etcd/healthcheck-client"
APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME: Final = "apiserver-etcd-client"
SERVICE_ACCOUNT_KEY_BASE_NAME: Final = "sa"
SERVICE_ACCOUNT_PRIVATE_KEY_NAME: Final = "sa.key"
SERVICE_ACCOUNT_PUBLIC_KEY_NAME: Final = "sa.pub"
#: Where a Pod's service-account credentials (token, ca.crt, namespace) are mounted (client-go's in-cluster config).
SERVICE_ACCOUNT_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"

# --- certificate subjects -------------------------------------------------------------------------------------------

APISERVER_CERT_COMMON_NAME: Final = "kube-apiserver"
APISERVER_KUBELET_CLIENT_CERT_COMMON_NAME: Final = "kube-apiserver-kubelet-client"
FRONT_PROXY_CLIENT_CERT_COMMON_NAME: Final = "front-proxy-client"
ETCD_HEALTHCHECK_CLIENT_CERT_COMMON_NAME: Final = "kube-etcd-healthcheck-client"
APISERVER_ETCD_CLIENT_CERT_COMMON_NAME: Final = "kube-apiserver-etcd-client"

# --- kubeconfig file names (in KUBERNETES_DIR) ----------------------------------------------------------------------

ADMIN_KUBECONFIG_FILE: Final = "admin.conf"
SUPER_ADMIN_KUBECONFIG_FILE: Final = "super-admin.conf"
KUBELET_KUBECONFIG_FILE: Final = "kubelet.conf"
KUBELET_BOOTSTRAP_KUBECONFIG_FILE: Final = "bootstrap-kubelet.conf"
CONTROLLER_MANAGER_KUBECONFIG_FILE: Final = "controller-manager.conf"
SCHEDULER_KUBECONFIG_FILE: Final = "scheduler.conf"

# --- file modes -----------------------------------------------------------------------------------------------------

#: Certificates.
CERT_FILE_MODE: Final = 0o644
#: Private keys, sa.pub, CSRs, kubeconfigs, static Pod manifests.
PRIVATE_FILE_MODE: Final = 0o600
#: kubelet config.yaml and kubeadm-flags.env, config migrate output.
PUBLIC_FILE_MODE: Final = 0o644
#: Ordinary directories (certificate dirs).
DIR_MODE: Final = 0o755
#: Private directories (manifests, tmp, kubelet run dir, CSR dirs).
PRIVATE_DIR_MODE: Final = 0o700

# --- ports ----------------------------------------------------------------------------------------------------------

KUBE_APISERVER_PORT: Final = 6443
ETCD_LISTEN_CLIENT_PORT: Final = 2379
ETCD_LISTEN_PEER_PORT: Final = 2380
ETCD_METRICS_PORT: Final = 2381
KUBELET_PORT: Final = 10250
KUBELET_HEALTHZ_PORT: Final = 10248
KUBE_CONTROLLER_MANAGER_PORT: Final = 10257
KUBE_SCHEDULER_PORT: Final = 10259

# --- validity and crypto --------------------------------------------------------------------------------------------

#: Default leaf certificate validity (certificateValidityPeriod).
CERTIFICATE_VALIDITY_PERIOD: Final = timedelta(hours=8760)
#: Default CA certificate validity (caCertificateValidityPeriod).
CA_CERTIFICATE_VALIDITY_PERIOD: Final = timedelta(hours=87600)
#: NotBefore backdate of generated certificates.
CERTIFICATE_BACKDATE: Final = timedelta(minutes=5)
#: Default encryptionAlgorithm.
DEFAULT_ENCRYPTION_ALGORITHM: Final = "RSA-2048"
#: Allowed encryptionAlgorithm values (ECDSA-P384 is accepted as kubeadm 1.34 does).
ENCRYPTION_ALGORITHMS: Final = ("RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384")
#: Size in bytes of the upload-certs AES key.
CERTIFICATE_KEY_SIZE: Final = 32
#: Default bootstrap token TTL.
DEFAULT_TOKEN_DURATION: Final = timedelta(hours=24)
#: TTL of the token owning the kubeadm-certs Secret.
DEFAULT_CERT_TOKEN_DURATION: Final = timedelta(hours=2)

# --- timeouts -------------------------------------------------------------------------------------------------------

KUBERNETES_API_CALL_TIMEOUT: Final = timedelta(minutes=1)
API_CALL_RETRY_INTERVAL: Final = timedelta(milliseconds=500)
DISCOVERY_TIMEOUT: Final = timedelta(minutes=5)
DISCOVERY_RETRY_INTERVAL: Final = timedelta(seconds=5)
TLS_BOOTSTRAP_TIMEOUT: Final = timedelta(minutes=5)
TLS_BOOTSTRAP_RETRY_INTERVAL: Final = timedelta(seconds=1)
ETCD_API_CALL_TIMEOUT: Final = timedelta(minutes=2)
ETCD_API_CALL_RETRY_INTERVAL: Final = timedelta(milliseconds=500)
CONTROL_PLANE_COMPONENT_HEALTH_CHECK_TIMEOUT: Final = timedelta(minutes=4)
KUBELET_HEALTH_CHECK_TIMEOUT: Final = timedelta(minutes=4)
UPGRADE_MANIFESTS_TIMEOUT: Final = timedelta(minutes=5)

#: How long a component's HTTP servers wait for open requests (a `kubectl logs -f` or exec stream, a watch) when the
#: component stops, before closing them (aiohttp's default is 60 s).
SERVER_SHUTDOWN_TIMEOUT_SECONDS: Final = 5.0

# --- networking -----------------------------------------------------------------------------------------------------

DEFAULT_SERVICE_SUBNET: Final = "10.96.0.0/12"
DEFAULT_DNS_DOMAIN: Final = "cluster.local"
MINIMUM_ADDRESSES_IN_SERVICE_SUBNET: Final = 10
MAXIMUM_BITS_FOR_SERVICE_SUBNET: Final = 20
MINIMUM_ADDRESSES_IN_POD_SUBNET: Final = 14
POD_SUBNET_NODE_MASK_MAX_DIFF: Final = 16
DEFAULT_NODE_CIDR_MASK_SIZE_V4: Final = 24
DEFAULT_NODE_CIDR_MASK_SIZE_V6: Final = 64

# --- identities -----------------------------------------------------------------------------------------------------

DEFAULT_CLUSTER_NAME: Final = "kubernetes"
CA_COMMON_NAME: Final = "kubernetes"
FRONT_PROXY_CA_COMMON_NAME: Final = "front-proxy-ca"
ETCD_CA_COMMON_NAME: Final = "etcd-ca"
ADMIN_USER: Final = "kubernetes-admin"
CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING: Final = "kubeadm:cluster-admins"
SUPER_ADMIN_USER: Final = "kubernetes-super-admin"
SYSTEM_PRIVILEGED_GROUP: Final = "system:masters"
CONTROLLER_MANAGER_USER: Final = "system:kube-controller-manager"
SCHEDULER_USER: Final = "system:kube-scheduler"
NODES_USER_PREFIX: Final = "system:node:"
NODES_GROUP: Final = "system:nodes"
NODE_BOOTSTRAP_TOKEN_AUTH_GROUP: Final = "system:bootstrappers:kubeadm:default-node-token"
BOOTSTRAP_USER_PREFIX: Final = "system:bootstrap:"
BOOTSTRAPPERS_GROUP: Final = "system:bootstrappers"
TLS_BOOTSTRAP_USER: Final = "tls-bootstrap-token-user"
NODE_BOOTSTRAPPER_CLUSTER_ROLE: Final = "system:node-bootstrapper"
NODE_AUTO_APPROVE_CLUSTER_ROLE: Final = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
NODE_SELF_CSR_AUTO_APPROVE_CLUSTER_ROLE: Final = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
NODE_PROXIER_CLUSTER_ROLE: Final = "system:node-proxier"
NODE_KUBELET_BOOTSTRAP: Final = "kubeadm:kubelet-bootstrap"
NODE_AUTO_APPROVE_BOOTSTRAP_CLUSTER_ROLE_BINDING: Final = "kubeadm:node-autoapprove-bootstrap"
NODE_AUTO_APPROVE_CERTIFICATE_ROTATION_CLUSTER_ROLE_BINDING: Final = "kubeadm:node-autoapprove-certificate-rotation"
GET_NODES_CLUSTER_ROLE_NAME: Final = "kubeadm:get-nodes"
KUBE_PROXY_CLUSTER_ROLE_BINDING_NAME: Final = "kubeadm:node-proxier"
KUBELET_CONFIG_ROLE_NAME: Final = "kubeadm:kubelet-config"
NODES_KUBEADM_CONFIG_CLUSTER_ROLE_NAME: Final = "kubeadm:nodes-kubeadm-config"
KUBEADM_CERTS_CLUSTER_ROLE_NAME: Final = "kubeadm:kubeadm-certs"
BOOTSTRAP_SIGNER_CLUSTER_ROLE_NAME: Final = "kubeadm:bootstrap-signer-clusterinfo"
ANONYMOUS_USER: Final = "system:anonymous"
UNAUTHENTICATED_GROUP: Final = "system:unauthenticated"
AUTHENTICATED_GROUP: Final = "system:authenticated"

# --- namespaces, ConfigMaps, Secrets --------------------------------------------------------------------------------

NAMESPACE_SYSTEM: Final = "kube-system"
NAMESPACE_PUBLIC: Final = "kube-public"
NAMESPACE_NODE_LEASE: Final = "kube-node-lease"
NAMESPACE_DEFAULT: Final = "default"
KUBEADM_CONFIG_CONFIGMAP: Final = "kubeadm-config"
CLUSTER_CONFIGURATION_CONFIGMAP_KEY: Final = "ClusterConfiguration"
KUBELET_BASE_CONFIGMAP: Final = "kubelet-config"
KUBELET_BASE_CONFIGMAP_KEY: Final = "kubelet"
KUBE_PROXY_CONFIGMAP: Final = "kube-proxy"
KUBE_PROXY_CONFIGMAP_KEY: Final = "config.conf"
KUBE_PROXY_KUBECONFIG_KEY: Final = "kubeconfig.conf"
CLUSTER_INFO_CONFIGMAP: Final = "cluster-info"
CLUSTER_INFO_KUBECONFIG_KEY: Final = "kubeconfig"
JWS_SIGNATURE_KEY_PREFIX: Final = "jws-kubeconfig-"
KUBEADM_CERTS_SECRET: Final = "kubeadm-certs"
COREDNS_CONFIGMAP: Final = "coredns"
KUBE_DNS_SERVICE: Final = "kube-dns"
#: Where kube-apiserver publishes its client CAs and request-header settings for delegated authentication.
EXTENSION_APISERVER_AUTHENTICATION_CONFIGMAP: Final = "extension-apiserver-authentication"

# --- labels, annotations, taints ------------------------------------------------------------------------------------

LABEL_NODE_ROLE_CONTROL_PLANE: Final = "node-role.kubernetes.io/control-plane"
LABEL_EXCLUDE_FROM_EXTERNAL_LB: Final = "node.kubernetes.io/exclude-from-external-load-balancers"
TAINT_CONTROL_PLANE_KEY: Final = "node-role.kubernetes.io/control-plane"
ANNOTATION_CRI_SOCKET: Final = "kubeadm.alpha.kubernetes.io/cri-socket"
ANNOTATION_KUBE_APISERVER_ADVERTISE_ADDRESS_ENDPOINT: Final = (
    "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"
)
ANNOTATION_ETCD_ADVERTISE_CLIENT_URLS: Final = "kubeadm.kubernetes.io/etcd.advertise-client-urls"
ANNOTATION_COMPONENT_CONFIG_HASH: Final = "kubeadm.kubernetes.io/component-config.hash"
ANNOTATION_CONFIG_HASH: Final = "kubernetes.io/config.hash"

# --- components and images ------------------------------------------------------------------------------------------

KUBE_APISERVER: Final = "kube-apiserver"
KUBE_CONTROLLER_MANAGER: Final = "kube-controller-manager"
KUBE_SCHEDULER: Final = "kube-scheduler"
KUBE_PROXY: Final = "kube-proxy"
ETCD: Final = "etcd"
COREDNS: Final = "coredns"
#: The lab's network addon (kind's kindnetd image name; the built-in program `pykubeadm.kindnet`).
KINDNETD: Final = "kindnetd"
#: the local-path provisioner the lab deploys (image docker.io/rancher/local-path-provisioner)
LOCAL_PATH_PROVISIONER: Final = "local-path-provisioner"
#: The metrics-server addon (registry.k8s.io/metrics-server/metrics-server), its Deployment and ServiceAccount.
METRICS_SERVER: Final = "metrics-server"
METRICS_SERVER_VERSION: Final = "v0.7.2"
PAUSE: Final = "pause"
CONTROL_PLANE_COMPONENTS: Final = (KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER)
DEFAULT_IMAGE_REPOSITORY: Final = "registry.k8s.io"
CI_IMAGE_REPOSITORY: Final = "gcr.io/k8s-staging-ci-images"

# --- CRI ------------------------------------------------------------------------------------------------------------

DEFAULT_CRI_SOCKET: Final = "unix:///var/run/containerd/containerd.sock"
KNOWN_CRI_SOCKETS: Final = (
    "unix:///var/run/containerd/containerd.sock",
    "unix:///var/run/crio/crio.sock",
    "unix:///var/run/cri-dockerd.sock",
)

# --- containerd: a node's own CRI runtime (node paths, placed under the node root by layout.py) --------------------

#: containerd's config file (config version 2).
CONTAINERD_CONFIG_FILE: Final = "/etc/containerd/config.toml"
#: containerd's persistent root (content store, snapshots, metadata).
CONTAINERD_ROOT_DIR: Final = "/var/lib/containerd"
#: containerd's state dir (runtime state, sandbox network namespaces); its gRPC socket lives in it.
CONTAINERD_STATE_DIR: Final = "/run/containerd"
CONTAINERD_SOCKET_FILE: Final = "/run/containerd/containerd.sock"
#: containerd refuses a socket address longer than this (its `.ttrpc` one included): under a node root whose path
#: leaves no room, the node's socket is reached through a short link in CONTAINERD_SOCKET_LINK_DIR.
CONTAINERD_SOCKET_ADDRESS_MAX: Final = 104
#: On the host: `<digest of a node root>` → that node's `run/containerd` (see `Layout.containerd_socket`).
CONTAINERD_SOCKET_LINK_DIR: Final = "/run/pykubeadm/cri"
#: The opt plugin's directory (binaries and libraries containerd may install).
CONTAINERD_OPT_DIR: Final = "/opt/containerd"
#: Per-registry `hosts.toml` files (registry.config_path).
CONTAINERD_CERTS_DIR: Final = "/etc/containerd/certs.d"
#: The containerd namespace the CRI plugin keeps Kubernetes' images and containers in.
CONTAINERD_K8S_NAMESPACE: Final = "k8s.io"
#: The CNI network configs the runtime reads (cni.conf_dir).
CNI_CONF_DIR: Final = "/etc/cni/net.d"
#: Where Debian's containernetworking-plugins install the CNI plugins (a host path, never under a node root).
CNI_BIN_DIR: Final = "/usr/lib/cni"

# --- kubeadm config API ---------------------------------------------------------------------------------------------

KUBEADM_GROUP: Final = "kubeadm.k8s.io"
KUBEADM_API_VERSION: Final = "kubeadm.k8s.io/v1beta4"
KUBEADM_OLD_API_VERSION: Final = "kubeadm.k8s.io/v1beta3"
KUBELET_CONFIG_API_VERSION: Final = "kubelet.config.k8s.io/v1beta1"
KUBE_PROXY_CONFIG_API_VERSION: Final = "kubeproxy.config.k8s.io/v1alpha1"

#: CNI: where the plugins are looked for (Debian's containernetworking-plugins, then the upstream location).
DEFAULT_CNI_BIN_DIR: Final = "/usr/lib/cni:/opt/cni/bin"
#: CNI: libcni's result cache directory (a node path).
DEFAULT_CNI_CACHE_DIR: Final = "/var/lib/cni"
#: CNI: the configuration directory kubelets and runtimes read (a node path).
DEFAULT_CNI_CONF_DIR: Final = "/etc/cni/net.d"
# --- storage: the annotations and finalizers of kube's persistent-volume machinery --------------------------------
#: on a claim: the binder finished binding it (pv_controller's annBindCompleted)
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
#: on a claim or volume: the binder (not a user) bound it (annBoundByController)
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
#: on a volume: which provisioner made it (annDynamicallyProvisioned)
ANN_PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
#: on a claim: the provisioner expected to make its volume, and its pre-1.23 beta spelling
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
#: on a claim: the Node the scheduler chose for its first consumer (WaitForFirstConsumer)
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
#: on a StorageClass: the class claims without one get (and its beta spelling)
ANN_DEFAULT_STORAGE_CLASS: Final = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_STORAGE_CLASS: Final = "storageclass.beta.kubernetes.io/is-default-class"
#: finalizers of the pvc-protection and pv-protection controllers
PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"
#: a StorageClass provisioner that provisions nothing (statically made local volumes)
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
