"""Waiting for the kubelet and the control-plane components to be healthy (kubeadm's wait-control-plane, 1.33 shape).

The kubelet is checked at http://<healthzBindAddress>:<healthzPort>/healthz; each control-plane component at the URL its
static Pod manifest's probe names (scheme, host, port, path), as kubeadm derives them. Certificates are not verified
(kubeadm's check does the same); a failure names the component and its last error.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pykubeadm.api._base import format_duration
from pykubeadm.errors import KubeadmError
from pykubeadm.util.endpoint import join_host_port
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "KUBELET_TROUBLESHOOTING",
    "ComponentCheck",
    "component_checks",
    "kubelet_healthz_url",
    "wait_healthy",
    "wait_kubelet_healthy",
]

#: kubeadm's likely causes of an unhealthy kubelet and how to look into it (plus where the built-in kubelet logs).
KUBELET_TROUBLESHOOTING = """\t- The kubelet is not running
\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)

If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:
\t- 'systemctl status kubelet'
\t- 'journalctl -xeu kubelet'
With the built-in kubelet, its log is {log}"""


#: Seconds between two health requests to a component whose port is open (before, only a TCP connect is tried, at the
#: `wait_healthy` interval).
REQUEST_INTERVAL = 0.1


@dataclass(frozen=True)
class ComponentCheck:
    name: str
    url: str


def _probe_url(manifest: Path, default_path: str) -> str:
    pod = load_yaml(manifest.read_text())
    container = pod["spec"]["containers"][0]
    probe = container.get("startupProbe") or container.get("livenessProbe") or {}
    get = probe.get("httpGet") or {}
    host = get.get("host") or "127.0.0.1"
    scheme = (get.get("scheme") or "HTTPS").lower()
    port = get.get("port")
    if port is None:  # an httpGet probe must name its port (the API rejects one without)
        raise KubeadmError(
            f"static Pod manifest {manifest}: the container's startup/liveness probe has no httpGet port"
        )
    return f"{scheme}://{join_host_port(host, port)}{default_path}"


def kubelet_healthz_url(config_file: Path, fallback: dict | None = None) -> str:
    """The kubelet's healthz URL from the KubeletConfiguration it runs with (the written, patched config.yaml)."""
    try:
        cfg = load_yaml(config_file.read_text()) or {}
    except (OSError, yaml.YAMLError):
        cfg = fallback or {}
    host = cfg.get("healthzBindAddress") or "127.0.0.1"
    port = cfg.get("healthzPort") or 10248
    return f"http://{host}:{port}/healthz"


def component_checks(manifests: dict[str, Path]) -> list[ComponentCheck]:
    """The 1.33 checks: kube-apiserver /livez, kube-controller-manager /healthz, kube-scheduler /livez."""
    paths = {"kube-apiserver": "/livez", "kube-controller-manager": "/healthz", "kube-scheduler": "/livez"}
    return [ComponentCheck(name, _probe_url(manifests[name], paths[name])) for name in paths if name in manifests]


def _refused(url: str) -> str | None:
    """Go's error text when nothing listens on the URL's port yet, else None. A TCP connect costs far less CPU than
    an HTTPS request (a new TLS context and handshake), so the wait can look often while the component starts."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=1.0).close()
    except ConnectionRefusedError:
        return f'Get "{url}": dial tcp {join_host_port(host, port)}: connect: connection refused'
    except OSError:
        return None  # the request will tell what is wrong
    return None


def _insecure_client(timeout: float = 2.0) -> Any:
    """An HTTP client that does not verify the server's certificate (kubeadm's health checks do not either)."""
    from pykubeadm.util.httpclienttransport import sync_http_client  # only the phase that waits needs it

    return sync_http_client(False, timeout)


def _check_once(url: str, client: Any) -> str | None:
    """None when healthy, else the error text. `client` (`_insecure_client()`) keeps its connection alive from poll to
    poll: no new TLS handshake each time."""
    import httpx2 as httpx

    try:
        r = client.get(url)
    except httpx.ConnectError as err:  # the component went away: Go's text if its port is closed now
        return _refused(url) or f'Get "{url}": {err}'
    except httpx.HTTPError as err:
        return f'Get "{url}": {err}'
    if r.status_code != 200:
        return f"{url} returned HTTP {r.status_code}: {r.text.strip()[:200]}"
    return None


def wait_healthy(
    checks: list[ComponentCheck],
    timeout: float,
    report: Callable[[str], None],
    prefix: str = "[control-plane-check]",
    interval: float = 0.02,
) -> None:
    """Poll every check concurrently until healthy; report "<name> is healthy after <dur>" in completion order."""
    start = time.monotonic()

    def one(check: ComponentCheck) -> tuple[ComponentCheck, float]:
        last: str | None = "not checked"
        with contextlib.ExitStack() as stack:
            client = None
            while time.monotonic() - start < timeout:
                refused = _refused(check.url) if client is None else None
                if not refused and client is None:  # then one client, its connection kept alive from poll to poll
                    client = stack.enter_context(_insecure_client())
                last = refused or _check_once(check.url, client)
                if last is None:
                    return check, time.monotonic() - start
                # until the port is open a check is one TCP connect: look often; then a request each time
                time.sleep(interval if refused else max(interval, REQUEST_INTERVAL))
        raise KubeadmError(f"{check.name} check failed at {check.url}: {last}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        futures = [pool.submit(one, chk) for chk in checks]
        errors = []
        for fut in concurrent.futures.as_completed(futures):
            try:
                check, took = fut.result()
            except KubeadmError as err:
                errors.append(str(err))
                continue
            report(f"{prefix} {check.name} is healthy after {format_seconds(took)}")
        if errors:
            raise KubeadmError("; ".join(sorted(errors)))


def wait_kubelet_healthy(url: str, timeout: timedelta, report: Callable[[str], None]) -> None:
    """kubeadm's [kubelet-check]: announce the wait, then poll the kubelet's healthz at `url` until `timeout`."""
    report(f"[kubelet-check] Waiting for a healthy kubelet at {url}. This can take up to {format_duration(timeout)}")
    wait_healthy([ComponentCheck("The kubelet", url)], timeout.total_seconds(), report, "[kubelet-check]")


def format_seconds(seconds: float) -> str:
    """A Go-like duration for messages: 512.345ms, 1.234s, 1m2.5s."""
    if seconds < 1:
        return f"{seconds * 1000:.6g}ms"
    if seconds < 60:
        return f"{seconds:.9g}s"
    m, s = divmod(seconds, 60)
    return f"{int(m)}m{s:.9g}s"
