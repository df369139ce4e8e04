"""The kubelet's control-plane certificate renewer on the files `init phase certs/kubeconfig all` wrote: at 300 days
after init it renews every non-CA certificate and kubeconfig client certificate with `certs renew`, restarts the
static Pods through their manifests, records a line and an Event per certificate, never touches a CA; with an
external CA it says so and stops."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from tests.conftest import run_pykubeadm
from tests.integration.pki.test_certs_cli import CONFIG

from pykubeadm.kubelet.certrenewal import RENEWED_ANNOTATION, ControlPlaneCertRenewer
from pykubeadm.layout import Layout
from pykubeadm.pki.autorenewal import DEFAULT_WINDOW
from pykubeadm.pki.renewal import expiration_report

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    cfg = tmp_path / "kubeadm.yaml"
    cfg.write_text(CONFIG)
    for phase in ("certs", "kubeconfig", "control-plane", "etcd"):
        run_pykubeadm(
            "init", "phase", phase, "all" if phase != "etcd" else "local", "--config", str(cfg), root=root, check=True
        )
    return root


def expirations(layout: Layout) -> tuple[dict[str, datetime | None], dict[str, datetime | None]]:
    certs, cas = expiration_report(layout.pki_dir, layout.kubernetes_dir)
    return {r.name: r.expiration for r in certs}, {r.name: r.expiration for r in cas}


def test_at_300_days_every_non_ca_certificate_is_renewed_and_the_static_pods_restarted(root: Path) -> None:
    layout = Layout(root)
    before, cas_before = expirations(layout)
    assert len(before) == 11 and all(before.values())  # 8 certificates, 3 kubeconfigs
    events: list[tuple[str, str, str]] = []
    restarted_before: list[bool] = []  # per renewed certificate: was a manifest annotated already?

    def record(*event: str) -> None:
        events.append((event[0], event[1], event[2]))
        restarted_before.append(RENEWED_ANNOTATION in (layout.manifests_dir / "kube-apiserver.yaml").read_text())

    in_300_days = datetime.now(UTC) + timedelta(days=300)
    renewer = ControlPlaneCertRenewer(layout, DEFAULT_WINDOW, record, now=lambda: in_300_days)
    nothing_yet = ControlPlaneCertRenewer(layout, DEFAULT_WINDOW, lambda *e: events.append(e))
    assert asyncio.run(nothing_yet.round()) == []  # today: nothing within 90 days of expiry

    renewed = asyncio.run(renewer.round())

    assert sorted(renewed) == sorted(before)
    after, cas_after = expirations(layout)
    for name, old in before.items():
        assert old is not None and after[name] is not None and after[name] > old, name  # type: ignore[operator]
    assert cas_after == cas_before  # CAs are never renewed
    assert [e[1] for e in events] == ["CertificateRenewed"] * 11
    # the restart comes last: no manifest is annotated until every certificate of the round is written
    assert restarted_before == [False] * 11
    (apiserver_event,) = [e for e in events if "certificate apiserver " in e[2]]
    assert apiserver_event[0] == "Normal"
    assert "(certificate for serving the Kubernetes API)" in apiserver_event[2]
    for manifest in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
        doc = yaml.safe_load((layout.manifests_dir / f"{manifest}.yaml").read_text())
        assert doc["metadata"]["annotations"][RENEWED_ANNOTATION] == in_300_days.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert asyncio.run(nothing_yet.round()) == []  # renewed: not due again


def test_an_external_ca_stops_the_renewer_saying_so(root: Path) -> None:
    layout = Layout(root)
    (layout.pki_dir / "ca.key").unlink()
    before, _ = expirations(layout)
    events: list[tuple[str, str, str]] = []
    restarted_before: list[bool] = []  # per renewed certificate: was a manifest annotated already?

    def record(*event: str) -> None:
        events.append((event[0], event[1], event[2]))
        restarted_before.append(RENEWED_ANNOTATION in (layout.manifests_dir / "kube-apiserver.yaml").read_text())

    in_300_days = datetime.now(UTC) + timedelta(days=300)
    renewer = ControlPlaneCertRenewer(layout, DEFAULT_WINDOW, record, now=lambda: in_300_days)
    asyncio.run(asyncio.wait_for(renewer.run(), 30))  # returns: it stopped
    assert events == [
        (
            "Warning",
            "CertificateRenewalStopped",
            "Detected external ca: control-plane certificates cannot be renewed automatically (no CA key); "
            "automatic renewal stops",
        )
    ]
    assert expirations(layout)[0] == before
