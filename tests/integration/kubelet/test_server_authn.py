"""The kubelet's :10250 server answers bad client certificates with 401 Unauthorized (as the Go kubelet does), instead
of dropping the TLS handshake; a certificate from clientCAFile still authenticates. Real TLS on 127.0.0.1."""

from __future__ import annotations

import asyncio
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography.x509.oid import ExtendedKeyUsageOID

from pykubeadm.kubelet.server import KubeletServer, serving_ssl_context
from pykubeadm.pki.certs import CertConfig, encode_cert_pem, new_cert_and_key, new_self_signed_ca, try_load_cert
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key, parse_private_key_pem
from pykubeadm.testing.apiserver import free_port, generate_pki

pytestmark = pytest.mark.integration


def _write(d: Path, name: str, cert, key) -> tuple[str, str]:
    (d / f"{name}.crt").write_bytes(encode_cert_pem(cert))
    (d / f"{name}.key").write_bytes(encode_private_key_pem(key))
    return str(d / f"{name}.crt"), str(d / f"{name}.key")


async def test_bad_client_certificates_get_401_and_good_ones_are_served(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki")
    ca_cert, ca_key = try_load_cert(pki.dir, "ca"), parse_private_key_pem(pki.ca_key.read_bytes())
    now = datetime.now(UTC)
    client = (ExtendedKeyUsageOID.CLIENT_AUTH,)
    foreign_key = generate_private_key()
    foreign_ca = new_self_signed_ca(CertConfig("foreign-ca"), foreign_key)
    certs = {
        "good": (str(pki.admin_cert), str(pki.admin_key)),
        "expired": _write(
            tmp_path,
            "expired",
            *new_cert_and_key(
                ca_cert,
                ca_key,
                CertConfig("admin", ("system:masters",), usages=client).with_validity(
                    now - timedelta(days=400), now - timedelta(days=1)
                ),
            ),
        ),
        "foreign": _write(tmp_path, "foreign", *new_cert_and_key(foreign_ca, foreign_key, CertConfig("admin"))),
        "server-only": _write(
            tmp_path,
            "server-only",
            *new_cert_and_key(ca_cert, ca_key, CertConfig("admin", usages=(ExtendedKeyUsageOID.SERVER_AUTH,))),
        ),
    }
    server = KubeletServer(
        node_name="n1",
        client=lambda: None,
        pods=lambda: [],
        anonymous=False,
        webhook_authn=False,
        authorization_mode="AlwaysAllow",
    )
    runner = web.AppRunner(server.app())
    await runner.setup()
    port = free_port()
    ctx = serving_ssl_context(str(pki.serving_cert), str(pki.serving_key), str(pki.ca_cert))
    site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx)
    await site.start()
    try:

        async def get(which: str | None) -> tuple[int, str]:
            cctx = ssl.create_default_context(cafile=str(pki.ca_cert))
            if which is not None:
                cctx.load_cert_chain(*certs[which])
            async with (
                aiohttp.ClientSession() as s,
                s.get(f"https://127.0.0.1:{port}/pods", ssl=cctx, timeout=aiohttp.ClientTimeout(total=20)) as r,
            ):
                return r.status, await r.text()

        status, body = await get("good")
        assert status == 200 and '"kind": "PodList"' in body
        for which in ("expired", "foreign", "server-only", None):
            assert await get(which) == (401, "Unauthorized"), which
    finally:
        await asyncio.wait_for(runner.cleanup(), 20)
