"""Certificates that renew themselves, on a real control-plane node whose clock libfaketime moves (LD_PRELOAD into
`init`, the kubelet it starts and the control-plane Pods the kubelet runs; Go's kubectl keeps the real clock, so the
checks use Python clients under the same fake clock).

300 days after init the kubelet's renewer (--control-plane-cert-renewal-window=2160h, as the lab sets it) renews every
non-CA certificate and kubeconfig client certificate, restarts the control plane, which keeps answering with the new
credentials, and `certs check-expiration` shows the new dates; 400 days after init, past the old certificates'
expiry, the API server refuses the old admin.conf (what a cluster without the renewer would face)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from tests.conftest import run_pykubeadm
from tests.integration.controllers.harness import wait_until
from tests.integration.faults.test_clock_skew import LIBFAKETIME, faketime_env

from pykubeadm.bootstrap.token import generate_token
from pykubeadm.kubelet.certrenewal import RENEWED_ANNOTATION
from pykubeadm.lab.nodes import LabNode, init_config, lab_node, write_node_files
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import stop_kubelet
from pykubeadm.pki.renewal import expiration_report

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not LIBFAKETIME.exists(), reason="libfaketime missing (scripts/setup.sh installs faketime)"),
]

PREFIX = "127.0.37."

#: lists the Nodes with a kubeconfig under the fake clock; prints the HTTP status of a refusal
_CLIENT = """
import sys
from lightkube import ApiError
from lightkube.resources.core_v1 import Event, Node
from pykubeadm.client import sync_client
try:
    client = sync_client(sys.argv[1], timeout=10)
    print(len(list(client.list(Node))))
    print(sum(1 for e in client.list(Event, namespace="default") if e.reason == "CertificateRenewed"))
except ApiError as err:
    print("status", err.status.code)
"""


def fake_python(env: dict[str, str], kubeconfig: Path) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", _CLIENT, str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    return res.stdout.split() if res.returncode == 0 else ["error", res.stderr[-300:]]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabNode, Path, dict[str, str]]]:
    lab_dir = tmp_path_factory.mktemp("renewal")
    offset = lab_dir / "faketime-offset"
    offset.write_text("+0\n")
    env = faketime_env(offset)
    cp = lab_node(lab_dir, 0, PREFIX)
    write_node_files(cp, init_config(cp, generate_token(), "sqlite"), "sqlite")
    try:
        run_pykubeadm("init", "--config", str(cp.config_file), root=cp.root, check=True, input="", env=env)
        yield cp, offset, env
    finally:
        run_pykubeadm("reset", "-f", root=cp.root, input="", env=env)
        stop_kubelet(Layout(cp.root))


def rows(layout: Layout) -> tuple[dict[str, datetime], dict[str, datetime]]:
    certs, cas = expiration_report(layout.pki_dir, layout.kubernetes_dir)
    return {r.name: r.expiration for r in certs if r.expiration}, {r.name: r.expiration for r in cas if r.expiration}


def test_300_days_after_init_the_kubelet_renews_everything_but_the_cas(node) -> None:
    cp, offset, env = node
    layout = Layout(cp.root)
    before, cas_before = rows(layout)
    assert set(before) == {  # the sqlite datastore: no etcd certificates
        "admin.conf",
        "super-admin.conf",
        "controller-manager.conf",
        "scheduler.conf",
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
    }
    old_admin = cp.root.parent / "old-admin.conf"
    old_admin.write_bytes(layout.admin_kubeconfig.read_bytes())
    assert fake_python(env, layout.admin_kubeconfig)[0] == "1"

    offset.write_text("+300d\n")

    def restarted() -> bool:
        return RENEWED_ANNOTATION in (layout.manifests_dir / "kube-apiserver.yaml").read_text()

    # The renewer annotates the manifests (the restart) after the round's certificates are written, never before: a
    # restart loads the new files. One round renews them all (every one is due at +300d).
    wait_until(restarted, 240, interval=1.0, what="the kube-apiserver manifest annotated for a restart")
    after, cas_after = rows(layout)
    assert all(after.get(n) and after[n] > old + timedelta(days=299) for n, old in before.items()), (before, after)
    assert cas_after == cas_before  # the CAs are never renewed
    # the control plane keeps answering (restarted with the new files), and says what was renewed
    answer = wait_until(
        lambda: (out := fake_python(env, layout.admin_kubeconfig))[:1] == ["1"] and int(out[1]) >= 7 and out,
        240,
        interval=1.0,
        what="the API server answering with the renewed admin.conf and 7 CertificateRenewed events",
    )
    assert answer[0] == "1"
    log = layout.kubelet_log_file.read_text()
    assert log.count("Renewed certificate ") >= 7

    res = run_pykubeadm("certs", "check-expiration", root=cp.root, env=env)
    assert res.returncode == 0, res.stderr
    assert "Automatic renewal by the kubelet: 90d before expiry; next renewal due" in res.stdout
    structured = json.loads(run_pykubeadm("certs", "check-expiration", "-o", "json", root=cp.root, env=env).stdout)
    for cert in structured["certificates"]:
        if cert.get("missing"):
            continue
        shown = datetime.strptime(cert["expirationDate"], "%Y-%m-%dT%H:%M:%S%z")
        assert shown > before[cert["name"]] + timedelta(days=299), cert

    # past the old certificates' expiry: the renewed admin.conf works, the old one is refused
    offset.write_text("+400d\n")
    wait_until(
        lambda: fake_python(env, old_admin) == ["status", "401"], 120, interval=1.0, what="the old admin.conf refused"
    )
    assert fake_python(env, layout.admin_kubeconfig)[0] == "1"
