"""The public surface of pki and kubeconfig: every name in each `__all__` exists (STYLE rule 13)."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "pykubeadm.pki",
    "pykubeadm.pki.keys",
    "pykubeadm.pki.certs",
    "pykubeadm.pki.verify",
    "pykubeadm.pki.altnames",
    "pykubeadm.pki.certlist",
    "pykubeadm.pki.create",
    "pykubeadm.pki.csr",
    "pykubeadm.pki.renewal",
    "pykubeadm.kubeconfig",
    "pykubeadm.kubeconfig.config",
    "pykubeadm.kubeconfig.specs",
    "pykubeadm.kubeconfig.create",
    "pykubeadm.kubeconfig.csr",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []
    assert module.__doc__ and module.__doc__.strip()
