"""Every module of authn/, authz/, admission/ and bootstrap/secret.py exports exactly what its `__all__` lists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import pykubeadm.apiserver.admission
import pykubeadm.apiserver.authn
import pykubeadm.apiserver.authz

MODULES = (
    ["pykubeadm.bootstrap.secret"]
    + [
        f"{pkg.__name__}.{m.name}"
        for pkg in (pykubeadm.apiserver.authn, pykubeadm.apiserver.authz, pykubeadm.apiserver.admission)
        for m in pkgutil.iter_modules(pkg.__path__)
    ]
    + ["pykubeadm.apiserver.authn", "pykubeadm.apiserver.authz", "pykubeadm.apiserver.admission"]
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_modules_are_documented(name):
    mod = importlib.import_module(name)
    assert mod.__doc__ and mod.__doc__.strip(), f"{name} has no docstring"
    exported = getattr(mod, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert not missing, f"{name}.__all__ lists missing names {missing}"
    assert len(exported) == len(set(exported))
