"""A container's securityContext as the built-in runtime reads it: the effective context, the kubelet's runAsNonRoot
messages, the launcher options, and the fields named when containers cannot be isolated."""

from __future__ import annotations

from typing import Any

import pytest

from pykubeadm.kubelet.builtin.cgroups import _pod_resources
from pykubeadm.kubelet.builtin.confinement import CAPABILITIES, DEFAULT_CAPABILITIES, confinement, unconfinable_fields
from pykubeadm.kubelet.resources import Resources, container_resources, milli_cpu_to_shares
from pykubeadm.kubelet.securitycontext import SecurityContextError, effective_context


def pod(containers: list[dict[str, Any]], **sc: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if sc:
        spec["securityContext"] = sc
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec}


def bit(*names: str) -> int:
    return sum(1 << CAPABILITIES[n] for n in names)


def test_container_fields_win_over_the_pods() -> None:
    ct = {"name": "c", "securityContext": {"runAsUser": 5}}
    sc = effective_context(pod([ct], runAsUser=1, runAsGroup=2, fsGroup=3), ct)
    assert sc == {"runAsUser": 5, "runAsGroup": 2}  # fsGroup is the Pod's only


def test_run_as_non_root_messages_are_the_kubelets() -> None:
    ct = {"name": "c"}
    with pytest.raises(SecurityContextError) as e:
        confinement(pod([ct], runAsNonRoot=True), ct)
    assert str(e.value) == 'container has runAsNonRoot and image will run as root (pod: "p_ns(u1)", container: c)'
    ct0 = {"name": "c", "securityContext": {"runAsUser": 0}}
    with pytest.raises(SecurityContextError) as e:
        confinement(pod([ct0], runAsNonRoot=True), ct0)
    assert str(e.value) == 'container\'s runAsUser breaks non-root policy (pod: "p_ns(u1)", container: c)'
    assert confinement(pod([ct], runAsNonRoot=True), ct, image_uid=65535).uid == 65535  # pause's user


def test_launcher_options() -> None:
    ct = {
        "name": "c",
        "securityContext": {
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    conf = confinement(pod([ct], runAsUser=1000, runAsGroup=3000, supplementalGroups=[4000], fsGroup=2000), ct)
    assert conf.launcher_args() == ["-u", "1000", "-g", "3000", "-G", "3000,4000,2000", "-c", "400", "-N", "-S"]
    assert conf.read_only_root and not conf.unconfined
    plain = confinement(pod([{"name": "c"}]), {"name": "c"})
    assert plain.caps == bit(*DEFAULT_CAPABILITIES) and len(DEFAULT_CAPABILITIES) == 14  # containerd's, Docker's
    assert plain.caps & bit("CHOWN", "NET_BIND_SERVICE", "SETUID", "KILL") == bit(
        "CHOWN", "NET_BIND_SERVICE", "SETUID", "KILL"
    )
    assert not plain.caps & bit("SYS_ADMIN")
    priv = {"name": "c", "securityContext": {"privileged": True}}
    assert confinement(pod([priv]), priv).unconfined


@pytest.mark.parametrize(
    ("sc", "pod_sc", "fragment"),
    [
        ({"seccompProfile": {"type": "Localhost", "localhostProfile": "x.json"}}, {}, "seccompProfile"),
        ({"capabilities": {"add": ["NOT_A_CAP"]}}, {}, "capabilities.add: unknown capability"),
        ({}, {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}]}, "spec.securityContext.sysctls"),
    ],
)
def test_what_cannot_be_honoured_is_refused(sc: dict[str, Any], pod_sc: dict[str, Any], fragment: str) -> None:
    ct = {"name": "c", "securityContext": sc}
    with pytest.raises(SecurityContextError, match=fragment):
        confinement(pod([ct], **pod_sc), ct)


def test_without_isolation_the_confining_fields_are_named() -> None:
    ct = {
        "name": "c",
        "securityContext": {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False},
        "resources": {"limits": {"cpu": "100m"}, "requests": {"memory": "1Mi"}},
    }
    assert unconfinable_fields(pod([ct], runAsNonRoot=True), ct) == [
        "spec.securityContext.runAsNonRoot",
        "containers[c].securityContext.capabilities",
        "containers[c].securityContext.allowPrivilegeEscalation",
        "containers[c].resources.limits.cpu",
    ]
    free = {"name": "c", "securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN"]}}}
    assert unconfinable_fields(pod([free]), free) == []  # asks for more, not for less: nothing pretends


def test_cgroup_settings_follow_the_kubelet() -> None:
    assert milli_cpu_to_shares(0) == 2 and milli_cpu_to_shares(100) == 102 and milli_cpu_to_shares(1000) == 1024
    limited = {"resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}}
    assert container_resources(limited) == Resources(250, 250, 64 << 20)  # the request defaults to the limit
    assert _pod_resources([limited, limited]) == Resources(500, 500, 128 << 20)
    assert _pod_resources([limited, {"resources": {"requests": {"cpu": "1"}}}]) == Resources(1250, None, None)
