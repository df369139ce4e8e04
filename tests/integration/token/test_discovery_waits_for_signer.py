"""Token discovery right after `init`: the cluster-info ConfigMap exists but the BootstrapSigner has not signed it yet.
`discover_with_token` keeps asking (quickly at first, on one kept-alive connection) and trusts the cluster once the
signature is there — against our apiserver, with the RBAC `init` makes for anonymous readers."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from lightkube import codecs

from pykubeadm import constants as c
from pykubeadm.bootstrap.jws import compute_detached_signature
from pykubeadm.client import sync_client
from pykubeadm.discovery import token as discovery
from pykubeadm.phases.bootstraptoken import cluster_info_objects
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration

TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path / "api") as server:
        yield server


class _Retries(logging.Handler):
    """Sets `seen` when discovery logs that it will try again."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "will try again" in record.getMessage():
            self.seen.set()


def test_discovery_waits_for_the_signature_then_trusts_the_cluster(api: ApiServer) -> None:
    ca_pem = api.pki.ca_cert.read_bytes()
    cm, rbac = cluster_info_objects(api.url, ca_pem)
    with sync_client(api.kubeconfig()) as admin:
        for obj in [*rbac, cm]:
            admin.create(codecs.from_dict(obj))
        kubeconfig = cm["data"][c.CLUSTER_INFO_KUBECONFIG_KEY]
        retries = _Retries()
        logging.getLogger(discovery.__name__).addHandler(retries)
        logger = logging.getLogger(discovery.__name__)
        old_level = logger.level
        logger.setLevel(logging.INFO)

        def sign() -> None:  # what the BootstrapSigner does, once discovery has seen the unsigned answer
            if retries.seen.wait(30):
                signature = compute_detached_signature(kubeconfig, TOKEN_ID, TOKEN_SECRET)
                patch = {"data": {f"{c.JWS_SIGNATURE_KEY_PREFIX}{TOKEN_ID}": signature}}
                admin.patch(type(codecs.from_dict(cm)), c.CLUSTER_INFO_CONFIGMAP, patch, namespace=c.NAMESPACE_PUBLIC)

        signer = threading.Thread(target=sign)
        signer.start()
        try:
            pin = public_key_pin(x509.load_pem_x509_certificate(ca_pem).public_key())
            result = discovery.discover_with_token(
                f"{api.host}:{api.port}", f"{TOKEN_ID}.{TOKEN_SECRET}", [pin], timeout=30, interval=5
            )
        finally:
            retries.seen.set()  # the signer never waits longer than the discovery
            signer.join()
            logger.removeHandler(retries)
            logger.setLevel(old_level)

    assert result.server == api.url
    assert result.ca_pem.strip() == ca_pem.strip()


def test_the_first_retries_are_quick_then_every_interval() -> None:
    delays = [discovery._retry_delay(n, 5.0) for n in range(70)]
    assert delays[:20] == [0.05] * 20  # the signer usually signs within a second of init making cluster-info
    assert delays[20:65] == [0.2] * 45
    assert delays[65:] == [5.0] * 5  # then kubeadm's own cadence
    assert discovery._retry_delay(0, 0.01) == 0.01  # never slower than asked
