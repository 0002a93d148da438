"""The model's `memory` tool: notes that persist across sessions, as files in one folder.

The model names them `/memories/<path>` (or `<path>`); nothing can leave the folder
(model/secrets.Workspace resolves every path). The folder outlives a workspace, so a file
holding a key or token is neither shown nor edited unless the user allowed it
(model/secrets.SecretPolicy), as in the workspace. Each command returns a `MemoryReply`; a
command that cannot be done raises `MemoryRefused` with the sentence the model sees.

API:
- `MemoryFolder`: `view`, `create`, `str_replace`, `insert`, `delete`, `rename`.
- `MemoryReply`, `MemoryRefused`: the answer, or why not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ephemeral_context.documents import path_to_uri, shown_name, taken_name
from ephemeral_context.echo import quoted
from ephemeral_context.model.edits import DiskEditApplier, write_atomically
from ephemeral_context.model.secrets import SecretPolicy, Workspace


class MemoryRefused(Exception):
    """A memory command that cannot be done (no such file, a folder, past the end)."""


@dataclass(frozen=True)
class MemoryReply:
    """What the model is told; `uri` names the file it concerned, `failed` an edit not made."""

    text: str
    uri: str | None = None
    failed: bool = False


@dataclass(frozen=True)
class MemoryFolder:
    """The memories folder; created on first use."""

    root: Path
    secrets: SecretPolicy = field(default_factory=SecretPolicy)

    def _path(self, raw: str) -> Path:
        """A path under the folder; `/memories/x.md` and `x.md` mean the same file (a name
        shown escaped, `_name`, is read back to its bytes)."""
        parts = [part for part in taken_name(raw.strip()).split("/") if part]
        if parts and parts[0] == "memories":
            parts = parts[1:]
        self.root.mkdir(parents=True, exist_ok=True)
        return Workspace((self.root.resolve(),)).resolve("/".join(parts) or ".")

    def _name(self, path: Path) -> str:
        """The name the model is shown (a byte that is not UTF-8 escaped: `shown_name`)."""
        relative = path.relative_to(self.root.resolve()).as_posix()
        return "/memories" if relative == "." else f"/memories/{shown_name(relative)}"

    def _file(self, raw: str) -> tuple[Path, str]:
        path = self._path(raw)
        name = self._name(path)
        if not path.is_file():
            raise MemoryRefused(f"no memory file {name}")
        return path, name

    def _shown(self, raw: str) -> tuple[Path, str, str]:
        """A file's path, name and text, unless the text holds a secret: what may not be
        shown may not be edited either (a match would tell)."""
        path, name = self._file(raw)
        text = path.read_text(encoding="utf-8")
        if (reason := self.secrets.content_reason(path, text)) is not None:
            raise MemoryRefused(SecretPolicy.withheld_message(name, reason))
        return path, name, text

    def view(self, raw: str, view_range: tuple[int, int] | None) -> MemoryReply:
        """A folder's listing, or a file's lines numbered (view_range: first, last or -1)."""
        path = self._path(raw)
        name = self._name(path)
        if path.is_dir():
            entries = sorted(self._name(p) + ("/" if p.is_dir() else "") for p in path.rglob("*"))
            listing = "\n".join(entries) or "(empty)"
            return MemoryReply(f"{name}:\n{listing}")
        path, name, text = self._shown(raw)
        lines = text.splitlines()
        first, last = 1, len(lines)
        if view_range is not None:
            first = max(1, view_range[0])
            last = len(lines) if view_range[1] == -1 else view_range[1]
        shown = range(first, min(last, len(lines)) + 1)
        numbered = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in shown)
        return MemoryReply(numbered, uri=path_to_uri(path))

    def create(self, raw: str, text: str) -> MemoryReply:
        path = self._path(raw)
        name = self._name(path)
        if path.is_dir():
            raise MemoryRefused(f"{name} is a folder")
        write_atomically(path, text)
        return MemoryReply(f"created {name}", uri=path_to_uri(path))

    def delete(self, raw: str) -> MemoryReply:
        path, name = self._file(raw)
        path.unlink()
        return MemoryReply(f"deleted {name}", uri=path_to_uri(path))

    async def str_replace(self, raw: str, old: str, new: str) -> MemoryReply:
        path, name, _ = self._shown(raw)
        outcome = await DiskEditApplier().apply(path, old, new)
        return MemoryReply(f"{name}: {outcome.message}", failed=not outcome.applied)

    def insert(self, raw: str, line: int, text: str) -> MemoryReply:
        """`text` as whole lines after line `line` (0: at the top)."""
        path, name = self._file(raw)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if line > len(lines):
            raise MemoryRefused(
                f"insert_line {line} is past the end of {name} ({len(lines)} lines)"
            )
        if line and not lines[line - 1].endswith("\n"):  # the last line, with no line end
            lines[line - 1] += "\n"
        lines.insert(line, text if text.endswith("\n") else text + "\n")
        write_atomically(path, "".join(lines))
        return MemoryReply(f"inserted into {name} after line {line}")

    def rename(self, old_raw: str, new_raw: str) -> MemoryReply:
        old, new = self._path(old_raw), self._path(new_raw)
        if not old.is_file():
            raise MemoryRefused(f"no memory file {quoted(old_raw)}")
        if new.exists():
            raise MemoryRefused(f"{quoted(new_raw)} already exists")
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
        return MemoryReply(f"renamed to {self._name(new)}")
