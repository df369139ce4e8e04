"""Go's text/tabwriter (left-aligned, space padding, no flags): the column layout of kubeadm's tables.

Used by `certs check-expiration` (and fit for `token list`: kubeadm uses tabwriter.NewWriter(out, 10, 4, 3, ' ', 0)).
Cells end with a tab; the text after the last tab of a line is not aligned. A column block is a run of consecutive
lines that have that column, so an empty line starts a new table, exactly as in Go.
"""

from __future__ import annotations

__all__ = ["TabWriter"]


class TabWriter:
    def __init__(self, minwidth: int = 0, tabwidth: int = 8, padding: int = 1) -> None:
        self.minwidth, self.tabwidth, self.padding = minwidth, tabwidth, padding
        self._buf = ""

    def write(self, text: str) -> None:
        self._buf += text

    def flush(self) -> str:
        """The formatted text of everything written so far (the buffer is reset)."""
        text, self._buf = self._buf, ""
        ends_nl = text.endswith("\n")
        raw = text[:-1].split("\n") if ends_nl else text.split("\n")
        lines = [r.split("\t") for r in raw]
        out: list[str] = []
        widths: list[int] = []

        def write_lines(line0: int, line1: int) -> None:
            for i in range(line0, line1):
                parts = []
                for j, cell in enumerate(lines[i]):
                    parts.append(cell)
                    if j < len(widths) and j < len(lines[i]) - 1:
                        parts.append(" " * (widths[j] - len(cell)))
                out.append("".join(parts))

        def fmt(line0: int, line1: int) -> None:
            column = len(widths)
            this = line0
            while this < line1:
                if column >= len(lines[this]) - 1:
                    this += 1
                    continue
                write_lines(line0, this)
                line0 = this
                width = self.minwidth
                while this < line1 and column < len(lines[this]) - 1:
                    width = max(width, len(lines[this][column]) + self.padding)
                    this += 1
                widths.append(width)
                fmt(line0, this)
                widths.pop()
                line0 = this
            write_lines(line0, line1)

        fmt(0, len(lines))
        return "\n".join(out) + ("\n" if ends_nl else "")
