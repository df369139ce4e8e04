"""What the apiserver's start does not import: code only some flags or requests need (encryption at rest, JWT/OIDC
issuers with their CEL and protobuf, exec/attach/portforward streaming, PyYAML for YAML bodies and config files, time
zones for CronJobs) is imported when that flag or request comes, so every control plane's start does not pay for it."""

import json
import subprocess
import sys

from pykubeadm.apiserver.handlers import dispatch, podconnect

#: Modules a plain start (no --encryption-provider-config, --oidc-*, --authentication-config, --audit-policy-file or
#: --admission-control-config-file; no exec, no YAML) must not load.
LAZY = (
    "pykubeadm.apiserver.encryption.config",
    "pykubeadm.apiserver.encryption.providers",
    "pykubeadm.apiserver.authn.jwt",
    "google.protobuf",
    "pykubeadm.apiserver.handlers.podconnect",
    "pykubeadm.apiserver.handlers.streamtranslate",
    "yaml",
    "zoneinfo",
)


def test_server_and_auth_wiring_modules_leave_optional_code_unimported() -> None:
    code = (
        "import json, sys\n"
        "import pykubeadm.apiserver.server, pykubeadm.apiserver.wiring, pykubeadm.apiserver.options\n"
        f"print(json.dumps([m for m in {list(LAZY)!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == []


def test_dispatch_routes_exactly_podconnects_subresources() -> None:
    assert set(podconnect.CONNECT_SUBRESOURCES) == dispatch._CONNECT
