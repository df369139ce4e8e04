"""init phase 'certs' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("certs", "Certificate generation", issue="issue 3")
