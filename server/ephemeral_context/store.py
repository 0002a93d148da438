"""The persist-once store: every text ever shown, kept once, readable again by a short id.

Layout under the store directory:

    index.sqlite3          SQLite in WAL mode: one row per content (id, hash, uri, version,
                           sizes, tokens, synopsis, created_at, last_access, expires_at)
    index.sqlite3.relisting
                           there while a rebuilt index is being filled from the blobs
    blobs/ab/abcdef...     the UTF-8 content, named by its full sha256
    tmp/                   blobs being written; never read

Crash safety: a blob is written to tmp/, fsynced and renamed into blobs/ (then the directory is
fsynced) before the row that names it is committed, in one transaction per put. A crash can
leave a temp file or a blob without a row (gc removes both), never a row without its blob or a
partial blob under a final name. An index that is no database at all (overwritten, cut
short) is moved aside at open and rebuilt from the blobs: every id still reads its text, the
uris and versions are forgotten. So is one a later call finds damaged (the call is then made
again); another process that had it open opens the rebuilt one. Several processes may share
one store: SQLite's WAL and busy timeout serialise the writers (a lock held past the timeout
is StoreBusy, and nothing is lost), and BEGIN IMMEDIATE makes the id choice atomic.

Ids are the shortest prefix of the hash (at least 8 hex digits) that no other entry's hash
shares, so they stay short and grow only on collision. An id is checked to be hex before it
gets near the file system.

API:
- `Store`: `put`, `get`, `gc`, ...; one SQLite connection per instance.
- `StoredEntry`: one stored content and what is known about it.
- `StoreError` and its kinds (`UnknownId`, `ExpiredId`, `InvalidId`, `InvalidRange`,
  `OffsetPastEnd`, `CorruptEntry`, and `StoreDown`'s `StoreBusy`, `StoreUnavailable` and
  `IndexDamaged`): what a bad read is told.
- `data_dir()`, `default_store_dir()`: where the data lives.
- `TOMBSTONE_SECONDS`: how long an expired id still answers.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import sqlite3
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Concatenate, ParamSpec, TypeVar

import platformdirs

from ephemeral_context.documents import utf8
from ephemeral_context.echo import quoted
from ephemeral_context.tokens import estimate_tokens

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_TTL_SECONDS = 7 * 24 * 3600
MIN_ID_LENGTH = 8
HOME_ENV = "EPHEMERAL_CONTEXT_HOME"
# A blob without a row younger than this may belong to a put that has not committed yet.
ORPHAN_GRACE_SECONDS = 3600
# Rows of expired entries outlive their blobs this long, so an old id still gets "expired".
TOMBSTONE_SECONDS = 30 * 24 * 3600
BUSY_TIMEOUT_MS = 30_000

_MAX_ID_LENGTH = 64  # a whole sha256 in hex: the longest id there is
_HEX_ID = re.compile(rf"[0-9a-f]{{1,{_MAX_ID_LENGTH}}}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id          TEXT PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    uri         TEXT,
    version     INTEGER,
    bytes       INTEGER NOT NULL,
    chars       INTEGER NOT NULL,
    tokens      INTEGER,
    synopsis    TEXT,
    created_at  REAL NOT NULL,
    last_access REAL NOT NULL,
    expires_at  REAL NOT NULL,
    blob_gone   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entries_expires_at ON entries (expires_at);
CREATE INDEX IF NOT EXISTS entries_uri ON entries (uri);
"""

_COLUMNS = (
    "id, hash, uri, version, bytes, chars, tokens, synopsis, created_at, last_access, expires_at"
)


def data_dir() -> Path:
    """Where Ephemeral Context keeps its data: $EPHEMERAL_CONTEXT_HOME, else the user data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("ephemeral-context"))


def default_store_dir() -> Path:
    return data_dir() / "store"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


class StoreError(Exception):
    """Anything a caller (or the model, through a tool) may be told about a bad read."""


class InvalidId(StoreError):
    def __init__(self, entry_id: str) -> None:
        shown = quoted(entry_id, _MAX_ID_LENGTH)
        super().__init__(f"{shown} is not a store id: ids are hex digits (like 3f9a2c10)")
        self.entry_id = entry_id


class UnknownId(StoreError):
    def __init__(self, entry_id: str) -> None:
        super().__init__(
            f"no stored content has id {entry_id}: check the id against the reference shown"
            " (ids are hex prefixes), or read the file again to get a fresh id"
        )
        self.entry_id = entry_id


class AmbiguousId(StoreError):
    def __init__(self, entry_id: str, count: int) -> None:
        super().__init__(f"{entry_id} matches {count} stored contents; give more hex digits")
        self.entry_id = entry_id


class ExpiredId(StoreError):
    def __init__(self, entry_id: str, expired_at: float, uri: str | None) -> None:
        source = f"re-read {uri}" if uri else "produce it again"
        super().__init__(
            f"stored content {entry_id} expired at {_when(expired_at)}: it went unread for "
            f"longer than the store keeps content; {source} to get its current text"
        )
        self.entry_id = entry_id
        self.expired_at = expired_at
        self.uri = uri


class OffsetPastEnd(StoreError):
    def __init__(self, entry_id: str, offset: int, total_length: int) -> None:
        super().__init__(
            f"offset {offset} is past the end of {entry_id}, which has {total_length} characters"
        )
        self.offset = offset
        self.total_length = total_length


class InvalidRange(StoreError):
    def __init__(self, offset: int, limit: int | None) -> None:
        super().__init__(f"offset ({offset}) and limit ({limit}) must not be negative")


def check_range(entry_id: str, offset: int, limit: int | None, length: int | None = None) -> None:
    """The one rule for a slice [offset, offset+limit) of a text of `length` characters (of
    any text an id names, stored or not): InvalidRange, or OffsetPastEnd once the length is
    known."""
    if offset < 0 or (limit is not None and limit < 0):
        raise InvalidRange(offset, limit)
    if length is not None and offset > 0 and offset >= length:
        raise OffsetPastEnd(entry_id, offset, length)


class StoreDown(StoreError):
    """The store cannot serve now (busy, read-only, full): no fault of the request, which a
    caller fails with the store's one line while the session goes on."""


class StoreBusy(StoreDown):
    """SQLite's "database is locked": another process held the write lock past the busy
    timeout. Nothing is lost; the same request later works."""

    def __init__(self, root: Path) -> None:
        super().__init__(
            f"the store in {root} is busy: another process holds its lock; retry in a moment"
        )
        self.root = root


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return "locked" in str(error) or "busy" in str(error)


class StoreUnavailable(StoreDown):
    """The store's folder or index cannot be written (read-only, full, gone): nothing
    recorded is damaged, and what needed the store fails with this one line."""

    def __init__(self, root: Path, error: BaseException) -> None:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        super().__init__(f"the store in {root} cannot be used: {reason}")
        self.root = root


_UNAVAILABLE = ("readonly", "read-only", "disk is full", "disk I/O error", "unable to open")
"""SQLite's words for a store it cannot write (StoreUnavailable), not a fault of ours."""


class IndexDamaged(StoreDown):
    """SQLite's "database disk image is malformed" or "file is not a database": the index
    was damaged (a bad disk, a copy cut short). It is rebuilt from the blobs; this is told
    only when that did not help."""

    def __init__(self, root: Path, error: sqlite3.DatabaseError) -> None:
        super().__init__(f"the store in {root} has a damaged index: {error}")
        self.root = root
        self.error = error


_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


class CorruptEntry(StoreError):
    def __init__(self, entry_id: str, problem: str) -> None:
        super().__init__(f"stored content {entry_id} is damaged ({problem}); re-read the source")


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored content and what is known about it (sizes: UTF-8 bytes and characters)."""

    id: str
    hash: str
    uri: str | None
    version: int | None
    bytes: int
    chars: int
    tokens: int | None
    synopsis: str | None
    created_at: float
    last_access: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class StoredText:
    """A character range of a stored content, with the total length to page on."""

    id: str
    text: str
    offset: int
    total_length: int
    entry: StoredEntry

    @property
    def end(self) -> int:
        return self.offset + len(self.text)


@dataclass(frozen=True, slots=True)
class GcReport:
    """What a gc removed: blobs of newly expired entries, orphans, temp files, old rows."""

    expired: int
    orphans_removed: int
    temp_removed: int
    tombstones_purged: int
    bytes_freed: int


@dataclass(frozen=True, slots=True)
class StoreStats:
    root: Path
    entries: int
    live: int
    expired: int
    live_bytes: int
    live_tokens: int
    disk_bytes: int


def _bound_text(value: str | None) -> bytes | None:
    """A str for a TEXT column (under `CAST(? AS TEXT)`) as its UTF-8 bytes: half a surrogate
    pair, which JSON can carry in a URI, is kept byte-for-byte where sqlite3 would refuse
    the str; `_text_of` reads it back."""
    return None if value is None else utf8(value)


def _text_of(data: bytes) -> str:
    """The str `documents.utf8` made `data` from, half a surrogate pair included: a blob's
    content, or a TEXT column's value (`_bound_text`)."""
    return data.decode("utf-8", "surrogatepass")


def _file_id(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` (device, inode): another process may have replaced it."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def _rebuilt_when_damaged(
    method: Callable[Concatenate[Store, P], R],
) -> Callable[Concatenate[Store, P], R]:
    """A call that finds the index damaged after it opened (its first page, all that opening
    reads, intact) rebuilds it as opening would, then is made once more: the index does not
    fail every call for good."""

    @functools.wraps(method)
    def call(store: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        damaged = store._db
        try:
            return method(store, *args, **kwargs)
        except IndexDamaged as exc:
            if store._relisting:  # the index just made is damaged too: told, not made again
                raise
            store._rebuild_index(exc, damaged)
        return method(store, *args, **kwargs)

    return call


def _switch_to_wal(db: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """`PRAGMA journal_mode = WAL`, retried: the switch needs the database to itself, and
    SQLite answers "database is locked" at once (no busy wait) while another process creating
    the same new store holds it."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class Store:
    """Content-addressed text store. One SQLite connection per instance, guarded by a lock."""

    def __init__(
        self,
        root: Path | str | None = None,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
        min_id_length: int = MIN_ID_LENGTH,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self.min_id_length = min_id_length
        self.busy_timeout_ms = busy_timeout_ms
        self.root = Path(root) if root is not None else default_store_dir()
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._blobs = self.root / "blobs"
        self._tmp = self.root / "tmp"
        try:
            self._blobs.mkdir(parents=True, exist_ok=True)
            self._tmp.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:
            # a read-only or full disk, a file in the way; or a NUL or half a surrogate pair
            # (ValueError), which a setting can hold and no path can
            raise StoreUnavailable(self.root, exc) from exc
        self._lock = threading.Lock()
        self._index = self.root / "index.sqlite3"
        self._opened: tuple[int, int] | None = None  # the index file this instance opened
        self._unlisted = self.root / "index.sqlite3.relisting"
        self._relisting = False  # this instance is filling a rebuilt index from the blobs
        try:
            self._db = self._open_index()
        except IndexDamaged as exc:
            self._rebuild_index(exc)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(self.root, exc) from exc  # nothing is damaged
        else:
            self._relist()  # a rebuild a process killed meanwhile did not finish

    def _open_index(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self._index,
            timeout=self.busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        db.text_factory = _text_of
        with self._told_busy():
            try:
                db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                _switch_to_wal(db, self.busy_timeout_ms)
                # In WAL mode NORMAL never corrupts; a power cut may lose the last commits,
                # whose blobs then become orphans for gc. The blob is fsynced before its row.
                db.execute("PRAGMA synchronous = NORMAL")
                db.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("COMMIT")
            except BaseException:
                db.close()
                raise
        self._opened = _file_id(self._index)
        return db

    def _rebuild_index(
        self, damage: IndexDamaged, damaged: sqlite3.Connection | None = None
    ) -> None:
        """A damaged index (not a database, a malformed image: at open, or found by a call on
        the connection `damaged`) is moved aside, and a new one lists every blob again: each
        content keeps its id (the same hash prefix), its uri and version are forgotten. One
        another thread or process rebuilt already is only opened again (`_relist`)."""
        with self._lock:
            if damaged is not None:
                if damaged is not self._db:
                    return
                damaged.close()
            if self._opened in (None, _file_id(self._index)):
                index = self._index
                aside = index.with_name(f"{index.name}.damaged-{int(self.clock())}")
                self._unlisted.touch()
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(f"{index}{suffix}", f"{aside}{suffix}")
                log.warning(
                    "the store index %s is damaged (%s): moved to %s, rebuilt",
                    index,
                    damage.error,
                    aside,
                )
            self._db = self._open_index()
        self._relist()

    def _relist(self) -> None:
        """Every blob into the index again, while `_unlisted` says a rebuilt index is not
        filled yet. A process killed meanwhile leaves it there, and the next open finishes
        the listing, instead of every id not listed yet being unknown for good (and its blob
        an orphan for gc); a blob listed already is only refreshed."""
        if not self._unlisted.exists():
            return
        self._relisting = True
        try:
            for blob in sorted(self._blobs.glob("*/*")):
                try:
                    self.put(_text_of(blob.read_bytes()))
                except (OSError, UnicodeDecodeError) as exc:
                    log.warning("store blob %s cannot be read again (%s); left to gc", blob, exc)
        finally:
            self._relisting = False
        self._unlisted.unlink(missing_ok=True)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _told_busy(self) -> Iterator[None]:
        """SQLite's "database is locked" (another process kept the write lock past the busy
        timeout) as StoreBusy, which callers report like any bad read."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise StoreBusy(self.root) from exc
            if any(words in str(exc) for words in _UNAVAILABLE):
                raise StoreUnavailable(self.root, exc) from exc
            raise
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _DAMAGED:
                raise IndexDamaged(self.root, exc) from exc
            raise

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The one way to the database: under the instance's lock, busy told as StoreBusy."""
        with self._lock, self._told_busy():
            yield self._db

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so reads see no race.

        A COMMIT that fails (busy: with a rollback journal it waits for readers too) leaves
        the transaction open in SQLite, which would refuse every later BEGIN on this
        connection: it is rolled back like a failed body, unless SQLite already did."""
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    # -- writing -------------------------------------------------------------------------

    @_rebuilt_when_damaged
    def put(
        self,
        text: str,
        *,
        uri: str | None = None,
        version: int | None = None,
        tokens: int | None = None,
        synopsis: str | None = None,
    ) -> StoredEntry:
        """Keep `text` once. The same text always gets the same id; a put refreshes expiry."""
        data = utf8(text)
        digest = hashlib.sha256(data).hexdigest()
        if tokens is None:
            tokens = estimate_tokens(text)
        blob = self._blob_path(digest)
        try:
            os.utime(blob)  # a fresh mtime keeps gc from taking it as an orphan meanwhile
        except FileNotFoundError:
            self._write_blob(blob, data)
        now = self.clock()
        with self._transaction() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM entries WHERE hash = ?", (digest,)).fetchone()
            if row is not None:
                if not blob.exists():  # gc took it between our check and our lock
                    self._write_blob(blob, data)
                db.execute(
                    "UPDATE entries SET last_access = ?, expires_at = ?, blob_gone = 0, "
                    "tokens = coalesce(tokens, ?), synopsis = coalesce(synopsis, CAST(? AS TEXT)) "
                    "WHERE hash = ?",
                    (now, now + self.ttl_seconds, tokens, _bound_text(synopsis), digest),
                )
            else:
                entry_id = self._free_id(db, digest)
                db.execute(
                    f"INSERT INTO entries ({_COLUMNS}) VALUES "
                    "(?, ?, CAST(? AS TEXT), ?, ?, ?, ?, CAST(? AS TEXT), ?, ?, ?)",
                    (
                        entry_id,
                        digest,
                        _bound_text(uri),
                        version,
                        len(data),
                        len(text),
                        tokens,
                        _bound_text(synopsis),
                        now,
                        now,
                        now + self.ttl_seconds,
                    ),
                )
            row = db.execute(f"SELECT {_COLUMNS} FROM entries WHERE hash = ?", (digest,)).fetchone()
        return StoredEntry(*row)

    def _free_id(self, db: sqlite3.Connection, digest: str) -> str:
        """The shortest prefix (at least min_id_length) that no other entry's hash starts with."""
        length = self.min_id_length
        while length < len(digest):
            prefix = digest[:length]
            clash = db.execute(
                "SELECT 1 FROM entries WHERE hash >= ? AND hash < ? LIMIT 1",
                (prefix, prefix + "g"),
            ).fetchone()
            if clash is None:
                return prefix
            length += 1
        return digest

    def _blob_path(self, digest: str) -> Path:
        return self._blobs / digest[:2] / digest

    def _write_blob(self, blob: Path, data: bytes) -> None:
        """Temp file, fsync, rename, fsync the directory: the name appears only when complete
        (a disk that is full or read-only: StoreUnavailable, nothing half-written left)."""
        try:
            self._write_blob_file(blob, data)
        except OSError as exc:
            raise StoreUnavailable(self.root, exc) from exc

    def _write_blob_file(self, blob: Path, data: bytes) -> None:
        blob.parent.mkdir(exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=self._tmp, prefix=blob.name[:16] + ".")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, blob)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        directory = os.open(blob.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    # -- reading -------------------------------------------------------------------------

    @_rebuilt_when_damaged
    def info(self, entry_id: str) -> StoredEntry:
        """What is stored under an id, without reading it or refreshing its expiry."""
        entry, _gone = self._lookup(entry_id)
        return entry

    @_rebuilt_when_damaged
    def get(self, entry_id: str, offset: int = 0, limit: int | None = None) -> StoredText:
        """Characters [offset, offset+limit) of a stored content; refreshes its expiry."""
        check_range(entry_id, offset, limit)
        entry, gone = self._lookup(entry_id)
        now = self.clock()
        if gone or entry.expires_at <= now:
            raise ExpiredId(entry.id, entry.expires_at, entry.uri)
        check_range(entry.id, offset, limit, entry.chars)
        try:
            data = self._blob_path(entry.hash).read_bytes()
        except FileNotFoundError as error:
            raise CorruptEntry(entry.id, "its blob is missing") from error
        if hashlib.sha256(data).hexdigest() != entry.hash:
            raise CorruptEntry(entry.id, "its blob does not match its hash")
        text = _text_of(data)
        with self._transaction() as db:
            db.execute(
                "UPDATE entries SET last_access = ?, expires_at = ? WHERE id = ?",
                (now, now + self.ttl_seconds, entry.id),
            )
        end = len(text) if limit is None else offset + limit
        return StoredText(entry.id, text[offset:end], offset, len(text), entry)

    def _lookup(self, entry_id: str) -> tuple[StoredEntry, bool]:
        if not isinstance(entry_id, str) or not _HEX_ID.fullmatch(entry_id.lower()):
            raise InvalidId(str(entry_id))
        entry_id = entry_id.lower()
        with self._connection() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS}, blob_gone FROM entries WHERE id = ?", (entry_id,)
            ).fetchall()
            if not rows and len(entry_id) >= self.min_id_length:
                rows = db.execute(
                    f"SELECT {_COLUMNS}, blob_gone FROM entries WHERE hash >= ? AND hash < ? "
                    "LIMIT 2",
                    (entry_id, entry_id + "g"),
                ).fetchall()
        if not rows:
            raise UnknownId(entry_id)
        if len(rows) > 1:
            raise AmbiguousId(entry_id, len(rows))
        *fields, gone = rows[0]
        return StoredEntry(*fields), bool(gone)

    @_rebuilt_when_damaged
    def entries(self) -> list[StoredEntry]:
        """Every row (expired ones included), oldest first."""
        with self._connection() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM entries ORDER BY created_at, id").fetchall()
        return [StoredEntry(*row) for row in rows]

    @_rebuilt_when_damaged
    def stats(self) -> StoreStats:
        now = self.clock()
        with self._connection() as db:
            entries, live, live_bytes, live_tokens = db.execute(
                "SELECT count(*), coalesce(sum(expires_at > ?), 0), "
                "coalesce(sum(CASE WHEN expires_at > ? THEN bytes END), 0), "
                "coalesce(sum(CASE WHEN expires_at > ? THEN tokens END), 0) FROM entries",
                (now, now, now),
            ).fetchone()
        disk = sum(_file_size(path) for path in self.root.rglob("*"))
        return StoreStats(self.root, entries, live, entries - live, live_bytes, live_tokens, disk)

    # -- housekeeping --------------------------------------------------------------------

    @_rebuilt_when_damaged
    def gc(self) -> GcReport:
        """Drop blobs of expired entries, orphan blobs and stale temp files; purge old rows."""
        now = self.clock()
        wall = time.time()
        freed = 0
        with self._transaction() as db:
            expired = db.execute(
                "SELECT hash FROM entries WHERE expires_at <= ? AND blob_gone = 0", (now,)
            ).fetchall()
            db.execute("UPDATE entries SET blob_gone = 1 WHERE expires_at <= ?", (now,))
            purged = db.execute(
                "DELETE FROM entries WHERE expires_at <= ?", (now - TOMBSTONE_SECONDS,)
            ).rowcount
            known = {
                digest for (digest,) in db.execute("SELECT hash FROM entries WHERE blob_gone = 0")
            }
            for (digest,) in expired:
                freed += _unlink(self._blob_path(digest))
        orphans = 0
        for blob in self._blobs.glob("*/*"):
            if blob.name not in known and _stale(blob, wall):
                freed += _unlink(blob)
                orphans += 1
        temps = 0
        for temp in self._tmp.iterdir():
            if _stale(temp, wall):
                freed += _unlink(temp)
                temps += 1
        return GcReport(len(expired), orphans, temps, purged, freed)


def _stale(path: Path, wall: float) -> bool:
    """Older than the grace a put in progress gets. False once gone: a file listed a moment
    ago may be gone when looked at (another process renamed its temp file into blobs/, or
    its gc removed the blob)."""
    try:
        return wall - path.stat().st_mtime > ORPHAN_GRACE_SECONDS
    except FileNotFoundError:
        return False


def _file_size(path: Path) -> int:
    """The size of a regular file; 0 for a folder, or a file gone since it was listed."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def _unlink(path: Path) -> int:
    """Removes `path`: the bytes freed, 0 if it was gone already."""
    try:
        size = path.stat().st_size
        path.unlink()
    except FileNotFoundError:
        return 0
    return size
