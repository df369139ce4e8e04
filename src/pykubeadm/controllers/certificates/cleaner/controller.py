"""The csrcleaner controller: garbage-collects finished or abandoned CSRs on Kubernetes' schedule (cleaner.go).

Every hour (and once at start) each CSR is checked; it is deleted when issued and expired, pending for more than 24 h,
denied or failed more than 1 h ago, or approved and issued more than 1 h ago. A zero timestamp never counts as old.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from lightkube.resources.certificates_v1 import CertificateSigningRequest

from pykubeadm.client import ApiError, is_not_found
from pykubeadm.controllers.runtime import Controller
from pykubeadm.util.apitime import parse_time

__all__ = ["APPROVED_EXPIRATION", "DENIED_EXPIRATION", "PENDING_EXPIRATION", "CSRCleanerController", "cleanup_reason"]

log = logging.getLogger(__name__)

#: How long an issued CSR is kept after approval.
APPROVED_EXPIRATION = timedelta(hours=1)
#: How long a denied CSR is kept.
DENIED_EXPIRATION = timedelta(hours=1)
#: How long a failed CSR is kept.
FAILED_EXPIRATION = timedelta(hours=1)
#: How long a CSR may stay pending.
PENDING_EXPIRATION = timedelta(hours=24)
#: Period of the full scan.
POLLING_INTERVAL = 3600.0


def _older_than(value: str | None, age: timedelta, now: datetime) -> bool:
    when = parse_time(value)
    return when is not None and now - when > age


def _issued_not_after(csr: Mapping[str, Any]) -> datetime | None:
    raw = (csr.get("status") or {}).get("certificate")
    if not raw:
        return None
    try:
        certs = x509.load_pem_x509_certificates(base64.b64decode(raw))
    except ValueError:
        return None
    return certs[0].not_valid_after_utc if certs else None


def cleanup_reason(csr: Mapping[str, Any], now: datetime | None = None) -> str | None:
    """Why this CSR should be deleted now, or None to keep it."""
    now = now or datetime.now(UTC)
    status = csr.get("status") or {}
    conditions = list(status.get("conditions") or [])
    issued = bool(status.get("certificate"))
    approved = [c for c in conditions if c.get("type") == "Approved"]
    if approved and issued:
        not_after = _issued_not_after(csr)
        if not_after is not None and not_after < now:
            return "issued certificate has expired"
    if not conditions and _older_than((csr.get("metadata") or {}).get("creationTimestamp"), PENDING_EXPIRATION, now):
        return "pending for more than 24h"
    for cond in conditions:
        if cond.get("type") == "Denied" and _older_than(cond.get("lastUpdateTime"), DENIED_EXPIRATION, now):
            return "denied more than 1h ago"
        if cond.get("type") == "Failed" and _older_than(cond.get("lastUpdateTime"), FAILED_EXPIRATION, now):
            return "failed more than 1h ago"
    for cond in approved:
        if issued and _older_than(cond.get("lastUpdateTime"), APPROVED_EXPIRATION, now):
            return "issued more than 1h ago"
    return None


class CSRCleanerController(Controller):
    name = "csrcleaner"
    service_account = "certificate-controller"

    def setup(self) -> None:
        self.csrs = self.watch(CertificateSigningRequest, lambda *_: None)
        self.interval = POLLING_INTERVAL

    async def background(self) -> None:
        while True:
            for obj in self.csrs.items():
                self.queue.add(obj.metadata.name)
            await asyncio.sleep(self.interval)

    async def sync(self, key: Any) -> None:
        obj = self.csrs.get(key)
        if obj is None:
            return
        reason = cleanup_reason(obj.to_dict())
        if reason is None:
            return
        try:
            await self.client.delete(CertificateSigningRequest, key)
            log.info("deleted CSR %s: %s", key, reason)
        except ApiError as err:
            if not is_not_found(err):
                raise
