"""Multi-document YAML I/O for the config API: split a file into (apiVersion, kind, body) documents, decode a document
strictly into a model (unknown fields → errors), and write YAML the way kubeadm's sigs.k8s.io/yaml does (keys sorted,
block style, lists not indented under their key, `"` quoting when needed, documents joined by `---`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml
import yaml.emitter
import yaml.resolver
from yaml._yaml import CEmitter  # libyaml, which PyYAML's wheels include

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


#: Strings both PyYAML and libyaml write plain in block context (when the resolver reads them back as strings): no
#: spaces or quoting characters, not ending in ':', not starting with an indicator or a document marker.
_PLAIN_SAFE = re.compile(r"(?:[A-Za-z0-9/_.]|-(?=[^\s]))[A-Za-z0-9/_.:=,@+-]*")
_STR_TAG = "tag:yaml.org,2002:str"


class _Analyzer(yaml.emitter.Emitter):
    """Only PyYAML's scalar analysis (whether a string can be written plain), for the strings `_PLAIN_SAFE` rejects."""

    def __init__(self) -> None:  # no stream: analyze_scalar only reads allow_unicode
        self.allow_unicode = True


_ANALYZER = _Analyzer()


def _plain_allowed(dumper: yaml.resolver.Resolver, value: str) -> bool:
    if dumper.resolve(yaml.ScalarNode, value, (True, False)) != _STR_TAG:
        return False  # "", "0", "true", "null", "1.5", a timestamp: plain would read back as another type
    if _PLAIN_SAFE.fullmatch(value) and not value.endswith(":") and not value.startswith(("---", "...")):
        return True
    analysis = _ANALYZER.analyze_scalar(value)
    return analysis.allow_block_plain and not analysis.empty and not analysis.multiline


class _GoDumper(CEmitter, yaml.representer.SafeRepresenter, yaml.resolver.Resolver):
    """libyaml's emitter with the safe representer; strings that cannot be plain are double-quoted, as go-yaml does
    (`""`, `"0"`, `"true"`), where PyYAML and libyaml would single-quote them."""

    def __init__(self, stream: Any, **kwargs: Any) -> None:
        CEmitter.__init__(
            self,
            stream,
            canonical=kwargs.get("canonical"),
            indent=kwargs.get("indent"),
            width=kwargs.get("width"),
            allow_unicode=kwargs.get("allow_unicode"),
            line_break=kwargs.get("line_break"),
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


def _represent_str(dumper: Any, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar(_STR_TAG, value, style="|")
    return dumper.represent_scalar(_STR_TAG, value, style=None if _plain_allowed(dumper, value) else '"')


_GoDumper.add_representer(str, _represent_str)


def dump_yaml(obj: Any) -> str:
    """One YAML document (no `---`), keys sorted, in go-yaml's block style."""
    if isinstance(obj, KubeModel):
        obj = obj.to_obj()
    text: str = yaml.dump(
        obj,
        Dumper=_GoDumper,
        default_flow_style=False,
        sort_keys=True,
        allow_unicode=True,
        width=1 << 30,
        indent=2,
    )
    # After a block scalar that keeps its trailing newlines (`|+`), libyaml ends the document with `...` (PyYAML does in
    # some such cases too); go-yaml does not, and the document ends at the end of the text anyway.
    return text[:-4] if text.endswith("\n...\n") else text


def dump_documents(objs: Iterable[Any]) -> str:
    """Several YAML documents joined by `---` lines, as kubeadm prints them."""
    return "---\n".join(dump_yaml(o) for o in objs)
