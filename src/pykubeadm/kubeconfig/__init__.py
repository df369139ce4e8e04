"""Kubeconfig files: documents shaped and serialized like client-go's (config), the per-file table and API endpoint
resolution (specs), create-or-reuse for the init phase, external-CA checks and `kubeconfig user` (create), and
key+CSR kubeconfigs for `certs generate-csr` (csr).
"""

from pykubeadm.kubeconfig.config import (
    Kubeconfig,
    client_cert_and_key_pem,
    create_basic,
    create_with_cert_files,
    create_with_certs,
    create_with_token,
    current_cluster,
    current_user,
    dump_kubeconfig,
    load_kubeconfig,
    parse_kubeconfig,
    write_kubeconfig,
)
from pykubeadm.kubeconfig.create import (
    build_client_cert_kubeconfig,
    create_kubeconfig_file,
    user_kubeconfig,
    validate_kubeconfigs_for_external_ca,
)
from pykubeadm.kubeconfig.specs import (
    KUBECONFIG_LIST,
    KubeconfigParams,
    KubeconfigSpec,
    control_plane_endpoint_url,
    local_api_endpoint_url,
    server_for,
)

__all__ = [
    "KUBECONFIG_LIST",
    "Kubeconfig",
    "KubeconfigParams",
    "KubeconfigSpec",
    "build_client_cert_kubeconfig",
    "client_cert_and_key_pem",
    "control_plane_endpoint_url",
    "create_basic",
    "create_kubeconfig_file",
    "create_with_cert_files",
    "create_with_certs",
    "create_with_token",
    "current_cluster",
    "current_user",
    "dump_kubeconfig",
    "load_kubeconfig",
    "local_api_endpoint_url",
    "parse_kubeconfig",
    "server_for",
    "user_kubeconfig",
    "validate_kubeconfigs_for_external_ca",
    "write_kubeconfig",
]
