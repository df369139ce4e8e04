"""init phase 'kubeconfig' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("kubeconfig", "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file", issue="issue 3")
