"""util.lazytls: aiohttp imported without loading the system CA bundle, whose default context loads it on first use."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, ssl
from pykubeadm.util.lazytls import LazyDefaultContext, import_aiohttp
real = ssl.create_default_context
import_aiohttp()
import aiohttp.connector as conn
ctx = conn._SSL_CONTEXT_VERIFIED
before = ctx.cert_store_stats()["x509_ca"]
ctx.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.org")
standard = real()
print(json.dumps({
    "lazy": isinstance(ctx, LazyDefaultContext),
    "restored": ssl.create_default_context is real,
    "before": before,
    "after": ctx.cert_store_stats()["x509_ca"],
    "standard": standard.cert_store_stats()["x509_ca"],
    "verify": [ctx.verify_mode == standard.verify_mode, ctx.check_hostname == standard.check_hostname],
    "options": ctx.options == standard.options,
}))
"""


def test_aiohttp_default_context_loads_the_system_cas_on_first_use_only() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    got = json.loads(out.stdout)
    assert got["lazy"] and got["restored"]
    assert got["before"] == 0
    assert got["after"] == got["standard"]  # the same CA certificates as ssl.create_default_context() loads
    assert got["verify"] == [True, True] and got["options"]


UNVERIFIED_PROBE = """
import json, ssl
from pykubeadm.util.lazytls import LazyVerifyPathsContext, import_aiohttp
import_aiohttp()
import aiohttp.connector as conn
ctx = conn._SSL_CONTEXT_UNVERIFIED
before = ctx.cert_store_stats()["x509_ca"]
ctx.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.org")
standard = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
standard.set_default_verify_paths()
later = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
later.set_default_verify_paths()
print(json.dumps({
    "lazy": type(ctx) is LazyVerifyPathsContext,
    "restored": "set_default_verify_paths" not in ssl.SSLContext.__dict__ and type(later) is ssl.SSLContext,
    "before": before,
    "after": ctx.cert_store_stats()["x509_ca"],
    "standard": standard.cert_store_stats()["x509_ca"],
    "verify": [ctx.verify_mode == ssl.CERT_NONE, ctx.check_hostname],
}))
"""


def test_aiohttp_unverified_context_loads_the_default_verify_paths_on_first_use_only() -> None:
    out = subprocess.run(
        [sys.executable, "-c", UNVERIFIED_PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    got = json.loads(out.stdout)
    assert got["lazy"] and got["restored"]  # and every context made after the import loads them at once again
    assert got["before"] == 0
    assert got["after"] == got["standard"]
    assert got["verify"] == [True, False]  # still verifies nothing, as aiohttp made it


def test_explicit_cas_are_not_deferred() -> None:
    from pykubeadm.util.lazytls import LazyDefaultContext, _lazy_create_default_context

    ctx = _lazy_create_default_context(cadata=None)
    assert isinstance(ctx, LazyDefaultContext)
    other = _lazy_create_default_context(capath="/nonexistent-dir-for-test")
    assert not isinstance(other, LazyDefaultContext)
