"""root-ca-cert-publisher: the ConfigMap it wants, and where the CA comes from without --root-ca-file."""

from __future__ import annotations

import base64
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from csrfixtures import make_ca
from lightkube import AsyncClient, KubeConfig
from lightkube.config.models import Cluster, User

from pykubeadm.controllers.certificates.rootcacertpublisher.controller import (
    DESCRIPTION,
    _kubeconfig_ca,
    desired_configmap,
)

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_desired_configmap_create_repair_and_noop() -> None:
    created = desired_configmap("team-a", CA, None)
    assert created is not None
    assert created["metadata"] == {
        "name": "kube-root-ca.crt",
        "namespace": "team-a",
        "annotations": {"kubernetes.io/description": DESCRIPTION},
    }
    assert created["data"] == {"ca.crt": CA}
    assert desired_configmap("team-a", CA, created) is None
    tampered = {**created, "data": {"ca.crt": "x", "extra": "y"}}
    repaired = desired_configmap("team-a", CA, tampered)
    assert repaired is not None and repaired["data"] == {"ca.crt": CA}


def test_ca_from_kubeconfig_data_or_file(tmp_path: Path) -> None:
    real = make_ca().certificate.public_bytes(serialization.Encoding.PEM).decode()
    embedded = AsyncClient(
        KubeConfig.from_one(
            cluster=Cluster(
                server="https://127.0.0.1:6443", certificate_auth_data=base64.b64encode(real.encode()).decode()
            ),
            user=User(),
        )
    )
    assert _kubeconfig_ca(embedded) == real
    (tmp_path / "ca.crt").write_text(real)
    by_file = AsyncClient(
        KubeConfig.from_one(
            cluster=Cluster(server="https://127.0.0.1:6443", certificate_auth="ca.crt"),
            user=User(),
            fname=tmp_path / "kubeconfig",
        )
    )
    assert _kubeconfig_ca(by_file) == real
