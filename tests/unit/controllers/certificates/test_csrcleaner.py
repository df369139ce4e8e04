"""csrcleaner: which CSRs are garbage-collected and when."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

from cryptography.hazmat.primitives import serialization
from csrfixtures import csr_object, make_ca, make_request

from pykubeadm.controllers.certificates.cleaner.controller import cleanup_reason

NOW = datetime.now(UTC)


def ts(delta: timedelta) -> str:
    return (NOW - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def issued(valid_for: timedelta) -> str:
    ca = make_ca()
    req, _ = make_request()
    cert = ca.sign(req, ["client auth"], valid_for, now=NOW - timedelta(hours=3))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def cond(type_: str, age: timedelta | None) -> dict:
    c = {"type": type_, "status": "True"}
    if age is not None:
        c["lastUpdateTime"] = ts(age)
    return c


def test_pending_kept_for_24h() -> None:
    _, pem = make_request()
    csr = csr_object(pem)
    csr["metadata"]["creationTimestamp"] = ts(timedelta(hours=23))
    assert cleanup_reason(csr, NOW) is None
    csr["metadata"]["creationTimestamp"] = ts(timedelta(hours=25))
    assert cleanup_reason(csr, NOW) == "pending for more than 24h"


def test_approved_and_issued_kept_for_1h() -> None:
    _, pem = make_request()
    cert = issued(timedelta(days=365))
    assert (
        cleanup_reason(csr_object(pem, conditions=[cond("Approved", timedelta(minutes=30))], certificate=cert), NOW)
        is None
    )
    assert (
        cleanup_reason(csr_object(pem, conditions=[cond("Approved", timedelta(minutes=61))], certificate=cert), NOW)
        == "issued more than 1h ago"
    )
    # approved but not issued: kept
    assert cleanup_reason(csr_object(pem, conditions=[cond("Approved", timedelta(hours=5))]), NOW) is None


def test_denied_and_failed_kept_for_1h() -> None:
    _, pem = make_request()
    assert cleanup_reason(csr_object(pem, conditions=[cond("Denied", timedelta(minutes=59))]), NOW) is None
    assert cleanup_reason(csr_object(pem, conditions=[cond("Denied", timedelta(minutes=61))]), NOW) == (
        "denied more than 1h ago"
    )
    assert (
        cleanup_reason(csr_object(pem, conditions=[cond("Approved", None), cond("Failed", timedelta(hours=2))]), NOW)
        == "failed more than 1h ago"
    )


def test_zero_timestamps_never_count_as_old() -> None:
    _, pem = make_request()
    assert cleanup_reason(csr_object(pem, conditions=[cond("Denied", None)]), NOW) is None


def test_expired_issued_certificate() -> None:
    _, pem = make_request()
    csr = csr_object(pem, conditions=[cond("Approved", timedelta(minutes=1))], certificate=issued(timedelta(hours=1)))
    assert cleanup_reason(csr, NOW) == "issued certificate has expired"
