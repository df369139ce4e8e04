"""Keys and CSRs for an external CA (kubeadm's CreateDefaultKeysAndCSRFiles / createKeyAndCSR): `<base>.key` (0600)
and `<base>.csr` (0600) for every certificate signed by a CA, with the subject and SANs the certificate would get.

Called by cli/certs.py (`certs generate-csr`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pykubeadm.errors import CertError
from pykubeadm.pki.certlist import CERT_LIST, CertSpec, PkiParams, cert_config
from pykubeadm.pki.certs import new_csr, write_csr, write_key
from pykubeadm.pki.keys import generate_private_key

__all__ = ["create_csr_files", "create_default_keys_and_csrs"]


def create_csr_files(spec: CertSpec, params: PkiParams, csr_dir: Path, start: datetime | None = None) -> None:
    """Write `<base>.key` and `<base>.csr`; refuses when either exists (kubeadm never overwrites them)."""
    if (csr_dir / f"{spec.base_name}.key").exists() or (csr_dir / f"{spec.base_name}.csr").exists():
        raise CertError(f"file already exists: key or CSR {csr_dir}/{spec.base_name}")
    cfg = cert_config(spec, params, start or datetime.now(UTC))
    key = generate_private_key(cfg.encryption_algorithm)
    csr = new_csr(cfg, key)
    write_key(csr_dir, spec.base_name, key)
    write_csr(csr_dir, spec.base_name, csr)


def create_default_keys_and_csrs(
    params: PkiParams, csr_dir: Path, out: Callable[[str], None], display_dir: str, start: datetime | None = None
) -> None:
    """Every leaf certificate of the table (etcd ones included, as kubeadm does), announced as kubeadm prints it:
    `generating keys and CSRs in <dir>` then one indented base name per file pair."""
    out(f"generating keys and CSRs in {display_dir}")
    start = start or datetime.now(UTC)
    for spec in CERT_LIST:
        if spec.is_ca:
            continue
        create_csr_files(spec, params, csr_dir, start)
        out(f"  {spec.base_name}")
