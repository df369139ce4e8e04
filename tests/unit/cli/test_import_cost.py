"""`pykubeadm version` and `pykubeadm --help` import only what they run: none of the heavy libraries the other
commands need (config models, X.509, the HTTP stack, the Kubernetes client, YAML). `init` and `join` import only what
the phases they run need: an offline init loads no addon, preflight or cluster-client module, and the join phase tree
is declared without the Kubernetes client. Asserts on module names, not time."""

from __future__ import annotations

import http.server
import os
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.conftest import OFFLINE_SKIP

from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import stop_kubelet

HEAVY = ("msgspec", "cryptography", "aiohttp", "lightkube", "httpx", "yaml", "pykubeadm.api.v1beta4", "pykubeadm.pki")

#: What an init that talks to no cluster must not import: the addons' objects, the preflight checks, the v1beta3 models
#: (the config is v1beta4), the Kubernetes client and its HTTP stack, and stacked etcd's client.
OFFLINE_INIT_UNUSED = (
    "pykubeadm.phases.addons",
    "pykubeadm.preflight",
    "pykubeadm.api.v1beta3",
    "lightkube",
    "httpx2",
    "etcd3gw",
)

#: What declaring join's phase tree (a worker join imports it before any phase runs) must not import: the client,
#: etcd's client and init's phases (the control-plane join's, imported when those phases run).
JOIN_TREE_UNUSED = ("lightkube", "httpx2", "etcd3gw", "pykubeadm.phases.init")

CONFIG = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.10.1
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
encryptionAlgorithm: ECDSA-P256
"""


def _imported(python_args: list[str], timeout: float = 60, netns: list[str] | None = None) -> set[str]:
    """The modules `python -X importtime ARGS` imports (as -X importtime names them: a module imported through
    importlib.import_module is not listed itself, only what it imports with `import`); run under the `netns` prefix."""
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    proc = subprocess.run(
        [*(netns or []), sys.executable, "-X", "importtime", *python_args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    other = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 0, "\n".join([proc.stdout[-2000:], *other[-40:]])
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def imported_modules(*args: str, timeout: float = 60, netns: list[str] | None = None) -> set[str]:
    names = _imported(["-m", "pykubeadm", *args], timeout, netns)
    assert "pykubeadm.cli.main" in names, sorted(names)
    return names


def _matching(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("args", [("version",), ("--help",), ("version", "-o", "short")])
def test_light_commands_import_no_heavy_module(args):
    names = imported_modules(*args)
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY or n in HEAVY or n.startswith(HEAVY))
    assert heavy == [], f"`pykubeadm {' '.join(args)}` imported {heavy}"


def test_a_command_that_needs_the_config_api_still_gets_it():
    # The guard above means something: `config print init-defaults` really loads the models.
    names = imported_modules("config", "print", "init-defaults")
    assert "msgspec" in names and "pykubeadm.api.v1beta4" in names


def test_offline_init_imports_only_the_phases_it_runs(tmp_path: Path, own_netns: list[str]) -> None:
    # certs, kubeconfig, etcd, control-plane and kubelet-start: files under the root and the built-in kubelet (in a
    # network namespace of the test's own, with its control plane).
    root = tmp_path / "node1"
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    try:
        names = imported_modules(
            "--root-dir",
            str(root),
            "init",
            f"--skip-phases=preflight,{OFFLINE_SKIP}",
            "--config",
            str(config),
            timeout=120,
            netns=own_netns,
        )
    finally:
        stop_kubelet(Layout(root=root))
    assert (root / "etc/kubernetes/manifests/kube-apiserver.yaml").exists()
    assert _matching(names, OFFLINE_INIT_UNUSED) == []
    # The guard means something: the phases that ran loaded what they use.
    assert {"pykubeadm.phases.init.certs", "pykubeadm.manifests", "pykubeadm.phases.kubelet"} <= names


def test_join_phase_tree_imports_no_cluster_client() -> None:
    names = _imported(["-c", "import pykubeadm.phases.join"])
    assert "pykubeadm.phases.join.control_plane" in names
    assert _matching(names, JOIN_TREE_UNUSED) == []


_WORKER_RUN_IMPORTS = """
import ast, importlib, sys
from pathlib import Path

import pykubeadm.phases.join as join
from pykubeadm.api import load_join_config  # what `join` imports to read its configuration

for name in join.WORKER_RUN_MODULES:
    importlib.import_module(name)
before = set(sys.modules)
for phase in ("preflight", "kubelet_start", "kubelet_wait_bootstrap", "cluster"):
    tree = ast.parse(Path(join.__file__).with_name(phase + ".py").read_text())
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        importlib.import_module(alias.name)
                elif isinstance(node, ast.ImportFrom) and node.module:
                    importlib.import_module(node.module)
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_worker_run_modules_cover_what_a_worker_joins_phases_import() -> None:
    # WORKER_RUN_MODULES is what a process that forks joins imports beforehand: the imports in the worker phases' run
    # functions must find their modules already there.
    proc = subprocess.run([sys.executable, "-c", _WORKER_RUN_IMPORTS], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == []


_FIRST_REQUEST = """
import base64, importlib, sys

import pykubeadm.phases.join as join
from pykubeadm.api import load_join_config  # what `join` imports to read its configuration

for name in join.WORKER_RUN_MODULES:
    importlib.import_module(name)
from lightkube import KubeConfig
from lightkube.resources.core_v1 import Node

from pykubeadm.client import sync_client

port, ca = sys.argv[1], open(sys.argv[2], "rb").read()
config = KubeConfig.from_dict({
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "c",
    "clusters": [{"name": "c", "cluster": {
        "server": f"https://127.0.0.1:{port}", "certificate-authority-data": base64.b64encode(ca).decode()}}],
    "users": [{"name": "u", "user": {"token": "abcdef.0123456789abcdef"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
})
before = set(sys.modules)
with sync_client(config) as client:
    assert list(client.list(Node)) == []
print(" ".join(sorted(set(sys.modules) - before)))
"""


class _NodeList(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_worker_run_modules_cover_a_first_api_request(tmp_path: Path) -> None:
    # A forked join's first request (discovery, the ConfigMaps) must find its HTTP transport already imported:
    # util.httpclienttransport over http.client, not httpcore2 with h11, h2 and anyio and truststore (tens of ms in
    # every join the lab forks).
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
            *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NodeList)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        proc = subprocess.run(
            [sys.executable, "-c", _FIRST_REQUEST, str(port), str(cert)], capture_output=True, text=True, timeout=60
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == []


def test_the_dns_servers_forwarding_imports_no_dns_over_https_client() -> None:
    # CoreDNS's forward plugin speaks UDP and TCP: dnspython's DoH/DoQ clients (httpcore, h2, anyio) are not loaded.
    names = _imported(["-c", "import pykubeadm.dns.plugins.forward"])
    assert "dns.asyncquery" in names  # the guard means something: the plugin's DNS client is loaded
    assert _matching(names, ("httpcore2", "h2", "anyio", "aioquic")) == []
