"""Static token file authenticator (--token-auth-file): CSV lines `token,user,uid[,"group1,group2"]`.

Read once at start by `config.build_auth`. Blank lines and lines starting with `#` are skipped; a line with fewer than
three columns or broken quoting is a startup error naming the file and line number. Tokens are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from pathlib import Path

from pykubeadm.apiserver.authn.user import UserInfo

__all__ = ["StaticTokenAuthenticator", "TokenFileError", "load_token_file", "parse_token_file"]

log = logging.getLogger(__name__)


class TokenFileError(ValueError):
    """The token file is unreadable or malformed (a kube-apiserver startup error)."""


def parse_token_file(text: str, path: str = "<token file>") -> list[tuple[str, UserInfo]]:
    """(token, user) per record, in file order. Raises TokenFileError naming the line of the first bad record."""
    out: list[tuple[str, UserInfo]] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            fields = _split_csv_line(line)
        except ValueError as err:
            raise TokenFileError(f"token file '{path}' line {lineno}: {err}") from None
        if len(fields) < 3:
            raise TokenFileError(
                f"token file '{path}' line {lineno}: must have at least 3 columns (token, user name, user uid), "
                f"found {len(fields)}"
            )
        token, name, uid = fields[0], fields[1], fields[2]
        if not token:
            log.warning("empty token has been found in token file '%s', line %d", path, lineno)
            continue
        if token in seen:
            log.warning("duplicate token has been found in token file '%s', line %d", path, lineno)
            out = [(t, u) for t, u in out if t != token]
        seen.add(token)
        groups = tuple(fields[3].split(",")) if len(fields) >= 4 and fields[3] else ()
        out.append((token, UserInfo(name=name, uid=uid, groups=groups)))
    return out


def _split_csv_line(line: str) -> list[str]:
    """One CSV record with Go encoding/csv's strict quoting: a quote may only open a field, `""` escapes a quote."""
    fields: list[str] = []
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == '"':
            value, i = [], i + 1
            while True:
                j = line.find('"', i)
                if j == -1:
                    raise ValueError('extraneous or missing " in quoted-field')
                value.append(line[i:j])
                if j + 1 < n and line[j + 1] == '"':
                    value.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            if i < n and line[i] != ",":
                raise ValueError('extraneous or missing " in quoted-field')
            fields.append("".join(value))
        else:
            j = line.find(",", i)
            field = line[i:] if j == -1 else line[i:j]
            if '"' in field:
                raise ValueError('bare " in non-quoted-field')
            fields.append(field)
            i = n if j == -1 else j
        if i >= n:
            return fields
        i += 1  # skip the comma


def load_token_file(path: str | Path) -> list[tuple[str, UserInfo]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TokenFileError(f"failed to read token file '{path}': {err}") from err
    return parse_token_file(text, str(path))


class StaticTokenAuthenticator:
    """A TokenAuthenticator over fixed tokens; lookups go by SHA-256 and end with a constant-time compare."""

    def __init__(self, entries: list[tuple[str, UserInfo]]):
        self._by_digest = {hashlib.sha256(t.encode()).digest(): (t.encode(), u) for t, u in entries}

    @classmethod
    def from_file(cls, path: str | Path) -> StaticTokenAuthenticator:
        return cls(load_token_file(path))

    async def __call__(self, token: str) -> UserInfo | None:
        entry = self._by_digest.get(hashlib.sha256(token.encode()).digest())
        if entry is None or not hmac.compare_digest(entry[0], token.encode()):
            return None
        return entry[1]
