"""init phase `upload-certs`: seal the shared control-plane certificates into kube-system/kubeadm-certs (§7.7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.phases.init.cluster import admin_client, apply
from pykubeadm.workflow import Phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

__all__ = ["PHASE"]


def _resolver(data: InitData) -> Callable[[str], Path]:
    def resolve(path: str) -> Path:
        node = path if path.startswith("/") else str(PurePosixPath(data.cfg.cluster.certificates_dir) / path)
        return data.layout.host(node)

    return resolve


def run(data: InitData) -> None:
    # The Kubernetes client, the token and the sealing (AES-GCM) helpers only for a run that uses them.
    from lightkube.resources.core_v1 import Secret

    from pykubeadm.bootstrap.token import generate_token, secret_name
    from pykubeadm.phases.apply import retry_api_call
    from pykubeadm.phases.bootstraptoken import token_secret
    from pykubeadm.phases.copycerts import (
        CERT_TOKEN_DESCRIPTION,
        certs_secret,
        certs_secret_rbac,
        decode_certificate_key,
        generate_certificate_key,
        read_shared_files,
        shared_cert_files,
    )

    if not data.upload_certs:
        data.out("[upload-certs] Skipping phase. Please see --upload-certs")
        return
    if not data.layout.key_path(c.CA_CERT_AND_KEY_BASE_NAME).exists():
        raise KubeadmError(
            "cannot upload certificates: the CA key ca.key is missing (external CA mode). "
            "Certificates cannot be uploaded; copy them to the other control-plane nodes by hand"
        )
    init = data.cfg.init
    if not init.certificate_key:
        init.certificate_key = generate_certificate_key()
    key = decode_certificate_key(init.certificate_key)
    ext = data.cfg.cluster.etcd.external
    files = shared_cert_files((ext.ca_file, ext.cert_file, ext.key_file) if ext else None)
    data.out(
        f'[upload-certs] Storing the certificates in Secret "{c.KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace'
    )
    token = generate_token()
    owner = token_secret(
        token, description=CERT_TOKEN_DESCRIPTION, ttl=c.DEFAULT_CERT_TOKEN_DURATION, usages=[], groups=[]
    )
    apply(data, [owner])
    if data.dry_run:
        owner["metadata"]["uid"] = "dry-run"
    else:
        client = admin_client(data)
        live = retry_api_call(
            lambda: client.get(Secret, secret_name(token), namespace=c.NAMESPACE_SYSTEM), "get the certificate token"
        )
        uid = live.metadata.uid if live.metadata is not None else None
        if not uid:
            raise KubeadmError(
                f'the Secret "{secret_name(token)}" the server returned has no UID to own the certificates'
            )
        owner["metadata"]["uid"] = uid
    apply(data, [certs_secret(read_shared_files(_resolver(data), files), key, owner), *certs_secret_rbac()])
    if not data.skip_certificate_key_print:
        data.out("[upload-certs] Using certificate key:")
        data.out(init.certificate_key)


PHASE: Phase[InitData] = Phase(
    name="upload-certs",
    short="Upload certificates to kubeadm-certs",
    run=run,
    inherit_flags=("config", "kubeconfig", "upload-certs", "certificate-key", "skip-certificate-key-print", "dry-run"),
)
