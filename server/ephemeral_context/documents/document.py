"""One version of one document: its text, hash and position conversions, and its edits.

A `Document` never changes: an edit gives the next version, sharing the untouched pieces
(documents/pieces.py) and the line table outside the edited lines (documents/lines.py), and
reports the edit in tree-sitter's terms. Text is never normalised: CRLF, lone CR and a
missing final newline stay exactly as they came.

API:
- `Document.create(uri, version, text, language_id=, source=, encoding=, data=)`.
- `Document.apply(edit, version)`: the next version and the `ByteEdit` that made it.
- `.text`, `.data`, `.hash`, `.length`, `.size`, `.line_count`, `.line_text`, `.path`,
  `.read_bytes_at` (a `Parser.parse` read callback).
- `.offset_at`, `.position_at`, `.byte_at`, `.offset_of_byte`, `.point_at_byte`: client
  units, code points, bytes, points; `.client_edit`: a replacement as the client applies it.
- `TextEdit`: one change of a didChange; `ByteEdit`: one edit as `Tree.edit` takes it.
- `DocumentSource`: where a version came from, "editor" or "disk".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ephemeral_context.documents.lines import LineIndex, lone_cr_as_lf
from ephemeral_context.documents.pieces import Pieces, content_hash
from ephemeral_context.documents.positions import (
    Point,
    Position,
    PositionEncoding,
    Range,
    cp_to_units,
    units_to_cp,
    utf8,
)
from ephemeral_context.documents.uris import uri_to_path

DocumentSource = Literal["editor", "disk"]


@dataclass(frozen=True, slots=True)
class TextEdit:
    """One content change of a didChange: replace `range` by `text`, or everything if None."""

    range: Range | None
    text: str


@dataclass(frozen=True, slots=True)
class ByteEdit:
    """One edit in tree-sitter's terms, ready for `Tree.edit(**asdict(edit))`."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: Point
    old_end_point: Point
    new_end_point: Point


class Document:
    """One version of one document: text, UTF-8 bytes, hash and position conversions.

    The text is held as pieces (with their UTF-8 bytes), so an edit copies one piece instead
    of the whole document, and the hash streams over the pieces. `text` and `data` join the
    pieces on first use and keep the result.
    """

    __slots__ = (
        "_pieces",
        "encoding",
        "hash",
        "language_id",
        "length",
        "lines",
        "size",
        "source",
        "uri",
        "version",
    )

    def __init__(
        self,
        uri: str,
        version: int,
        pieces: Pieces,
        *,
        language_id: str | None,
        source: DocumentSource,
        encoding: PositionEncoding,
        lines: LineIndex,
        digest: str | None = None,
    ) -> None:
        self.uri = uri
        self.version = version
        self.language_id = language_id
        self.source: DocumentSource = source
        self.encoding: PositionEncoding = encoding
        self.lines = lines
        self._pieces = pieces
        self.length = pieces.length
        """Length in code points."""
        self.size = pieces.size
        """Length in UTF-8 bytes."""
        self.hash: str = pieces.digest() if digest is None else digest

    @classmethod
    def create(
        cls,
        uri: str,
        version: int,
        text: str,
        *,
        language_id: str | None,
        source: DocumentSource,
        encoding: PositionEncoding,
        data: bytes | None = None,
    ) -> Document:
        raw = utf8(text) if data is None else data
        return cls(
            uri,
            version,
            Pieces.of(text, raw),
            language_id=language_id,
            source=source,
            encoding=encoding,
            lines=LineIndex.build(text, raw),
            digest=content_hash(raw),
        )

    def __repr__(self) -> str:
        return f"Document({self.uri!r}, version={self.version}, hash={self.hash!r})"

    @property
    def text(self) -> str:
        return self._pieces.text

    @property
    def data(self) -> bytes:
        """The UTF-8 bytes (what tree-sitter parses)."""
        return self._pieces.data

    def read_bytes_at(self, byte: int, point: Point | None = None) -> bytes:
        """The bytes from `byte` on, a lone CR read as LF (`lone_cr_as_lf`, so that rows
        are the lines `point_at_byte` counts): a `Parser.parse` read callback."""
        if self.lines.has_lone_cr:
            return lone_cr_as_lf(self.data)[byte:]
        return self._pieces.read_bytes_at(byte, point)

    @property
    def path(self) -> Path | None:
        return uri_to_path(self.uri)

    @property
    def line_count(self) -> int:
        return self.lines.line_count

    def line_text(self, line: int, *, keep_end: bool = False) -> str:
        """The text of one line, without its terminator unless asked."""
        starts = self.lines.cp_starts
        begin = int(starts[line])
        end = int(starts[line + 1]) if line + 1 < len(starts) else self.length
        chunk = self._pieces.slice(begin, end)
        return chunk if keep_end else chunk.rstrip("\r\n")

    def offset_at(self, position: Position) -> int:
        """Client position -> code point offset, clamped to the document like LSP says."""
        if position.line >= self.line_count:
            return self.length
        line = max(position.line, 0)
        column = units_to_cp(self.line_text(line), max(position.character, 0), self.encoding)
        return int(self.lines.cp_starts[line]) + column

    def position_at(self, offset: int) -> Position:
        """Code point offset -> client position."""
        offset = min(max(offset, 0), self.length)
        line = self.lines.line_of_cp(offset)
        column = offset - int(self.lines.cp_starts[line])
        return Position(line, cp_to_units(self.line_text(line), column, self.encoding))

    def client_edit(self, start: int, end: int, text: str) -> tuple[Range, str]:
        """Code points [start, end) replaced by `text`, as the range and text of an edit the
        client applies. A client position cannot fall between the CR and LF of a line end
        (LSP): an end there is moved out of the pair, and the text takes the part it spans,
        so the client's result is this one (an edit of "\\n..." in a CRLF file cut the CR)."""
        if self._pieces.slice(start - 1, start + 1) == "\r\n":
            start, text = start - 1, "\r" + text
        if self._pieces.slice(end - 1, end + 1) == "\r\n":
            end, text = end + 1, text + "\n"
        return Range(self.position_at(start), self.position_at(end)), text

    def byte_at(self, offset: int) -> int:
        """Code point offset -> UTF-8 byte offset."""
        line = self.lines.line_of_cp(offset)
        begin = int(self.lines.cp_starts[line])
        return int(self.lines.byte_starts[line]) + len(utf8(self._pieces.slice(begin, offset)))

    def offset_of_byte(self, byte: int) -> int:
        """UTF-8 byte offset -> code point offset (a byte inside a character rounds down)."""
        byte = min(max(byte, 0), self.size)
        line = self.lines.line_of_byte(byte)
        begin = int(self.lines.byte_starts[line])
        head = self._pieces.byte_slice(begin, byte).decode("utf-8", "ignore")
        return int(self.lines.cp_starts[line]) + len(head)

    def point_at_byte(self, byte: int) -> Point:
        """UTF-8 byte offset -> tree-sitter point: the row is the line (the parser reads a
        lone CR as LF: `read_bytes_at`)."""
        line = self.lines.line_of_byte(byte)
        return line, byte - int(self.lines.byte_starts[line])

    def apply(self, edit: TextEdit, version: int) -> tuple[Document, ByteEdit]:
        """This document with one edit applied, and the edit in tree-sitter's terms."""
        if edit.range is None:
            start, end = 0, self.length
        else:
            start = self.offset_at(edit.range.start)
            end = max(self.offset_at(edit.range.end), start)
        start_byte, end_byte = self.byte_at(start), self.byte_at(end)
        pieces = self._pieces.replace(start, end, edit.text)
        new = Document(
            self.uri,
            version,
            pieces,
            language_id=self.language_id,
            source=self.source,
            encoding=self.encoding,
            lines=self.lines.after_edit(
                self._pieces, pieces, start, end, len(edit.text), start_byte
            ),
        )
        new_end_byte = start_byte + len(utf8(edit.text))
        byte_edit = ByteEdit(
            start_byte=start_byte,
            old_end_byte=end_byte,
            new_end_byte=new_end_byte,
            start_point=self.point_at_byte(start_byte),
            old_end_point=self.point_at_byte(end_byte),
            new_end_point=new.point_at_byte(new_end_byte),
        )
        return new, byte_edit
