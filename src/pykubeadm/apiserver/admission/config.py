"""--admission-control-config-file: kube-apiserver's AdmissionConfiguration (apiserver.config.k8s.io/v1).

`load_admission_config(path)` returns each plugin's configuration object by plugin name: inline `configuration`, or
the file named by `path` (relative paths are relative to the AdmissionConfiguration file). Errors name the file and
the field, as kube-apiserver's start-up errors do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["AdmissionConfigError", "load_admission_config"]

_API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1")


class AdmissionConfigError(ValueError):
    """The admission configuration file is unreadable or malformed."""


def _load(path: Path, what: str) -> Any:
    import yaml  # only with --admission-control-config-file: PyYAML is not every apiserver start's cost

    from pykubeadm.util.yamlload import load_yaml

    try:
        return load_yaml(path.read_text())
    except OSError as e:
        raise AdmissionConfigError(f"{what}: unable to read {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise AdmissionConfigError(f"{what}: {path} is not valid YAML: {e}") from None


def load_admission_config(path: Path) -> dict[str, dict[str, Any]]:
    flag = "--admission-control-config-file"
    doc = _load(path, flag)
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionConfiguration":
        raise AdmissionConfigError(f'{flag}: {path}: kind must be "AdmissionConfiguration"')
    if doc.get("apiVersion") not in _API_VERSIONS:
        raise AdmissionConfigError(
            f'{flag}: {path}: apiVersion "{doc.get("apiVersion")}" is not supported; use "{_API_VERSIONS[0]}"'
        )
    out: dict[str, dict[str, Any]] = {}
    for i, plugin in enumerate(doc.get("plugins") or []):
        name = plugin.get("name") if isinstance(plugin, dict) else None
        if not name:
            raise AdmissionConfigError(f"{flag}: {path}: plugins[{i}].name: Required value")
        config = plugin.get("configuration")
        if config is None and plugin.get("path"):
            target = Path(plugin["path"])
            config = _load(target if target.is_absolute() else path.parent / target, f"{flag}: plugins[{i}].path")
        if config is not None and not isinstance(config, dict):
            raise AdmissionConfigError(f"{flag}: {path}: plugins[{i}].configuration must be an object")
        out[str(name)] = config or {}
    return out
