"""kube-bench's serving flags on a real apiserver: --tls-min-version and --tls-cipher-suites on the serving socket
(checked with openssl s_client), --profiling on and off, --feature-gates at start, --event-ttl."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration


def _s_client(api: ApiServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["openssl", "s_client", "-connect", f"{api.host}:{api.port}", "-CAfile", str(api.pki.ca_cert), *args],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _status(api: ApiServer, path: str, kubeconfig: Path | None = None) -> str:
    res = api.kubectl("get", "--raw", path, kubeconfig=kubeconfig, check=False)
    return res.stdout if res.returncode == 0 else res.stderr


def test_tls13_only_profiling_off_and_event_ttl(tmp_path: Path) -> None:
    flags = ["--tls-min-version=VersionTLS13", "--profiling=false", "--event-ttl=2s", "--feature-gates=WatchList=true"]
    with running_apiserver(tmp_path / "api", extra_flags=flags) as api:
        tls12 = _s_client(api, "-tls1_2")
        assert tls12.returncode != 0 and "Cipher is (NONE)" in tls12.stdout  # no TLS 1.2 session
        tls13 = _s_client(api, "-tls1_3")
        assert tls13.returncode == 0 and "TLSv1.3" in tls13.stdout
        assert api.kubectl("get", "ns", "default", "-o", "name").stdout.strip() == "namespace/default"

        missing = _status(api, "/debug/pprof/")
        assert "NotFound" in missing or "could not find the requested resource" in missing

        api.kubectl(
            "create",
            "-f",
            "-",
            input='{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},'
            '"involvedObject":{"kind":"Namespace","name":"default"},"reason":"Test","message":"m","type":"Normal"}',
        )
        deadline = time.monotonic() + 20
        while api.kubectl("get", "events", "e1", "-o", "name", check=False).returncode == 0:
            assert time.monotonic() < deadline, "the event outlived --event-ttl"
            time.sleep(0.2)
        assert "feature gates: WatchList=true" in api.log_path.read_text()


def test_cipher_suites_and_profiling_for_authorized_users_only(tmp_path: Path) -> None:
    flags = ["--tls-min-version=VersionTLS12", "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
    with running_apiserver(tmp_path / "api", extra_flags=flags) as api:
        ok = _s_client(api, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384")
        assert ok.returncode == 0 and "ECDHE-ECDSA-AES256-GCM-SHA384" in ok.stdout
        refused = _s_client(api, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256")
        assert refused.returncode != 0 and "Cipher is (NONE)" in refused.stdout

        index = _status(api, "/debug/pprof/")
        assert "goroutine" in index
        assert "task " in _status(api, "/debug/pprof/goroutine?debug=1")
        denied = _status(api, "/debug/pprof/", kubeconfig=api.kubeconfig_for("bob"))
        assert "Forbidden" in denied and '"/debug/pprof/"' in denied


@pytest.mark.parametrize(
    ("flag", "needle"),
    [
        ("--feature-gates=NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        ("--tls-cipher-suites=TLS_NOT_A_SUITE", "Cipher suite TLS_NOT_A_SUITE not supported or doesn't exist"),
        ("--tls-min-version=VersionTLS14", 'unknown tls version "VersionTLS14"'),
    ],
)
def test_bad_flags_stop_the_apiserver(tmp_path: Path, flag: str, needle: str) -> None:
    api = ApiServer(tmp_path / "api", extra_flags=[flag], audit_log=False)
    res = subprocess.run(api.command(), capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0 and needle in res.stderr, res.stderr
