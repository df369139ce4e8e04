"""init phase 'kubelet-start' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("kubelet-start", "Write kubelet settings and (re)start the kubelet", issue="issue 3")
