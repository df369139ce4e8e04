"""Fuzzing the kubeadm config loader: random and mutated v1beta3/v1beta4 documents give success or a ValidationError
whose message names a field (kubeadm's field errors), never another exception. Fixed seed (derandomize), bounded
budget; no processes, no network."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from pykubeadm.api.loader import load_documents, load_init_config, load_join_config, load_reset_config
from pykubeadm.errors import KubeadmError, ValidationError
from tests.fuzz import fuzz_settings

FUZZ = fuzz_settings(120)

V1BETA4 = [
    {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "InitConfiguration",
        "bootstrapTokens": [{"token": "abcdef.0123456789abcdef", "ttl": "24h0m0s", "usages": ["signing"]}],
        "localAPIEndpoint": {"advertiseAddress": "127.0.10.1", "bindPort": 6443},
        "nodeRegistration": {"name": "cp-1", "criSocket": "unix:///run/containerd/containerd.sock", "taints": []},
        "timeouts": {"discovery": "5m0s", "kubeletHealthCheck": "4m0s"},
    },
    {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "ClusterConfiguration",
        "kubernetesVersion": "v1.33.0",
        "clusterName": "kubernetes",
        "networking": {"serviceSubnet": "10.96.0.0/12", "podSubnet": "10.244.0.0/16", "dnsDomain": "cluster.local"},
        "apiServer": {"extraArgs": [{"name": "v", "value": "2"}], "certSANs": ["127.0.0.1"]},
        "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
        "certificateValidityPeriod": "8760h0m0s",
    },
]
V1BETA3 = [
    {
        "apiVersion": "kubeadm.k8s.io/v1beta3",
        "kind": "InitConfiguration",
        "bootstrapTokens": [{"token": "abcdef.0123456789abcdef", "ttl": "24h0m0s"}],
        "localAPIEndpoint": {"advertiseAddress": "127.0.10.1", "bindPort": 6443},
        "nodeRegistration": {"name": "cp-1", "kubeletExtraArgs": {"v": "2"}},
    },
    {
        "apiVersion": "kubeadm.k8s.io/v1beta3",
        "kind": "ClusterConfiguration",
        "kubernetesVersion": "v1.33.0",
        "networking": {"serviceSubnet": "10.96.0.0/12"},
        "apiServer": {"extraArgs": {"v": "2"}, "timeoutForControlPlane": "4m0s"},
    },
]
JOIN = {
    "apiVersion": "kubeadm.k8s.io/v1beta4",
    "kind": "JoinConfiguration",
    "discovery": {
        "bootstrapToken": {
            "apiServerEndpoint": "127.0.10.1:6443",
            "token": "abcdef.0123456789abcdef",
            "caCertHashes": ["sha256:" + "0" * 64],
        }
    },
    "nodeRegistration": {"name": "w-1"},
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "-1", "1.2.3.4", "::1", "10.0.0.0/8", "5m", "v1.33.0", "abcdef.0123456789abcdef", "a" * 300]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((*prefix, i))
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


@st.composite
def mutated(draw: st.DrawFn, seed: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], tuple[Any, ...]]:
    docs = copy.deepcopy(seed)
    i = draw(st.integers(0, len(docs) - 1))
    paths = [p for p in _paths(docs[i]) if p[0] not in ("apiVersion", "kind")]
    path = draw(st.sampled_from(paths))
    _set(docs[i], path, draw(values))
    if draw(st.booleans()):
        docs[i][draw(st.text(min_size=1, max_size=10))] = draw(values)  # an unknown or duplicated top-level field
    return docs, path


def _write(tmp: Path, docs: list[Any]) -> Path:
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _judge(load: Any, path: Path, mutated_path: tuple[Any, ...] = ()) -> None:
    try:
        load(path, dynamic=False)
    except ValidationError as err:
        text = str(err)
        assert text and "Traceback" not in text
        keys = [p for p in mutated_path if isinstance(p, str)]
        if keys and not any(k in text for k in keys):
            # a problem elsewhere may be reported, but then it too is a field error: `<path>: <kind>…` or a
            # document-level message from the loader
            assert ":" in text or "kind" in text.lower() or "version" in text.lower(), text
    except KubeadmError as err:
        assert str(err)


@FUZZ
@given(mutated(V1BETA4))
def test_mutated_v1beta4_init_config(tmp_path_factory, case) -> None:
    docs, path = case
    _judge(load_init_config, _write(tmp_path_factory.mktemp("cfg"), docs), path)


@FUZZ
@given(mutated(V1BETA3))
def test_mutated_v1beta3_init_config(tmp_path_factory, case) -> None:
    docs, path = case
    _judge(load_init_config, _write(tmp_path_factory.mktemp("cfg"), docs), path)


@FUZZ
@given(mutated([JOIN]))
def test_mutated_join_config(tmp_path_factory, case) -> None:
    docs, path = case
    _judge(load_join_config, _write(tmp_path_factory.mktemp("cfg"), docs), path)


@FUZZ
@given(
    st.lists(
        st.one_of(
            values,
            st.fixed_dictionaries(
                {
                    "apiVersion": st.sampled_from(["kubeadm.k8s.io/v1beta4", "kubeadm.k8s.io/v1beta3", "v1", ""]),
                    "kind": st.sampled_from(
                        ["InitConfiguration", "ClusterConfiguration", "JoinConfiguration", "ResetConfiguration", "X"]
                    ),
                },
                optional={"nodeRegistration": values, "networking": values, "etcd": values, "discovery": values},
            ),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_random_documents(tmp_path_factory, docs) -> None:
    path = _write(tmp_path_factory.mktemp("cfg"), docs)
    for load in (load_init_config, load_join_config, load_reset_config):
        _judge(load, path)


@FUZZ
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_random_bytes(data) -> None:
    try:
        load_documents(data)
    except KubeadmError as err:
        assert str(err)
