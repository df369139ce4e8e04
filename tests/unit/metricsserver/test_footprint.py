"""The metrics server program's memory budget (≤ 60 MB RSS, benchmarks/metrics.py) depends on what it imports: set up
as `pykubeadm component metrics-server --kubeconfig=…` sets itself up, it loads no lightkube, httpx or msgspec (its
API requests go through aiohttp, which it serves with). Measured in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_PROGRAM = """
import json, sys
from pathlib import Path

import click

from pykubeadm.cli.component import command

command.get_command(click.Context(command), "metrics-server")  # as the dispatcher loads the component
from pykubeadm.kubelet.api import KubeClient
from pykubeadm.metricsserver import cli
from pykubeadm.metricsserver.server import MetricsServer, ServerOptions, new_auth

cfg, token = cli._connection(sys.argv[1], Path(sys.argv[2]))
client = KubeClient(cfg)
MetricsServer(client, new_auth(client), token, ServerOptions(cert_dir=Path(sys.argv[2])))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""

_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
"""


def test_the_program_loads_no_lightkube_httpx_or_msgspec(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_KUBECONFIG)
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(kubeconfig), str(tmp_path / "certs")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    packages = set(json.loads(out))
    assert {"aiohttp", "pykubeadm"} <= packages  # the program was really set up
    assert packages.isdisjoint({"lightkube", "httpx", "httpx2", "httpcore", "anyio", "msgspec"})
