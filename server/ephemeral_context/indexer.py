"""Load a set of files into the document mirror and the persist-once store (`ectx index`).

Each file is stored with its tree-sitter synopsis (one line per definition), so an id found
later says what the content was without reading it.

The default set is the current repository's tracked files (`git ls-files`), so what gets
loaded is what the project itself considers source; outside a repository, a directory walk
that skips hidden and generated directories. `project_files` is the one file lister (the
model's `search` uses it too, for the wider VISIBLE set). Files the mirror will not hold
(binary, too large, unreadable) are reported with their reason, never fatal, and so are the
secret files the model may not read (by name or content, model/secrets.py): they are never
stored.

API:
- `index_files(files, mirror, store, ...)`: `ectx index`.
- `project_files(root, which)`, `FileSet`: the one file lister.
- `expand(paths)`: files stay, folders become their files.
- `repository_root(start)`: the git work tree, or None.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from ephemeral_context.documents import (
    Document,
    DocumentMirror,
    Unmirrored,
    path_to_uri,
    real_path,
    shown_name,
)
from ephemeral_context.model.secrets import SecretPolicy
from ephemeral_context.store import Store, StoredEntry
from ephemeral_context.syntax import outline_text, render_synopsis
from ephemeral_context.tokens import estimate_tokens

# Folders a walk outside git skips: VCS data, virtual envs, caches, dependencies, build output.
SKIPPED_DIRS = frozenset({
    "node_modules", "__pycache__", "dist", "build", "target", "venv", ".git", ".hg", ".svn",
    ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox",
})  # fmt: skip
TOKEN_KINDS = {".md": "prose", ".rst": "prose", ".txt": "prose", ".json": "json"}


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file loaded: its store entry, whether the store lacked it, its definition count."""

    path: Path
    document: Document
    entry: StoredEntry
    new: bool
    definitions: int


@dataclass(slots=True)
class IndexReport:
    """What one `index` run loaded, and what it skipped and why."""

    root: Path
    store_dir: Path
    files: list[IndexedFile] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """Files not loaded, with the reason ("binary: ...", "secret: ...")."""

    @property
    def bytes(self) -> int:
        return sum(item.entry.bytes for item in self.files)

    @property
    def tokens(self) -> int:
        return sum(item.entry.tokens or 0 for item in self.files)

    @property
    def new(self) -> int:
        return sum(item.new for item in self.files)


def repository_root(start: Path) -> Path | None:
    """The git work tree containing `start`, or None outside git (or without git)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=start,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return Path(done.stdout.strip()) if done.returncode == 0 else None


class FileSet(StrEnum):
    """Which files of a folder count: the two answers differ on purpose."""

    TRACKED = "tracked"
    """What the project considers source (`ectx index`): git's tracked files; outside git, a
    walk that also skips hidden folders."""
    VISIBLE = "visible"
    """What ripgrep would search (the model's `search`): tracked plus untracked-but-not-ignored
    files; outside git, a walk that keeps hidden folders such as .github."""


_GIT_FLAGS = {
    FileSet.TRACKED: ("--cached",),
    FileSet.VISIBLE: ("--cached", "--others", "--exclude-standard"),
}


def project_files(root: Path, which: FileSet) -> Iterator[Path]:
    """Files under `root` in a stable order (not resolved): `git ls-files` inside a work
    tree, else a walk that skips SKIPPED_DIRS (and, for TRACKED, every hidden folder)."""
    if repository_root(root) is not None:
        try:
            done = subprocess.run(
                ["git", "ls-files", "-z", *_GIT_FLAGS[which], "--", "."],
                cwd=root,
                capture_output=True,
                check=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            pass
        else:
            names = sorted({os.fsdecode(n) for n in done.stdout.split(b"\0") if n})
            yield from (root / name for name in names)
            return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped(d, which))
        yield from (Path(folder, name) for name in sorted(files))


def _skipped(folder: str, which: FileSet) -> bool:
    return folder in SKIPPED_DIRS or (which is FileSet.TRACKED and folder.startswith("."))


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files named directly stay; directories become their tracked files."""
    result: list[Path] = []
    for path in paths:
        if path.is_dir():
            result += sorted(real_path(p) for p in project_files(path, FileSet.TRACKED))
        else:
            result.append(path.resolve())
    return list(dict.fromkeys(result))


def index_targets(paths: Sequence[Path], cwd: Path) -> tuple[Path, list[Path]]:
    """What `ectx index PATH...` reads, and the root its rows are shown relative to: the
    repository around `cwd` (else `cwd`); without paths, that root's files."""
    root = repository_root(cwd) or cwd
    return root, expand(paths or [root])


def _loadable(path: Path, mirror: DocumentMirror, secrets: SecretPolicy) -> Document | str:
    """The file's text, or why it is not loaded."""
    if (reason := secrets.path_reason(path)) is not None:
        return f"secret: {reason}"
    got = mirror.get(path_to_uri(path))
    if isinstance(got, Unmirrored):
        return got.reason.value + (f": {got.detail}" if got.detail else "")
    if (reason := secrets.content_reason(path, got.text)) is not None:
        return f"secret: {reason}"
    return got


def index_files(
    files: list[Path],
    mirror: DocumentMirror,
    store: Store,
    *,
    root: Path,
    secrets: SecretPolicy,
    on_file: Callable[[Path], None] | None = None,
) -> IndexReport:
    """Read each file through the mirror and keep its text once in the store, with its
    synopsis; a secret file is skipped before it is read, one holding a secret after."""
    known = {entry.id for entry in store.entries()}
    report = IndexReport(root=root, store_dir=store.root)
    for path in files:
        result = _loadable(path, mirror, secrets)
        if isinstance(result, str):
            report.skipped.append((path, result))
        else:
            kind = TOKEN_KINDS.get(path.suffix.lower(), "code")
            outline = outline_text(result.text, shown_name(str(path)))  # the store takes UTF-8
            entry = store.put(
                result.text,
                uri=result.uri,
                version=result.version,
                tokens=estimate_tokens(result.text, kind),
                synopsis=render_synopsis(outline),
            )
            new = entry.id not in known
            report.files.append(IndexedFile(path, result, entry, new, len(outline.symbols)))
            known.add(entry.id)
        if on_file is not None:
            on_file(path)
    return report
