"""Which volume a claim binds to: capacity, access modes, class, selector, pre-binding, node affinity."""

from __future__ import annotations

from typing import Any

from pykubeadm.controllers.persistentvolume.matching import find_matching_volume, volume_mismatch
from pykubeadm.util.storageclass import default_class


def pv(name: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "", **extra: Any) -> dict:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls}
    spec.update(extra.pop("spec", {}))
    return {
        "metadata": {"name": name, "labels": extra.pop("labels", {})},
        "spec": spec,
        "status": {"phase": extra.pop("phase", "Available")},
    }


def pvc(size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str | None = "", **spec: Any) -> dict:
    body: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if cls is not None:
        body["storageClassName"] = cls
    body.update(spec)
    return {"metadata": {"name": "data", "namespace": "default", "uid": "u-1"}, "spec": body}


def name_of(volume: dict | None) -> str | None:
    return None if volume is None else volume["metadata"]["name"]


def test_the_smallest_volume_big_enough_wins() -> None:
    volumes = [pv("small", "500Mi"), pv("big", "10Gi"), pv("fits", "2Gi")]
    assert name_of(find_matching_volume(pvc("1Gi"), volumes)) == "fits"
    assert find_matching_volume(pvc("20Gi"), volumes) is None


def test_capacity_compares_quantities_not_strings() -> None:
    assert name_of(find_matching_volume(pvc("1000Mi"), [pv("gi", "1Gi")])) == "gi"
    assert find_matching_volume(pvc("1Gi"), [pv("g", "1G")]) is None  # 10^9 < 2^30


def test_access_modes_must_all_be_offered_fewest_modes_first() -> None:
    rwo, rwx = pv("rwo", modes=("ReadWriteOnce",)), pv("both", modes=("ReadWriteOnce", "ReadOnlyMany"))
    assert name_of(find_matching_volume(pvc(modes=("ReadWriteOnce",)), [rwx, rwo])) == "rwo"
    assert name_of(find_matching_volume(pvc(modes=("ReadOnlyMany",)), [rwx, rwo])) == "both"
    assert find_matching_volume(pvc(modes=("ReadWriteMany",)), [rwx, rwo]) is None


def test_the_class_must_be_equal_and_empty_only_matches_empty() -> None:
    fast, none = pv("fast", cls="fast"), pv("none", cls="")
    assert name_of(find_matching_volume(pvc(cls="fast"), [none, fast])) == "fast"
    assert name_of(find_matching_volume(pvc(cls=""), [fast, none])) == "none"
    assert name_of(find_matching_volume(pvc(cls=None), [fast, none])) == "none"
    assert find_matching_volume(pvc(cls="slow"), [fast, none]) is None


def test_the_selector_filters_by_volume_labels() -> None:
    volumes = [pv("a", labels={"tier": "db"}), pv("b", labels={"tier": "web"})]
    claim = pvc(selector={"matchLabels": {"tier": "web"}})
    assert name_of(find_matching_volume(claim, volumes)) == "b"
    claim = pvc(selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["cache"]}]})
    assert find_matching_volume(claim, volumes) is None


def test_bound_released_and_deleting_volumes_are_skipped() -> None:
    taken = pv("taken", spec={"claimRef": {"namespace": "default", "name": "other", "uid": "u-2"}})
    deleting = pv("deleting")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert find_matching_volume(pvc(), [taken, deleting]) is None


def test_a_volume_pre_bound_to_the_claim_is_taken_even_when_delayed() -> None:
    mine = pv("mine", "5Gi", cls="other", spec={"claimRef": {"namespace": "default", "name": "data"}})
    assert name_of(find_matching_volume(pvc(cls="local"), [pv("free", cls="local"), mine])) == "mine"
    assert name_of(find_matching_volume(pvc(cls="local"), [mine], delay_binding=True)) == "mine"
    assert find_matching_volume(pvc(cls="local"), [pv("free", cls="local")], delay_binding=True) is None


def test_with_a_node_the_node_affinity_must_match() -> None:
    affinity = {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}
            ]
        }
    }
    local = pv("local", cls="local", spec={"nodeAffinity": affinity})
    n1 = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}}
    n2 = {"metadata": {"name": "n2", "labels": {"kubernetes.io/hostname": "n2"}}}
    claim = pvc(cls="local")
    assert name_of(find_matching_volume(claim, [local], node=n1, delay_binding=True)) == "local"
    assert find_matching_volume(claim, [local], node=n2, delay_binding=True) is None


def test_volume_mismatch_names_the_problem() -> None:
    assert volume_mismatch(pv("v", "1Gi"), pvc("2Gi")) == "requested PV is too small"
    assert volume_mismatch(pv("v", cls="a"), pvc(cls="b")) == "storageClassName does not match"
    assert volume_mismatch(pv("v"), pvc(modes=("ReadWriteMany",))) == "incompatible accessMode"
    assert volume_mismatch(pv("v"), pvc()) is None


def test_the_newest_default_class_wins() -> None:
    def sc(name: str, created: str, default: bool) -> dict:
        ann = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {"metadata": {"name": name, "creationTimestamp": created, "annotations": ann}}

    assert default_class([sc("a", "2026-01-01T00:00:00Z", False)]) is None
    classes = [sc("old", "2026-01-01T00:00:00Z", True), sc("new", "2026-02-01T00:00:00Z", True)]
    assert default_class(classes)["metadata"]["name"] == "new"  # type: ignore[index]
