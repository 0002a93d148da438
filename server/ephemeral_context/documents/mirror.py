"""The document mirror: the text of every file the assistant may see, keyed by file.

Open documents come from the editor (didOpen/didChange/didClose) and the editor is then the
source of truth. Other files are read from disk on use and re-read only when their
(mtime_ns, size) changes, when a watched-file event marks them stale, or when their mtime is
too recent to trust. Every version carries an xxh3 hash of its UTF-8 bytes, so a change of
content is told apart from a touch, and every change goes to the listeners as a
`DocumentChange` with the edits in tree-sitter's terms.

A file has one key whatever name reaches it (`file_key`: its links followed), so the
editor's buffer opened or pinned by a linked path (a workspace folder opened by a link, a
link to a file) and the model's read of the real path are one document, one item in the
context. What goes back to the editor names the file as the editor did (`editor_uri`). A
file open in two buffers by two links is the buffer opened last; the other's edits are
not followed until it is opened again.

API:
- `DocumentMirror(position_encoding, max_bytes)`: `.open`, `.change`, `.close`, `.desync`
  (the editor); `.set_max_bytes` (the setting); `.get`, `.get_path`, `.is_open`,
  `.key_of`, `.open_document`, `.open_uris`, `.mark_stale` (reading); `.name`,
  `.editor_uri` (the editor's names of a file); `.subscribe(listener)` (changes).
- `DocumentChange`, `ChangeReason`: what changed for one URI, from which version to which.
- `Unmirrored`, `UnmirroredReason`: a URI the mirror holds no text for, and why.
- `OutOfSync`: raised by `.change` for an edit it could not apply (the document is out of
  sync until reopened).
- `without_bom(data)`: a file's bytes as the editor shows them, without a UTF-8 BOM.
- `decode_file(data, max_bytes)`: the text of such bytes, or why the mirror holds none
  (what every reader of files from disk goes by, the model's search too).
"""

from __future__ import annotations

import codecs
import logging
import os
import stat as stat_module
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal

from ephemeral_context.documents.document import ByteEdit, Document, TextEdit
from ephemeral_context.documents.pieces import content_hash
from ephemeral_context.documents.positions import (
    PositionEncoding,
    without_lone_surrogates,
)
from ephemeral_context.documents.uris import file_key, normalize_uri, path_to_uri, uri_to_path

log = logging.getLogger(__name__)

ChangeReason = Literal["open", "edit", "close", "disk"]

# A file whose mtime is this close to the moment we read it may be rewritten within the same
# mtime tick without changing its size; such a stat is not trusted next time (git calls this
# "racily clean").
_RACY_WINDOW_NS = 2_000_000_000

# An open document withheld for its size keeps its text (to follow its edits until it fits)
# up to this many times the size limit; a bigger one (a 50 MB log: its line table would take
# 10x its size) is dropped until the editor opens it again.
_HELD_AT_MOST = 8


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


class OutOfSync(ValueError):
    """A didChange that could not be applied as sent: the document is out of sync now."""


@dataclass(frozen=True, slots=True)
class Unmirrored:
    """A URI the mirror holds no text for, and why (never an exception: bad input is normal)."""

    uri: str
    reason: UnmirroredReason
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.uri}: {self.reason.value}" + (f" ({self.detail})" if self.detail else "")


Listener = Callable[[DocumentChange], None]


@dataclass(slots=True)
class _DiskEntry:
    document: Document
    mtime_ns: int
    size: int
    trust_stat: bool


class DocumentMirror:
    """File key -> current text. Thread-safe; listeners are called in order, under the lock."""

    def __init__(
        self, position_encoding: PositionEncoding = "utf-16", max_bytes: int = 1_000_000
    ) -> None:
        self.position_encoding: PositionEncoding = position_encoding
        self.max_bytes = max_bytes
        self._open: dict[str, Document | Unmirrored] = {}
        self._buffers: dict[str, str] = {}
        """The editor's URI of each open buffer -> its file's key, as it was when opened (a
        link changed since must not lose the buffer's edits)."""
        self._names: dict[str, str] = {}
        """A file's key -> the URI the editor named it by last (opened, pinned), where that
        is another name (a link): the URI the editor is sent back."""
        self._held: dict[str, Document] = {}
        """The text of each open document not mirrored for what it holds (over the size
        limit, NUL bytes): later edits apply to it, and it comes back once it fits."""
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
        """didOpen: the editor's text becomes the truth for the file `uri` names until
        `close` (a buffer of it open by another name no longer is)."""
        buffer = normalize_uri(uri)
        key = file_key(buffer)
        text = without_lone_surrogates(text)
        with self._lock:
            for other in [b for b, k in self._buffers.items() if k == key and b != buffer]:
                log.info("%s is open as %s too: the buffer opened last is followed", key, other)
                del self._buffers[other]
            self._buffers[buffer] = key
            self._named(key, buffer)
            previous = self._current(key)
            self._held.pop(key, None)
            if len(text) > _HELD_AT_MOST * self.max_bytes:  # not even held: never built
                self._open[key] = self._too_large(key)
                self._emit_removed(key, previous, "open")
                return None
            document = Document.create(
                key,
                version,
                text,
                language_id=language_id,
                source="editor",
                encoding=self.position_encoding,
            )
            if self._withheld(key, document, None):
                self._emit_removed(key, previous, "open")
                return None
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
        """didChange: apply the edits in order. Unknown URIs are ignored. An edit that cannot
        be applied as sent (`_unappliable`) goes out of sync (`desync`) until the editor opens
        the document again, and raises OutOfSync so the caller can tell the user."""
        buffer = normalize_uri(uri)
        with self._lock:
            key = self._buffers.get(buffer)
            current = self._open.get(key) if key is not None else None
            if key is None or current is None:
                log.warning("didChange for %s, which is not open (or not followed): ignored", uri)
                return None
            base = self._held.get(key) if isinstance(current, Unmirrored) else current
            if base is None:
                assert isinstance(current, Unmirrored)
                log.info("didChange for unmirrored %s (%s): ignored", key, current.reason)
                return None
            if (problem := _unappliable(base, version, edits)) is not None:
                log.warning("%s for %s: out of sync until reopened", problem, key)
                self.desync(key, problem)
                raise OutOfSync(problem)
            document = base
            byte_edits: list[ByteEdit] = []
            for edit in edits:
                edit = TextEdit(edit.range, without_lone_surrogates(edit.text))
                document, byte_edit = document.apply(edit, version)
                byte_edits.append(byte_edit)
            mirrored = current if isinstance(current, Document) else None
            inserted = [edit.text for edit in edits] if mirrored is not None else None
            if self._withheld(key, document, inserted):
                self._emit_removed(key, mirrored, "edit")
                return None
            self._held.pop(key, None)
            self._open[key] = document
            change = DocumentChange(  # back from being withheld: no old text to edit
                key,
                mirrored.version if mirrored else None,
                version,
                mirrored.hash if mirrored else None,
                document.hash,
                tuple(byte_edits) if mirrored else (),
                "edit",
            )
            self._emit(change)
            return change

    def set_max_bytes(self, max_bytes: int) -> None:
        """A new size limit (the user's setting): an open document withheld for its size
        that fits now is mirrored again, one over it is withheld (it kept the old verdict
        until its next edit); files on disk are measured at their next read."""
        with self._lock:
            self.max_bytes = max_bytes
            for key, current in list(self._open.items()):
                held = self._held.get(key)
                if isinstance(current, Document) and self._withheld(key, current, ()):
                    self._emit_removed(key, current, "edit")
                elif held is not None and not self._withheld(key, held, None):
                    del self._held[key]
                    self._open[key] = held
                    self._emit(DocumentChange(key, None, held.version, None, held.hash, (), "edit"))

    def _withheld(self, key: str, document: Document, inserted: Sequence[str] | None) -> bool:
        """Whether an open document is held back for what it holds (over the size limit,
        NUL bytes; `inserted`: only these texts are new, the rest was checked): it is then
        unmirrored, and its text kept for the edits that may make it fit again."""
        if document.size > self.max_bytes:
            unmirrored = self._too_large(key)
        elif any("\0" in text for text in ([document.text] if inserted is None else inserted)):
            unmirrored = Unmirrored(key, UnmirroredReason.BINARY, "contains NUL bytes")
        else:
            return False
        if document.size > _HELD_AT_MOST * self.max_bytes:
            self._held.pop(key, None)
        else:
            self._held[key] = document
        self._open[key] = unmirrored
        return True

    def _too_large(self, key: str) -> Unmirrored:
        return Unmirrored(key, UnmirroredReason.TOO_LARGE, f"over {self.max_bytes} bytes")

    def desync(self, uri: str, problem: str) -> None:
        """An edit of an open document was lost (it could not even be read): its text here
        is no longer the editor's, and applying later edits on top would drift. It stays
        unmirrored, so nothing stale is shown, until the editor opens it again."""
        with self._lock:
            key = self.key_of(uri)
            current = self._open.get(key)
            mirrored = current if isinstance(current, Document) else None
            if self._held.pop(key, None) is not None or mirrored is not None:
                self._open[key] = Unmirrored(
                    key, UnmirroredReason.OUT_OF_SYNC, f"an edit was lost: {problem}"
                )
                self._emit_removed(key, mirrored, "edit")

    def close(self, uri: str) -> None:
        """didClose: the editor lets go; a file: URI is read from disk again on next use. A
        buffer no longer followed (the file was opened by another name since) changes nothing."""
        with self._lock:
            key = self._buffers.pop(normalize_uri(uri), None)
            if key is None:
                return
            current = self._open.pop(key, None)
            self._held.pop(key, None)
            if isinstance(current, Document):
                self._stale.add(key)
                self._emit_removed(key, current, "close")

    def _emit_removed(self, key: str, previous: Document | None, reason: ChangeReason) -> None:
        if previous is not None:
            self._emit(DocumentChange(key, previous.version, None, previous.hash, None, (), reason))

    # -- reading -------------------------------------------------------------------------

    def is_open(self, uri: str) -> bool:
        with self._lock:
            return self.key_of(uri) in self._open

    def key_of(self, uri: str) -> str:
        """The key of the file `uri` names (an open buffer's as it was opened)."""
        with self._lock:
            return self._buffers.get(normalize_uri(uri)) or file_key(uri)

    def name(self, uri: str) -> str:
        """The editor names a file by `uri` (a pin): that is the URI it is sent back; the
        file's key."""
        with self._lock:
            key = self.key_of(uri)
            self._named(key, normalize_uri(uri))
            return key

    def _named(self, key: str, named: str) -> None:
        if named == key:
            self._names.pop(key, None)
        else:
            self._names[key] = named

    def editor_uri(self, key: str) -> str:
        """The URI the editor knows the file of `key` by: its open buffer's (an edit goes
        there), else the one it named the file by last (a linked path), else `key`."""
        with self._lock:
            buffers = [buffer for buffer, opened in self._buffers.items() if opened == key]
            return buffers[0] if buffers else self._names.get(key, key)

    def open_document(self, key: str) -> Document | Unmirrored | None:
        """What the editor holds open for the file of `key` (a key as `key_of` gives it,
        taken as is: a walk over many files resolves each path once), None if not open."""
        with self._lock:
            return self._open.get(key)

    def open_uris(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def mark_stale(self, uri: str) -> None:
        """A watched-file event: re-read and re-hash this file on next use."""
        with self._lock:
            self._stale.add(file_key(uri))

    def get(self, uri: str) -> Document | Unmirrored:
        """The current text: the editor's if open, else the file's (read only if changed)."""
        with self._lock:
            key = self.key_of(uri)
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
        except ValueError:  # a NUL byte, from a URI's %00: no file can have that name
            return self._drop_disk(key, UnmirroredReason.NOT_FOUND, "the name holds a NUL byte")
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
            data = without_bom(path.read_bytes())
        except OSError as error:
            return self._drop_disk(key, UnmirroredReason.UNREADABLE, error.strerror or str(error))
        self._stale.discard(key)
        trust = time.time_ns() - stat.st_mtime_ns > _RACY_WINDOW_NS
        digest = content_hash(data)
        if cached is not None and cached.document.hash == digest:
            self._disk[key] = _DiskEntry(cached.document, stat.st_mtime_ns, stat.st_size, trust)
            return cached.document
        text = decode_file(data, self.max_bytes)
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


def without_bom(data: bytes) -> bytes:
    """A file's bytes without the UTF-8 byte order mark it may start with: editors show
    none and send none (VS Code, Neovim), so the file read from disk is the buffer's text
    and hash, and the model is shown no U+FEFF the user never sees."""
    return data.removeprefix(codecs.BOM_UTF8)


def _unappliable(current: Document, version: int, edits: Sequence[TextEdit]) -> str | None:
    """Why a didChange cannot be applied to `current` as sent, if it cannot. A version not
    above the mirror's came out of order, so an edit applied before it was applied to the
    wrong text; a range that ends before it starts is no edit an editor makes, and any
    reading of it (an insertion, the swapped range) may leave a text the editor never had."""
    if version <= current.version:
        return f"didChange version {version} after version {current.version}"
    for edit in edits:
        if edit.range is not None and edit.range.backwards:
            start, end = edit.range.start, edit.range.end
            return (
                f"a didChange range that ends ({end.line}:{end.character}) "
                f"before it starts ({start.line}:{start.character})"
            )
    return None


def decode_file(data: bytes, max_bytes: int) -> str | tuple[UnmirroredReason, str]:
    """The text of a file's bytes (without its BOM: `without_bom`), or why it is not text
    the mirror holds."""
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
