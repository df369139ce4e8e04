"""The kubelet's certificate manager: obtains and rotates one certificate (client or serving) through CSRs.

Mirrors client-go's `util/certificate` manager: with no usable certificate it rotates at once (that is the TLS
bootstrap for the client certificate); otherwise it sleeps until the jittered deadline at 70–90 % of the lifetime,
then requests a new certificate with a fresh ECDSA P-256 key, authenticated with the current certificate (or the
bootstrap credentials only while no valid certificate exists). Failed attempts back off 2 s ×2 (jitter 0.1) for
5 steps, then every 32 s. The clock and randomness are injectable so tests can drive the deadline.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pykubeadm.kubelet.api import ApiError, ClientConfig, KubeClient
from pykubeadm.kubelet.certstore import CertPair, PairStore
from pykubeadm.kubelet.csr import CERTIFICATE_WAIT_TIMEOUT, CSRDeniedError, CSRTemplate, request_certificate

__all__ = ["CertificateManager", "Clock", "SystemClock", "backoff_delays", "rotation_deadline"]

log = logging.getLogger(__name__)


class Clock(Protocol):
    def now(self) -> dt.datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def rotation_deadline(not_before: dt.datetime, not_after: dt.datetime, rand: float) -> dt.datetime:
    """NotBefore + total × (0.7 + 0.2·rand) for rand in [0, 1): somewhere in 70–90 % of the lifetime."""
    total = not_after - not_before
    return not_before + total * (0.7 + 0.2 * rand)


def backoff_delays(rand: Callable[[], float] = random.random) -> list[float]:
    """Delays between failed attempts: 2 s doubling, jitter 0.1, 5 steps; afterwards the caller polls every 32 s."""
    out, d = [], 2.0
    for _ in range(5):
        out.append(d + rand() * 0.1 * d)
        d *= 2
    return out


#: After the backoff steps, retry this often forever.
STEADY_RETRY = 32.0


class CertificateManager:
    """Keeps `store`'s current certificate valid and satisfying `template()`.

    `bootstrap` is the client config used only while no valid certificate exists (None: never bootstrap);
    `authenticated` builds the client config that authenticates with a given valid pair (client certificates) or the
    node's current credentials (serving certificates). `on_update` runs after each new certificate is stored.
    """

    def __init__(
        self,
        store: PairStore,
        template: Callable[[], CSRTemplate | None],
        *,
        authenticated: Callable[[CertPair | None], ClientConfig | None],
        on_update: Callable[[CertPair], Awaitable[None] | None] | None = None,
        clock: Clock | None = None,
        rand: Callable[[], float] = random.random,
        wait_timeout: float = CERTIFICATE_WAIT_TIMEOUT,
        name: str = "client",
    ):
        self.store = store
        self.template = template
        self.authenticated = authenticated
        self.on_update = on_update
        self.clock = clock or SystemClock()
        self.rand = rand
        self.wait_timeout = wait_timeout
        self.name = name
        self.current: CertPair | None = store.current()
        self._deadline: dt.datetime | None = None
        self._wake = asyncio.Event()
        self.rotations = 0
        self.last_csr: str | None = None

    # --- decisions (pure) ----------------------------------------------------------------------------------------
    def needs_immediate_rotation(self) -> bool:
        """No certificate, an expired one, or one that does not satisfy the template."""
        cur = self.current
        if cur is None or cur.not_after <= self.clock.now():
            return True
        tpl = self.template()
        return tpl is not None and not tpl.satisfied_by(cur.leaf)

    def next_deadline(self) -> dt.datetime:
        """When to rotate: now if needed, else the jittered 70–90 % point (computed once per certificate)."""
        if self.needs_immediate_rotation():
            return self.clock.now()
        assert self.current is not None
        if self._deadline is None:
            self._deadline = rotation_deadline(self.current.not_before, self.current.not_after, self.rand())
            log.info(
                "%s certificate expires %s, rotation deadline is %s", self.name, self.current.not_after, self._deadline
            )
        return self._deadline

    def force_rotation(self) -> None:
        """Rotate as soon as possible (the current pair is a bootstrap certificate that must not be stored)."""
        self._deadline = self.clock.now()
        self._wake.set()

    def template_changed(self) -> None:
        """Wake the loop (e.g. the Node's addresses changed for a serving certificate)."""
        self._wake.set()

    # --- the loop ------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Rotate forever; cancel to stop."""
        while True:
            deadline = self.next_deadline()
            wait = (deadline - self.clock.now()).total_seconds()
            if wait > 0:
                self._wake.clear()
                sleeper = asyncio.ensure_future(self.clock.sleep(min(wait, 3600.0)))
                waker = asyncio.ensure_future(self._wake.wait())
                try:
                    await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeper.cancel()
                    waker.cancel()
                continue
            if self.template() is None:  # serving certificate before any IP is known
                self._wake.clear()
                waker = asyncio.ensure_future(self._wake.wait())
                try:
                    await asyncio.wait({waker}, timeout=1.0)
                finally:
                    waker.cancel()
                continue
            await self.rotate_with_backoff()

    async def rotate_with_backoff(self) -> CertPair:
        delays = backoff_delays(self.rand)
        attempt = 0
        while True:
            try:
                return await self.rotate_once()
            except asyncio.CancelledError:
                raise
            except CSRDeniedError as e:
                log.error("%s certificate request was not issued: %s; will request a new certificate", self.name, e)
            except ApiError as e:
                log.error("failed to request a %s certificate: %s", self.name, e)
            except Exception as e:
                log.error("failed to request a %s certificate: %s: %s", self.name, type(e).__name__, e)
            delay = delays[attempt] if attempt < len(delays) else STEADY_RETRY
            attempt += 1
            await self.clock.sleep(delay)

    async def rotate_once(self) -> CertPair:
        """One attempt: new key, CSR from the template, wait for issuance, store, notify."""
        tpl = self.template()
        if tpl is None:
            raise CSRDeniedError("no template yet (no node address known)")
        valid = self.current if self.current is not None and self.current.not_after > self.clock.now() else None
        config = self.authenticated(valid)
        if config is None:
            raise CSRDeniedError("no credentials to request a certificate with")
        client = KubeClient(config)
        try:
            issued = await request_certificate(client, tpl, timeout=self.wait_timeout)
        finally:
            await client.close()
        self.last_csr = issued.csr_name
        pair = self.store.update(issued.cert_pem, issued.key)
        self.current = pair
        self._deadline = None
        self.rotations += 1
        log.info("%s certificate rotated: CSR %s, expires %s", self.name, issued.csr_name, pair.not_after)
        if self.on_update is not None:
            res: Any = self.on_update(pair)
            if asyncio.iscoroutine(res):
                await res
        return pair

    async def wait_for_current(self, poll: float = 0.2) -> CertPair:
        """Return once a valid certificate exists (used by callers that need the client certificate)."""
        while self.current is None or self.current.not_after <= self.clock.now():
            await asyncio.sleep(poll)
        return self.current
