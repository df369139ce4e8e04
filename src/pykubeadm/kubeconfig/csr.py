"""Kubeconfig files with a key but no certificate, plus `<file>.csr`, for an external CA (`certs generate-csr`;
kubeadm's CreateDefaultKubeConfigsAndCSRFiles).

Called by cli/certs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from pykubeadm import constants as c
from pykubeadm.errors import KubeconfigError
from pykubeadm.kubeconfig.config import context_name, write_kubeconfig
from pykubeadm.kubeconfig.specs import KUBECONFIG_LIST, KubeconfigParams, client_name, server_for
from pykubeadm.pki.certs import CLIENT_AUTH, CertConfig, new_csr
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key
from pykubeadm.util.fs import write_file_atomic

__all__ = ["create_kubeconfigs_and_csrs"]


def create_kubeconfigs_and_csrs(
    params: KubeconfigParams, kubeconfig_dir: Path, out: Callable[[str], None], display_dir: str = c.KUBERNETES_DIR
) -> None:
    """For each kubeconfig: `<file>` (client key embedded, no cert, no CA) and `<file>.csr`; refuses to overwrite."""
    out(f"generating keys and CSRs in {display_dir}")
    for spec in KUBECONFIG_LIST:
        path = kubeconfig_dir / spec.file_name
        if path.exists():
            raise KubeconfigError(f"{spec.file_name}: kubeconf file already exists")
        csr_path = kubeconfig_dir / f"{spec.file_name}.csr"
        if csr_path.exists():
            raise KubeconfigError(f"{spec.file_name}: csr file already exists")
        client = client_name(spec, params.node_name)
        key = generate_private_key(params.encryption_algorithm)
        csr = new_csr(CertConfig(common_name=client, organization=spec.organizations, usages=(CLIENT_AUTH,)), key)
        import base64

        ctx = context_name(client, params.cluster_name)
        cfg = {
            "apiVersion": "v1",
            "clusters": [{"cluster": {"server": server_for(spec, params)}, "name": params.cluster_name}],
            "contexts": [{"context": {"cluster": params.cluster_name, "user": client}, "name": ctx}],
            "current-context": ctx,
            "kind": "Config",
            "preferences": {},
            "users": [
                {"name": client, "user": {"client-key-data": base64.b64encode(encode_private_key_pem(key)).decode()}}
            ],
        }
        write_kubeconfig(path, cfg)
        write_file_atomic(
            csr_path, csr.public_bytes(serialization.Encoding.PEM), c.PRIVATE_FILE_MODE, c.PRIVATE_DIR_MODE
        )
        out(f"  {spec.file_name}")
