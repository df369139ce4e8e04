"""init phase 'etcd' (placeholder until its owner lands it)."""

from __future__ import annotations

from pykubeadm.phases.init.not_yet import pending

PHASE = pending("etcd", "Generate static Pod manifest file for local etcd", issue="issue 3")
