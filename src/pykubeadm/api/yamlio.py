"""Multi-document YAML I/O for the config API: split a file into (apiVersion, kind, body) documents, decode a document
strictly into a model (unknown fields → errors), and write YAML the way kubeadm's sigs.k8s.io/yaml does (keys sorted,
block style, lists not indented under their key, `"` quoting when needed, documents joined by `---`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml
import yaml.emitter

from pykubeadm.api._base import DecodeError, KubeModel
from pykubeadm.errors import FieldError, ValidationError

__all__ = [
    "Document",
    "decode",
    "dump_documents",
    "dump_yaml",
    "gvk_string",
    "split_documents",
]

M = TypeVar("M", bound=KubeModel)


@dataclass(frozen=True)
class Document:
    """One YAML document of a config file."""

    api_version: str
    kind: str
    body: dict[str, Any]

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]

    @property
    def gvk(self) -> str:
        return gvk_string(self.api_version, self.kind)


def gvk_string(api_version: str, kind: str) -> str:
    """Go's `%#v` of a schema.GroupVersionKind, as kubeadm prints it in decoding errors."""
    group, _, version = api_version.rpartition("/")
    return f'schema.GroupVersionKind{{Group:"{group}", Version:"{version}", Kind:"{kind}"}}'


def split_documents(text: str | bytes) -> list[Document]:
    """Parse multi-document YAML; every non-empty document must be a mapping with apiVersion and kind."""
    try:
        raw = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise ValidationError([f"error converting YAML to JSON: {_yaml_error_text(e)}"]) from None
    docs: list[Document] = []
    for body in raw:
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ValidationError([f"error unmarshaling JSON: expected a YAML mapping, got {type(body).__name__}"])
        api_version = body.get("apiVersion") or ""
        kind = body.get("kind") or ""
        if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
            group, _, version = str(api_version).rpartition("/")
            raise ValidationError(
                [
                    f"invalid configuration for GroupVersionKind /{version}, Kind={kind}: kind and apiVersion is "
                    "mandatory information that must be specified"
                    if not group
                    else f"invalid configuration for GroupVersionKind {group}/{version}, Kind={kind}: kind and "
                    "apiVersion is mandatory information that must be specified"
                ]
            )
        docs.append(Document(api_version, kind, body))
    return docs


def _yaml_error_text(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    if mark is not None:
        return f"yaml: line {mark.line + 1}: {problem}"
    return f"yaml: {problem}"


def decode(model: type[M], doc: Document | dict[str, Any], gvk: str | None = None) -> M:
    """Strictly decode a document into `model`; unknown fields and bad types become one ValidationError."""
    body = doc.body if isinstance(doc, Document) else doc
    gvk = gvk or (doc.gvk if isinstance(doc, Document) else "")
    try:
        return model.from_obj(body)
    except DecodeError as e:
        errors: list[FieldError | str] = list(e.errors)
        if e.unknown:
            unknown = ", ".join(f'unknown field "{path}"' for path in e.unknown)
            errors.insert(0, f"error unmarshaling configuration {gvk}: strict decoding error: {unknown}")
        raise ValidationError(errors) from None


# --- writing ---------------------------------------------------------------------------------------------------------


class _GoEmitter(yaml.emitter.Emitter):
    """Prefer double quotes where PyYAML would single-quote, as go-yaml does (`""`, `"0"`, `"true"`)."""

    def choose_scalar_style(self) -> str:
        style = super().choose_scalar_style()
        return '"' if style == "'" else style


class _GoDumper(
    _GoEmitter,
    yaml.serializer.Serializer,
    yaml.representer.SafeRepresenter,
    yaml.resolver.Resolver,
):
    def __init__(self, stream: Any, **kwargs: Any) -> None:
        _GoEmitter.__init__(
            self,
            stream,
            canonical=kwargs.get("canonical"),
            indent=kwargs.get("indent"),
            width=kwargs.get("width"),
            allow_unicode=kwargs.get("allow_unicode"),
            line_break=kwargs.get("line_break"),
        )
        yaml.serializer.Serializer.__init__(
            self,
            encoding=kwargs.get("encoding"),
            explicit_start=kwargs.get("explicit_start"),
            explicit_end=kwargs.get("explicit_end"),
            version=kwargs.get("version"),
            tags=kwargs.get("tags"),
        )
        yaml.representer.SafeRepresenter.__init__(
            self,
            default_style=kwargs.get("default_style"),
            default_flow_style=kwargs.get("default_flow_style", False),
            sort_keys=kwargs.get("sort_keys", True),
        )
        yaml.resolver.Resolver.__init__(self)


def _represent_str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_GoDumper.add_representer(str, _represent_str)


def dump_yaml(obj: Any) -> str:
    """One YAML document (no `---`), keys sorted, in go-yaml's block style."""
    if isinstance(obj, KubeModel):
        obj = obj.to_obj()
    return yaml.dump(
        obj,
        Dumper=_GoDumper,
        default_flow_style=False,
        sort_keys=True,
        allow_unicode=True,
        width=1 << 30,
        indent=2,
    )


def dump_documents(objs: Iterable[Any]) -> str:
    """Several YAML documents joined by `---` lines, as kubeadm prints them."""
    return "---\n".join(dump_yaml(o) for o in objs)
