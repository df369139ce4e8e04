"""Fixtures for the apiserver security-layer tests (helpers live in helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pykubeadm.apiserver.objects import DictObjectSource
from tests.unit.apiserver_auth.helpers import CA, STATIC_TOKEN, cluster_source, make_ca


@pytest.fixture
def source() -> DictObjectSource:
    return cluster_source()


@pytest.fixture(scope="session")
def client_ca() -> CA:
    return make_ca("kubernetes")


@pytest.fixture(scope="session")
def front_proxy_ca() -> CA:
    return make_ca("front-proxy-ca")


@pytest.fixture(scope="session")
def sa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def pki_dir(tmp_path: Path, client_ca: CA, front_proxy_ca: CA, sa_key: rsa.RSAPrivateKey) -> Path:
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "ca.crt").write_bytes(client_ca.pem())
    (pki / "front-proxy-ca.crt").write_bytes(front_proxy_ca.pem())
    (pki / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    (pki / "tokens.csv").write_text(
        f'# static tokens\n\n{STATIC_TOKEN},kubelet-bootstrap,10001,"system:bootstrappers"\n'
    )
    return pki
