"""How an `edit_file` call becomes a change: one exact, unique replacement, applied somewhere.

`plan_edit` is the pure part every applier shares (find the old text exactly once, build
the new text). Where the change lands is the applier's business: `DiskEditApplier` writes
the file atomically (the default, for the CLI and for clients without applyEdit); the LSP
layer provides one that sends `workspace/applyEdit`, so edits land in open buffers and can
be undone.

API:
- `plan_edit(text, old, new)`: the pure part of an edit.
- `EditApplier`, `DiskEditApplier`: where the change lands.
- `EditOutcome`, `EditError`: what happened, or why not.
- `write_atomically(path, text)`: temp file and rename.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ephemeral_context.documents import without_bom

LONE_LF = re.compile(r"(?<!\r)\n")


class EditError(ValueError):
    """The edit cannot be applied as asked; the message tells the model how to fix the call."""


@dataclass(frozen=True)
class EditPlan:
    """A single replacement: characters [start, end) of the old text become `replacement`."""

    start: int
    end: int
    replacement: str
    new_text: str


@dataclass(frozen=True)
class EditOutcome:
    """What happened to an edit; `message` is a short phrase the tool prefixes with the path."""

    applied: bool
    message: str
    new_text: str | None = None


class EditApplier(Protocol):
    """Puts one replacement into effect (on disk, or in the editor through applyEdit)."""

    async def apply(self, path: Path, old: str, new: str) -> EditOutcome: ...


def plan_edit(text: str | None, old: str, new: str) -> EditPlan:
    """Where `old` occurs (exactly once) in `text`, and the text after replacing it.

    `text is None` means the file does not exist: only a creation (empty `old`) works then.
    """
    if old == new:
        raise EditError("old_string and new_string are identical; nothing to change")
    if text is None:
        if old:
            raise EditError("the file does not exist; use an empty old_string to create it")
        return EditPlan(0, 0, new, new)
    if not old:
        if text:
            raise EditError("old_string is empty but the file is not; quote the text to replace")
        return EditPlan(0, 0, new, new)
    count = text.count(old)
    # A CRLF file: the model writes line ends as LF; its lines are the file's with CRLF, and
    # so are the lines it adds, whether or not its old_string spans a line end.
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    if count == 0 and "\r\n" in text and "\n" in old and "\r" not in old:
        old, crlf = old.replace("\n", "\r\n"), True
        count = text.count(old)
    if count == 0:
        raise EditError(
            "old_string was not found in the file (it must match exactly, whitespace included); "
            "read the file again and copy the text"
        )
    if count > 1:
        raise EditError(
            f"old_string occurs {count} times; include more surrounding lines so it is unique"
        )
    start = text.index(old)
    if crlf:
        follows_cr = new.startswith("\n") and text[start - 1 : start] == "\r"
        new = LONE_LF.sub("\r\n", new)[1 if follows_cr else 0 :]  # the file's CR ends it
    return EditPlan(start, start + len(old), new, text[:start] + new + text[start + len(old) :])


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder and rename it over the target.

    A reader never sees half a file, and the original mode bits survive.
    """
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _writable(path: Path) -> bool:
    """Whether a write in place would be allowed: the rename `write_atomically` does needs
    only the folder's permission, and would replace a file marked read-only (any user's
    write bit off: a lock, a generated file) or one this user may not write."""
    return bool(path.stat().st_mode & 0o222) and os.access(path, os.W_OK)


class DiskEditApplier:
    """The default: read the file, plan the replacement, write it back atomically."""

    async def apply(self, path: Path, old: str, new: str) -> EditOutcome:
        """The text is the file's as the mirror has it (no BOM, documents.without_bom); a
        BOM the file starts with stays on disk."""
        try:
            data = path.read_bytes() if path.exists() else None
            text = None if data is None else without_bom(data).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return EditOutcome(False, f"cannot read: {exc}")
        try:
            plan = plan_edit(text, old, new)
        except EditError as exc:
            return EditOutcome(False, str(exc))
        if data is not None and not _writable(path):
            return EditOutcome(False, "cannot write: the file is read-only; ask the user")
        bom = "\ufeff" if data and data != without_bom(data) else ""
        try:
            write_atomically(path, bom + plan.new_text)
        except OSError as exc:
            return EditOutcome(False, f"cannot write: {exc}")
        return EditOutcome(True, "created" if text is None else "edited", plan.new_text)
