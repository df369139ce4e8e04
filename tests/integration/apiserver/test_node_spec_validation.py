"""A Node's spec as kube-apiserver validates it: `spec.podCIDRs` and `spec.providerID` go from unset to set once and
never change after (422 with kube's message, through the official client and kubectl); podCIDRs are CIDRs, one per
IP family; v1's `podCIDR` is `podCIDRs[0]`."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.integration

FORBIDDEN = 'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'


@pytest.fixture(scope="module")
def core(api):  # type: ignore[no-untyped-def]
    return client.CoreV1Api(api.python_client())


def _node(name: str, **spec: object) -> client.V1Node:
    return client.V1Node(metadata=client.V1ObjectMeta(name=name), spec=client.V1NodeSpec(**spec))


def _merge(core, name: str, patch: dict) -> client.V1Node:  # type: ignore[no-untyped-def, type-arg]
    """A JSON merge patch (`kubectl patch --type merge`): lists are replaced, not merged as a strategic patch merges
    podCIDRs."""
    return core.patch_node(name, patch, _content_type="application/merge-patch+json")


def _error(err: pytest.ExceptionInfo[ApiException]) -> dict:  # type: ignore[type-arg]
    assert err.value.status == 422
    return json.loads(err.value.body)


def test_pod_cidrs_are_set_once(core) -> None:  # type: ignore[no-untyped-def]
    core.create_node(_node("cidr-1"))
    # nodeipam's assignment: from unset to set is allowed, and podCIDR follows podCIDRs
    patched = core.patch_node("cidr-1", {"spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]}})
    assert patched.spec.pod_cidrs == ["10.244.1.0/24"] and patched.spec.pod_cidr == "10.244.1.0/24"

    with pytest.raises(ApiException) as err:
        _merge(core, "cidr-1", {"spec": {"podCIDR": "10.250.1.0/24", "podCIDRs": ["10.250.1.0/24"]}})
    body = _error(err)
    assert body["message"] == f'Node "cidr-1" is invalid: {FORBIDDEN}'
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": 'Forbidden: node updates may not change podCIDR except from "" to valid',
            "field": "spec.podCIDRs",
        }
    ]
    with pytest.raises(ApiException) as err:  # adding a second family later is a change too
        _merge(core, "cidr-1", {"spec": {"podCIDRs": ["10.244.1.0/24", "fd00:10:244:1::/64"]}})
    assert FORBIDDEN in _error(err)["message"]
    with pytest.raises(ApiException) as err:  # and so is clearing them (a PUT without them)
        node = core.read_node("cidr-1")
        node.spec.pod_cidr, node.spec.pod_cidrs = None, None
        core.replace_node("cidr-1", node)
    assert FORBIDDEN in _error(err)["message"]

    # podCIDR alone does not change podCIDRs: it is v1's copy of the first entry and comes back as it was
    kept = core.patch_node("cidr-1", {"spec": {"podCIDR": "10.250.1.0/24"}})
    assert kept.spec.pod_cidr == "10.244.1.0/24" and kept.spec.pod_cidrs == ["10.244.1.0/24"]
    # the rest of the spec stays mutable
    assert core.patch_node("cidr-1", {"spec": {"unschedulable": True}}).spec.unschedulable is True
    assert core.read_node("cidr-1").spec.pod_cidrs == ["10.244.1.0/24"]


def test_kubectl_is_refused_with_kubes_message(api, core, kubectl_available) -> None:  # type: ignore[no-untyped-def]
    core.create_node(_node("cidr-2", pod_cidr="10.244.2.0/24"))  # podCIDR alone on create: podCIDRs from it
    assert core.read_node("cidr-2").spec.pod_cidrs == ["10.244.2.0/24"]
    res = api.kubectl(
        "patch", "node", "cidr-2", "--type", "merge", "-p", '{"spec":{"podCIDRs":["10.250.2.0/24"]}}', check=False
    )
    assert res.returncode != 0
    assert f'The Node "cidr-2" is invalid: {FORBIDDEN}' in res.stderr


def test_provider_id_is_set_once(core) -> None:  # type: ignore[no-untyped-def]
    core.create_node(_node("pid-1"))
    assert core.patch_node("pid-1", {"spec": {"providerID": "kind://lab/pid-1"}}).spec.provider_id == "kind://lab/pid-1"
    with pytest.raises(ApiException) as err:
        core.patch_node("pid-1", {"spec": {"providerID": "kind://lab/other"}})
    assert _error(err)["message"] == (
        'Node "pid-1" is invalid: spec.providerID: Forbidden: node updates may not change providerID except from "" '
        "to valid"
    )


def test_pod_cidrs_must_be_cidrs_one_per_family(core) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ApiException) as err:
        core.create_node(_node("bad-1", pod_cidrs=["10.244.0.0/33"]))
    assert _error(err)["message"] == (
        'Node "bad-1" is invalid: spec.podCIDRs[0]: Invalid value: []string{"10.244.0.0/33"}: must be valid CIDR'
    )
    with pytest.raises(ApiException) as err:
        core.create_node(_node("bad-2", pod_cidrs=["10.244.0.0/24", "10.244.1.0/24"]))
    assert _error(err)["message"] == (
        'Node "bad-2" is invalid: spec.podCIDRs: Invalid value: []string{"10.244.0.0/24", "10.244.1.0/24"}: '
        "may specify no more than one CIDR for each IP family"
    )
    dual = core.create_node(_node("dual-1", pod_cidrs=["10.244.3.0/24", "fd00:10:244:3::/64"]))
    assert dual.spec.pod_cidr == "10.244.3.0/24"
