"""The Node authorizer sees list/watch field selectors, as kube-apiserver passes them: a node may list the Pods bound to
it (`spec.nodeName=<node>`) and watch one Secret its Pods use (`metadata.name=<secret>`), nothing wider."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="module")
def node_api(api):  # type: ignore[no-untyped-def]
    return client.CoreV1Api(api.python_client(api.kubeconfig_for("system:node:n1", ["system:nodes"])))


@pytest.fixture(scope="module")
def admin(api):  # type: ignore[no-untyped-def]
    return client.CoreV1Api(api.python_client())


def test_node_lists_only_its_own_pods(node_api, admin) -> None:  # type: ignore[no-untyped-def]
    admin.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="sel")))
    admin.create_namespaced_service_account(
        "sel", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"))
    )
    admin.create_namespaced_secret(
        "sel", client.V1Secret(metadata=client.V1ObjectMeta(name="s1"), string_data={"k": "v"})
    )
    admin.create_namespaced_secret(
        "sel", client.V1Secret(metadata=client.V1ObjectMeta(name="s2"), string_data={"k": "v"})
    )
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p1"),
        spec=client.V1PodSpec(
            node_name="n1",
            containers=[client.V1Container(name="c", image="img")],
            volumes=[client.V1Volume(name="s", secret=client.V1SecretVolumeSource(secret_name="s1"))],
        ),
    )
    admin.create_namespaced_pod("sel", pod)

    own = node_api.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in own.items] == ["p1"]
    with pytest.raises(ApiException) as err:
        node_api.list_pod_for_all_namespaces()
    assert err.value.status == 403
    with pytest.raises(ApiException) as err:
        node_api.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2")
    assert err.value.status == 403

    # one Secret referenced by its Pod, by name through a field selector; not the other one
    listed = node_api.list_namespaced_secret("sel", field_selector="metadata.name=s1")
    assert [s.metadata.name for s in listed.items] == ["s1"]
    with pytest.raises(ApiException) as err:
        node_api.list_namespaced_secret("sel", field_selector="metadata.name=s2")
    assert err.value.status == 403
