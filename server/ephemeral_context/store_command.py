"""`ectx status`, `ectx store gc|get` and `ectx index`: the store's commands and what they print.

Output is rich tables on stdout (errors and progress on stderr), so cli.py only parses the
arguments and calls one function here.

API:
- `run_status(entries_shown)`, `run_gc()`, `run_get(item_id, offset, limit)`,
  `run_index(paths, max_bytes, summary=...)`: each returns the exit status; a StoreError
  they raise (a bad id, a store locked or unwritable) is cli.main's one line and status 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from ephemeral_context.documents import DocumentMirror
from ephemeral_context.indexer import index_files, index_targets
from ephemeral_context.model.secrets import SecretPolicy
from ephemeral_context.store import Store, data_dir


def run_status(entries_shown: int) -> int:
    """What the store holds, and its `entries_shown` most recent entries."""
    with Store() as store:
        stats = store.stats()
        entries = store.entries()[-entries_shown:] if entries_shown > 0 else []
        ttl_days = store.ttl_seconds / 86400
    table = Table(title="Ephemeral Context store", show_header=False)
    table.add_row("data directory", str(data_dir()))
    table.add_row("store", str(stats.root))
    table.add_row("entries", f"{stats.entries} ({stats.live} live, {stats.expired} expired)")
    table.add_row("live content", f"{stats.live_bytes:,} bytes, ~{stats.live_tokens:,} tokens")
    table.add_row("on disk", f"{stats.disk_bytes:,} bytes")
    table.add_row("expiry", f"{ttl_days:g} days after last access")
    console = Console()
    console.print(table)
    if entries:
        listing = Table("id", "uri", "version", "bytes", "tokens", "expires")
        for entry in reversed(entries):
            expires = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.expires_at))
            listing.add_row(
                entry.id,
                entry.uri or "",
                "" if entry.version is None else str(entry.version),
                f"{entry.bytes:,}",
                f"{entry.tokens or 0:,}",
                expires,
            )
        console.print(listing)
    return 0


def run_gc() -> int:
    """Remove expired content, orphan blobs and stale temp files; say what went."""
    with Store() as store:
        report = store.gc()
        root = store.root
    Console().print(
        f"gc of {root}: {report.expired} expired entries' content removed, "
        f"{report.orphans_removed} orphan blobs, {report.temp_removed} temp files, "
        f"{report.tombstones_purged} old records purged; {report.bytes_freed:,} bytes freed",
        soft_wrap=True,
    )
    return 0


def run_get(item_id: str, offset: int, limit: int | None) -> int:
    """The text stored under `item_id` (a character range of it) to stdout."""
    with Store() as store:
        stored = store.get(item_id, offset, limit)
    sys.stdout.write(stored.text)
    print(
        f"[{stored.id}: characters {stored.offset}-{stored.end} of {stored.total_length}]",
        file=sys.stderr,
    )
    return 0


def _absent(path: Path) -> str | None:
    """Why `path` names nothing to index: it is not there, or cannot be looked at (a name
    longer than the system takes); None when it is there."""
    try:
        return None if path.exists() else "no such file or directory"
    except OSError as error:
        return str(error.strerror or error).lower()


def run_index(paths: Sequence[Path], max_bytes: int, *, summary: bool) -> int:
    """Load `paths` (default: the repository's tracked files) into the mirror and the store."""
    for path in paths:
        if (problem := _absent(path)) is not None:
            print(f"ectx index: {problem}: {path}", file=sys.stderr)
            return 2
    root, files = index_targets(paths, Path.cwd())
    mirror = DocumentMirror(max_bytes=max_bytes)
    with Store() as store, Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("indexing", total=len(files))
        report = index_files(
            files,
            mirror,
            store,
            root=root,
            secrets=SecretPolicy.configured([], []),
            on_file=lambda _path: progress.advance(task),
        )

    def shown(path: Path) -> str:
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    console = Console()
    if not summary and report.files:
        table = Table("file", "id", "bytes", "tokens", "defs", "new", title=f"Indexed under {root}")
        for item in report.files:
            new = "yes" if item.new else ""
            table.add_row(
                shown(item.path),
                item.entry.id,
                f"{item.entry.bytes:,}",
                f"{item.entry.tokens:,}",
                str(item.definitions),
                new,
            )
        console.print(table)
    if report.skipped:
        skipped = Table("skipped", "reason", title="Not loaded")
        for path, why in report.skipped:
            skipped.add_row(shown(path), why)
        console.print(skipped)
    console.print(
        f"{len(report.files)} files, {report.bytes:,} bytes, ~{report.tokens:,} tokens "
        f"({report.new} new in the store, {len(report.files) - report.new} already there); "
        f"{len(report.skipped)} skipped. Store: {report.store_dir}",
        soft_wrap=True,
    )
    return 0
