"""EndpointSlice (discovery.k8s.io/v1) and PodDisruptionBudget (policy/v1) strategies: defaults, validation messages
worded as kube's, generation, tables and which Pods a budget selects."""

from tests.unit.apiserver.kinds_helpers import CTX, invalid, store_of

from pykubeadm.apiserver.registry.poddisruptionbudget import pdb_selects


def eps(name="web-abc", **fields):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"port": 80}],
        **fields,
    }


async def test_endpointslice_defaults_generation_and_table():
    st = store_of("endpointslices", "discovery.k8s.io")
    obj = await st.create("ns", eps(), CTX)
    assert obj["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}] and obj["metadata"]["generation"] == 1
    assert [c["name"] for c in st.strategy.table_columns()] == ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    assert st.strategy.table_row(obj)[:4] == ["web-abc", "IPv4", "80", "10.0.0.1"]
    many = {**obj, "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(5)], "ports": []}
    assert st.strategy.table_row(many)[2:4] == ["<unset>", "10.0.0.0,10.0.0.1,10.0.0.2 + 2 more..."]
    new, _ = await st.update("ns", "web-abc", lambda old: {**old, "endpoints": []}, CTX)
    assert new["metadata"]["generation"] == 2
    same, _ = await st.update("ns", "web-abc", lambda old: {**old, "metadata": {**old["metadata"], "labels": {}}}, CTX)
    assert same["metadata"]["generation"] == 2


async def test_endpointslice_validation():
    st = store_of("endpointslices", "discovery.k8s.io")
    e = await invalid(st.create("ns", {"metadata": {"name": "x"}}, CTX))
    assert e.message == 'EndpointSlice.discovery.k8s.io "x" is invalid: addressType: Required value'
    e = await invalid(st.create("ns", eps(addressType="IPv5"), CTX))
    assert 'addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"' in e.message
    e = await invalid(st.create("ns", eps(endpoints=[{"addresses": []}]), CTX))
    assert "endpoints[0].addresses: Required value: must contain at least 1 address" in e.message
    e = await invalid(st.create("ns", eps(endpoints=[{"addresses": ["fe80::1"]}]), CTX))
    assert "endpoints[0].addresses[0]" in e.message
    await st.create("ns", eps(), CTX)
    e = await invalid(st.update("ns", "web-abc", lambda old: {**old, "addressType": "FQDN", "endpoints": []}, CTX))
    assert "addressType: Invalid value" in e.message and "field is immutable" in e.message


def pdb(name="db", **spec):
    return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec}}


async def test_pdb_status_generation_validation_and_table():
    st = store_of("poddisruptionbudgets", "policy")
    obj = await st.create("ns", {**pdb(minAvailable=1), "status": {"disruptionsAllowed": 5}}, CTX)
    assert obj["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    cols = [c["name"] for c in st.strategy.table_columns()]
    assert cols == ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]
    assert st.strategy.table_row(obj)[:4] == ["db", "1", "N/A", 0]
    assert st.strategy.short_names == ("pdb",)
    new, _ = await st.update("ns", "db", lambda old: {**old, "spec": {**old["spec"], "minAvailable": "50%"}}, CTX)
    assert new["metadata"]["generation"] == 2 and new["status"]["disruptionsAllowed"] == 0
    e = await invalid(st.create("ns", pdb("b", minAvailable=1, maxUnavailable=1), CTX))
    assert "minAvailable and maxUnavailable cannot be both set" in e.message
    e = await invalid(st.create("ns", pdb("c", maxUnavailable="150%"), CTX))
    assert 'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%' in e.message
    e = await invalid(st.create("ns", pdb("d", minAvailable=-1), CTX))
    assert "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0" in e.message
    e = await invalid(st.create("ns", pdb("e", unhealthyPodEvictionPolicy="Never"), CTX))
    assert 'supported values: "AlwaysAllow", "IfHealthyBudget"' in e.message
    e = await invalid(st.update("ns", "db", lambda old: {**old, "status": {"disruptionsAllowed": -1}}, CTX, "status"))
    assert "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0" in e.message


def test_pdb_selects():
    assert pdb_selects(pdb(), {"app": "db"}) and not pdb_selects(pdb(), {"app": "web"})
    assert pdb_selects({"spec": {"selector": {}}}, {"any": "thing"})  # policy/v1: empty selects all
    assert not pdb_selects({"spec": {}}, {"app": "db"})  # null selects none
