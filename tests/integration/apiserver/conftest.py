"""A real apiserver subprocess (sqlite store, generated PKI, Node,RBAC) shared by the tests of one module."""

import shutil

import pytest

from pykubeadm.testing.apiserver import ApiServer, running_apiserver


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory):
    with running_apiserver(tmp_path_factory.mktemp("apiserver")) as server:
        yield server


@pytest.fixture(scope="module")
def kubectl_available() -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (scripts/setup.sh installs it)")


__all__ = ["ApiServer"]
