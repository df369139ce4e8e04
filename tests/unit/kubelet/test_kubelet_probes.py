"""Probes against real local servers: HTTP, HTTPS (unverified, as the kubelet does), TCP, named ports, failures."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.kubelet.probes import Probe, run_probe
from pykubeadm.testing.webapp import serve_app


async def _serve(tmp_path, tls: bool):
    async def ok(_):
        return web.Response(text="ok")

    async def bad(_):
        return web.Response(status=500)

    app = web.Application()
    app.router.add_get("/livez", ok)
    app.router.add_get("/bad", bad)
    runner = web.AppRunner(app)
    await runner.setup()
    ctx = None
    if tls:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "self")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(1)
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
            .sign(key, hashes.SHA256())
        )
        (tmp_path / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (tmp_path / "k.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, port


async def test_http_and_https_probes(tmp_path):
    runner, port = await _serve(tmp_path, tls=False)
    try:
        ok = Probe.parse({"httpGet": {"path": "/livez", "port": port}})
        assert (await run_probe(ok, "127.0.0.1")).ok
        bad = Probe.parse({"httpGet": {"path": "/bad", "port": "probe-port"}})
        res = await run_probe(bad, "127.0.0.1", {"probe-port": port})
        assert not res.ok and "500" in res.message
    finally:
        await runner.cleanup()
    runner, port = await _serve(tmp_path, tls=True)
    try:
        https = Probe.parse({"httpGet": {"host": "127.0.0.1", "path": "/livez", "port": port, "scheme": "HTTPS"}})
        assert (await run_probe(https, "10.255.255.1")).ok  # host overrides the pod IP
    finally:
        await runner.cleanup()


async def test_tcp_probe_and_refused_connection():
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        assert (await run_probe(Probe.parse({"tcpSocket": {"port": port}}), "127.0.0.1")).ok
    finally:
        server.close()
        await server.wait_closed()
    res = await run_probe(Probe.parse({"tcpSocket": {"port": port}, "timeoutSeconds": 1}), "127.0.0.1")
    assert not res.ok
    assert res.message == f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    res = await run_probe(Probe.parse({"httpGet": {"port": port, "path": "/healthz"}}), "127.0.0.1")
    assert (res.ok, res.message) == (False, f"dial tcp 127.0.0.1:{port}: connect: connection refused")


async def test_an_http_probe_does_not_follow_a_redirect():  # 3xx is a success, as the kubelet's prober counts it
    async def redirect(_request: web.Request) -> web.Response:
        raise web.HTTPFound("http://127.0.0.1:1/elsewhere")

    app = web.Application()
    app.router.add_get("/", redirect)
    async with serve_app(app) as url:
        port = int(url.rsplit(":", 1)[1])
        assert (await run_probe(Probe.parse({"httpGet": {"port": port}}), "127.0.0.1")).ok


def test_probe_defaults():
    p = Probe.parse({"httpGet": {"port": 1}})
    assert (p.period, p.timeout, p.failure_threshold, p.success_threshold, p.initial_delay) == (10, 1, 3, 1, 0)
    assert Probe.parse(None) is None
