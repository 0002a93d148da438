"""The persist-once store, on a real SQLite file and real blobs in a temporary directory."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from ephemeral_context.store import (
    TOMBSTONE_SECONDS,
    CorruptEntry,
    ExpiredId,
    InvalidId,
    InvalidRange,
    OffsetPastEnd,
    Store,
    StoreBusy,
    StoredEntry,
    StoreUnavailable,
    UnknownId,
    data_dir,
    default_store_dir,
)
from ephemeral_context.tokens import estimate_tokens

from tests.unit.store_writer import store_text

WRITER = Path(__file__).with_name("store_writer.py")
DAY = 24 * 3600.0


class Clock:
    """An injectable clock the test moves by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


def blob_files(root: Path) -> list[Path]:
    return sorted((root / "blobs").glob("*/*"))


def test_put_is_idempotent_and_ids_are_short_hash_prefixes(store: Store) -> None:
    first = store.put("print('hi')\n", uri="file:///a.py", version=3, synopsis="1 line")
    again = store.put("print('hi')\n", uri="file:///elsewhere.py", version=9)
    assert again.id == first.id and len(first.id) == 8
    assert first.hash == hashlib.sha256(b"print('hi')\n").hexdigest()
    assert first.hash.startswith(first.id)
    assert (again.uri, again.version, again.synopsis) == ("file:///a.py", 3, "1 line")
    assert len(store.entries()) == 1 and len(blob_files(store.root)) == 1
    assert first.tokens == estimate_tokens("print('hi')\n")
    assert store.put("x", tokens=42).tokens == 42


def test_get_by_character_range(store: Store) -> None:
    text = "é中😀\r\nabc"  # 8 characters, 14 bytes
    entry = store.put(text)
    assert (entry.chars, entry.bytes) == (8, 14)
    whole = store.get(entry.id)
    assert whole.text == text and whole.total_length == 8
    part = store.get(entry.id, offset=2, limit=3)
    assert (part.text, part.offset, part.end, part.total_length) == ("😀\r\n", 2, 5, 8)
    assert store.get(entry.id, offset=7, limit=100).text == "c"
    with pytest.raises(
        OffsetPastEnd, match=r"offset 8 is past the end of \w+, which has 8 characters"
    ):
        store.get(entry.id, offset=8)
    with pytest.raises(InvalidRange):
        store.get(entry.id, offset=-1)
    with pytest.raises(InvalidRange):
        store.get(entry.id, limit=-5)
    empty = store.put("")
    assert store.get(empty.id).text == "" and store.get(empty.id).total_length == 0


def test_longer_prefixes_and_uppercase_resolve(store: Store) -> None:
    entry = store.put("some content")
    assert store.get(entry.hash[:12]).id == entry.id
    assert store.get(entry.hash.upper()).text == "some content"


@pytest.mark.parametrize(
    "bad",
    ["../../etc/passwd", "abcd/ef12", "3f9a2c10.txt", "..", "", "xyz12345", "3f9a 2c10", "ab\0cd"],
)
def test_ids_that_are_not_hex_are_rejected_before_any_io(store: Store, bad: str) -> None:
    store.close()  # a closed store would fail on any database or file access
    with pytest.raises(InvalidId, match="not a store id"):
        store.get(bad)


def test_an_absurdly_long_id_is_not_echoed_back_in_full(store: Store) -> None:
    bad = "z" * 100_000
    with pytest.raises(InvalidId) as raised:
        store.get(bad)
    message = str(raised.value)
    assert len(message) < 200
    assert "'" + "z" * 64 + "'... (100,000 characters) is not a store id" in message


def hold_write_lock(root: Path) -> sqlite3.Connection:
    """A second connection that takes the store's write lock and keeps it, as another
    process in the middle of a long write does."""
    other = sqlite3.connect(root / "index.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_store_locked_past_the_busy_timeout_says_so_and_then_works(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = Store(root, busy_timeout_ms=50)
    kept = store.put("kept before the lock")
    other = hold_write_lock(root)
    for attempt in (
        lambda: store.put("written while locked"),
        lambda: store.get(kept.id),  # the read refreshes expiry: a write
        lambda: store.gc(),
        lambda: Store(root, busy_timeout_ms=50),
    ):
        with pytest.raises(StoreBusy) as raised:
            attempt()
        assert str(raised.value) == (
            f"the store in {root} is busy: another process holds its lock; retry in a moment"
        )
    assert store.info(kept.id) == kept  # WAL: reads go on under another's write lock
    other.execute("ROLLBACK")
    other.close()
    assert store.get(kept.id).text == "kept before the lock"
    again = store.put("written while locked")
    assert store.get(again.id).text == "written while locked"
    store.close()


def test_a_commit_that_fails_busy_is_rolled_back_and_the_next_put_works(tmp_path: Path) -> None:
    """In WAL mode BEGIN IMMEDIATE takes every lock a COMMIT needs; with a rollback journal
    (what SQLite keeps when the file system cannot do WAL: `journal_mode = WAL` then answers
    the old mode) the COMMIT must also wait for readers, so a reader that stays past the busy
    timeout fails the COMMIT itself, after every statement before it went through."""
    root = tmp_path / "s"
    store = Store(root, busy_timeout_ms=50)
    store._db.execute("PRAGMA journal_mode = DELETE")  # the one connection: no WAL any more
    kept = store.put("kept before the reader")
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    reader = sqlite3.connect(root / "index.sqlite3", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM entries").fetchone()  # a shared lock, kept
    with pytest.raises(StoreBusy, match=f"the store in {root} is busy"):
        store.put("written while read")
    assert statements[-2:] == ["COMMIT", "ROLLBACK"]
    reader.execute("COMMIT")
    reader.close()
    assert [entry.id for entry in store.entries()] == [kept.id]  # nothing half written
    again = store.put("written while read")
    assert store.get(again.id).text == "written while read"
    store.close()


def test_unknown_id(store: Store) -> None:
    store.put("present")
    with pytest.raises(UnknownId, match="no stored content has id 00000000"):
        store.get("00000000")


def test_half_a_surrogate_pair_in_a_uri_or_synopsis_is_kept(store: Store) -> None:
    """JSON can carry half a surrogate pair in a URI (an untitled buffer's, which is not
    re-encoded as a file: URI is): it is stored and read back as given, not a
    UnicodeEncodeError that fails the pin."""
    uri, synopsis = "untitled:Untitled-\ud800", "def f\udc80"
    entry = store.put("x = 1\n", uri=uri, synopsis=synopsis)
    assert (entry.uri, entry.synopsis) == (uri, synopsis)
    store.put("y = 2\n")
    assert store.put("y = 2\n", synopsis=synopsis).synopsis == synopsis  # an update's too
    assert store.get(entry.id).entry.uri == uri
    assert [e.uri for e in store.entries()] == [uri, None]


def test_ids_grow_on_collision(tmp_path: Path) -> None:
    store = Store(tmp_path / "s", min_id_length=1)
    texts = [f"text number {i}" for i in range(60)]  # 60 texts, 16 one-digit prefixes
    entries = [store.put(text) for text in texts]
    ids = [entry.id for entry in entries]
    assert len(set(ids)) == 60 and max(map(len, ids)) > 1
    for entry, text in zip(entries, texts, strict=True):
        assert entry.hash.startswith(entry.id)
        assert store.get(entry.id).text == text
        assert store.put(text).id == entry.id
    # An id never prefixes an older entry's hash (entries are listed oldest first).
    for index, entry in enumerate(store.entries()):
        assert not any(older.hash.startswith(entry.id) for older in store.entries()[:index])


def test_expiry_counts_from_last_access(tmp_path: Path) -> None:
    clock = Clock()
    store = Store(tmp_path / "s", ttl_seconds=7 * DAY, clock=clock)
    entry = store.put("def f(): pass\n", uri="file:///proj/f.py")
    clock.now += 6 * DAY
    assert store.get(entry.id).text == "def f(): pass\n"  # a read refreshes
    clock.now += 6 * DAY
    assert store.get(entry.id).total_length == 14
    clock.now += 7 * DAY + 1
    with pytest.raises(ExpiredId) as caught:
        store.get(entry.id)
    message = str(caught.value)
    assert "expired at" in message and "re-read file:///proj/f.py" in message
    assert caught.value.expired_at == pytest.approx(clock.now - 1)
    stats = store.stats()
    assert (stats.entries, stats.live, stats.expired) == (1, 0, 1)


def test_gc_removes_expired_blobs_keeps_a_tombstone_and_put_revives(tmp_path: Path) -> None:
    clock = Clock()
    store = Store(tmp_path / "s", ttl_seconds=DAY, clock=clock)
    old = store.put("old text", uri="file:///old.txt")
    clock.now += DAY / 2
    young = store.put("young text")
    clock.now += DAY / 2 + 1
    report = store.gc()
    assert report.expired == 1 and report.bytes_freed == len("old text")
    assert [path.name for path in blob_files(store.root)] == [young.hash]
    with pytest.raises(ExpiredId, match=r"re-read file:///old\.txt"):
        store.get(old.id)
    revived = store.put("old text")
    assert revived.id == old.id and store.get(old.id).text == "old text"
    assert store.gc().expired == 0
    clock.now += TOMBSTONE_SECONDS + 2 * DAY
    purged = store.gc()
    assert purged.tombstones_purged == 2 and store.entries() == []
    with pytest.raises(UnknownId):
        store.get(old.id)


def test_gc_removes_old_orphans_and_temp_files_only(store: Store) -> None:
    kept = store.put("kept")
    old_orphan = store.root / "blobs" / "ab" / ("ab" + "0" * 62)
    young_orphan = store.root / "blobs" / "cd" / ("cd" + "0" * 62)
    temp = store.root / "tmp" / "partial.123"
    for path in (old_orphan, young_orphan, temp):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    for path in (old_orphan, temp):
        os.utime(path, (two_hours_ago, two_hours_ago))
    report = store.gc()
    assert (report.orphans_removed, report.temp_removed) == (1, 1)
    assert not old_orphan.exists() and not temp.exists() and young_orphan.exists()
    assert store.get(kept.id).text == "kept"


@pytest.mark.parametrize("look", [Store.gc, Store.stats], ids=["gc", "stats"])
@pytest.mark.parametrize("looks_before", [0, 1], ids=["gone-once-listed", "gone-once-looked-at"])
def test_files_another_process_removes_meanwhile_are_passed_over(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    look: Callable[[Store], object],
    looks_before: int,
) -> None:
    """`ectx store gc` or `ectx status` while the server stores: a temp file is renamed into
    blobs/ (or another gc removes a blob) after the folder was listed, before or after the
    file was first looked at. It is passed over, not a FileNotFoundError."""
    kept = store.put("kept")
    gone = [store.root / "tmp" / "partial.123", store.root / "blobs" / "ab" / ("ab" + "0" * 62)]
    two_hours_ago = time.time() - 7200
    for path in gone:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"partial")
        os.utime(path, (two_hours_ago, two_hours_ago))
    real_stat = Path.stat
    looks: Counter[Path] = Counter()

    def stat(path: Path, **kwargs: bool) -> os.stat_result:
        if path in gone:
            if looks[path] == looks_before:
                path.unlink()
            looks[path] += 1
        return real_stat(path, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    look(store)
    assert store.get(kept.id).text == "kept"


def test_a_damaged_blob_is_reported_not_returned(store: Store) -> None:
    entry = store.put("original")
    (blob,) = blob_files(store.root)
    blob.write_bytes(b"tampered")
    with pytest.raises(CorruptEntry, match="does not match"):
        store.get(entry.id)
    blob.unlink()
    with pytest.raises(CorruptEntry, match="missing"):
        store.get(entry.id)
    assert store.put("original").id == entry.id and store.get(entry.id).text == "original"


@pytest.mark.parametrize(
    "damage",
    [b"not a database " * 100, b"SQLite format 3\x00" + b"\xff" * 84],
    ids=["garbage", "cut-short"],
)
def test_a_damaged_index_is_moved_aside_and_every_content_keeps_its_id(
    tmp_path: Path, damage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [store_text(i, 40) for i in range(3)]
    with Store(tmp_path / "s") as store:
        ids = [store.put(text, uri=f"file:///{i}.py").id for i, text in enumerate(texts)]
    index = tmp_path / "s" / "index.sqlite3"
    for stale in index.parent.glob("index.sqlite3-*"):
        stale.unlink()
    index.write_bytes(damage)
    with Store(tmp_path / "s") as store:
        assert [store.get(i).text for i in ids] == texts
        assert store.put("after").id
    (aside,) = index.parent.glob("index.sqlite3.damaged-*")
    assert aside.read_bytes() == damage
    assert "damaged" in caplog.text and str(aside) in caplog.text


def test_a_rebuild_cut_short_is_finished_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process that lists the blobs into a new index (some 50 s for 100,000 of them) is
    killed after 5 of 20: the next open lists the rest, instead of every id not listed yet
    being unknown for good and its blob an orphan for gc."""
    texts = [store_text(i, 3) for i in range(20)]
    with Store(tmp_path / "s") as store:
        ids = [store.put(text).id for text in texts]
    index = tmp_path / "s" / "index.sqlite3"
    for stale in index.parent.glob("index.sqlite3-*"):
        stale.unlink()
    index.write_bytes(b"not a database " * 100)
    two_hours_ago = time.time() - 7200
    for blob in blob_files(tmp_path / "s"):
        os.utime(blob, (two_hours_ago, two_hours_ago))

    class Killed(BaseException):
        pass

    put, puts = Store.put, 0

    def killed_after_5(store: Store, text: str, **about: str | int | None) -> StoredEntry:
        nonlocal puts
        puts += 1
        if puts > 5:
            raise Killed
        return put(store, text, **about)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "put", killed_after_5)
    with pytest.raises(Killed):
        Store(tmp_path / "s")
    monkeypatch.undo()
    with Store(tmp_path / "s") as store:
        assert [store.get(i).text for i in ids] == texts
        assert store.gc().orphans_removed == 0


def test_an_index_found_damaged_after_it_opened_is_rebuilt_and_the_call_made_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its first page intact, so it opens; the pages after it overwritten (a bad disk, a
    backup tool): the first call that reads them rebuilds the index as at open and answers,
    instead of sqlite3.DatabaseError from every call for good. Another process that had it
    open (`other`) opens the rebuilt one, and does not rebuild it again."""
    texts = [store_text(i, 3) for i in range(500)]
    with Store(tmp_path / "s") as store:
        ids = [store.put(text, uri=f"file:///{i}.py").id for i, text in enumerate(texts)]
    index = tmp_path / "s" / "index.sqlite3"
    image = index.read_bytes()
    page = int.from_bytes(image[16:18], "big")
    index.write_bytes(image[:page] + b"\xff" * (len(image) - page))
    with Store(tmp_path / "s") as store, Store(tmp_path / "s") as other:
        assert store.get(ids[7]).text == texts[7]
        assert [store.get(i).text for i in ids] == texts
        after = store.put("after")
        assert other.get(after.id).text == "after"  # opens the new index, not moves it aside
        later = store.put("later")
        assert other.get(later.id).text == "later"
        assert len(store.entries()) == len(other.entries()) == 502
    (aside,) = index.parent.glob("index.sqlite3.damaged-*[0-9]")  # with its -wal and -shm
    assert "damaged" in caplog.text and str(aside) in caplog.text


def test_a_failed_put_leaves_no_row(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulates a crash between the blob and the commit: the transaction rolls back."""

    def crash(*args: object) -> str:
        raise RuntimeError("crash before commit")

    monkeypatch.setattr(store, "_free_id", crash)
    with pytest.raises(RuntimeError):
        store.put("never committed")
    assert store.entries() == [] and len(blob_files(store.root)) == 1  # an orphan for gc
    monkeypatch.undo()
    assert store.get(store.put("never committed").id).text == "never committed"


def test_a_store_that_cannot_be_written_says_so_in_one_line(tmp_path: Path) -> None:
    """A folder that cannot be made, a blob that cannot be written (a full or read-only disk
    alike; here a file stands in the way, which even root cannot write through):
    StoreUnavailable, a StoreError with the store's path and the system's reason, and
    nothing half-written left behind."""
    (tmp_path / "blocked").write_text("a file")
    with pytest.raises(StoreUnavailable, match="blocked cannot be used: "):
        Store(tmp_path / "blocked")
    store = Store(tmp_path / "store")
    kept = store.put("kept")
    shutil.rmtree(store.root / "tmp")
    (store.root / "tmp").write_text("a file where the temp folder was")
    with pytest.raises(StoreUnavailable, match="store cannot be used: Not a directory"):
        store.put("not written")
    assert [e.id for e in store.entries()] == [kept.id]
    assert store.get(kept.id).text == "kept"
    store.close()


@pytest.mark.parametrize(
    ("name", "reason"),
    [("nul\x00byte", "embedded null byte"), ("half\ud800pair", "surrogates not allowed")],
    ids=["nul", "lone-surrogate"],
)
def test_a_folder_no_path_can_name_is_one_line(tmp_path: Path, name: str, reason: str) -> None:
    """A `dataDirectory` setting (JSON) can hold a NUL or half a surrogate pair, which no
    path on disk can: StoreUnavailable (the editor is told, each request fails with its one
    line), not a ValueError that fails `initialize` and every request after it."""
    with pytest.raises(StoreUnavailable, match=f"cannot be used: .*{reason}"):
        Store(tmp_path / name / "store")


def test_data_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPHEMERAL_CONTEXT_HOME", str(tmp_path / "home"))
    assert data_dir() == tmp_path / "home"
    assert default_store_dir() == tmp_path / "home" / "store"
    with Store() as store:
        store.put("x")
    assert (tmp_path / "home" / "store" / "index.sqlite3").exists()
    monkeypatch.delenv("EPHEMERAL_CONTEXT_HOME")
    assert data_dir().name == "ephemeral-context"


def test_the_index_uses_wal(store: Store) -> None:
    store.put("x")
    with sqlite3.connect(store.root / "index.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- real processes --------------------------------------------------------------------------


def writer(root: Path, *args: int) -> subprocess.Popen[str]:
    """store_writer.py ROOT FIRST COUNT MIN_ID_LENGTH REPEAT [PAUSE_AT_FSYNC] as a process."""
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(root), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def committed_ids(lines: list[str]) -> dict[str, int]:
    return {words[1]: int(words[2]) for words in map(str.split, lines) if words[0] == "OK"}


def check_store_after_crash(root: Path, committed: dict[str, int], repeat: int) -> Store:
    """Every reported entry reads back; so does any committed later; no blob is partial."""
    store = Store(root)
    for entry_id, index in committed.items():
        assert store.get(entry_id).text == store_text(index, repeat)
    for entry in store.entries():
        assert entry.uri is not None
        index = int(entry.uri.rsplit("/", 1)[1].removesuffix(".txt"))
        assert store.get(entry.id).text == store_text(index, repeat)
    for blob in blob_files(root):
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    return store


def test_sigkill_mid_batch_loses_nothing_committed(tmp_path: Path) -> None:
    root = tmp_path / "store"
    child = writer(root, 0, 10_000, 8, 2000)  # ~50 KB each
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        if len(lines) == 25:
            break
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate()
    assert child.returncode == -signal.SIGKILL
    committed = committed_ids(lines + rest.splitlines())
    assert len(committed) >= 25
    check_store_after_crash(root, committed, 2000)


@pytest.mark.parametrize(
    ("pause_at", "left_behind"),
    [(21, "tmp"), (22, "blobs")],
    ids=["before-blob-fsync", "blob-renamed-row-not-committed"],
)
def test_sigkill_inside_a_put(tmp_path: Path, pause_at: int, left_behind: str) -> None:
    """Killed at a known point in the 11th put: the 10 before it intact, the 11th invisible."""
    root = tmp_path / "store"
    child = writer(root, 0, 100, 8, 20_000, pause_at)
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        if line == "PAUSED\n":
            break
        lines.append(line)
    child.send_signal(signal.SIGKILL)
    child.communicate()
    committed = committed_ids(lines)
    assert sorted(committed.values()) == list(range(10))
    store = check_store_after_crash(root, committed, 20_000)
    assert len(store.entries()) == 10
    stray = [p for p in (root / left_behind).rglob("*") if p.is_file()]
    known = {entry.hash for entry in store.entries()}
    stray = [p for p in stray if p.name not in known]
    assert len(stray) == 1  # the 11th put's content, which no id reaches
    long_ago = time.time() - 7200
    os.utime(stray[0], (long_ago, long_ago))
    report = store.gc()
    assert report.orphans_removed + report.temp_removed == 1 and not stray[0].exists()


def test_two_processes_share_one_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    Store(root).close()
    # Overlapping ranges (50..99 written by both), 2-digit ids so ids collide across processes.
    children = [writer(root, 0, 100, 2, 3), writer(root, 50, 100, 2, 3)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append(
            {index: entry_id for entry_id, index in committed_ids(out.splitlines()).items()}
        )
    first, second = results
    for index in range(50, 100):
        assert first[index] == second[index]
    store = Store(root)
    assert len(store.entries()) == 150
    ids = {**first, **second}
    assert len(set(ids.values())) == 150
    for index, entry_id in ids.items():
        assert store.get(entry_id).text == store_text(index, 3)


def open_new_stores(root: str, rounds: int, barrier: Barrier) -> None:
    """One of several processes: opens store `root/i` together with the others, round by round."""
    for i in range(rounds):
        barrier.wait(timeout=60)
        try:
            Store(Path(root) / str(i)).close()
        except BaseException:
            barrier.abort()  # the others stop at once instead of waiting out the timeout
            raise


def test_processes_opening_new_stores_at_once_all_succeed(tmp_path: Path) -> None:
    """Four processes create the same 100 new stores at the same moment (the switch to WAL)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    children = [
        context.Process(target=open_new_stores, args=(str(tmp_path), 100, barrier))
        for _ in range(4)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    assert [child.exitcode for child in children] == [0, 0, 0, 0]
    for i in range(100):
        with Store(tmp_path / str(i)) as store:
            assert store.entries() == []
