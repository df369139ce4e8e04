"""Go's `%q` formatting of a string, for messages and files that must read exactly as Kubernetes writes them.

Used by kubeadm's kubeadm-flags.env (`phases/kubelet/flags.py`) and the kubelet's downward-API label/annotation files
(`kubelet/envvars.py`).
"""

from __future__ import annotations

__all__ = ["go_quote"]


def go_quote(s: str) -> str:
    """Go's `%q` of a string (double quotes, backslash escapes)."""
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable():
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
