"""TLS client contexts shared by the components' clients."""

from __future__ import annotations

import ssl

__all__ = ["insecure_client_context"]


def insecure_client_context() -> ssl.SSLContext:
    """A TLS client context that verifies neither the server's certificate nor its name, and loads no CA bundle:
    kubeadm's health checks, token discovery's first request, probes, the API server's kubelet and aggregated-API
    connections where their configuration says so. A client certificate may still be loaded into it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
