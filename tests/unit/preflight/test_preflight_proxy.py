"""Go's ProxyFromEnvironment rules as the HTTPProxy checks use them."""

from __future__ import annotations

import pytest

from pykubeadm.preflight.proxy import proxy_for


@pytest.mark.parametrize(
    ("url", "env", "want"),
    [
        ("https://10.0.0.1", {}, None),
        ("https://10.0.0.1", {"https_proxy": "http://p:1"}, "http://p:1"),
        ("https://10.0.0.1", {"HTTP_PROXY": "http://p:1"}, None),
        ("http://10.0.0.1/", {"HTTP_PROXY": "p:1"}, "http://p:1"),
        ("https://localhost", {"HTTPS_PROXY": "http://p:1"}, None),
        ("https://[::1]:1234", {"HTTPS_PROXY": "http://p:1"}, None),
        ("https://10.0.0.1", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, None),
        ("https://10.0.0.1", {"HTTPS_PROXY": "http://p:1", "no_proxy": "10.0.0.1"}, None),
        ("https://10.0.0.1", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, None),
        ("https://[fd00::1]:1234", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "fd00::/64"}, None),
        ("https://api.example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, None),
        ("https://example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "http://p:1"),
        ("https://10.0.0.1", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.1:80"}, "http://p:1"),
    ],
)
def test_proxy_for(url: str, env: dict[str, str], want: str | None) -> None:
    assert proxy_for(url, env) == want
