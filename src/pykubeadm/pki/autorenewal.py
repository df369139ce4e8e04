"""When control-plane certificates are due for automatic renewal (pure decisions over `certs check-expiration` rows).

The renewal itself is `pykubeadm certs renew` (pki.renewal); the kubelet's task (kubelet/certrenewal.py) runs it for
every row this module says is due, and `certs check-expiration` prints `next_renewal`. Only the rows of
`pki.renewal.renew_handlers` are ever considered: the non-CA certificates and the client certificates embedded in
kubeconfigs; the CAs are never renewed automatically.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from pykubeadm.pki.renewal import ExpirationInfo
from pykubeadm.util.goduration import parse_duration

__all__ = [
    "DEFAULT_WINDOW",
    "RENEWAL_WINDOW_FLAG",
    "due_for_renewal",
    "next_renewal",
    "renewal_window_from_flags",
]

#: the kubelet flag that turns the renewal on: how long before expiry a certificate is renewed (0 or absent: off)
RENEWAL_WINDOW_FLAG = "control-plane-cert-renewal-window"
#: the window when the flag is given without a value, or as the lab sets it (k3s renews 90 days before expiry)
DEFAULT_WINDOW = timedelta(days=90)


def due_for_renewal(rows: Iterable[ExpirationInfo], now: datetime, window: timedelta) -> list[ExpirationInfo]:
    """The present, locally signed rows that expire within `window` of `now` (or already expired)."""
    return [
        r
        for r in rows
        if not r.missing and r.expiration is not None and not r.externally_managed and r.expiration - window <= now
    ]


def next_renewal(rows: Sequence[ExpirationInfo], window: timedelta) -> tuple[datetime, list[str]] | None:
    """When the next automatic renewal is due and which rows it renews then; None when nothing can be renewed."""
    times = [
        (r.expiration - window, r.name)
        for r in rows
        if not r.missing and r.expiration is not None and not r.externally_managed
    ]
    if not times:
        return None
    when = min(t for t, _ in times)
    return when, sorted(name for t, name in times if t - when < timedelta(minutes=1))


def renewal_window_from_flags(flags_env: str) -> timedelta | None:
    """The window set by `--control-plane-cert-renewal-window` in a kubeadm-flags.env text; None when off."""
    for line in flags_env.splitlines():
        _, sep, value = line.partition("=")
        if not sep:
            continue
        for arg in shlex.split(value.strip().strip('"')):
            name, _, v = arg.partition("=")
            if name == f"--{RENEWAL_WINDOW_FLAG}":
                window = parse_duration(v) if v else DEFAULT_WINDOW
                return window if window > timedelta(0) else None
    return None
