"""Encryption at rest: the providers' stored layout, the EncryptionConfiguration's rules and errors, and the datastore
wrapper (over the in-memory engine; the integration tests use SQLite and etcd)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.secret import SecretBox

from pykubeadm.apiserver.encryption.config import (
    EncryptionConfigError,
    load_encryption_config,
    parse_encryption_config,
)
from pykubeadm.apiserver.encryption.providers import TransformError
from pykubeadm.apiserver.encryption.runtime import EncryptionRuntime
from pykubeadm.apiserver.registry import STRATEGIES
from pykubeadm.storage.memory import MemoryStore
from pykubeadm.storage.transformed import TransformedStore, is_stale

K1 = os.urandom(32)
K2 = os.urandom(32)
KEY = "/registry/secrets/default/s1"


def b64(k: bytes) -> str:
    return base64.b64encode(k).decode()


def cfg(*entries: dict) -> dict:
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": list(entries)}


def aescbc(*keys: tuple[str, bytes]) -> dict:
    return {"aescbc": {"keys": [{"name": n, "secret": b64(k)} for n, k in keys]}}


def test_aescbc_layout_is_prefix_iv_and_pkcs7_cbc() -> None:
    t = parse_encryption_config(cfg({"resources": ["secrets"], "providers": [aescbc(("key1", K1))]})).transformer_for(
        "", "secrets"
    )
    assert t is not None
    stored = t.to_storage(b'{"data":"plain"}', KEY)
    prefix = b"k8s:enc:aescbc:v1:key1:"
    assert stored.startswith(prefix) and b"plain" not in stored
    body = stored[len(prefix) :]
    dec = Cipher(algorithms.AES(K1), modes.CBC(body[:16])).decryptor()
    unpad = padding.PKCS7(128).unpadder()
    plain = unpad.update(dec.update(body[16:]) + dec.finalize()) + unpad.finalize()
    assert plain == b'{"data":"plain"}'
    assert t.from_storage(stored, KEY) == (b'{"data":"plain"}', False)


def test_aesgcm_binds_the_value_to_its_key() -> None:
    k = os.urandom(16)
    doc = cfg({"resources": ["secrets"], "providers": [{"aesgcm": {"keys": [{"name": "g", "secret": b64(k)}]}}]})
    t = parse_encryption_config(doc).transformer_for("", "secrets")
    assert t is not None
    stored = t.to_storage(b"hello", KEY)
    body = stored[len(b"k8s:enc:aesgcm:v1:g:") :]
    assert AESGCM(k).decrypt(body[:12], body[12:], KEY.encode()) == b"hello"
    with pytest.raises(TransformError):
        t.from_storage(stored, "/registry/secrets/default/other")


def test_secretbox_is_nonce_then_nacl_box() -> None:
    doc = cfg({"resources": ["secrets"], "providers": [{"secretbox": {"keys": [{"name": "sb", "secret": b64(K1)}]}}]})
    t = parse_encryption_config(doc).transformer_for("", "secrets")
    assert t is not None
    stored = t.to_storage(b"hello", KEY)
    body = stored[len(b"k8s:enc:secretbox:v1:sb:") :]
    assert SecretBox(K1).decrypt(body[24:], body[:24]) == b"hello"
    assert t.from_storage(stored, KEY) == (b"hello", False)


def test_first_key_writes_every_key_reads_and_old_keys_are_stale() -> None:
    old = parse_encryption_config(cfg({"resources": ["secrets"], "providers": [aescbc(("key1", K1))]}))
    new = parse_encryption_config(
        cfg({"resources": ["secrets"], "providers": [aescbc(("key2", K2), ("key1", K1)), {"identity": {}}]})
    )
    to, tn = old.transformer_for("", "secrets"), new.transformer_for("", "secrets")
    assert to is not None and tn is not None
    v1 = to.to_storage(b"x", KEY)
    assert tn.from_storage(v1, KEY) == (b"x", True)
    assert tn.to_storage(b"x", KEY).startswith(b"k8s:enc:aescbc:v1:key2:")
    assert tn.from_storage(b"plain", KEY) == (b"plain", True)  # identity, listed last, reads old clear values
    with pytest.raises(TransformError, match="no matching prefix found"):
        to.from_storage(b"plain", KEY)


def test_identity_first_reads_encrypted_values_through_later_providers() -> None:
    enc = parse_encryption_config(cfg({"resources": ["secrets"], "providers": [aescbc(("key1", K1))]}))
    dec = parse_encryption_config(
        cfg({"resources": ["secrets"], "providers": [{"identity": {}}, aescbc(("key1", K1))]})
    )
    te, td = enc.transformer_for("", "secrets"), dec.transformer_for("", "secrets")
    assert te is not None and td is not None
    assert td.from_storage(te.to_storage(b"x", KEY), KEY) == (b"x", True)
    assert td.to_storage(b"x", KEY) == b"x"


def test_resource_matching_exact_then_group_wildcard_then_everything() -> None:
    c = parse_encryption_config(
        cfg(
            {"resources": ["secrets", "deployments.apps"], "providers": [aescbc(("exact", K1))]},
            {"resources": ["*.apps"], "providers": [aescbc(("apps", K1))]},
            {"resources": ["*.*"], "providers": [{"identity": {}}]},
        )
    )

    def name(group: str, resource: str) -> bytes:
        t = c.transformer_for(group, resource)
        assert t is not None
        return t.transformers[0].prefix

    assert name("", "secrets") == b"k8s:enc:aescbc:v1:exact:"
    assert name("apps", "deployments") == b"k8s:enc:aescbc:v1:exact:"
    assert name("apps", "daemonsets") == b"k8s:enc:aescbc:v1:apps:"
    assert name("", "configmaps") == b""
    only = parse_encryption_config(cfg({"resources": ["secrets"], "providers": [aescbc(("k", K1))]}))
    assert only.transformer_for("", "configmaps") is None
    core = parse_encryption_config(cfg({"resources": ["*."], "providers": [aescbc(("k", K1))]}))
    assert core.transformer_for("", "configmaps") is not None and core.transformer_for("apps", "x") is None


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            cfg({"resources": ["secrets"], "providers": [aescbc(("k", b"short"))]}),
            'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5',
        ),
        (
            cfg({"resources": ["secrets"], "providers": [{"aescbc": {"keys": [{"name": "k", "secret": "%%%"}]}}]}),
            'keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded',
        ),
        (
            cfg({"resources": ["secrets"], "providers": [{"aescbc": {"keys": [{"secret": b64(K1)}]}}]}),
            "resources[0].providers[0].aescbc.keys[0].name: Required value",
        ),
        (
            cfg(
                {
                    "resources": ["secrets"],
                    "providers": [{"kms": {"apiVersion": "v2", "name": "vault", "endpoint": "unix:///x"}}],
                }
            ),
            "resources[0].providers[0].kms: Unsupported value: KMS providers",
        ),
        (cfg({"resources": ["secrets"], "providers": []}), "resources[0].providers: Required value"),
        (cfg({"resources": [], "providers": [{"identity": {}}]}), "resources[0].resources: Required value"),
        (
            cfg({"resources": ["Secrets"], "providers": [{"identity": {}}]}),
            'resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters',
        ),
        (
            cfg({"resources": ["secrets", "*."], "providers": [{"identity": {}}]}),
            'resources[0].resources[0]: Invalid value: "secrets": using overlapping resources',
        ),
        (
            cfg({"resources": ["secrets"], "providers": [{"identity": {}, "aescbc": {"keys": []}}]}),
            "more than one provider specified in a single element",
        ),
        (cfg({"resources": ["*.events.k8s.io"], "providers": [{"identity": {}}]}), "Use 'events' instead"),
        ({"apiVersion": "v1", "kind": "EncryptionConfig"}, "apiVersion/kind: Invalid value"),
    ],
)
def test_invalid_configurations_name_the_field(doc: dict, message: str) -> None:
    with pytest.raises(EncryptionConfigError) as e:
        parse_encryption_config(doc)
    assert message in str(e.value)
    assert b64(K1) not in str(e.value)


def test_load_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(
        EncryptionConfigError, match=f"error reading encryption provider configuration file {tmp_path}/x"
    ):
        load_encryption_config(tmp_path / "x")
    (tmp_path / "bad.yaml").write_text("resources: [")
    with pytest.raises(EncryptionConfigError, match="error while parsing file"):
        load_encryption_config(tmp_path / "bad.yaml")


def _runtime(tmp_path: Path, doc: dict) -> EncryptionRuntime:
    import yaml

    p = tmp_path / "enc.yaml"
    p.write_text(yaml.safe_dump(doc))
    return EncryptionRuntime(p, load_encryption_config(p), ((s.key_prefix, s.group, s.plural) for s in STRATEGIES))


def test_runtime_resolves_storage_keys_to_resources(tmp_path: Path) -> None:
    rt = _runtime(
        tmp_path,
        cfg(
            {
                "resources": ["secrets", "services", "apiservices.apiregistration.k8s.io"],
                "providers": [aescbc(("k", K1))],
            },
            {"resources": ["*.example.com"], "providers": [aescbc(("crd", K1))]},
        ),
    )
    assert rt.resolve("/registry/secrets/ns/a") is not None
    assert rt.resolve("/registry/services/specs/ns/a") is not None
    assert rt.resolve("/registry/services/endpoints/ns/a") is None
    assert rt.resolve("/registry/apiregistration.k8s.io/apiservices/v1.x") is not None
    crd = rt.resolve("/registry/example.com/widgets/ns/w")
    assert crd is not None and crd.transformers[0].prefix == b"k8s:enc:aescbc:v1:crd:"
    assert rt.resolve("/registry/configmaps/ns/a") is None
    assert rt.resolve("/other") is None


def test_runtime_reload_takes_a_new_first_key_and_keeps_the_old_config_on_errors(tmp_path: Path) -> None:
    import yaml

    rt = _runtime(tmp_path, cfg({"resources": ["secrets"], "providers": [aescbc(("key1", K1))]}))
    assert rt.reload() is False
    rt.path.write_text(
        yaml.safe_dump(cfg({"resources": ["secrets"], "providers": [aescbc(("key2", K2), ("key1", K1))]}))
    )
    assert rt.reload() is True
    t = rt.resolve(KEY)
    assert t is not None and t.transformers[0].prefix == b"k8s:enc:aescbc:v1:key2:"
    rt.path.write_text("kind: nonsense\n")
    assert rt.reload() is False
    assert rt.resolve(KEY) is t


async def test_transformed_store_holds_ciphertext_and_serves_plaintext(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, cfg({"resources": ["secrets"], "providers": [aescbc(("key1", K1))]}))
    inner = MemoryStore()
    store = TransformedStore(inner, rt.resolve)
    kv = await store.create(KEY, b'{"data":{"a":"c2VjcmV0"}}')
    assert kv.value == b'{"data":{"a":"c2VjcmV0"}}'
    await store.create("/registry/configmaps/default/c", b"clear")
    raw = await inner.get(KEY)
    assert raw is not None and raw.value.startswith(b"k8s:enc:aescbc:v1:key1:") and b"c2VjcmV0" not in raw.value
    assert (await inner.get("/registry/configmaps/default/c")).value == b"clear"  # type: ignore[union-attr]
    got = await store.get(KEY)
    assert got is not None and got.value == b'{"data":{"a":"c2VjcmV0"}}' and not is_stale(got)
    page = await store.list("/registry/secrets/")
    assert [i.value for i in page.items] == [b'{"data":{"a":"c2VjcmV0"}}']

    watch = store.watch("/registry/secrets/", page.revision + 1)
    await store.update(KEY, b"v2", 0)
    ev = await anext(watch)
    assert ev.kv.value == b"v2" and ev.prev is not None and ev.prev.value == b'{"data":{"a":"c2VjcmV0"}}'
    await watch.aclose()

    import yaml

    rt.path.write_text(
        yaml.safe_dump(cfg({"resources": ["secrets"], "providers": [aescbc(("key2", K2), ("key1", K1))]}))
    )
    assert rt.reload()
    stale = await store.get(KEY)
    assert stale is not None and stale.value == b"v2" and is_stale(stale)
    await store.update(KEY, b"v2", stale.mod_revision)
    raw = await inner.get(KEY)
    assert raw is not None and raw.value.startswith(b"k8s:enc:aescbc:v1:key2:")
    fresh = await store.get(KEY)
    assert fresh is not None and not is_stale(fresh)
