"""kubeadm's PKI: keys, self-signed CAs, signed certificates, CSRs, SPKI pins, the certificate table, create-or-reuse
of the certificate files, external CA detection, renewal and expiration reports.

Modules: keys (algorithms, PEM, pins, KeyPool), certs (X.509 building, PEM files), verify (Go-style chain and name
checks), altnames (SAN rules), certlist (CertSpec table, PkiParams), create (the certs phase logic), csr (generate-csr),
renewal (certs renew / check-expiration). Functions take explicit arguments, never config objects.
"""

from pykubeadm.pki.certlist import CERT_LIST, CertSpec, PkiParams, cert_config, cert_list
from pykubeadm.pki.certs import (
    AltNames,
    CertConfig,
    new_csr,
    new_self_signed_ca,
    new_signed_cert,
    paths_for_cert_and_key,
    try_load_cert,
    try_load_cert_and_key,
    try_load_key,
    write_cert_and_key,
)
from pykubeadm.pki.create import (
    create_ca_files,
    create_cert_files,
    create_service_account_key_files,
    using_external_ca,
    using_external_etcd_ca,
    using_external_front_proxy_ca,
)
from pykubeadm.pki.keys import KeyPool, encode_private_key_pem, generate_private_key, public_key_pin
from pykubeadm.pki.verify import verify_cert_chain, verify_hostname

__all__ = [
    "CERT_LIST",
    "AltNames",
    "CertConfig",
    "CertSpec",
    "KeyPool",
    "PkiParams",
    "cert_config",
    "cert_list",
    "create_ca_files",
    "create_cert_files",
    "create_service_account_key_files",
    "encode_private_key_pem",
    "generate_private_key",
    "new_csr",
    "new_self_signed_ca",
    "new_signed_cert",
    "paths_for_cert_and_key",
    "public_key_pin",
    "try_load_cert",
    "try_load_cert_and_key",
    "try_load_key",
    "using_external_ca",
    "using_external_etcd_ca",
    "using_external_front_proxy_ca",
    "verify_cert_chain",
    "verify_hostname",
    "write_cert_and_key",
]
