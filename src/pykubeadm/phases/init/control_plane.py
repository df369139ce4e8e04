"""init phase 'control-plane' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("control-plane", "Generate all static Pod manifest files necessary to establish the control plane", issue="issue 3")
