"""`dump_yaml` writes with libyaml's emitter and decides go-yaml's double quotes itself; this checks, over random
documents, that its output is exactly what PyYAML's pure-Python emitter writes when it is told to prefer double quotes
(the reference below), and that it reads back to the same document. Fixed seed (derandomize), bounded budget."""

from __future__ import annotations

from typing import Any

import yaml
import yaml.emitter
import yaml.representer
import yaml.resolver
import yaml.serializer
from hypothesis import given
from hypothesis import strategies as st

from pykubeadm.api.yamlio import dump_yaml
from tests.fuzz import fuzz_settings

FUZZ = fuzz_settings(400)


class _ReferenceEmitter(yaml.emitter.Emitter):
    def choose_scalar_style(self) -> str:
        style = super().choose_scalar_style()
        return '"' if style == "'" else style


class _ReferenceDumper(
    _ReferenceEmitter, yaml.serializer.Serializer, yaml.representer.SafeRepresenter, yaml.resolver.Resolver
):
    def __init__(self, stream: Any, **kw: Any) -> None:
        _ReferenceEmitter.__init__(self, stream, indent=kw.get("indent"), width=kw.get("width"), allow_unicode=True)
        yaml.serializer.Serializer.__init__(self)
        yaml.representer.SafeRepresenter.__init__(self, default_flow_style=False, sort_keys=True)
        yaml.resolver.Resolver.__init__(self)


def _ref_str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReferenceDumper.add_representer(str, _ref_str)


def reference(obj: Any) -> str:
    text = yaml.dump(obj, Dumper=_ReferenceDumper, width=1 << 30, indent=2, allow_unicode=True)
    # Both emitters may end a document with `...` after a `|+` block scalar (not always the same ones); dump_yaml
    # never writes the marker.
    return text[:-4] if text.endswith("\n...\n") else text


# Strings that look like what manifests and kubeconfigs hold, and strings built to need quoting.
_TRICKY = st.sampled_from(
    [
        "",
        "0",
        "1.5",
        "true",
        "yes",
        "on",
        "null",
        "~",
        "=",
        "<<",
        "-",
        "--",
        "---x",
        "...",
        "a:",
        "a: b",
        "a #b",
        "#x",
        "&a",
        "*a",
        "!a",
        "|",
        ">",
        "%x",
        "@x",
        "`x",
        "[x]",
        "{x}",
        ",x",
        "?x",
        "? x",
        "- x",
        "x ",
        " x",
        "2024-01-01",
        "0x1F",
        "0o17",
        "1e3",
        ".inf",
        "NaN",
        "https://127.0.0.1:6443",
        "--bind-address=127.0.0.1",
        "registry.k8s.io/kube-apiserver:v1.33.0",
        "10.96.0.0/12",
        "a\nb",
        "a\n",
        " a\nb",
        "a \nb",
        "é",
        "\t",
        "\x85",
        "ü:x",
        "x\u2028y",
        "'",
        '"',
        "a'b",
        'a"b',
        "\\",
        "C:\\x",
    ]
)
# Exact output is compared for printable text in the Basic Multilingual Plane. Beyond it, and for control and
# line-separator characters inside multi-line text, the two emitters disagree on what may be written as it is (libyaml
# escapes, PyYAML does not); there only reading back must agree (`test_any_text_reads_back`).
_BMP = st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs", "Cc", "Co", "Zl", "Zp"), include_characters="\n\t")
_TEXT = st.one_of(
    _TRICKY, st.text(alphabet=_BMP, max_size=12), st.from_regex(r"[a-z0-9./:=_@,+-]{1,16}", fullmatch=True)
)
# Not the empty key: PyYAML writes it as a complex key (`? ""`), libyaml (and go-yaml) as `"": ...`.
_KEYS = st.one_of(st.from_regex(r"[a-zA-Z][a-zA-Z0-9]{0,10}", fullmatch=True), _TRICKY.filter(bool))
_DOCS = st.recursive(
    st.one_of(_TEXT, st.integers(-(2**40), 2**40), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)


@FUZZ
@given(st.dictionaries(_KEYS, _DOCS, max_size=5))
def test_dump_yaml_matches_the_reference_emitter_and_reads_back(doc: dict[str, Any]) -> None:
    text = dump_yaml(doc)
    assert text == reference(doc)
    assert (yaml.safe_load(text) or {}) == doc


@FUZZ
@given(st.dictionaries(st.text(max_size=8), st.lists(st.text(max_size=12), max_size=3), max_size=5))
def test_any_text_reads_back(doc: dict[str, Any]) -> None:
    assert (yaml.safe_load(dump_yaml(doc)) or {}) == doc


def test_dump_yaml_double_quotes_where_go_yaml_does() -> None:
    doc = {"a": "", "b": "0", "c": "true", "d": "x: y", "e": "plain/value:v1", "f": "--flag=1", "g": "a\nb\n"}
    assert dump_yaml(doc) == 'a: ""\nb: "0"\nc: "true"\nd: "x: y"\ne: plain/value:v1\nf: --flag=1\ng: |\n  a\n  b\n'
