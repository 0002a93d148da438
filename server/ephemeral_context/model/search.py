"""The model's `search`: a regular expression over the workspace's files, secrets withheld.

Files are the ones ripgrep would search (indexer.project_files, VISIBLE); an open buffer is
searched as the editor holds it. A file whose name marks it secret is skipped; a file whose
content holds a credential is not searched and gets one note, whatever the pattern
(model/secrets.py).
Bounds keep one call cheap: at most SEARCH_MAX_MATCHES lines, SEARCH_MAX_FILES files, each
line matched on its first SEARCH_MATCH_CHARS characters, and SEARCH_SECONDS in all (the
`regex` module, which times out and lets go of the GIL while it matches: a pattern that
backtracks without end, `(a|aa)+$`, on a 40-character line, stops neither the search nor the
server; each line costs a few microseconds more than with `re`: docs/benchmarks.md).

API:
- `search_workspace(...)`: matching lines as `path:line: text`.
- `SEARCH_MAX_MATCHES`: the bound on lines.
"""

from __future__ import annotations

import fnmatch
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ephemeral_context.documents import (
    Document,
    DocumentMirror,
    decode_file,
    path_to_uri,
    split_lines,
    without_bom,
)
from ephemeral_context.echo import quoted
from ephemeral_context.indexer import FileSet, project_files
from ephemeral_context.model.secrets import AccessDenied, SecretPolicy, Workspace
from ephemeral_context.patterns import compile_pattern, time_left
from ephemeral_context.syntax.outline import binary_reason

SEARCH_MAX_MATCHES = 200
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_LINE = 300
SEARCH_MATCH_CHARS = 4000
SEARCH_SECONDS = 20.0


def search_workspace(
    workspace: Workspace,
    mirror: DocumentMirror,
    secrets: SecretPolicy,
    pattern: str,
    glob: str,
) -> str:
    """Matching lines as `path:line: text`, each line matched on its first SEARCH_MATCH_CHARS
    characters and the whole search in SEARCH_SECONDS (a pattern that backtracks without end
    stops the search with a note saying so, not the server); regex.error before any file is
    read when `re` would refuse the pattern (`compile_pattern`).

    A file withheld for its content (a key or token inside) is not searched at all: it gets
    one note, the same whatever the pattern, so a withheld match reads exactly like a miss
    and no probe can recover a secret (or the rest of that file) a character at a time."""
    compiled = compile_pattern(pattern)
    hits: list[str] = []
    withheld: list[str] = []
    scanned = 0
    deadline = time.monotonic() + SEARCH_SECONDS
    stalled = ""
    for real, display in _walk(workspace, glob):
        scanned += 1
        if stalled or scanned > SEARCH_MAX_FILES or len(hits) >= SEARCH_MAX_MATCHES:
            break
        if secrets.path_reason(real) is not None:
            continue
        text = _search_text(mirror, real)
        if text is None:
            continue
        if isinstance(text, Unreadable):
            withheld.append(f"{display}: [not searched: {text.reason}; read_file refuses it too]")
            continue
        if (reason := secrets.content_reason(real, text)) is not None:
            withheld.append(f"{display}: [withheld: {reason}; not searched]")
            continue
        for number, ended in enumerate(split_lines(text), start=1):
            line = ended.rstrip("\r\n")
            try:
                left = time_left(deadline)
                found = compiled.search(line, 0, SEARCH_MATCH_CHARS, concurrent=True, timeout=left)
            except TimeoutError:
                stalled = f"{display}:{number}"
                break
            if not found:
                continue
            shown = line if len(line) <= SEARCH_MAX_LINE else line[:SEARCH_MAX_LINE] + " …"
            hits.append(f"{display}:{number}: {shown}")
            if len(hits) >= SEARCH_MAX_MATCHES:
                break
    lines = list(hits)
    if stalled:
        lines.append(
            f"[stopped after {SEARCH_SECONDS:g} s, at {stalled}: narrow the path "
            "glob, or simplify the pattern (nested repeats such as (a|aa)+ can take that long "
            "on one line)]"
        )
    elif not hits:
        where = f" in {quoted(glob)}" if glob else ""
        lines.append(f"no matches for {quoted(pattern)}{where}")
    elif len(hits) >= SEARCH_MAX_MATCHES or scanned > SEARCH_MAX_FILES:
        lines.append(f"[stopped after {len(hits)} matches; narrow the pattern or the path glob]")
    return "\n".join(lines + withheld)


def _glob_matches(names: tuple[str, ...], glob: str) -> bool:
    """`src/*.py` against the short path or the path in its folder, `*.py` against the
    name; `**/` may match nothing (`src/**/*.py` takes `src/app.py`: fnmatch's `**/` wants
    at least one folder)."""
    patterns = {glob, glob.removeprefix("**/"), glob.replace("**/", "")}
    return any(fnmatch.fnmatch(name, p) for p in patterns for name in names)


def _folder(workspace: Workspace, glob: str) -> Path | None:
    """The workspace folder `glob` names, if it names one (`src`, `src/`, `.`, a path as
    the model knows it from Grep's `path`): the search covers what lies in it. As a glob,
    `src` matched no file, and the answer was a false 'no matches'."""
    if not glob or any(char in glob for char in "*?["):
        return None
    try:
        real = workspace.resolve(glob)
    except AccessDenied:
        return None
    return real if real.is_dir() else None


def _walk(workspace: Workspace, glob: str) -> Iterator[tuple[Path, str]]:
    """Workspace files (resolved, inside the workspace) in the folder `glob` names, or
    whose short name matches it."""
    folder = _folder(workspace, glob)
    for root in workspace.roots:
        for path in project_files(root, FileSet.VISIBLE):
            try:
                real = workspace.resolve(str(path))
            except AccessDenied:
                continue
            display = workspace.relative(real)
            if folder is not None:
                if not real.is_relative_to(folder):
                    continue
            elif glob and not _glob_matches(
                (display, path.relative_to(root).as_posix(), path.name), glob
            ):
                continue
            yield real, display


@dataclass(frozen=True)
class Unreadable:
    """A file that looks like text but that read_file refuses (not UTF-8): the model is told,
    not shown a miss it would take for one."""

    reason: str


def _search_text(mirror: DocumentMirror, real: Path) -> str | Unreadable | None:
    """An open buffer's text, else the file's as the mirror would read it (documents.
    decode_file), `Unreadable` for text it refuses, or None for binary/unreadable/huge files
    and for what is no regular file (reading a FIFO waits for a writer forever)."""
    opened = mirror.open_document(path_to_uri(real))  # `real` is resolved: its key
    if opened is not None:
        return opened.text if isinstance(opened, Document) else None
    try:
        status = real.stat()
        if not stat.S_ISREG(status.st_mode) or status.st_size > mirror.max_bytes:
            return None
        data = without_bom(real.read_bytes())
    except OSError:
        return None
    text = decode_file(data, mirror.max_bytes)
    if isinstance(text, str):
        return text if binary_reason(text) is None else None
    looks_like_text = binary_reason(data.decode("utf-8", errors="replace")) is None
    return Unreadable(text[1]) if looks_like_text and b"\0" not in data else None
