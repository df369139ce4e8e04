"""Issue 6 acceptance: two controller-managers, exactly one leader, takeover after the leader is killed."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from harness import ControllerManager, create_token, csr_body, csr_pem, embedded_kubeconfig, wait_until
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR
from lightkube.resources.coordination_v1 import Lease

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

# short timings so the test stays fast; same ratios as 15s/10s/2s
LEASE = ("4s", "3s", "1s")
LEASE_SECONDS = 4.0
RETRY_SECONDS = 1.0


def leaders(*kcms: ControllerManager) -> list[ControllerManager]:
    return [k for k in kcms if "successfully acquired lease kube-system/kube-controller-manager" in k.log()]


def test_one_leader_and_takeover(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> None:
    admin = sync_client(api.kubeconfig())
    a = start_kcm(lease=LEASE)
    b = start_kcm(lease=LEASE)
    wait_until(lambda: leaders(a, b), 10, what="a leader")
    time.sleep(3 * RETRY_SECONDS)  # give the other one several chances to (wrongly) acquire
    (leader,) = leaders(a, b)
    follower = b if leader is a else a
    lease = admin.get(Lease, "kube-controller-manager", namespace="kube-system")
    assert lease.spec.leaseDurationSeconds == 4
    holder = lease.spec.holderIdentity
    assert f"new leader elected: {holder}" in leader.log()
    assert f"new leader elected: {holder}" in follower.log()  # the follower saw it and stood by
    assert "starting controllers" in leader.log() and "starting controllers" not in follower.log()

    leader.kill()
    killed_at = time.monotonic()
    tid, secret = create_token(api)
    client = sync_client(embedded_kubeconfig(api, api.dir / "le-bootstrap.conf", "u", token=f"{tid}.{secret}"))
    name = client.create(CSR.from_dict(csr_body(csr_pem("system:node:during-failover")))).metadata.name

    wait_until(lambda: leaders(follower), LEASE_SECONDS + 3 * RETRY_SECONDS + 2, what="takeover")
    took = time.monotonic() - killed_at
    # observed-time based expiry: at most lease duration after the last renewal we saw, plus acquire retry jitter
    assert took <= LEASE_SECONDS + 2.2 * RETRY_SECONDS + 1.5, took
    new = admin.get(Lease, "kube-controller-manager", namespace="kube-system")
    assert new.spec.holderIdentity != holder
    assert new.spec.leaseTransitions == (lease.spec.leaseTransitions or 0) + 1

    def issued() -> bool:
        obj = client.get(CSR, name)
        return bool(obj.status and obj.status.certificate)

    wait_until(issued, 5, what="CSR created during failover issued")
