"""The e2e suites' shared lab: one ordinary loopback lab (a control plane and two workers, tests/e2e/sharedlab.py) for
every module that needs only an ordinary cluster, instead of a `lab up` of each. A module asks for it through the
module-scoped `shared_lab` fixture; the modules that use it run one after another (collection order is changed so), the
lab comes up for the first and goes down after the last, and what a module made in the `default` namespace is deleted
when it ends (its Pods gone, their ports free) so the next module starts on a clean cluster. A module that changes the
lab's nodes (joins one, stops a kubelet, drains) sets `SHARED_LAB_LAST = True` and runs after the others.

Labs with something special (HA, upgrades, hardened flags, down/reset semantics, the metrics addon, the
network-namespace topology) stay in their own modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.sharedlab import NAMESPACED, SHARED, Lab, clean_default_namespace, names


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The shared lab for this module; what the module makes in `default` is deleted when it ends."""
    lab = SHARED.up(tmp_path_factory)
    before = {kinds: names(lab, kinds) for kinds in NAMESPACED}
    yield lab
    clean_default_namespace(lab, before)


def _users(items: list[pytest.Item]) -> set[Path]:
    return {i.path for i in items if "shared_lab" in getattr(i, "fixturenames", ())}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules using the shared lab one after another (where the first of them was), those with
    SHARED_LAB_LAST after the rest: the lab comes up once and goes down after the last of them."""
    users = _users(items)
    if not users:
        return
    from tests.conftest import xdist_unit

    streams = {xdist_unit(str(p.relative_to(config.rootpath))) for p in users}
    if len(streams) > 1:  # two workers would each bring up a lab on the same addresses
        raise pytest.UsageError(
            f"the modules using shared_lab are in different xdist units {sorted(streams)}: list each in the same set of "
            "SHARED_HOST_RESOURCES in tests/conftest.py"
        )
    first = next(i for i, item in enumerate(items) if item.path in users)
    moved = [item for item in items if item.path in users]
    moved.sort(key=lambda item: bool(getattr(getattr(item, "module", None), "SHARED_LAB_LAST", False)))
    rest = [item for item in items if item.path not in users]
    items[:] = rest[:first] + moved + rest[first:]
    config.stash[_USERS] = users


_USERS = pytest.StashKey[set[Path]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last test of the last module using it (its module fixtures torn down), the shared lab goes down."""
    result = yield
    users = item.config.stash.get(_USERS, set())
    if item.path in users and (nextitem is None or nextitem.path not in users):
        SHARED.down()
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    SHARED.down()  # a run that stopped early (-x, ^C) still leaves no lab behind
