"""The controller-manager survives an apiserver restart: watches resume and new CSRs are still issued."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from harness import ControllerManager, create_token, csr_body, csr_pem, embedded_kubeconfig, wait_until
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def test_apiserver_restart(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> None:
    kcm = start_kcm()
    api.restart()
    tid, secret = create_token(api)
    client = sync_client(embedded_kubeconfig(api, api.dir / "restart.conf", "u", token=f"{tid}.{secret}"))
    name = client.create(CSR.from_dict(csr_body(csr_pem("system:node:after-restart")))).metadata.name

    def issued() -> bool:
        obj = client.get(CSR, name)
        return bool(obj.status and obj.status.certificate)

    wait_until(issued, 10, what="CSR issued after the apiserver restart")
    assert kcm.proc is not None and kcm.proc.poll() is None
