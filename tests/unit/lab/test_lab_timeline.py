"""lab timeline from a node's records: the join's and kubelet's log lines and the CSR/Node/Event objects; unknown
where there is no record; the SVG has a lane per node and a labelled mark per step (and rsvg-convert renders it)."""

from __future__ import annotations

import base64
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.lab.nodes import lab_node
from pykubeadm.lab.timeline import BOOTSTRAP_STEPS, render_svg, render_text, timeline_from
from pykubeadm.layout import Layout


def csr(
    name: str, node: str, signer: str, user: str, created: str, approved: str | None, message: str
) -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    pem = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    conditions = (
        [
            {
                "type": "Approved",
                "status": "True",
                "reason": "AutoApproved",
                "message": message,
                "lastUpdateTime": approved,
            }
        ]
        if approved
        else []
    )
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {
            "request": base64.b64encode(pem.public_bytes(serialization.Encoding.PEM)).decode(),
            "signerName": signer,
            "username": user,
        },
        "status": {"conditions": conditions},
    }


def test_a_workers_steps_come_from_its_records_and_the_rest_is_unknown(tmp_path: Path) -> None:
    node = lab_node(tmp_path, 1)
    node.log_file.parent.mkdir(parents=True, exist_ok=True)
    node.log_file.write_text(
        "[preflight] Running pre-flight checks\n"
        'I2026-12-07 10:00:00,100 pykubeadm.discovery.token] [discovery] Created cluster-info discovery client, requesting info from "https://x"\n'
        'I2026-12-07 10:00:00,300 pykubeadm.discovery.token] [discovery] Requesting info from "https://x" again to validate TLS against the pinned public key\n'
        "I2026-12-07 10:00:00,400 pykubeadm.discovery.token] [discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots\n"
    )
    log = Layout(node.root).kubelet_log_file
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(
        "I2026-12-07 10:00:00,900 4242 pykubeadm.kubelet.cli] flags: --node-ip=1\n"
        "I2026-12-07 10:00:01,500 4242 pykubeadm.kubelet.kubelet] bootstrap: client certificate from CSR csr-a stored, wrote /etc/kubernetes/kubelet.conf\n"
        "I2026-12-07 10:00:03,000 4242 pykubeadm.kubelet.certmanager] serving certificate rotated: CSR csr-s, expires x\n"
        "I2026-12-07 11:00:00,000 4300 pykubeadm.kubelet.cli] flags: --node-ip=1\n"
    )
    csrs = [
        csr(
            "csr-a",
            node.name,
            "kubernetes.io/kube-apiserver-client-kubelet",
            "system:bootstrap:abcdef",
            "2026-12-07T10:00:01Z",
            "2026-12-07T10:00:01Z",
            "Auto approving kubelet client certificate after SubjectAccessReview.",
        ),
        csr(
            "csr-s",
            node.name,
            "kubernetes.io/kubelet-serving",
            f"system:node:{node.name}",
            "2026-12-07T10:00:02Z",
            "2026-12-07T10:00:02Z",
            "by csrservingapproving",
        ),
        csr(
            "csr-other",
            "someone-else",
            "kubernetes.io/kube-apiserver-client-kubelet",
            "system:bootstrap:abcdef",
            "2026-12-07T09:00:00Z",
            None,
            "",
        ),
    ]
    node_obj = {"metadata": {"creationTimestamp": "2026-12-07T10:00:02Z"}, "status": {"conditions": []}}
    tl = timeline_from(node, csrs, node_obj, [])
    assert [s.step for s in tl.steps] == list(BOOTSTRAP_STEPS)
    got = {s.step: s for s in tl.steps}
    # log lines are in local time (logging's asctime), reported in UTC
    assert got["join started"].time == datetime(2026, 12, 7, 10, 0, 0, 100000).astimezone(UTC)
    assert got["client CSR created"].source == "CSR csr-a"
    assert got["client CSR created"].detail == "requested by system:bootstrap:abcdef"
    assert (
        got["client CSR approved"].detail
        == "AutoApproved: Auto approving kubelet client certificate after SubjectAccessReview."
    )
    assert got["Node Ready"].time is None  # no Ready condition: unknown, not guessed
    later = [(s.step, s.detail) for s in tl.later]
    assert ("serving CSR approved", "AutoApproved: by csrservingapproving") in later
    assert [s.step for s in tl.later][-1] == "kubelet restarted"
    assert "unknown  Node Ready" in render_text([tl])


def test_the_svg_has_lanes_and_labels_and_renders(tmp_path: Path) -> None:
    test_a_workers_steps_come_from_its_records_and_the_rest_is_unknown(tmp_path)
    node = lab_node(tmp_path, 1)
    svg = render_svg([timeline_from(node, [], None, [])])
    assert f'id="lane-{node.name}"' in svg and "kubelet started +" in svg and "unknown: " in svg
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert missing (scripts/setup.sh installs librsvg2-bin)")
    (tmp_path / "t.svg").write_text(svg)
    subprocess.run(["rsvg-convert", "-o", str(tmp_path / "t.png"), str(tmp_path / "t.svg")], check=True, timeout=60)
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")
