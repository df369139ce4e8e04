"""Reading YAML with libyaml (PyYAML's C loader, which its wheels include): the same safe documents as
`yaml.safe_load`, parsed about eight times faster. For the files the components and the lab read on every start
(static Pod manifests, kubelet configuration, kubeconfigs, lab state)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import yaml

__all__ = ["load_yaml", "load_yaml_all"]


def load_yaml(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """`yaml.safe_load`, parsed by libyaml."""
    return yaml.load(stream, Loader=yaml.CSafeLoader)


def load_yaml_all(stream: str | bytes | IO[str] | IO[bytes]) -> Iterator[Any]:
    """`yaml.safe_load_all`, parsed by libyaml."""
    return yaml.load_all(stream, Loader=yaml.CSafeLoader)
