"""kube-controller-manager startup validation: every problem named by its flag, nothing started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _kcm(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykubeadm", "component", "kube-controller-manager", *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_kubeconfig_is_named() -> None:
    res = _kcm()
    assert res.returncode != 0
    assert "--kubeconfig is required" in res.stderr
    assert "open ." not in res.stderr  # not a confusing "no such file" for the current directory


def test_unreadable_files_are_each_named(tmp_path: Path) -> None:
    res = _kcm(
        f"--kubeconfig={tmp_path / 'nope.conf'}",
        f"--root-ca-file={tmp_path / 'ca.crt'}",
        f"--cluster-signing-cert-file={tmp_path / 'ca.crt'}",
    )
    assert res.returncode != 0
    assert f"--kubeconfig: open {tmp_path / 'nope.conf'}: no such file or directory" in res.stderr
    assert f"--root-ca-file: open {tmp_path / 'ca.crt'}" in res.stderr
    assert "--cluster-signing-cert-file and --cluster-signing-key-file must be set together" in res.stderr
