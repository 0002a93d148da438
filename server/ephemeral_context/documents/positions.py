"""Position units, converted in one place: client units, code points and UTF-8 bytes.

Client units are UTF-16 by default (UTF-8 or UTF-32 when negotiated with the client), code
points are Python `str` indices and UTF-8 bytes are what tree-sitter counts. The functions
here convert within one line; `Document` adds the line table (documents/lines.py).

API:
- `PositionEncoding`: the client's unit, "utf-8", "utf-16" or "utf-32".
- `Position`, `Range`: zero-based line and character in client units; a range, end exclusive
  (`.backwards` when it ends before it starts).
- `Point`: tree-sitter's (row, byte column).
- `units_to_cp(line, units, encoding)`, `cp_to_units(line, cp, encoding)`: within one line.
- `utf8(text)`: the UTF-8 bytes, a lone surrogate kept byte for byte.
- `without_lone_surrogates(text)`: half a surrogate pair becomes U+FFFD, positions kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PositionEncoding = Literal["utf-8", "utf-16", "utf-32"]
Point = tuple[int, int]
"""tree-sitter's point: (row, column in UTF-8 bytes); a row is a line (a lone CR read as LF)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Position:
    """A position in client units: zero-based line and character."""

    line: int
    character: int


@dataclass(frozen=True, slots=True)
class Range:
    """A range in client units, end exclusive."""

    start: Position
    end: Position

    @property
    def backwards(self) -> bool:
        """Whether it ends before it starts: no edit means that, whatever clamping makes of it."""
        return (self.end.line, self.end.character) < (self.start.line, self.start.character)


def without_lone_surrogates(text: str) -> str:
    """Half a surrogate pair (a UTF-16 editor can hold one; JSON carries it as "\\ud83d")
    becomes U+FFFD: UTF-8, and so the store, the tokenizer and the API, cannot carry it.
    Positions stay put: both are one code point, one UTF-16 unit and three bytes."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def utf8(text: str) -> bytes:
    """The UTF-8 bytes of `text`; lone surrogates can arrive from JSON and are kept
    byte-for-byte instead of crashing."""
    return text.encode("utf-8", "surrogatepass")


def units_to_cp(line: str, units: int, encoding: PositionEncoding) -> int:
    """Client units into a code point index within one line, clamped to the line."""
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    if encoding == "utf-8":
        prefix = utf8(line)[:units]
        return len(prefix.decode("utf-8", "ignore"))
    # Codecs, not a loop over characters: a minified file's one long line took 0.2 s a
    # keystroke. A position inside a surrogate pair decodes to half of it: after the pair.
    prefix = _utf16(line)[: 2 * units]
    return len(prefix.decode("utf-16-le", "surrogatepass"))


def cp_to_units(line: str, cp: int, encoding: PositionEncoding) -> int:
    """A code point index within one line into client units."""
    head = line[:cp]
    if encoding == "utf-32" or head.isascii():
        return len(head)
    if encoding == "utf-8":
        return len(utf8(head))
    return len(_utf16(head)) // 2


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")
