"""ReplicaSet and ControllerRevision strategies (apps/v1): kube's defaults, validation messages and table rows."""

import pytest
from tests.unit.apiserver.kinds_helpers import CTX, invalid, store_of, template

from pykubeadm.apiserver.registry.controllerrevision import controller_name
from pykubeadm.apiserver.status import ApiError


def rs(name="web", **spec):
    return {
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec},
    }


async def test_replicaset_defaults_status_and_generation():
    st = store_of("replicasets", "apps")
    obj = await st.create("ns", {**rs(), "status": {"replicas": 7}}, CTX)
    assert obj["spec"]["replicas"] == 1
    assert "revisionHistoryLimit" not in obj["spec"]  # a Deployment field, not a ReplicaSet one
    pod = obj["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert obj["status"] == {"replicas": 0} and obj["metadata"]["generation"] == 1
    new, _ = await st.update("ns", "web", lambda old: {**old, "spec": {**old["spec"], "replicas": 3}}, CTX)
    assert new["metadata"]["generation"] == 2 and new["status"] == {"replicas": 0}
    # /status changes only status and leaves the generation alone
    upd, _ = await st.update(
        "ns", "web", lambda old: {**old, "status": {"replicas": 3, "readyReplicas": 2}}, CTX, "status"
    )
    assert upd["status"]["readyReplicas"] == 2 and upd["metadata"]["generation"] == 2


async def test_replicaset_validation_messages():
    st = store_of("replicasets", "apps")
    e = await invalid(st.create("ns", rs(replicas=-1), CTX))
    assert e.message == (
        'ReplicaSet.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    )
    e = await invalid(st.create("ns", rs(template=template({"app": "other"})), CTX))
    assert (
        'spec.template.metadata.labels: Invalid value: "map[app:other]": `selector` does not match template `labels`'
        in e.message
    )
    e = await invalid(st.create("ns", rs(template=template(restartPolicy="Never")), CTX))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in e.message
    e = await invalid(st.create("ns", {"metadata": {"name": "x"}, "spec": {"template": template()}}, CTX))
    assert "spec.selector: Required value" in e.message
    await st.create("ns", rs(), CTX)
    e = await invalid(
        st.update(
            "ns", "web", lambda old: {**old, "spec": {**old["spec"], "selector": {"matchLabels": {"a": "b"}}}}, CTX
        )
    )
    assert "spec.selector: Invalid value" in e.message and "field is immutable" in e.message
    e = await invalid(st.update("ns", "web", lambda old: {**old, "status": {"replicas": -2}}, CTX, "status"))
    assert "status.replicas: Invalid value: -2: must be greater than or equal to 0" in e.message


async def test_replicaset_table_and_field_label():
    st = store_of("replicasets", "apps")
    obj = await st.create("ns", rs(replicas=3), CTX)
    cols = [c["name"] for c in st.strategy.table_columns()]
    assert cols == ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"]
    assert [c["priority"] for c in st.strategy.table_columns()][5:] == [1, 1, 1]
    row = st.strategy.table_row(obj)
    assert row[:4] == ["web", 3, 0, 0] and row[5:] == ["c", "busybox:1.36", "app=web"]
    assert st.strategy.get_attrs(obj)["status.replicas"] == "0"
    assert st.strategy.short_names == ("rs",) and st.strategy.categories == ("all",)
    assert set(st.strategy.subresources) == {"scale", "status"}


async def test_controllerrevision_rules_and_table():
    st = store_of("controllerrevisions", "apps")
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds1", "uid": "u", "controller": True}
    obj = await st.create(
        "ns", {"metadata": {"name": "ds1-abc", "ownerReferences": [owner]}, "data": {"spec": {}}, "revision": 2}, CTX
    )
    assert st.strategy.table_row(obj)[:3] == ["ds1-abc", "daemonset.apps/ds1", 2]
    assert [c["name"] for c in st.strategy.table_columns()] == ["Name", "Controller", "Revision", "Age"]
    assert controller_name({"metadata": {}}) == "<none>"
    e = await invalid(st.create("ns", {"metadata": {"name": "r"}, "revision": 1}, CTX))
    assert "data: Required value: data is mandatory" in e.message
    e = await invalid(st.create("ns", {"metadata": {"name": "r"}, "data": {}, "revision": -1}, CTX))
    assert "revision: Invalid value: -1: must be greater than or equal to 0" in e.message
    e = await invalid(st.update("ns", "ds1-abc", lambda old: {**old, "data": {"other": 1}}, CTX))
    assert "data: Invalid value" in e.message and "field is immutable" in e.message
    new, _ = await st.update("ns", "ds1-abc", lambda old: {**old, "revision": 5}, CTX)
    assert new["revision"] == 5


async def test_deployment_restart_policy_rule():
    st = store_of("deployments", "apps")
    with pytest.raises(ApiError) as e:
        await st.create("ns", rs("d", template=template(restartPolicy="OnFailure")), CTX)
    assert 'supported values: "Always"' in e.value.message


def test_strategic_merge_patch_merges_template_containers_by_name():
    from pykubeadm.apiserver.patching import strategic

    two = {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    patch = {"containers": [{"name": "b", "image": "z"}]}
    for kind, wrap in (
        ("ReplicaSet", lambda p: {"spec": {"template": {"spec": p}}}),
        ("Job", lambda p: {"spec": {"template": {"spec": p}}}),
        ("CronJob", lambda p: {"spec": {"jobTemplate": {"spec": {"template": {"spec": p}}}}}),
    ):
        out = strategic.apply_strategic_merge_patch(wrap(two), wrap(patch), kind)
        assert out == wrap({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]}), kind
