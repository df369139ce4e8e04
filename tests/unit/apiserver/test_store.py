"""The generic registry Store over the in-memory storage engine: metadata, conflicts, finalizers, watch semantics."""

import asyncio

import pytest

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.registry import STRATEGIES, RequestContext, Store
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector, parse_field_selector
from pykubeadm.apiserver.status import ApiError
from pykubeadm.storage.memory import MemoryStore


def store_of(plural, backend=None):
    s = next(s for s in STRATEGIES if s.plural == plural)
    return Store(s, backend or MemoryStore())


CTX = RequestContext()


async def test_create_fills_metadata_and_get_roundtrips():
    st = store_of("configmaps")
    obj = await st.create(
        "ns", {"metadata": {"name": "a", "uid": "forged", "resourceVersion": "9"}, "data": {"k": "v"}}, CTX
    )
    meta = obj["metadata"]
    assert meta["uid"] != "forged" and meta["namespace"] == "ns" and meta["creationTimestamp"].endswith("Z")
    assert meta["resourceVersion"] == "1"
    got = await st.get("ns", "a")
    assert got == obj
    assert st.key("ns", "a") == "/registry/configmaps/ns/a"
    assert store_of("nodes").key("", "n1") == "/registry/minions/n1"


async def test_already_exists_conflict_and_unconditional_update():
    st = store_of("configmaps")
    await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    with pytest.raises(ApiError) as e:
        await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    assert (e.value.code, e.value.message) == (409, 'configmaps "a" already exists')
    with pytest.raises(ApiError) as e:
        await st.update("ns", "a", lambda old: {"metadata": {"name": "a", "resourceVersion": "99"}}, CTX)
    assert e.value.reason == "Conflict"
    assert e.value.message == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )
    new, created = await st.update("ns", "a", lambda old: {"metadata": {"name": "a"}, "data": {"x": "1"}}, CTX)
    assert not created and new["data"] == {"x": "1"} and new["metadata"]["resourceVersion"] == "2"
    same, _ = await st.update("ns", "a", lambda old: {"metadata": {"name": "a"}, "data": {"x": "1"}}, CTX)
    assert same["metadata"]["resourceVersion"] == "2"  # no-op update does not write


async def test_generate_name_and_invalid_names():
    st = store_of("secrets")
    obj = await st.create("ns", {"metadata": {"generateName": "tok-"}}, CTX)
    assert obj["metadata"]["name"].startswith("tok-") and len(obj["metadata"]["name"]) == 9
    with pytest.raises(ApiError) as e:
        await st.create("ns", {"metadata": {}}, CTX)
    assert e.value.code == 422 and "name or generateName is required" in e.value.message
    with pytest.raises(ApiError) as e:
        await st.create("ns", {"metadata": {"name": "a"}, "data": {"k": "not base64!"}}, CTX)
    assert e.value.code == 422 and "not base64" not in e.value.message  # secret material is never echoed


async def test_dry_run_does_not_persist():
    st = store_of("configmaps")
    obj = await st.create("ns", {"metadata": {"name": "a"}}, RequestContext(dry_run=True))
    assert obj["metadata"]["uid"]
    assert await st.try_get("ns", "a") is None


async def test_finalizers_defer_deletion_until_removed():
    st = store_of("configmaps")
    await st.create("ns", {"metadata": {"name": "a", "finalizers": ["x/y"]}}, CTX)
    obj, removed = await st.delete("ns", "a", CTX)
    assert not removed and obj["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiError) as e:  # no new finalizers once deleting
        await st.update(
            "ns", "a", lambda old: {**old, "metadata": {**old["metadata"], "finalizers": ["x/y", "z/w"]}}, CTX
        )
    assert e.value.code == 422
    await st.update("ns", "a", lambda old: {**old, "metadata": {**old["metadata"], "finalizers": []}}, CTX)
    assert await st.try_get("ns", "a") is None


async def test_csr_requester_fields_come_from_the_user():
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "u")]))
        .sign(key, hashes.SHA256())
    )
    req = base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()
    st = store_of("certificatesigningrequests")
    ctx = RequestContext(user=UserInfo("system:bootstrap:abcdef", "", ("system:bootstrappers", "system:authenticated")))
    obj = await st.create(
        "",
        {
            "metadata": {"name": "c"},
            "spec": {
                "request": req,
                "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth"],
                "username": "admin",
                "groups": ["system:masters"],
            },
            "status": {"conditions": [{"type": "Approved", "status": "True"}]},
        },
        ctx,
    )
    assert obj["spec"]["username"] == "system:bootstrap:abcdef"
    assert obj["spec"]["groups"] == ["system:bootstrappers", "system:authenticated"]
    assert obj["status"] == {}
    # spec is immutable through the main resource; approval only via the subresource
    new, _ = await st.update(
        "",
        "c",
        lambda old: {
            **old,
            "spec": {**old["spec"], "signerName": "x.io/y"},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]},
        },
        ctx,
    )
    assert new["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client" and new["status"] == {}
    new, _ = await st.update(
        "",
        "c",
        lambda old: {**old, "status": {"conditions": [{"type": "Approved", "status": "True"}]}},
        ctx,
        subresource="approval",
    )
    assert new["status"]["conditions"][0]["lastUpdateTime"]
    with pytest.raises(ApiError):
        await st.update(
            "",
            "c",
            lambda old: {
                **old,
                "status": {
                    "conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]
                },
            },
            ctx,
            subresource="approval",
        )
    with pytest.raises(ApiError) as e:
        await st.create(
            "", {"metadata": {"name": "bad"}, "spec": {"request": "bm90IGEgY3Ny", "signerName": "x", "usages": []}}, ctx
        )
    assert e.value.code == 422


async def test_watch_filters_by_selector_and_maps_transitions():
    backend = MemoryStore()
    st = store_of("configmaps", backend)
    await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    rev = await backend.current_revision()
    fields = parse_field_selector("metadata.name=a", st.strategy.supports_field)
    events = []

    async def collect():
        async for ev in st.watch("ns", rev + 1, LabelSelector(), fields):
            events.append((ev.type, ev.object["metadata"]["name"]))
            if len(events) == 2:
                return

    task = asyncio.create_task(collect())
    await st.create("ns", {"metadata": {"name": "b"}}, CTX)
    await st.update("ns", "a", lambda old: {"metadata": {"name": "a", "labels": {"x": "1"}}}, CTX)
    await st.delete("ns", "a", CTX)
    await asyncio.wait_for(task, 2)
    assert events == [("MODIFIED", "a"), ("DELETED", "a")]
    await st.create("ns", {"metadata": {"name": "c"}}, CTX)
    page = await st.list("ns", LabelSelector(), FieldSelector(), limit=1)
    assert len(page.items) == 1 and page.continue_token
    page2 = await st.list("ns", LabelSelector(), FieldSelector(), limit=1, continue_token=page.continue_token)
    assert [o["metadata"]["name"] for o in page2.items] == ["c"] and not page2.continue_token


async def test_namespace_strategy_defaults_and_terminating():
    st = store_of("namespaces")
    ns = await st.create("", {"metadata": {"name": "x"}}, CTX)
    assert ns["status"] == {"phase": "Active"} and ns["spec"]["finalizers"] == ["kubernetes"]
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "x"
    obj, removed = await st.delete("", "x", CTX)
    assert not removed and obj["status"]["phase"] == "Terminating"
    await st.update("", "x", lambda old: {**old, "spec": {}}, CTX, subresource="finalize")
    assert await st.try_get("", "x") is None


# --- update against the last known state (two apiservers sharing one storage engine) ---------------------------------


class CountingBackend:
    """The storage engine with its reads counted."""

    def __init__(self, inner):
        self.inner = inner
        self.gets = 0

    async def get(self, key):
        self.gets += 1
        return await self.inner.get(key)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request, tmp_path):
    from pykubeadm.storage import open_store

    backend = MemoryStore() if request.param == "memory" else await open_store(f"sqlite://{tmp_path}/state.db")
    yield backend
    await backend.close()


def _set(key, value):
    """A patch: applied to the current object, no resourceVersion precondition (as the patch handler does)."""

    def transform(old):
        meta = {k: v for k, v in (old or {}).get("metadata", {}).items() if k != "resourceVersion"}
        return {**(old or {}), "metadata": meta, "data": {**((old or {}).get("data") or {}), key: value}}

    return transform


async def test_a_repeated_update_swaps_against_what_it_wrote_without_reading_first(engine):
    backend = CountingBackend(engine)
    st = store_of("configmaps", backend)
    await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    await st.update("ns", "a", _set("n", "1"), CTX)
    reads = backend.gets
    obj, _ = await st.update("ns", "a", _set("n", "2"), CTX)
    assert backend.gets == reads  # no read: the compare-and-swap confirmed the remembered state
    assert (await st.get("ns", "a"))["data"] == {"n": "2"} == obj["data"]


async def test_an_update_after_another_apiserver_wrote_loses_nothing(engine):
    a, b = store_of("configmaps", engine), store_of("configmaps", engine)
    await a.create("ns", {"metadata": {"name": "a"}}, CTX)
    await a.update("ns", "a", _set("from-a", "1"), CTX)  # a remembers this state
    other, _ = await b.update("ns", "a", _set("from-b", "1"), CTX)

    obj, _ = await a.update("ns", "a", _set("from-a", "2"), CTX)

    assert obj["data"] == {"from-a": "2", "from-b": "1"}  # applied to b's state, not to a's stale copy
    assert int(obj["metadata"]["resourceVersion"]) > int(other["metadata"]["resourceVersion"])
    assert (await b.get("ns", "a")) == obj


async def test_a_precondition_newer_than_the_remembered_state_is_checked_with_storage(engine):
    a, b = store_of("configmaps", engine), store_of("configmaps", engine)
    await a.create("ns", {"metadata": {"name": "a"}}, CTX)
    await a.update("ns", "a", _set("n", "1"), CTX)
    current, _ = await b.update("ns", "a", _set("n", "2"), CTX)
    rv = current["metadata"]["resourceVersion"]

    obj, _ = await a.update("ns", "a", lambda old: {**current, "data": {"n": "3"}}, CTX)  # carries b's version

    assert obj["data"] == {"n": "3"} and int(obj["metadata"]["resourceVersion"]) > int(rv)
    with pytest.raises(ApiError) as e:  # and a really stale one is still a 409
        await a.update("ns", "a", lambda old: {**current, "data": {"n": "4"}}, CTX)
    assert e.value.code == 409


async def test_a_no_op_update_answers_with_the_current_object_not_a_remembered_one(engine):
    a, b = store_of("configmaps", engine), store_of("configmaps", engine)
    await a.create("ns", {"metadata": {"name": "a"}}, CTX)
    mine, _ = await a.update("ns", "a", _set("n", "1"), CTX)
    theirs, _ = await b.update("ns", "a", _set("n", "2"), CTX)

    # the same content a wrote: a no-op against a's memory, a real change against storage
    obj, _ = await a.update("ns", "a", lambda old: {**old, "data": {"n": "1"}}, CTX)
    assert obj["data"] == {"n": "1"}
    assert int(obj["metadata"]["resourceVersion"]) > int(theirs["metadata"]["resourceVersion"])
    # and an update equal to the stored object writes nothing and says so
    same, _ = await a.update("ns", "a", lambda old: {**old, "data": {"n": "1"}}, CTX)
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert mine["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]


async def test_an_object_another_apiserver_deleted_is_not_found_or_recreated(engine):
    a, b = store_of("configmaps", engine), store_of("configmaps", engine)
    await a.create("ns", {"metadata": {"name": "a"}}, CTX)
    await a.update("ns", "a", _set("n", "1"), CTX)
    await b.delete("ns", "a", CTX)

    with pytest.raises(ApiError) as e:
        await a.update("ns", "a", _set("n", "2"), CTX)
    assert e.value.code == 404
    again = await b.create("ns", {"metadata": {"name": "a"}}, CTX)
    obj, _ = await a.update("ns", "a", _set("n", "3"), CTX)
    assert obj["metadata"]["uid"] == again["metadata"]["uid"] and obj["data"] == {"n": "3"}
