"""Key-range helpers shared by the engines: the exclusive end of a prefix range, as etcd's `clientv3.GetPrefixRangeEnd`."""

from __future__ import annotations

__all__ = ["prefix_end", "prefix_end_bytes"]


def prefix_end_bytes(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with `prefix`; b"\\x00" (etcd's "all keys") for b""."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\x00"


def prefix_end(prefix: str) -> str | None:
    """The same for text keys (code point order equals UTF-8 byte order); None when the range is unbounded."""
    chars = list(prefix)
    while chars:
        if ord(chars[-1]) < 0x10FFFF:
            chars[-1] = chr(ord(chars[-1]) + 1)
            return "".join(chars)
        chars.pop()
    return None
