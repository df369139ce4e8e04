"""Token discovery for `join` (kubeadm's discovery/token): find and trust the cluster CA using only a bootstrap token.

1. Fetch kube-public/cluster-info anonymously *without* trusting the server (TLS unverified).
2. Require the `jws-kubeconfig-<token-id>` signature and verify it with the token secret (a MITM can't forge it).
3. Take the CA from the signed kubeconfig and check it against the `--discovery-token-ca-cert-hash` pins.
4. Fetch cluster-info again over TLS verified with that CA and require identical content.

Every failure says which step failed and what to do about it; retries (every 5 s by default) only cover what can get
better by waiting (server unreachable, signature not there yet), until the discovery timeout.
"""

from __future__ import annotations

import logging
import math
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from pykubeadm import constants as c
from pykubeadm.bootstrap.jws import detached_token_is_valid
from pykubeadm.bootstrap.token import parse_token
from pykubeadm.errors import KubeadmError
from pykubeadm.kubeconfig.config import parse_kubeconfig
from pykubeadm.pki.certs import parse_certs_pem
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.util.httpclienttransport import sync_http_client

__all__ = ["DiscoveryError", "DiscoveryResult", "discover_with_token", "parse_pins"]

log = logging.getLogger(__name__)

_CLUSTER_INFO_PATH = f"/api/v1/namespaces/{c.NAMESPACE_PUBLIC}/configmaps/{c.CLUSTER_INFO_CONFIGMAP}"
#: Right after `init` the BootstrapSigner may not have signed yet (it signs a few ms to a few hundred ms after init
#: made cluster-info): (attempts, seconds between them) before every `interval`: every 50 ms for the first second,
#: then every 200 ms until ~10 s. One kept-alive connection serves them, so an early, unsigned answer costs a request.
_RETRY_STEPS = ((20, 0.05), (45, 0.2))


class DiscoveryError(KubeadmError):
    """Discovery failed for a reason waiting will not fix."""


class _Retry(Exception):
    """Discovery failed for a reason that may go away (server down, signature not there yet)."""


@dataclass(frozen=True)
class DiscoveryResult:
    #: The API server URL from the signed cluster-info (may differ from the endpoint the user typed).
    server: str
    #: The trusted cluster CA bundle (PEM).
    ca_pem: bytes


def parse_pins(pins: list[str]) -> set[str]:
    """Normalise `sha256:<hex>` pins; errors as kubeadm's pubkeypin.Set.Allow."""
    out: set[str] = set()
    for pin in pins:
        fmt, sep, value = pin.partition(":")
        if not sep:
            raise DiscoveryError(f'invalid hash "{pin}", expected "format:hex-value"')
        if fmt.lower() != "sha256":
            raise DiscoveryError(f'unknown hash format "{fmt}". Known format(s) are: sha256')
        try:
            raw = bytes.fromhex(value)
        except ValueError as err:
            raise DiscoveryError(f'invalid hash "{pin}": {err}') from err
        if len(raw) != 32:
            raise DiscoveryError(f'invalid hash "{pin}": expected a 32 byte SHA-256 hash, found {len(raw)} bytes')
        out.add("sha256:" + value.lower())
    return out


def _get(client: httpx.Client, url: str) -> dict[str, Any]:
    try:
        r = client.get(url)
    except httpx.ConnectError as err:
        cause = err.__cause__ or err
        if isinstance(cause, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(err):
            raise DiscoveryError(
                f"the API server certificate at {url} is not valid for the trusted cluster CA or for the address used: "
                f"{err}. Check that the apiserver certificate has this address in its SANs (apiServer.certSANs)"
            ) from err
        raise _Retry(f'failed to request cluster-info from "{url}": {err}') from err
    except httpx.HTTPError as err:
        raise _Retry(f'failed to request cluster-info from "{url}": {err}') from err
    if r.status_code in (401, 403):
        raise DiscoveryError(
            f"the API server at {url} refused anonymous access to the cluster-info ConfigMap (HTTP {r.status_code}). "
            "Token discovery needs the kubeadm:bootstrap-signer-clusterinfo Role/RoleBinding in kube-public "
            "(run 'kubeadm init phase bootstrap-token' on a control-plane node) and anonymous auth enabled"
        )
    if r.status_code == 404:
        raise _Retry(f"the cluster-info ConfigMap was not found at {url}")
    if r.status_code != 200:
        raise _Retry(f"failed to request cluster-info from {url}: HTTP {r.status_code}")
    return r.json()


class _Unsigned(_Retry):
    """cluster-info has no signature for this token (yet); carries the unsigned kubeconfig for diagnosis."""

    def __init__(self, message: str, kubeconfig: str):
        super().__init__(message)
        self.kubeconfig = kubeconfig


def _verified_kubeconfig(cm: dict[str, Any], token_id: str, token_secret: str) -> str:
    data = cm.get("data") or {}
    kubeconfig = data.get(c.CLUSTER_INFO_KUBECONFIG_KEY)
    if not kubeconfig:
        raise DiscoveryError("there is no kubeconfig key in the cluster-info ConfigMap")
    sig = data.get(c.JWS_SIGNATURE_KEY_PREFIX + token_id)
    if sig is None:
        raise _Unsigned(
            f'the cluster-info ConfigMap does not yet contain a JWS signature for token ID "{token_id}"',
            str(kubeconfig),
        )
    if not detached_token_is_valid(sig, kubeconfig, token_id, token_secret):
        raise DiscoveryError(
            "failed to verify JWS signature of received cluster info object, can't trust this API Server: the "
            "cluster-info content or its signature was altered, or the token secret is wrong"
        )
    return str(kubeconfig)


def _first_cluster(kubeconfig: str) -> tuple[str, bytes]:
    import base64

    cfg = parse_kubeconfig(kubeconfig, "cluster-info")
    clusters = cfg.get("clusters") or []
    if not clusters:
        raise DiscoveryError("the cluster-info ConfigMap doesn't have any cluster entry")
    body = clusters[0].get("cluster") or {}
    server = body.get("server") or ""
    ca = base64.b64decode(body.get("certificate-authority-data") or "")
    if not server or not ca:
        raise DiscoveryError("the cluster-info ConfigMap's cluster entry lacks a server or certificate-authority-data")
    return server, ca


def _check_pins(ca_pem: bytes, pins: set[str]) -> None:
    certs = parse_certs_pem(ca_pem, "cluster-info")
    found = [public_key_pin(cert.public_key()) for cert in certs]
    if not any(h in pins for h in found):
        raise DiscoveryError(
            f"cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "
            f'"{", ".join(found)}" are pinned. Check --discovery-token-ca-cert-hash: on a control-plane node, '
            "'kubeadm token create --print-join-command' prints the right value"
        )


def _diagnose_unsigned(err: _Unsigned, endpoint: str, token: str, pins: set[str]) -> str:
    """Why there is no signature: checked over TLS pinned to the CA hash (so the token is never sent to an untrusted
    server) by asking whether the API server accepts the token at all."""
    hint = " (check 'kubeadm token list' on a control-plane node, or create one with 'kubeadm token create')"
    try:
        _, ca_pem = _first_cluster(err.kubeconfig)
        _check_pins(ca_pem, pins)
    except DiscoveryError as pin_err:
        return f"{err}; and {pin_err}"
    try:
        ctx = ssl.create_default_context(cadata=ca_pem.decode())
        with sync_http_client(ctx, timeout=10.0) as client:
            r = client.get(f"https://{endpoint}/version", headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError:
        return str(err) + ": the token is unknown, expired, deleted, or lacks the 'signing' usage" + hint
    if r.status_code == 401:
        return f"{err}: the API server rejected the token: it is unknown, expired or was deleted" + hint
    return (
        f"{err}: the token is valid for authentication but has no signature: it lacks the 'signing' usage "
        "(create tokens with '--usages signing,authentication'), or the controller-manager's bootstrapsigner "
        "controller is not running"
    )


def _retry_delay(attempt: int, interval: float) -> float:
    """The pause before retry number `attempt` (from 0): `_RETRY_STEPS`, then `interval`."""
    for count, delay in _RETRY_STEPS:
        if attempt < count:
            return min(interval, delay)
        attempt -= count
    return interval


def discover_with_token(
    endpoint: str,
    token: str,
    ca_cert_hashes: list[str],
    *,
    unsafe_skip_ca_verification: bool = False,
    timeout: float = c.DISCOVERY_TIMEOUT.total_seconds(),
    interval: float = c.DISCOVERY_RETRY_INTERVAL.total_seconds(),
    report: Callable[[str], None] = lambda _m: None,
) -> DiscoveryResult:
    """Run token discovery against `endpoint` (`host:port`); see the module docstring."""
    tid, tsecret = parse_token(token)
    pins = parse_pins(ca_cert_hashes)
    if not pins and not unsafe_skip_ca_verification:
        raise DiscoveryError(
            "using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in "
            "your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue"
        )
    url = f"https://{endpoint}{_CLUSTER_INFO_PATH}"
    deadline = time.monotonic() + timeout
    log.info('[discovery] Created cluster-info discovery client, requesting info from "%s"', url)
    attempt = 0
    last_log = -math.inf
    # step 1 trusts nothing (the JWS does); one connection, kept alive across the retries
    with sync_http_client(False, timeout=10.0) as insecure:
        while True:
            try:
                kubeconfig = _verified_kubeconfig(_get(insecure, url), tid, tsecret)
                server, ca_pem = _first_cluster(kubeconfig)
                if unsafe_skip_ca_verification:
                    report(
                        "[discovery] Cluster info signature and contents are valid and no TLS pinning was specified, "
                        f'will use API Server "{endpoint}"'
                    )
                    return DiscoveryResult(server, ca_pem)
                _check_pins(ca_pem, pins)
                log.info(
                    '[discovery] Requesting info from "%s" again to validate TLS against the pinned public key', url
                )
                ctx = ssl.create_default_context(cadata=ca_pem.decode())
                with sync_http_client(ctx, timeout=10.0) as secure:
                    again = (_get(secure, url).get("data") or {}).get(c.CLUSTER_INFO_KUBECONFIG_KEY)
                if again != kubeconfig:
                    raise DiscoveryError(
                        "the cluster-info ConfigMap changed between the unverified and the verified request; "
                        "refusing to trust it (possible man-in-the-middle)"
                    )
                log.info(
                    "[discovery] Cluster info signature and contents are valid and TLS certificate validates against "
                    'pinned roots, will use API Server "%s"',
                    endpoint,
                )
                return DiscoveryResult(server, ca_pem)
            except _Retry as err:
                # Right after `init` the signer may not have run yet: poll quickly for a while, then every `interval`.
                delay = _retry_delay(attempt, interval)
                attempt += 1
                now = time.monotonic()
                if now + delay > deadline:
                    why = (
                        _diagnose_unsigned(err, endpoint, token, pins)
                        if isinstance(err, _Unsigned) and pins
                        else str(err)
                    )
                    raise DiscoveryError(
                        f"abort connecting to API servers after timeout of {timeout:g}s: {why}"
                    ) from err
                if now - last_log >= interval:  # kubeadm's cadence: a line per `interval`, however often it polls
                    log.info("[discovery] %s, will try again", err)
                    last_log = now
                time.sleep(delay)
