"""Would Go's http.ProxyFromEnvironment send a request through a proxy? (used by the HTTPProxy* preflight checks).

Rules of golang.org/x/net/http/httpproxy: HTTPS_PROXY/https_proxy for https URLs, HTTP_PROXY/http_proxy for http;
localhost and loopback IPs never use a proxy; NO_PROXY/no_proxy entries are `*`, IPs, CIDRs, or domains (`foo.com`
matches itself and sub-domains, `.foo.com` only sub-domains), optionally with `:port`.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["proxy_for"]


def _env(env: Mapping[str, str], *names: str) -> str:
    for n in names:
        v = env.get(n)
        if v:
            return v
    return ""


def _no_proxy_matches(host: str, port: str, no_proxy: str) -> bool:
    ip = None
    with contextlib.suppress(ValueError):
        ip = ipaddress.ip_address(host)
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:
            try:
                if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        e_host, e_port = entry, ""
        if entry.startswith("["):
            e_host, _, rest = entry[1:].partition("]")
            e_port = rest.lstrip(":")
        elif entry.count(":") == 1:
            e_host, e_port = entry.split(":")
        if e_port and e_port != port:
            continue
        e_ip = None
        with contextlib.suppress(ValueError):
            e_ip = ipaddress.ip_address(e_host)
        if e_ip is not None:
            if ip is not None and ip == e_ip:
                return True
            continue
        h = host.lower()
        if e_host.startswith("*."):
            e_host = e_host[1:]
        if e_host.startswith("."):
            if h.endswith(e_host):
                return True
        elif h == e_host or h.endswith("." + e_host):
            return True
    return False


def proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy URL Go would use for `url`, or None."""
    u = urlsplit(url)
    scheme = u.scheme
    proxy = _env(env, "HTTPS_PROXY", "https_proxy") if scheme == "https" else _env(env, "HTTP_PROXY", "http_proxy")
    if not proxy:
        return None
    host = u.hostname or ""
    port = str(u.port or (443 if scheme == "https" else 80))
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    if _no_proxy_matches(host, port, _env(env, "NO_PROXY", "no_proxy")):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    return proxy
