"""init phase 'preflight' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("preflight", "Run pre-flight checks", issue="issue 3")
