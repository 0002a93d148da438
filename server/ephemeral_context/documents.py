"""The document mirror: the text of every file the assistant may see, keyed by URI.

Open documents come from the editor (didOpen/didChange/didClose) and the editor is then the
source of truth. Other files are read from disk on use and re-read only when their
(mtime_ns, size) changes, when a watched-file event marks them stale, or when their mtime is
too recent to trust. Every version carries an xxh3 hash of its UTF-8 bytes, so a change of
content is told apart from a touch.

Positions come in three units: client units (UTF-16 by default, UTF-8 or UTF-32 when
negotiated), code points (Python `str` indices) and UTF-8 bytes (tree-sitter). This module is
the only place that converts between them. Each version keeps its text as pieces of at most
16K code points and a line table (line starts in code points and in bytes) updated around the
edited lines only, so a one-character edit on a large document copies one piece, streams
xxh3 over the pieces and does a few array operations.

Text is never normalised: CRLF, lone CR and a missing final newline stay exactly as they came.
This module does not import pygls or lsprotocol; the LSP layer converts its types into
`TextEdit` and `Position`.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import os
import re
import stat as stat_module
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import AnyStr, Literal

import numpy as np
import numpy.typing as npt
import xxhash

log = logging.getLogger(__name__)

PositionEncoding = Literal["utf-8", "utf-16", "utf-32"]
ChangeReason = Literal["open", "edit", "close", "disk"]
DocumentSource = Literal["editor", "disk"]
Point = tuple[int, int]
"""tree-sitter's point: (row, column in UTF-8 bytes); rows are counted by '\\n'."""

_Offsets = npt.NDArray[np.int64]

# A file whose mtime is this close to the moment we read it may be rewritten within the same
# mtime tick without changing its size; such a stat is not trusted next time (git calls this
# "racily clean").
_RACY_WINDOW_NS = 2_000_000_000
# Inserting more than this many characters rebuilds the line table in one vectorised scan.
_REBUILD_ABOVE = 4096
# Documents are held as pieces of this many code points, so an edit copies one piece.
_PIECE = 16_384
_BREAK_CHAR = re.compile("[\r\n]")


def content_hash(data: bytes) -> str:
    """The content hash the mirror reports: xxh3-64 of the UTF-8 bytes, 16 hex digits."""
    return xxhash.xxh3_64_hexdigest(data)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """Half a surrogate pair (a UTF-16 editor can hold one; JSON carries it as "\\ud83d")
    becomes U+FFFD: UTF-8, and so the store, the tokenizer and the API, cannot carry it.
    Positions stay put: both are one code point, one UTF-16 unit and three bytes."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def _utf8(text: str) -> bytes:
    # Lone surrogates can arrive from JSON; keep them byte-for-byte instead of crashing.
    return text.encode("utf-8", "surrogatepass")


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


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """What changed for one URI, from which version to which.

    `old_version`/`old_hash` are None when the mirror did not hold the URI before;
    `new_version`/`new_hash` are None when the document left the mirror (closed, deleted,
    no longer mirrorable). `byte_edits` apply one after the other to the old UTF-8 bytes;
    an empty tuple means there is no old text to edit (parse from scratch or drop).
    """

    uri: str
    old_version: int | None
    new_version: int | None
    old_hash: str | None
    new_hash: str | None
    byte_edits: tuple[ByteEdit, ...]
    reason: ChangeReason


class UnmirroredReason(StrEnum):
    """Why a URI has no text in the mirror."""

    BINARY = "binary"
    TOO_LARGE = "too-large"
    NOT_FOUND = "not-found"
    NOT_A_FILE = "not-a-file"
    UNREADABLE = "unreadable"
    NOT_OPEN = "not-open"
    OUT_OF_SYNC = "out-of-sync"


@dataclass(frozen=True, slots=True)
class Unmirrored:
    """A URI the mirror holds no text for, and why (never an exception: bad input is normal)."""

    uri: str
    reason: UnmirroredReason
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.uri}: {self.reason.value}" + (f" ({self.detail})" if self.detail else "")


Listener = Callable[[DocumentChange], None]


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


def _units_to_cp(line: str, units: int, encoding: PositionEncoding) -> int:
    """Client units into a code point index within one line, clamped to the line."""
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    if encoding == "utf-8":
        prefix = _utf8(line)[:units]
        return len(prefix.decode("utf-8", "ignore"))
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def _cp_to_units(line: str, cp: int, encoding: PositionEncoding) -> int:
    """A code point index within one line into client units."""
    head = line[:cp]
    if encoding == "utf-32" or head.isascii():
        return len(head)
    if encoding == "utf-8":
        return len(_utf8(head))
    return len(head) + sum(1 for char in head if ord(char) > 0xFFFF)


class Document:
    """One version of one document: text, UTF-8 bytes, hash and position conversions.

    The text is held as pieces of at most `_PIECE` code points (with their UTF-8 bytes), so an
    edit copies one piece instead of the whole document, and the hash streams over the
    pieces. `text` and `data` join the pieces on first use and keep the result.
    """

    __slots__ = (
        "_data",
        "_piece_byte_starts",
        "_piece_bytes",
        "_piece_cp_starts",
        "_pieces",
        "_text",
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
        pieces: list[str],
        piece_bytes: list[bytes],
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
        self._piece_bytes = piece_bytes
        self._piece_cp_starts = [0, *itertools.accumulate(map(len, pieces))]
        self._piece_byte_starts = [0, *itertools.accumulate(map(len, piece_bytes))]
        self.length = self._piece_cp_starts[-1]
        """Length in code points."""
        self.size = self._piece_byte_starts[-1]
        """Length in UTF-8 bytes."""
        self._text: str | None = pieces[0] if len(pieces) == 1 else None
        self._data: bytes | None = piece_bytes[0] if len(piece_bytes) == 1 else None
        if digest is None:
            hasher = xxhash.xxh3_64()
            for chunk in piece_bytes:
                hasher.update(chunk)
            digest = hasher.hexdigest()
        self.hash: str = digest

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
        raw = _utf8(text) if data is None else data
        pieces = _split(text)
        if len(pieces) == 1:
            piece_bytes = [raw]
        elif len(raw) == len(text):  # ASCII: the same boundaries in bytes
            piece_bytes = [raw[i : i + _PIECE] for i in range(0, len(raw), _PIECE)]
        else:
            piece_bytes = [_utf8(piece) for piece in pieces]
        document = cls(
            uri,
            version,
            pieces,
            piece_bytes,
            language_id=language_id,
            source=source,
            encoding=encoding,
            lines=LineIndex.build(text, raw),
            digest=content_hash(raw),
        )
        document._text, document._data = text, raw
        return document

    def __repr__(self) -> str:
        return f"Document({self.uri!r}, version={self.version}, hash={self.hash!r})"

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._pieces)
        return self._text

    @property
    def data(self) -> bytes:
        """The UTF-8 bytes (what tree-sitter parses)."""
        if self._data is None:
            self._data = b"".join(self._piece_bytes)
        return self._data

    def read_bytes_at(self, byte: int, point: Point | None = None) -> bytes:
        """The bytes from `byte` to the end of its piece: a `Parser.parse` read callback."""
        if byte >= self.size:
            return b""
        index = bisect.bisect_right(self._piece_byte_starts, byte) - 1
        return self._piece_bytes[index][byte - self._piece_byte_starts[index] :]

    def _slice(self, begin: int, end: int) -> str:
        """text[begin:end] without joining the whole text."""
        if self._text is not None:
            return self._text[begin:end]
        return _slice_pieces(self._pieces, self._piece_cp_starts, begin, end, "")

    def _byte_slice(self, begin: int, end: int) -> bytes:
        if self._data is not None:
            return self._data[begin:end]
        return _slice_pieces(self._piece_bytes, self._piece_byte_starts, begin, end, b"")

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
        chunk = self._slice(begin, end)
        return chunk if keep_end else chunk.rstrip("\r\n")

    def offset_at(self, position: Position) -> int:
        """Client position -> code point offset, clamped to the document like LSP says."""
        if position.line >= self.line_count:
            return self.length
        line = max(position.line, 0)
        column = _units_to_cp(self.line_text(line), max(position.character, 0), self.encoding)
        return int(self.lines.cp_starts[line]) + column

    def position_at(self, offset: int) -> Position:
        """Code point offset -> client position."""
        offset = min(max(offset, 0), self.length)
        line = self.lines.line_of_cp(offset)
        column = offset - int(self.lines.cp_starts[line])
        return Position(line, _cp_to_units(self.line_text(line), column, self.encoding))

    def byte_at(self, offset: int) -> int:
        """Code point offset -> UTF-8 byte offset."""
        line = self.lines.line_of_cp(offset)
        begin = int(self.lines.cp_starts[line])
        return int(self.lines.byte_starts[line]) + len(_utf8(self._slice(begin, offset)))

    def offset_of_byte(self, byte: int) -> int:
        """UTF-8 byte offset -> code point offset (a byte inside a character rounds down)."""
        byte = min(max(byte, 0), self.size)
        line = self.lines.line_of_byte(byte)
        begin = int(self.lines.byte_starts[line])
        head = self._byte_slice(begin, byte).decode("utf-8", "ignore")
        return int(self.lines.cp_starts[line]) + len(head)

    def point_at_byte(self, byte: int) -> Point:
        """UTF-8 byte offset -> tree-sitter point (rows counted by '\\n' only)."""
        if self.lines.has_lone_cr:
            data = self.data
            row = data.count(b"\n", 0, byte)
            return row, byte - (data.rfind(b"\n", 0, byte) + 1)
        line = self.lines.line_of_byte(byte)
        return line, byte - int(self.lines.byte_starts[line])

    def position_to_point(self, position: Position) -> Point:
        return self.point_at_byte(self.byte_at(self.offset_at(position)))

    def point_to_position(self, point: Point) -> Position:
        """tree-sitter point -> client position, for ranges of symbols found in the tree."""
        row, column = point
        if self.lines.has_lone_cr:
            data = self.data
            line_start = 0
            for _ in range(row):
                found = data.find(b"\n", line_start)
                if found < 0:
                    break
                line_start = found + 1
        else:
            row = min(row, self.line_count - 1)
            line_start = int(self.lines.byte_starts[row])
        return self.position_at(self.offset_of_byte(line_start + column))

    def apply(self, edit: TextEdit, version: int) -> tuple[Document, ByteEdit]:
        """This document with one edit applied, and the edit in tree-sitter's terms."""
        if edit.range is None:
            start, end = 0, self.length
        else:
            start = self.offset_at(edit.range.start)
            end = max(self.offset_at(edit.range.end), start)
        start_byte, end_byte = self.byte_at(start), self.byte_at(end)
        starts = self._piece_cp_starts
        first = min(bisect.bisect_right(starts, start) - 1, len(self._pieces) - 1)
        last = min(bisect.bisect_right(starts, end) - 1, len(self._pieces) - 1)
        middle = (
            self._pieces[first][: start - starts[first]]
            + edit.text
            + self._pieces[last][end - starts[last] :]
        )
        fresh = _split(middle)
        pieces = [*self._pieces[:first], *fresh, *self._pieces[last + 1 :]]
        piece_bytes = [
            *self._piece_bytes[:first],
            *map(_utf8, fresh),
            *self._piece_bytes[last + 1 :],
        ]
        if len(pieces) > 1 and not all(pieces):
            pieces = [piece for piece in pieces if piece]
            piece_bytes = [chunk for chunk in piece_bytes if chunk]
        new = Document(
            self.uri,
            version,
            pieces,
            piece_bytes,
            language_id=self.language_id,
            source=self.source,
            encoding=self.encoding,
            lines=self.lines,
        )
        new.lines = new._splice_lines(self, start, end, len(edit.text), start_byte, end_byte)
        new_end_byte = start_byte + len(_utf8(edit.text))
        byte_edit = ByteEdit(
            start_byte=start_byte,
            old_end_byte=end_byte,
            new_end_byte=new_end_byte,
            start_point=self.point_at_byte(start_byte),
            old_end_point=self.point_at_byte(end_byte),
            new_end_point=new.point_at_byte(new_end_byte),
        )
        return new, byte_edit

    def _splice_lines(
        self,
        old_document: Document,
        start: int,
        end: int,
        inserted_len: int,
        start_byte: int,
        end_byte: int,
    ) -> LineIndex:
        """This version's line table from the old one: keep, rescan the edit, shift the rest.

        Whether a line starts at q depends on text[q-1] and text[q] only, so old starts below
        `start` and above `end` are unchanged (the latter shifted); only q in
        [start, start + inserted_len] of the new text needs looking at.
        """
        if inserted_len > _REBUILD_ABOVE:
            return LineIndex.build(self.text, self.data)
        old = old_document.lines
        keep_before = int(np.searchsorted(old.cp_starts, max(start, 1), side="left"))
        keep_after = int(np.searchsorted(old.cp_starts, end + 1, side="left"))
        cp_delta = self.length - old_document.length
        byte_delta = self.size - old_document.size
        scan_from = max(start, 1)
        # text[scan_from - 1 : start + inserted_len + 1]: the characters around each candidate.
        window = self._slice(scan_from - 1, start + inserted_len + 1)
        new_cp: list[int] = []
        new_byte: list[int] = []
        lone = old.has_lone_cr
        if "\n" in window or "\r" in window:
            last_q, last_byte = start, start_byte
            for match in _BREAK_CHAR.finditer(window, 0, start + inserted_len - scan_from + 1):
                q = scan_from + match.start()
                local = q - scan_from + 1
                if _is_line_start(window, local):
                    last_byte += len(_utf8(self._slice(last_q, q)))
                    last_q = q
                    new_cp.append(q)
                    new_byte.append(last_byte)
                    lone = lone or window[local - 1] == "\r"
        cp_starts = np.concatenate(
            (
                old.cp_starts[:keep_before],
                np.array(new_cp, dtype=np.int64),
                old.cp_starts[keep_after:] + cp_delta,
            )
        )
        byte_starts = np.concatenate(
            (
                old.byte_starts[:keep_before],
                np.array(new_byte, dtype=np.int64),
                old.byte_starts[keep_after:] + byte_delta,
            )
        )
        return LineIndex(cp_starts, byte_starts, lone)


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


def uri_to_path(uri: str) -> Path | None:
    """The file system path of a file: URI, or None for other schemes (untitled:, ...)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file":
        return None
    return Path(urllib.parse.unquote(parsed.path))


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """The canonical file: URI of a path (absolute, percent-encoded like VS Code's)."""
    return Path(os.path.abspath(path)).as_uri()


@functools.lru_cache(maxsize=8192)
def normalize_uri(uri: str) -> str:
    """One key per file: file: URIs are re-encoded canonically, other URIs kept as given."""
    path = uri_to_path(uri)
    return path_to_uri(path) if path is not None else uri


@dataclass(slots=True)
class _DiskEntry:
    document: Document
    mtime_ns: int
    size: int
    trust_stat: bool


class DocumentMirror:
    """URI -> current text. Thread-safe; listeners are called in order, under the lock."""

    def __init__(
        self, position_encoding: PositionEncoding = "utf-16", max_bytes: int = 1_000_000
    ) -> None:
        self.position_encoding: PositionEncoding = position_encoding
        self.max_bytes = max_bytes
        self._open: dict[str, Document | Unmirrored] = {}
        self._disk: dict[str, _DiskEntry] = {}
        self._stale: set[str] = set()
        self._disk_versions: dict[str, int] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()

    # -- listeners -----------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on every change; returns a function that unsubscribes it."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, change: DocumentChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                log.exception("document listener failed on %s", change.uri)

    # -- the editor ----------------------------------------------------------------------

    def open(self, uri: str, language_id: str | None, version: int, text: str) -> Document | None:
        """didOpen: the editor's text becomes the truth for `uri` until `close`."""
        key = normalize_uri(uri)
        text = without_lone_surrogates(text)
        with self._lock:
            previous = self._current(key)
            if len(text) > self.max_bytes or len(data := _utf8(text)) > self.max_bytes:
                self._open[key] = Unmirrored(
                    key, UnmirroredReason.TOO_LARGE, f"over {self.max_bytes} bytes"
                )
                self._emit_removed(key, previous, "open")
                return None
            if "\0" in text:
                self._open[key] = Unmirrored(key, UnmirroredReason.BINARY, "contains NUL bytes")
                self._emit_removed(key, previous, "open")
                return None
            document = Document.create(
                key,
                version,
                text,
                language_id=language_id,
                source="editor",
                encoding=self.position_encoding,
                data=data,
            )
            self._open[key] = document
            self._emit(
                DocumentChange(
                    key,
                    previous.version if previous else None,
                    version,
                    previous.hash if previous else None,
                    document.hash,
                    _replace_all(previous, document) if previous else (),
                    "open",
                )
            )
            return document

    def change(self, uri: str, version: int, edits: Sequence[TextEdit]) -> DocumentChange | None:
        """didChange: apply the edits in order. Unknown URIs and stale versions are ignored."""
        key = normalize_uri(uri)
        with self._lock:
            current = self._open.get(key)
            if current is None:
                log.warning("didChange for %s, which is not open: ignored", key)
                return None
            if isinstance(current, Unmirrored):
                log.info("didChange for unmirrored %s (%s): ignored", key, current.reason)
                return None
            if version <= current.version:
                log.warning(
                    "didChange for %s with version %d, mirror has %d: ignored",
                    key,
                    version,
                    current.version,
                )
                return None
            document = current
            byte_edits: list[ByteEdit] = []
            for edit in edits:
                edit = TextEdit(edit.range, without_lone_surrogates(edit.text))
                document, byte_edit = document.apply(edit, version)
                byte_edits.append(byte_edit)
            too_large = document.size > self.max_bytes
            if too_large or any("\0" in edit.text for edit in edits):
                reason = UnmirroredReason.TOO_LARGE if too_large else UnmirroredReason.BINARY
                self._open[key] = Unmirrored(key, reason, f"after the edit to version {version}")
                self._emit_removed(key, current, "edit")
                return None
            self._open[key] = document
            change = DocumentChange(
                key,
                current.version,
                version,
                current.hash,
                document.hash,
                tuple(byte_edits),
                "edit",
            )
            self._emit(change)
            return change

    def desync(self, uri: str, problem: str) -> None:
        """An edit of an open document was lost (it could not even be read): its text here
        is no longer the editor's, and applying later edits on top would drift. It stays
        unmirrored, so nothing stale is shown, until the editor opens it again."""
        key = normalize_uri(uri)
        with self._lock:
            current = self._open.get(key)
            if isinstance(current, Document):
                self._open[key] = Unmirrored(
                    key, UnmirroredReason.OUT_OF_SYNC, f"an edit was lost: {problem}"
                )
                self._emit_removed(key, current, "edit")

    def close(self, uri: str) -> None:
        """didClose: the editor lets go; a file: URI is read from disk again on next use."""
        key = normalize_uri(uri)
        with self._lock:
            current = self._open.pop(key, None)
            if isinstance(current, Document):
                self._stale.add(key)
                self._emit_removed(key, current, "close")

    def _emit_removed(self, key: str, previous: Document | None, reason: ChangeReason) -> None:
        if previous is not None:
            self._emit(DocumentChange(key, previous.version, None, previous.hash, None, (), reason))

    # -- reading -------------------------------------------------------------------------

    def is_open(self, uri: str) -> bool:
        with self._lock:
            return normalize_uri(uri) in self._open

    def open_uris(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def mark_stale(self, uri: str) -> None:
        """A watched-file event: re-read and re-hash this file on next use."""
        with self._lock:
            self._stale.add(normalize_uri(uri))

    def get(self, uri: str) -> Document | Unmirrored:
        """The current text: the editor's if open, else the file's (read only if changed)."""
        key = normalize_uri(uri)
        with self._lock:
            opened = self._open.get(key)
            if opened is not None:
                return opened
            path = uri_to_path(key)
            if path is None:
                return Unmirrored(
                    key, UnmirroredReason.NOT_OPEN, "non-file URIs live in memory only"
                )
            return self._from_disk(key, path)

    def get_path(self, path: str | os.PathLike[str]) -> Document | Unmirrored:
        return self.get(path_to_uri(path))

    def _current(self, key: str) -> Document | None:
        opened = self._open.get(key)
        if isinstance(opened, Document):
            return opened
        entry = self._disk.get(key)
        return entry.document if entry else None

    def _from_disk(self, key: str, path: Path) -> Document | Unmirrored:
        cached = self._disk.get(key)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return self._drop_disk(key, UnmirroredReason.NOT_FOUND, "no such file")
        except OSError as error:
            return self._drop_disk(key, UnmirroredReason.UNREADABLE, error.strerror or str(error))
        if not stat_module.S_ISREG(stat.st_mode):
            return self._drop_disk(key, UnmirroredReason.NOT_A_FILE, "not a regular file")
        if stat.st_size > self.max_bytes:
            return self._drop_disk(
                key, UnmirroredReason.TOO_LARGE, f"{stat.st_size} bytes, limit {self.max_bytes}"
            )
        stale = key in self._stale
        if (
            cached is not None
            and not stale
            and cached.trust_stat
            and (cached.mtime_ns, cached.size) == (stat.st_mtime_ns, stat.st_size)
        ):
            return cached.document
        try:
            data = path.read_bytes()
        except OSError as error:
            return self._drop_disk(key, UnmirroredReason.UNREADABLE, error.strerror or str(error))
        self._stale.discard(key)
        trust = time.time_ns() - stat.st_mtime_ns > _RACY_WINDOW_NS
        digest = content_hash(data)
        if cached is not None and cached.document.hash == digest:
            self._disk[key] = _DiskEntry(cached.document, stat.st_mtime_ns, stat.st_size, trust)
            return cached.document
        text = _decode(data, self.max_bytes)
        if not isinstance(text, str):
            return self._drop_disk(key, *text)
        version = self._disk_versions.get(key, -1) + 1
        self._disk_versions[key] = version
        document = Document.create(
            key,
            version,
            text,
            language_id=None,
            source="disk",
            encoding=self.position_encoding,
            data=data,
        )
        self._disk[key] = _DiskEntry(document, stat.st_mtime_ns, stat.st_size, trust)
        if cached is not None:
            previous = cached.document
            self._emit(
                DocumentChange(
                    key,
                    previous.version,
                    version,
                    previous.hash,
                    digest,
                    _replace_all(previous, document),
                    "disk",
                )
            )
        return document

    def _drop_disk(self, key: str, reason: UnmirroredReason, detail: str) -> Unmirrored:
        self._stale.discard(key)
        cached = self._disk.pop(key, None)
        if cached is not None:
            self._emit_removed(key, cached.document, "disk")
        return Unmirrored(key, reason, detail)

    def documents(self) -> Iterable[Document]:
        """Every document held right now (open ones first), without touching the disk."""
        with self._lock:
            held = [doc for doc in self._open.values() if isinstance(doc, Document)]
            held += [e.document for k, e in self._disk.items() if k not in self._open]
            return held


def _decode(data: bytes, max_bytes: int) -> str | tuple[UnmirroredReason, str]:
    """The text of a file's bytes, or why it is not text the mirror holds."""
    if len(data) > max_bytes:
        return UnmirroredReason.TOO_LARGE, f"{len(data)} bytes, limit {max_bytes}"
    if b"\0" in data:
        return UnmirroredReason.BINARY, "contains NUL bytes"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        return UnmirroredReason.BINARY, f"not UTF-8 at byte {error.start}"


def _replace_all(old: Document, new: Document) -> tuple[ByteEdit, ...]:
    """A whole-text replacement as one tree-sitter edit (the tree is then reparsed fully)."""
    return (
        ByteEdit(
            start_byte=0,
            old_end_byte=old.size,
            new_end_byte=new.size,
            start_point=(0, 0),
            old_end_point=old.point_at_byte(old.size),
            new_end_point=new.point_at_byte(new.size),
        ),
    )
