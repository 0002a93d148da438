"""A version's text as pieces, so that an edit copies one piece and not the whole document.

Pieces hold at most `_PIECE` code points each, with their UTF-8 bytes; the whole text and
bytes are joined on first use and kept. The content hash streams over the pieces.

API:
- `Pieces.of(text, data)`: a whole text (and its UTF-8 bytes) cut into pieces.
- `Pieces.replace(start, end, text)`: a new piece list with code points [start, end) replaced.
- `Pieces.text`, `.data`, `.length` (code points), `.size` (bytes), `.slice`, `.byte_slice`,
  `.read_bytes_at` (a `Parser.parse` read callback), `.digest()`.
- `content_hash(data)`: the mirror's content hash, xxh3-64 of the UTF-8 bytes.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import AnyStr

import xxhash

from ephemeral_context.documents.positions import Point, utf8

# Documents are held as pieces of this many code points, so an edit copies one piece.
_PIECE = 16_384


def content_hash(data: bytes) -> str:
    """The content hash the mirror reports: xxh3-64 of the UTF-8 bytes, 16 hex digits."""
    return xxhash.xxh3_64_hexdigest(data)


class Pieces:
    """The text of one version as pieces of code points and their UTF-8 bytes (immutable)."""

    __slots__ = (
        "_byte_starts",
        "_bytes",
        "_cp_starts",
        "_data",
        "_pieces",
        "_text",
        "length",
        "size",
    )

    def __init__(self, pieces: list[str], piece_bytes: list[bytes]) -> None:
        self._pieces = pieces
        self._bytes = piece_bytes
        self._cp_starts = [0, *itertools.accumulate(map(len, pieces))]
        self._byte_starts = [0, *itertools.accumulate(map(len, piece_bytes))]
        self.length = self._cp_starts[-1]
        """Length in code points."""
        self.size = self._byte_starts[-1]
        """Length in UTF-8 bytes."""
        self._text: str | None = pieces[0] if len(pieces) == 1 else None
        self._data: bytes | None = piece_bytes[0] if len(piece_bytes) == 1 else None

    @classmethod
    def of(cls, text: str, data: bytes) -> Pieces:
        """`text` (whose UTF-8 bytes are `data`) in pieces, the whole kept as well."""
        pieces = _split(text)
        if len(pieces) == 1:
            piece_bytes = [data]
        elif len(data) == len(text):  # ASCII: the same boundaries in bytes
            piece_bytes = [data[i : i + _PIECE] for i in range(0, len(data), _PIECE)]
        else:
            piece_bytes = [utf8(piece) for piece in pieces]
        made = cls(pieces, piece_bytes)
        made._text, made._data = text, data
        return made

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._pieces)
        return self._text

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self._bytes)
        return self._data

    def digest(self) -> str:
        """`content_hash(self.data)`, streamed over the pieces without joining them."""
        hasher = xxhash.xxh3_64()
        for chunk in self._bytes:
            hasher.update(chunk)
        return hasher.hexdigest()

    def read_bytes_at(self, byte: int, point: Point | None = None) -> bytes:
        """The bytes from `byte` to the end of its piece: a `Parser.parse` read callback."""
        if byte >= self.size:
            return b""
        index = bisect.bisect_right(self._byte_starts, byte) - 1
        return self._bytes[index][byte - self._byte_starts[index] :]

    def slice(self, begin: int, end: int) -> str:
        """text[begin:end] without joining the whole text."""
        if self._text is not None:
            return self._text[begin:end]
        return _slice_pieces(self._pieces, self._cp_starts, begin, end, "")

    def byte_slice(self, begin: int, end: int) -> bytes:
        """data[begin:end] without joining the whole text."""
        if self._data is not None:
            return self._data[begin:end]
        return _slice_pieces(self._bytes, self._byte_starts, begin, end, b"")

    def replace(self, start: int, end: int, text: str) -> Pieces:
        """These pieces with code points [start, end) replaced by `text`; only the pieces
        the range touches are copied."""
        starts = self._cp_starts
        first = min(bisect.bisect_right(starts, start) - 1, len(self._pieces) - 1)
        last = min(bisect.bisect_right(starts, end) - 1, len(self._pieces) - 1)
        middle = (
            self._pieces[first][: start - starts[first]]
            + text
            + self._pieces[last][end - starts[last] :]
        )
        fresh = _split(middle)
        pieces = [*self._pieces[:first], *fresh, *self._pieces[last + 1 :]]
        piece_bytes = [*self._bytes[:first], *map(utf8, fresh), *self._bytes[last + 1 :]]
        if len(pieces) > 1 and not all(pieces):
            pieces = [piece for piece in pieces if piece]
            piece_bytes = [chunk for chunk in piece_bytes if chunk]
        return Pieces(pieces, piece_bytes)


def _split(text: str) -> list[str]:
    """Pieces of at most _PIECE code points (one piece, possibly empty, for short texts)."""
    if len(text) <= 2 * _PIECE:
        return [text]
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)]


def _slice_pieces(
    pieces: Sequence[AnyStr], starts: list[int], begin: int, end: int, empty: AnyStr
) -> AnyStr:
    """pieces joined, then [begin:end], touching only the pieces in the range."""
    if begin >= end:
        return empty
    index = max(bisect.bisect_right(starts, begin) - 1, 0)
    parts = []
    while index < len(pieces) and starts[index] < end:
        offset = starts[index]
        parts.append(pieces[index][max(begin - offset, 0) : end - offset])
        index += 1
    return empty.join(parts)
