"""Clock skew of 10 minutes, with the clocks of real processes shifted by libfaketime (Debian's `faketime` package;
LD_PRELOAD of libfaketime.so.1 into our Python processes — Go's kubectl keeps the real clock). Kube's tolerances:

* service-account tokens: exp, nbf and iat are judged by the apiserver's clock with go-jose's one-minute leeway, so an
  apiserver 10 minutes behind the token's issuer (another apiserver of the cluster, with the right time: played by the
  test, which signs the token with the cluster's service-account key) rejects it, 30 s behind accepts it, 2 h ahead
  sees it expired;
* bootstrap tokens: `expiration` is judged by the apiserver's clock alone, with no leeway; a node whose clock is 10
  minutes ahead still bootstraps with a token that expires in 5 minutes, an apiserver 10 minutes ahead rejects it;
* certificates: csrsigning backdates NotBefore by 5 minutes; a node 10 minutes ahead uses its certificate; a node 10
  minutes behind cannot even verify the apiserver's serving certificate (NotBefore in its future) and says so.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import time
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from tests.integration.faults.node import Node, approve_and_sign, eventually, pending_csr, ready_node
from tests.integration.kubelet.controlplane import ControlPlane, setup_bootstrap
from tests.unit.apiserver_auth.helpers import mint_jwt

from pykubeadm.testing.apiserver import ApiServer

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not LIBFAKETIME.exists(), reason="libfaketime missing (scripts/setup.sh installs faketime)"),
]

TOKEN_ID, TOKEN_SECRET = "skewed", "0123456789skewed"
ADMIN_TOKEN = "faults-admin-token-0123456789"


def faketime_env(offset_file: Path) -> dict[str, str]:
    """A process clock shifted by the offset written in `offset_file` (re-read at most once a second). The monotonic
    clock moves with it (libfaketime 0.9.10's FAKETIME_DONT_FAKE_MONOTONIC makes our processes ~10x slower), so
    offsets only ever move forward in a test: a monotonic clock going back would stall the process's timers."""
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(offset_file),
        "FAKETIME_CACHE_DURATION": "1",
    }


class SkewedApiServer(ApiServer):
    """The shared launcher's apiserver with its clock shifted through libfaketime."""

    def __init__(self, directory: Path, offset_file: Path, **kwargs: object):
        directory.mkdir(parents=True, exist_ok=True)
        # the cluster CA's NotBefore is 5 minutes ago: an apiserver 10 minutes behind accepts no client certificate
        # of it, so the test's admin authenticates with a static token (--token-auth-file), which has no validity
        tokens = directory / "tokens.csv"
        tokens.write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n')
        super().__init__(directory, extra_flags=[f"--token-auth-file={tokens}"], **kwargs)  # type: ignore[arg-type]
        self.offset_file = offset_file
        self.admin_token_kubeconfig = self.kubeconfig_token(ADMIN_TOKEN, "admin-token")

    def command(self) -> list[str]:
        return ["env", *(f"{k}={v}" for k, v in faketime_env(self.offset_file).items()), *super().command()]

    def _ssl(self) -> ssl.SSLContext:  # the readiness probe: anonymous (system:public-info-viewer may get /readyz)
        return ssl.create_default_context(cafile=str(self.pki.ca_cert))


def bound_token(api: ApiServer, namespace: str, name: str, uid: str) -> str:
    """A bound service-account token as TokenRequest issues it (iat = nbf = now, 1 h), by the real clock."""
    now = int(time.time())
    issuer = "https://kubernetes.default.svc.cluster.local"
    claims = {
        "iss": issuer,
        "sub": f"system:serviceaccount:{namespace}:{name}",
        "aud": [issuer],
        "iat": now,
        "nbf": now,
        "exp": now + 3600,
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
    }
    return mint_jwt(serialization.load_pem_private_key(api.pki.sa_key.read_bytes(), None), claims)


def whoami(api: ApiServer, kubeconfig: Path) -> str:
    """The username the apiserver authenticates the kubeconfig's credential as, or the error kubectl printed."""
    res = api.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig, check=False)
    if res.returncode != 0:
        return res.stderr.strip()
    return str(json.loads(res.stdout)["status"]["userInfo"]["username"])


def until(pred, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def test_token_validity_by_the_apiserver_clock(tmp_path: Path) -> None:
    offset = tmp_path / "apiserver-clock"
    offset.write_text("-10m\n")  # from its start: offsets only move forward (see faketime_env)
    api = SkewedApiServer(tmp_path / "api", offset, host="127.0.19.20", audit_log=False)
    try:
        api.start(timeout=60)
        admin = api.admin_token_kubeconfig
        api.kubectl("create", "serviceaccount", "skewed", "-n", "default", kubeconfig=admin)
        sa = json.loads(api.kubectl("get", "sa", "skewed", "-n", "default", "-o", "json", kubeconfig=admin).stdout)
        token = bound_token(api, "default", "skewed", sa["metadata"]["uid"])
        expires = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{TOKEN_ID}", "namespace": "kube-system"},
            "stringData": {
                "token-id": TOKEN_ID,
                "token-secret": TOKEN_SECRET,
                "expiration": expires,
                "usage-bootstrap-authentication": "true",
            },
        }
        api.kubectl("create", "-f", "-", input=yaml.safe_dump(secret), kubeconfig=admin)
        sa_kc = api.kubeconfig_token(token, "sa")
        boot_kc = api.kubeconfig_token(f"{TOKEN_ID}.{TOKEN_SECRET}", "bootstrap")
        sa_user, boot_user = "system:serviceaccount:default:skewed", f"system:bootstrap:{TOKEN_ID}"

        def at(shift: str, kubeconfig: Path, expected: str) -> None:
            offset.write_text(f"{shift}\n")
            until(lambda: expected in whoami(api, kubeconfig), 15, f"{expected!r} with the apiserver at {shift}")

        # the apiserver 10 minutes behind the token's issuer: nbf/iat in its future, beyond the leeway
        at("-10m", sa_kc, "Unauthorized")
        # 30 seconds behind: within the one-minute leeway
        at("-30s", sa_kc, sa_user)
        # the bootstrap token (expires in 5 minutes): the apiserver's clock alone decides, with no leeway
        at("+4m", boot_kc, boot_user)
        at("+10m", boot_kc, "Unauthorized")
        # 2 hours ahead: past the service-account token's exp (1 h) and the leeway
        at("+2h", sa_kc, "Unauthorized")
        log = api.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
    finally:
        api.stop()


async def test_nodes_ten_minutes_off(tmp_path: Path) -> None:
    cp = ControlPlane(tmp_path / "cp", host="127.0.19.21")
    admin = cp.admin()
    ahead_clock, behind_clock = tmp_path / "ahead-clock", tmp_path / "behind-clock"
    ahead_clock.write_text("+10m\n")
    behind_clock.write_text("-10m\n")
    token = f"{TOKEN_ID}.{TOKEN_SECRET}"
    ahead = Node(tmp_path, cp, "ahead", "127.0.19.22", token, env=faketime_env(ahead_clock))
    behind = Node(tmp_path, cp, "behind", "127.0.19.23", token, env=faketime_env(behind_clock))
    now = lambda: dt.datetime.now(dt.UTC)  # noqa: E731
    try:
        cp.start()
        # the token expires in 5 minutes by the apiserver's clock (already expired by the ahead node's)
        await setup_bootstrap(admin, TOKEN_ID, TOKEN_SECRET, dt.timedelta(minutes=5))
        ahead.kubelet.start()
        behind.kubelet.start()
        csr = await eventually(lambda: pending_csr(admin, f"system:bootstrap:{TOKEN_ID}", set()), 60, "ahead's CSR")
        assert csr["spec"]["request"]
        # csrsigning's template: NotBefore backdated 5 minutes
        cert = await approve_and_sign(admin, cp, csr, now() - dt.timedelta(minutes=5), now() + dt.timedelta(days=1))
        assert cert.subject.rfc4514_string() == "CN=system:node:ahead,O=system:nodes"
        await eventually(lambda: ready_node(admin, "ahead"), 60, "Node ahead Ready")

        # the node behind: the apiserver's serving certificate (NotBefore 5 minutes ago) is not valid yet for it
        deadline = time.monotonic() + 30
        while "certificate is not yet valid" not in behind.kubelet.log():
            assert time.monotonic() < deadline, behind.kubelet.log()[-3000:]
            time.sleep(0.2)
        assert await pending_csr(admin, f"system:bootstrap:{TOKEN_ID}", {csr["metadata"]["name"]}) is None
        assert not behind.current_pem.exists()
        assert behind.kubelet.proc is not None and behind.kubelet.proc.poll() is None
    finally:
        ahead.kubelet.stop()
        behind.kubelet.stop()
        await admin.close()
        cp.stop()
