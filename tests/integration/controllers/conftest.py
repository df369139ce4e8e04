"""Fixtures: a running apiserver prepared like `kubeadm init` leaves it, and controller-manager processes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import (
    ControllerManager,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)

from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("api")) as server:
        kubeadm_rbac(server)
        if not token_request_available(server):
            grant_controller_roles_to_kcm_user(server)
        yield server


@pytest.fixture(scope="module")
def start_kcm(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ControllerManager]]:
    started: list[ControllerManager] = []

    def start(**kwargs: Any) -> ControllerManager:
        kcm = ControllerManager(api, tmp_path_factory.mktemp("kcm"), name=f"kcm{len(started)}", **kwargs)
        started.append(kcm)
        return kcm.start()

    try:
        yield start
    finally:
        for kcm in started:
            kcm.stop()
