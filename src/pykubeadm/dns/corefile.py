"""The Corefile parser (Caddyfile syntax, as CoreDNS reads it), used by `dns.setup` at start-up and on reload.

A Corefile is a list of server blocks: keys (`.:53`, `dns://cluster.local:5353`, comma or space separated) then
`{ … }` holding one directive per line; a directive's own `{ … }` block holds its properties (nested blocks allowed).
Tokens are whitespace separated; `"…"` and `` `…` `` quote, `#` starts a comment, `{$NAME}` is replaced by the
environment variable. Errors read like CoreDNS's: `Corefile:12 - Error during parsing: Unknown directive 'xyz'`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CorefileError", "Directive", "ServerBlock", "ServerKey", "parse_corefile", "parse_server_key"]

_ENV_REF = re.compile(r"\{\$([A-Za-z_][A-Za-z0-9_]*)\}|\{%([A-Za-z_][A-Za-z0-9_]*)%\}")


class CorefileError(Exception):
    """A syntax or semantic error at a line of the Corefile (the text CoreDNS prints)."""

    def __init__(self, filename: str, line: int, message: str):
        super().__init__(f"{filename}:{line} - Error during parsing: {message}")
        self.filename = filename
        self.line = line
        self.message = message


@dataclass
class Directive:
    """One line of a block: its name, arguments, line number and its own `{ … }` block, if any."""

    name: str
    args: list[str]
    line: int
    block: list[Directive] = field(default_factory=list)
    filename: str = "Corefile"

    def error(self, message: str) -> CorefileError:
        """An error at this directive's line (like caddy's `c.Errf`)."""
        return CorefileError(self.filename, self.line, message)

    def arg_error(self) -> CorefileError:
        """caddy's `c.ArgErr()`: the wrong number of arguments."""
        return self.error(
            f"Wrong argument count or unexpected line ending after '{self.args[-1] if self.args else self.name}'"
        )

    def unknown_property(self) -> CorefileError:
        return self.error(f"unknown property '{self.name}'")


@dataclass(frozen=True)
class ServerKey:
    """A parsed server block key: scheme, zone (absolute, lower case) and port."""

    scheme: str
    zone: str
    port: int

    def __str__(self) -> str:
        return f"{self.zone}:{self.port}"


@dataclass
class ServerBlock:
    keys: list[str]
    directives: list[Directive]
    line: int


@dataclass
class _Token:
    text: str
    line: int
    quoted: bool = False


def _tokens(text: str, filename: str, env: Mapping[str, str]) -> list[_Token]:
    out: list[_Token] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace():
            i += 1
        elif ch == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif ch in '"`':
            start_line, i, buf = line, i + 1, []
            while i < n and text[i] != ch:
                if ch == '"' and text[i] == "\\" and i + 1 < n and text[i + 1] == '"':
                    i += 1
                if text[i] == "\n":
                    line += 1
                buf.append(text[i])
                i += 1
            if i >= n:
                raise CorefileError(filename, start_line, "Unexpected EOF: unterminated quote")
            i += 1
            out.append(_Token(_expand("".join(buf), env), start_line, quoted=True))
        else:
            start = i
            while i < n and not text[i].isspace() and not (text[i] == "#" and (i == start or text[i - 1].isspace())):
                i += 1
            out.append(_Token(_expand(text[start:i], env), line))
    return out


def _expand(word: str, env: Mapping[str, str]) -> str:
    return _ENV_REF.sub(lambda m: env.get(m.group(1) or m.group(2), ""), word)


class _Parser:
    def __init__(self, tokens: list[_Token], filename: str):
        self.toks = tokens
        self.pos = 0
        self.filename = filename

    def _err(self, line: int, message: str) -> CorefileError:
        return CorefileError(self.filename, line, message)

    def _is(self, tok: _Token, text: str) -> bool:
        return not tok.quoted and tok.text == text

    def blocks(self) -> list[ServerBlock]:
        blocks: list[ServerBlock] = []
        while self.pos < len(self.toks):
            blocks.append(self._server_block(braces_optional=not blocks))
        return blocks

    def _server_block(self, braces_optional: bool) -> ServerBlock:
        first = self.toks[self.pos]
        keys: list[str] = []
        line = first.line
        # keys: every token up to `{`, on the first line (or continued after a trailing comma)
        while self.pos < len(self.toks):
            tok = self.toks[self.pos]
            if self._is(tok, "{"):
                break
            if tok.line != line and not (keys and keys[-1].endswith(",")):
                break
            if self._is(tok, "}"):
                raise self._err(tok.line, "Unexpected '}' because no matching opening brace")
            keys.extend(k for k in tok.text.split(",") if k)
            line = tok.line
            self.pos += 1
        if self.pos < len(self.toks) and self._is(self.toks[self.pos], "{"):
            self.pos += 1
            directives = self._lines(first.line, closing=True)
        elif braces_optional:
            directives = self._lines(first.line, closing=False)
            if self.pos < len(self.toks):
                tok = self.toks[self.pos]
                raise self._err(tok.line, f"Unexpected token '{tok.text}', expecting '{{'")
        else:
            raise self._err(line, f"Unexpected token after '{keys[-1] if keys else ''}', expecting '{{'")
        return ServerBlock(keys, directives, first.line)

    def _lines(self, open_line: int, closing: bool) -> list[Directive]:
        out: list[Directive] = []
        while self.pos < len(self.toks):
            tok = self.toks[self.pos]
            if self._is(tok, "}"):
                if not closing:
                    raise self._err(tok.line, "Unexpected '}' because no matching opening brace")
                self.pos += 1
                return out
            if self._is(tok, "{"):
                raise self._err(tok.line, "Unexpected '{' on a line of its own")
            self.pos += 1
            d = Directive(tok.text, [], tok.line, filename=self.filename)
            while self.pos < len(self.toks) and self.toks[self.pos].line == tok.line:
                nxt = self.toks[self.pos]
                if self._is(nxt, "}"):
                    break
                self.pos += 1
                if self._is(nxt, "{"):
                    d.block = self._lines(nxt.line, closing=True)
                    break
                d.args.append(nxt.text)
            out.append(d)
        if closing:
            raise self._err(open_line, "Unexpected EOF: missing closing '}'")
        return out


def parse_corefile(text: str, filename: str = "Corefile", env: Mapping[str, str] | None = None) -> list[ServerBlock]:
    """Server blocks of a Corefile; CorefileError (with the line) on a syntax error."""
    blocks = _Parser(_tokens(text, filename, os.environ if env is None else env), filename).blocks()
    if not blocks:
        raise CorefileError(filename, 1, "no server blocks in the Corefile")
    return blocks


def parse_server_key(key: str, default_port: int) -> ServerKey:
    """`[dns://]zone[:port]` → ServerKey; the zone is made absolute and lower case. ValueError on a bad key."""
    scheme = "dns"
    if "://" in key:
        scheme, key = key.split("://", 1)
        if scheme != "dns":
            raise ValueError(f"unsupported scheme {scheme!r} in server key (only dns:// is served)")
    zone, port = key, default_port
    if key.count(":") == 1:
        zone, port_text = key.split(":")
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ValueError(f"invalid port {port_text!r} in server key {key!r}")
        port = int(port_text)
    zone = (zone or ".").lower()
    if not zone.endswith("."):
        zone += "."
    return ServerKey(scheme, zone, port)
