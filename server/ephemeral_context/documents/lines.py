"""The line table: where each line starts, in code points and in UTF-8 bytes.

Built once per text in a vectorised scan, then carried across edits: only the lines around
an edit are rescanned and the rest shifted, so a one-character edit does a few array
operations however long the document is.

API:
- `LineIndex.build(text, data)`: scan a whole text.
- `LineIndex.after_edit(old, new, start, end, inserted_len, start_byte)`: the table of the
  edited text from this one.
- `.cp_starts`, `.byte_starts`, `.has_lone_cr`, `.line_count`, `.line_of_cp`, `.line_of_byte`.
- `split_lines(text)`: the lines as the editor numbers them, each with its line end.
- `lone_cr_as_lf(data)`: the bytes a parser that ends rows at LF only (tree-sitter) reads.
- `count_breaks(text)`: how many line ends `text` holds, as `split_lines` finds them.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from ephemeral_context.documents.pieces import Pieces
from ephemeral_context.documents.positions import utf8

_Offsets = npt.NDArray[np.int64]

# Inserting more than this many characters rebuilds the line table in one vectorised scan.
_REBUILD_ABOVE = 4096
_BREAK_CHAR = re.compile("[\r\n]")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_LONE_CR = re.compile(rb"\r(?!\n)")


def split_lines(text: str) -> list[str]:
    """The lines of `text` as LSP (and so the editor) numbers them, each with its line end:
    str.splitlines also ends a line at a form feed, U+2028 or U+0085, which would shift every
    later line number the model is shown or reads by."""
    return _LINE.findall(text)


def count_breaks(text: str) -> int:
    """How many line ends (LF, CRLF, lone CR) `text` holds, without splitting it."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def lone_cr_as_lf(data: bytes) -> bytes:
    """`data` with each lone CR read as LF: one byte for one, so every offset stays, and a
    parser that ends rows at LF only (tree-sitter) counts the lines the editor shows (a
    classic Mac file was one row: every definition on line 1, each one the whole file)."""
    return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


class LineIndex:
    """Line starts of one text version, in code points and in UTF-8 bytes.

    Lines end at '\\n', '\\r\\n' or a lone '\\r', as in LSP. Line i spans
    [cp_starts[i], cp_starts[i+1]) including its terminator.
    """

    __slots__ = ("byte_starts", "cp_starts", "has_lone_cr")

    def __init__(self, cp_starts: _Offsets, byte_starts: _Offsets, has_lone_cr: bool) -> None:
        self.cp_starts = cp_starts
        self.byte_starts = byte_starts
        self.has_lone_cr = has_lone_cr

    @classmethod
    def build(cls, text: str, data: bytes) -> LineIndex:
        """Scan a whole text once (vectorised over its bytes and, if not ASCII, code points)."""
        byte_starts, lone = _break_starts(np.frombuffer(data, dtype=np.uint8))
        if len(data) == len(text):
            cp_starts = byte_starts
        else:
            codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            cp_starts, _ = _break_starts(codes)
        return cls(cp_starts, byte_starts, lone)

    @property
    def line_count(self) -> int:
        return len(self.cp_starts)

    def line_of_cp(self, offset: int) -> int:
        return int(np.searchsorted(self.cp_starts, offset, side="right")) - 1

    def line_of_byte(self, offset: int) -> int:
        return int(np.searchsorted(self.byte_starts, offset, side="right")) - 1

    def after_edit(
        self, old: Pieces, new: Pieces, start: int, end: int, inserted_len: int, start_byte: int
    ) -> LineIndex:
        """The line table of `new`, which is `old` (this table's text) with code points
        [start, end) replaced by `inserted_len` code points starting at byte `start_byte`:
        keep, rescan the edit, shift the rest.

        Whether a line starts at q depends on text[q-1] and text[q] only, so old starts below
        `start` and above `end` are unchanged (the latter shifted); only q in
        [start, start + inserted_len] of the new text needs looking at.
        """
        if inserted_len > _REBUILD_ABOVE:
            return LineIndex.build(new.text, new.data)
        keep_before = int(np.searchsorted(self.cp_starts, max(start, 1), side="left"))
        keep_after = int(np.searchsorted(self.cp_starts, end + 1, side="left"))
        cp_delta = new.length - old.length
        byte_delta = new.size - old.size
        scan_from = max(start, 1)
        # text[scan_from - 1 : start + inserted_len + 1]: the characters around each candidate.
        window = new.slice(scan_from - 1, start + inserted_len + 1)
        new_cp: list[int] = []
        new_byte: list[int] = []
        lone = self.has_lone_cr
        if "\n" in window or "\r" in window:
            last_q, last_byte = start, start_byte
            for match in _BREAK_CHAR.finditer(window, 0, start + inserted_len - scan_from + 1):
                q = scan_from + match.start()
                local = q - scan_from + 1
                if _is_line_start(window, local):
                    last_byte += len(utf8(new.slice(last_q, q)))
                    last_q = q
                    new_cp.append(q)
                    new_byte.append(last_byte)
                    lone = lone or window[local - 1] == "\r"
        cp_starts = np.concatenate(
            (
                self.cp_starts[:keep_before],
                np.array(new_cp, dtype=np.int64),
                self.cp_starts[keep_after:] + cp_delta,
            )
        )
        byte_starts = np.concatenate(
            (
                self.byte_starts[:keep_before],
                np.array(new_byte, dtype=np.int64),
                self.byte_starts[keep_after:] + byte_delta,
            )
        )
        return LineIndex(cp_starts, byte_starts, lone)


def _break_starts(codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]) -> tuple[_Offsets, bool]:
    """Indices where lines start, given the text as an array of code units."""
    newline = codes == 10
    carriage = codes == 13
    lone_cr = carriage.copy()
    lone_cr[:-1] &= ~newline[1:]
    ends = np.flatnonzero(newline | lone_cr).astype(np.int64) + 1
    starts = np.concatenate((np.zeros(1, dtype=np.int64), ends))
    return starts, bool(lone_cr.any())


def _is_line_start(text: str, q: int) -> bool:
    """Whether a line starts at code point q, judged from the two characters around it."""
    before = text[q - 1]
    return before == "\n" or (before == "\r" and text[q : q + 1] != "\n")
