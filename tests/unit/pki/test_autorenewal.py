"""Automatic renewal decisions: which rows are due, when the next renewal is, the kubelet flag, the restart annotation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import ValidationError
from pykubeadm.kubelet.certrenewal import RENEWED_ANNOTATION, restart_annotation
from pykubeadm.kubelet.config import KubeletSettings
from pykubeadm.pki.autorenewal import DEFAULT_WINDOW, due_for_renewal, next_renewal, renewal_window_from_flags
from pykubeadm.pki.renewal import ExpirationInfo

NOW = datetime(2027, 1, 1, tzinfo=UTC)


def row(name: str, days: float, *, external: bool = False, missing: bool = False) -> ExpirationInfo:
    return ExpirationInfo(name, None if missing else NOW + timedelta(days=days), "ca", external, missing)


def test_rows_within_the_window_or_expired_are_due_and_nothing_else() -> None:
    rows = [
        row("apiserver", 65),
        row("admin.conf", 89.9),
        row("scheduler.conf", -3),
        row("etcd-server", 91),
        row("front-proxy-client", 10, external=True),
        row("etcd-peer", 0, missing=True),
    ]
    assert [r.name for r in due_for_renewal(rows, NOW, DEFAULT_WINDOW)] == ["apiserver", "admin.conf", "scheduler.conf"]


def test_next_renewal_is_the_earliest_window_start_with_the_rows_due_then() -> None:
    rows = [row("apiserver", 365), row("admin.conf", 365), row("etcd-server", 400), row("x", 1, external=True)]
    when, names = next_renewal(rows, DEFAULT_WINDOW) or (None, [])
    assert when == NOW + timedelta(days=275)
    assert names == ["admin.conf", "apiserver"]
    assert next_renewal([row("x", 1, external=True)], DEFAULT_WINDOW) is None


@pytest.mark.parametrize(
    ("env", "window"),
    [
        ('KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.1 --control-plane-cert-renewal-window=2160h"\n', timedelta(days=90)),
        ('KUBELET_KUBEADM_ARGS="--control-plane-cert-renewal-window=720h0m0s"\n', timedelta(days=30)),
        ('KUBELET_KUBEADM_ARGS="--control-plane-cert-renewal-window=0"\n', None),
        ('KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.1"\n', None),
        ("", None),
    ],
)
def test_the_window_comes_from_the_kubelet_flags(env: str, window: timedelta | None) -> None:
    assert renewal_window_from_flags(env) == window


def test_the_kubelet_flag_is_validated_naming_it(tmp_path: Path) -> None:
    assert KubeletSettings.resolve(
        {}, {"control_plane_cert_renewal_window": "2160h"}
    ).control_plane_cert_renewal_window == (timedelta(days=90))
    assert KubeletSettings.resolve({}, {}).control_plane_cert_renewal_window is None
    with pytest.raises(ValidationError, match="--control-plane-cert-renewal-window"):
        KubeletSettings.resolve({}, {"control_plane_cert_renewal_window": "90d"})


def test_the_restart_annotation_changes_only_the_annotation() -> None:
    manifest = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kube-apiserver"}, "spec": {"containers": []}}
    )
    doc = yaml.safe_load(restart_annotation(manifest, "2027-01-01T00:00:00Z"))
    assert doc["metadata"]["annotations"] == {RENEWED_ANNOTATION: "2027-01-01T00:00:00Z"}
    assert doc["spec"] == {"containers": []}
    again = yaml.safe_load(restart_annotation(yaml.safe_dump(doc), "2027-02-01T00:00:00Z"))
    assert again["metadata"]["annotations"] == {RENEWED_ANNOTATION: "2027-02-01T00:00:00Z"}
