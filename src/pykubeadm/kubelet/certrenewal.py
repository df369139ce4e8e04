"""Automatic renewal of a control-plane node's kubeadm certificates, as a task of the kubelet (opt-in).

Enabled with the kubelet flag `--control-plane-cert-renewal-window=<duration>` (kubeadm: `nodeRegistration.
kubeletExtraArgs`; the lab sets 2160h, 90 days as k3s). Off by default, as kubeadm renews only on `upgrade` or
`certs renew`.

Why a kubelet-side task and not a static Pod: the kubelet is the one process kubeadm keeps running on every
control-plane node, it already reads the node's files (/etc/kubernetes) and it is the thing that runs the static Pods
that must pick the new files up; a static Pod would need an image that no registry ships and would itself be one of
the Pods whose credentials expire. It keeps working when the API server is down (the renewal needs only the files).

Every `CHECK_PERIOD` on a node with a kube-apiserver static Pod manifest: the rows of `certs check-expiration` (the
non-CA certificates and the client certificates embedded in kubeconfigs; never the CAs) that expire within the window
are renewed by running `pykubeadm certs renew <name>` (the same command, reading kubeadm-config through admin.conf
for the key algorithm and validity, falling back to the defaults as it does). Per certificate: a log line and a Normal
Event `CertificateRenewed` on the Node. After a round that renewed anything, each control-plane static Pod manifest
gets the annotation `pykubeadm.io/certificates-renewed` (the renewal time), so the kubelet restarts those Pods with the
new files (kubeadm's documentation: restart the control-plane Pods after renewing). The annotation is the round's last
write: a manifest that carries a round's stamp has every certificate that round renewed on disk already, so a restart
loads them (and whoever waits for the restart may rely on it). A CA without its key (external CA mode) cannot sign:
the task says so (log line and Warning Event) and stops.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.layout import Layout
from pykubeadm.pki.autorenewal import due_for_renewal
from pykubeadm.pki.renewal import ExpirationInfo, expiration_report, is_externally_managed
from pykubeadm.util.fs import write_file_atomic
from pykubeadm.util.yamlload import load_yaml

__all__ = ["CHECK_PERIOD", "RENEWED_ANNOTATION", "ControlPlaneCertRenewer", "restart_annotation"]

log = logging.getLogger(__name__)

#: how often the certificates' expiration is read (a few small files)
CHECK_PERIOD = 10.0
#: the static Pod annotation whose change makes the kubelet restart a control-plane Pod
RENEWED_ANNOTATION = "pykubeadm.io/certificates-renewed"
_MANIFESTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
_CAS = (c.CA_CERT_AND_KEY_BASE_NAME, c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME, c.ETCD_CA_CERT_AND_KEY_BASE_NAME)

Recorder = Callable[[str, str, str], None]  # (type, reason, message) → an Event on the Node


def restart_annotation(manifest: str, stamp: str) -> str:
    """The manifest text with `metadata.annotations[RENEWED_ANNOTATION] = stamp` (a new Pod hash: a restart)."""
    doc = load_yaml(manifest) or {}
    doc.setdefault("metadata", {}).setdefault("annotations", {})[RENEWED_ANNOTATION] = stamp
    return yaml.safe_dump(doc, sort_keys=False)


class ControlPlaneCertRenewer:
    """The task: `run()` until cancelled or stopped by an external CA."""

    def __init__(
        self,
        layout: Layout,
        window: timedelta,
        record: Recorder,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        period: float = CHECK_PERIOD,
    ):
        self.layout = layout
        self.window = window
        self.record = record
        self.now = now
        self.period = period
        self.renewed: list[str] = []

    def _is_control_plane(self) -> bool:
        return (self.layout.manifests_dir / "kube-apiserver.yaml").exists()

    def _external_ca(self) -> str | None:
        for base in _CAS:
            if not (self.layout.pki_dir / f"{base}.crt").exists():
                continue
            try:
                if is_externally_managed(self.layout.pki_dir, base):
                    return base
            except CertError as err:
                return f"{base} ({err})"
        return None

    def _rows(self) -> list[ExpirationInfo]:
        external_etcd = not (self.layout.manifests_dir / "etcd.yaml").exists()
        certs, _ = expiration_report(self.layout.pki_dir, self.layout.kubernetes_dir, external_etcd)
        return certs

    async def run(self) -> None:
        log.info("control-plane certificates are renewed %s before they expire", self.window)
        while True:
            if self._is_control_plane():
                ca = self._external_ca()
                if ca is not None:
                    message = (
                        f"Detected external {ca}: control-plane certificates cannot be renewed automatically "
                        "(no CA key); automatic renewal stops"
                    )
                    log.warning("%s", message)
                    self.record("Warning", "CertificateRenewalStopped", message)
                    return
                await self.round()
            await asyncio.sleep(self.period)

    async def round(self) -> list[str]:
        """Renew every row due now; restart the control-plane Pods when anything was renewed. The names renewed."""
        try:
            due = due_for_renewal(await asyncio.to_thread(self._rows), self.now(), self.window)
        except CertError as err:
            log.warning("cannot read the control-plane certificates: %s", err)
            return []
        done = []
        for row in due:
            if await self._renew(row):
                done.append(row.name)
        if done:
            self._restart_static_pods()
            self.renewed += done
        return done

    async def _renew(self, row: ExpirationInfo) -> bool:
        argv = [sys.executable, "-m", "pykubeadm", "--root-dir", str(self.layout.root), "certs", "renew", row.name]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL
        )
        out, _ = await proc.communicate()
        text = out.decode(errors="replace").strip()
        last = text.splitlines()[-1] if text else ""
        if proc.returncode != 0 or not last.endswith(" renewed"):
            log.warning("renewing certificate %s failed (exit %s): %s", row.name, proc.returncode, text[-500:])
            self.record("Warning", "CertificateRenewalFailed", f"Renewing {row.name} failed: {last}")
            return False
        new = next((r for r in self._rows() if r.name == row.name), None)
        expires = new.expiration.strftime("%Y-%m-%dT%H:%M:%SZ") if new and new.expiration else "?"
        old = row.expiration.strftime("%Y-%m-%dT%H:%M:%SZ") if row.expiration else "?"
        message = (
            f"Renewed certificate {row.name} ({last.removesuffix(' renewed')}): expired {old}, now expires {expires}"
        )
        log.info("%s", message)
        self.record("Normal", "CertificateRenewed", message)
        return True

    def _restart_static_pods(self) -> None:
        stamp = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        for name in _MANIFESTS:
            path: Path = self.layout.manifests_dir / f"{name}.yaml"
            if not path.exists():
                continue
            write_file_atomic(path, restart_annotation(path.read_text(), stamp), 0o600)
            log.info("restarting static Pod %s to load the renewed certificates", name)
