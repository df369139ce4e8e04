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


def test_a_kinds_schema_converts_its_definition_not_all_of_them() -> None:
    code = (
        "from pykubeadm.apiserver.openapi import definitions as d\n"
        "s = d.schema_for('', 'v1', 'ConfigMap')\n"
        "assert s is d.definition('io.k8s.api.core.v1.ConfigMap'), s\n"
        "assert d.definitions.cache_info().currsize == 0, 'every definition was converted'\n"
        "assert d.definitions()['io.k8s.api.core.v1.ConfigMap'] is s\n"
        "assert 'enum' not in s['properties']['kind']\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
