"""kube-system/extension-apiserver-authentication published by the built-in kube-apiserver (post-start hook
start-cluster-authentication-info-controller): present after start with the CAs of --client-ca-file and
--requestheader-client-ca-file, restored when deleted, combined across two apiservers sharing one store, and enough for
a kube-scheduler without --client-ca-file (kubeadm's manifest) to accept client certificates on its secure port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.controllers.harness import embedded_kubeconfig
from tests.integration.metrics.support import get, status_json, wait_for

from pykubeadm.testing.apiserver import ApiServer, free_port, generate_pki

pytestmark = pytest.mark.integration

NAME = "extension-apiserver-authentication"


def published(api: ApiServer) -> dict[str, str] | None:
    res = api.kubectl("get", "configmap", NAME, "-n", "kube-system", "-o", "json", check=False)
    if res.returncode != 0:
        return None
    data: dict[str, str] = json.loads(res.stdout).get("data") or {}
    return data


def test_published_at_start_with_the_apiserver_cas(api: ApiServer) -> None:
    data = wait_for(lambda: published(api), 30, f"configmap {NAME}")
    assert data == {
        "client-ca-file": api.pki.ca_cert.read_text(),
        "requestheader-client-ca-file": api.pki.front_proxy_ca_cert.read_text(),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-uid-headers": "[]",
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    healthz = api.kubectl("get", "--raw", "/healthz?verbose").stdout
    assert "[+]poststarthook/start-cluster-authentication-info-controller ok" in healthz


def test_restored_after_deletion(api: ApiServer) -> None:
    wait_for(lambda: published(api), 30, f"configmap {NAME}")
    api.kubectl("delete", "configmap", NAME, "-n", "kube-system")
    data = wait_for(lambda: published(api), 30, f"configmap {NAME} restored")
    assert data["client-ca-file"] == api.pki.ca_cert.read_text()


@pytest.fixture()
def scheduler_without_client_ca(api: ApiServer, tmp_path: Path) -> Iterator[int]:
    """A kube-scheduler with the flags of kubeadm's manifest (no --client-ca-file); its secure port."""
    cert, key = api.pki.sign("system:kube-scheduler", name="scheduler")
    kubeconfig = embedded_kubeconfig(api, tmp_path / "scheduler.conf", "system:kube-scheduler", cert=cert, key=key)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    log_path = tmp_path / "scheduler.log"
    flags = [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        f"--secure-port={port}",
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykubeadm", "component", "kube-scheduler", *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:

        def alive() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(log_path.read_text())
            try:
                return get(f"https://127.0.0.1:{port}/livez", timeout=2)[0] == 200
            except OSError:
                return False

        wait_for(alive, 60, "kube-scheduler /livez")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_scheduler_without_client_ca_file_trusts_the_published_ca(
    api: ApiServer, scheduler_without_client_ca: int, tmp_path: Path
) -> None:
    url = f"https://127.0.0.1:{scheduler_without_client_ca}/metrics"

    def admin_status() -> Any:
        status, _, body = get(url, cert=(api.pki.admin_cert, api.pki.admin_key))  # system:masters: always allowed
        return status == 200 and body

    body = wait_for(admin_status, 30, "the scheduler to accept the cluster's admin certificate")
    assert "leader_election_master_status" in body or "scheduler_" in body
    foreign = generate_pki(tmp_path / "foreign")  # another cluster's system:masters certificate
    status, _, body = get(url, cert=(foreign.admin_cert, foreign.admin_key))
    assert (status, status_json(body)["reason"]) == (401, "Unauthorized")


@pytest.fixture()
def two_apiservers(tmp_path: Path) -> Iterator[tuple[ApiServer, ApiServer]]:
    first = ApiServer(tmp_path / "a", host="127.0.0.1", audit_log=False)
    # another control-plane node with its own CAs (as after a botched CA rotation), sharing the store
    second = ApiServer(tmp_path / "b", host="127.0.0.2", port=first.port, storage=first.storage_url, audit_log=False)
    try:
        first.start()
        second.start()
        yield first, second
    finally:
        second.stop()
        first.stop()


def test_apiservers_sharing_a_store_combine_their_cas(two_apiservers: tuple[ApiServer, ApiServer]) -> None:
    first, second = two_apiservers
    both = {first.pki.ca_cert.read_text(), second.pki.ca_cert.read_text()}

    def combined() -> dict[str, str] | None:
        data = published(first)
        if not data or {c for c in both if c in data["client-ca-file"]} != both:
            return None
        return data

    data = wait_for(combined, 30, "both apiservers' client CAs in the ConfigMap")
    assert data["client-ca-file"] in (
        first.pki.ca_cert.read_text() + second.pki.ca_cert.read_text(),
        second.pki.ca_cert.read_text() + first.pki.ca_cert.read_text(),
    )
    assert data["requestheader-client-ca-file"].count("BEGIN CERTIFICATE") == 2
    assert data["requestheader-allowed-names"] == '["front-proxy-client"]'
