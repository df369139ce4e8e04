"""Rotation deadline and the certificate manager's decisions, driven by a fake clock."""

from __future__ import annotations

import datetime as dt

import pytest

from pykubeadm.kubelet import csr
from pykubeadm.kubelet.certmanager import CertificateManager, backoff_delays, rotation_deadline
from pykubeadm.kubelet.certstore import PairStore

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class FakeClock:
    def __init__(self, now: dt.datetime):
        self.t = now
        self.slept: list[float] = []

    def now(self) -> dt.datetime:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += dt.timedelta(seconds=seconds)


@pytest.mark.parametrize(("rand", "fraction"), [(0.0, 0.7), (0.5, 0.8), (0.999999, 0.9)])
def test_rotation_deadline_is_70_to_90_percent(rand, fraction):
    nb, na = T0, T0 + dt.timedelta(days=100)
    d = rotation_deadline(nb, na, rand)
    assert abs((d - nb).total_seconds() - fraction * 100 * 86400) < 5


def test_deadline_jitter_spread():
    import random

    rng = random.Random(1)
    nb, na = T0, T0 + dt.timedelta(hours=10)
    fractions = [(rotation_deadline(nb, na, rng.random()) - nb) / (na - nb) for _ in range(500)]
    assert 0.7 <= min(fractions) < 0.72 and 0.88 < max(fractions) < 0.9


def test_backoff_steps():
    assert backoff_delays(lambda: 0.0) == [2, 4, 8, 16, 32]
    jittered = backoff_delays(lambda: 1.0)
    assert jittered == pytest.approx([2.2, 4.4, 8.8, 17.6, 35.2])


def _manager(tmp_path, tiny_ca, *, lifetime, not_before, clock, node="n", rand=0.5):
    store = PairStore(tmp_path, "kubelet-client")
    key = csr.generate_key()
    cert = tiny_ca.sign_csr(csr.create_csr_pem(key, csr.client_template("n")), not_before=not_before, lifetime=lifetime)
    store.update(cert, key)
    return CertificateManager(
        store, lambda: csr.client_template(node), authenticated=lambda p: None, clock=clock, rand=lambda: rand
    )


def test_manager_sleeps_until_jittered_deadline(tmp_path, tiny_ca):
    clock = FakeClock(T0 + dt.timedelta(hours=1))
    m = _manager(tmp_path, tiny_ca, lifetime=dt.timedelta(hours=10), not_before=T0, clock=clock, rand=0.25)
    assert not m.needs_immediate_rotation()
    assert m.next_deadline() == T0 + dt.timedelta(hours=7.5)  # 0.7 + 0.2*0.25 = 75 %
    assert m.next_deadline() == T0 + dt.timedelta(hours=7.5)  # computed once per certificate


def test_manager_rotates_at_once_without_cert_or_when_expired_or_mismatched(tmp_path, tiny_ca):
    clock = FakeClock(T0)
    empty = CertificateManager(
        PairStore(tmp_path / "empty", "kubelet-client"),
        lambda: csr.client_template("n"),
        authenticated=lambda p: None,
        clock=clock,
    )
    assert empty.needs_immediate_rotation() and empty.next_deadline() == T0
    expired = _manager(
        tmp_path / "a", tiny_ca, lifetime=dt.timedelta(hours=1), not_before=T0 - dt.timedelta(hours=2), clock=clock
    )
    assert expired.needs_immediate_rotation()
    other = _manager(tmp_path / "b", tiny_ca, lifetime=dt.timedelta(days=1), not_before=T0, clock=clock, node="x")
    assert other.needs_immediate_rotation()  # the certificate's CN does not match the template


async def test_rotate_once_without_credentials_fails_cleanly(tmp_path, tiny_ca):
    clock = FakeClock(T0)
    m = CertificateManager(
        PairStore(tmp_path, "kubelet-client"),
        lambda: csr.client_template("n"),
        authenticated=lambda p: None,
        clock=clock,
    )
    with pytest.raises(csr.CSRDeniedError, match="no credentials"):
        await m.rotate_once()
