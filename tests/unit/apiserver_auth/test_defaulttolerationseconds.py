"""DefaultTolerationSeconds admission: 300 s not-ready/unreachable NoExecute tolerations unless already tolerated."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.admission.defaulttolerationseconds import DefaultTolerationSeconds
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.apiserver.authn.user import UserInfo

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


async def admit(tolerations: list[dict[str, Any]], plugin: DefaultTolerationSeconds | None = None, **kw: Any) -> Any:
    attrs = AdmissionAttributes(
        operation=kw.pop("operation", Operation.CREATE),
        resource=kw.pop("resource", "pods"),
        user=UserInfo(name="admin"),
        obj={"metadata": {"name": "p"}, "spec": {"tolerations": tolerations}},
        **kw,
    )
    await (plugin or DefaultTolerationSeconds()).admit(attrs)
    return attrs.obj["spec"]["tolerations"]


async def test_adds_both_tolerations_with_300_seconds() -> None:
    assert await admit([]) == [
        {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]


async def test_existing_tolerations_are_kept() -> None:
    mine = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}
    got = await admit([mine])
    assert got == [mine, {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    everything = {"operator": "Exists"}  # empty key and effect tolerate both taints
    assert await admit([everything]) == [everything]
    no_schedule_only = {"key": NOT_READY, "operator": "Exists", "effect": "NoSchedule"}
    assert len(await admit([no_schedule_only])) == 3


async def test_flags_set_the_seconds_and_other_resources_are_untouched() -> None:
    plugin = DefaultTolerationSeconds.from_flags(
        {"default-not-ready-toleration-seconds": 10, "default-unreachable-toleration-seconds": "20"}
    )
    assert [t["tolerationSeconds"] for t in await admit([], plugin)] == [10, 20]
    assert await admit([], resource="configmaps") == []
    assert await admit([], subresource="status") == []
