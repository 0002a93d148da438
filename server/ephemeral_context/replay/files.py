"""What a session knows about each file at each point: the text seen, as changed since.

Strategies that keep files apart from the conversation (Aider's chat files, the seed
proposal's file block, our engine) need each file's current text after every Read, Edit and
Write. A transcript shows only what was read (often a line range) and what was changed, so
the tracker keeps the lines it has seen, applies the model's own replacements to them, and
takes a whole file when the transcript recorded one (a Write, or an Edit's `originalFile`).
A change it cannot apply exactly (a regular expression over a file not known whole, a
Serena symbol edit, a rename that may touch any file) leaves the file unknown until it is
read again: never stale text. A Read that shows different lines from the ones known, with
no change by the model in between, is an external change (a formatter, git, the user).

API:
- `FileTracker`: files of one thread, block by block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ephemeral_context.claude_tools import stands_in
from ephemeral_context.replay.flow import Block, FileChange, FileView, block_key
from ephemeral_context.tokens import estimate_block_tokens


@dataclass
class FileState:
    """One file as known: lines by number (1-based), and a version bumped on every change."""

    path: str
    lines: dict[int, str] = field(default_factory=dict)
    version: int = 0
    whole: bool = False
    """The lines are the whole file (a whole Read, a Write, an Edit's recorded original, and
    the exact changes since), so a change that depends on all of it can be applied."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines[n] for n in sorted(self.lines))

    def replace_all(self, text: str) -> None:
        """Know `text` as the whole file."""
        self.lines = dict(enumerate(text.split("\n"), 1))
        self.whole = True

    def forget(self) -> None:
        """Know nothing of the file's text (a change that cannot be applied exactly)."""
        self.lines, self.whole = {}, False

    def runs(self) -> list[tuple[int, str]]:
        """The known lines as runs of consecutive ones: (first line, text), in order."""
        runs: list[tuple[int, list[str]]] = []
        for n in sorted(self.lines):
            if runs and runs[-1][0] + len(runs[-1][1]) == n:
                runs[-1][1].append(self.lines[n])
            else:
                runs.append((n, [self.lines[n]]))
        return [(first, "\n".join(lines)) for first, lines in runs]


@dataclass(frozen=True)
class Update:
    """What one tool result did to a file: `how` is "read", "edit", "write" or "external".

    `replaced_tokens` is the size of the previous text when it was overwritten and cannot be
    rebuilt from the conversation (a Write over known text, or an external change).
    `repeat` is Claude Code's own test for its file-unchanged stub: a Read with the same
    offset and limit as the last Read of that file, showing the same text, with no change by
    the model between (a whole-file Read and one with `limit` 2000 of a short file show the
    same lines and are not a repeat).
    """

    path: str
    how: str
    changed: bool
    replaced_tokens: int = 0
    repeat: bool = False


class FileTracker:
    """Files of one thread, updated block by block in conversation order."""

    def __init__(self) -> None:
        self.files: dict[str, FileState] = {}
        self._tokens: dict[tuple[str, int], int] = {}
        self._last_view: dict[str, tuple[object, object, int, int, str]] = {}
        """Per path, the last Read's offset and limit (as passed) and the text it showed."""

    def apply(self, block: Block) -> Update | None:
        """Take in one tool result; None when it says nothing about a file's text."""
        if block.file_view is not None:
            view = block.file_view
            given = block.tool_input or {}
            # Claude Code compares a Read's arguments as passed, not the lines they show.
            seen = (
                given.get("offset", 1),
                given.get("limit"),
                view.start_line,
                view.num_lines,
                view.content,
            )
            # Claude Code's own Read only: a bridge's or an MCP server's is not (no stub).
            repeat = not stands_in(block.tool or "") and self._last_view.get(view.path) == seen
            self._last_view[view.path] = seen
            update = self._read(view)
            return Update(update.path, update.how, update.changed, update.replaced_tokens, repeat)
        change = block.file_change
        if change is None:
            return None
        if change.elsewhere:  # any file may have changed, unseen by Claude Code's check too
            self._last_view.clear()
            for state in self.files.values():
                if state.lines:
                    state.forget()
                    state.version += 1
        self._last_view.pop(change.path, None)
        return self._change(change)

    def tokens(self, path: str) -> int:
        """Estimated tokens of the file's known text (memoised per version)."""
        state = self.files[path]
        key = (path, state.version)
        if key not in self._tokens:
            self._tokens[key] = estimate_block_tokens(state.text, "code")
        return self._tokens[key]

    def key(self, path: str) -> int:
        """A content key for the file's current text (path and version)."""
        state = self.files[path]
        return block_key("file", path, str(state.version))

    def _state(self, path: str) -> FileState:
        if path not in self.files:
            self.files[path] = FileState(path)
        return self.files[path]

    def _read(self, view: FileView) -> Update:
        state = self._state(view.path)
        shown = dict(enumerate(view.content.split("\n"), view.start_line))
        if view.whole_file:
            differs = bool(state.lines) and state.lines != shown
            state.whole = True
            if not state.lines or differs:
                replaced = self.tokens(view.path) if differs else 0
                state.lines = shown
                state.version += 1
                return Update(view.path, "external" if differs else "read", True, replaced)
            return Update(view.path, "read", False)
        overlap = {n: t for n, t in shown.items() if n in state.lines}
        differs = any(state.lines[n] != t for n, t in overlap.items())
        new = len(overlap) < len(shown)
        if not differs and not new:
            return Update(view.path, "read", False)
        replaced = self.tokens(view.path) if differs and state.lines else 0
        if differs:
            state.forget()
        state.whole = state.whole and not new  # lines past its end: it was not all of it
        state.lines.update(shown)
        state.version += 1
        return Update(view.path, "external" if differs else "read", True, replaced)

    def _change(self, change: FileChange) -> Update:
        state = self._state(change.path)
        previous = self.tokens(change.path) if state.lines else 0
        state.version += 1
        if change.content is not None:
            state.replace_all(change.content)
            return Update(change.path, "write", True, previous)
        if change.original is not None:
            state.replace_all(change.original)
        if change.replacements:
            self._replace(state, change)
        elif change.lines is not None:
            state.lines = change.lines.apply(state.lines)
        elif change.pattern is not None and state.whole:
            edited = change.pattern.apply(state.text)
            if edited is None:  # not the text Serena edited: what it made is unknown
                state.forget()
                return Update(change.path, "edit", True, previous)
            state.replace_all(edited)
        else:  # a result it does not say, or a pattern over lines not known to be all
            state.forget()
            return Update(change.path, "edit", True, previous)
        return Update(change.path, "edit", True)

    @staticmethod
    def _replace(state: FileState, change: FileChange) -> None:
        """The known lines edited where they are (each range read stays at its lines, the
        ones after an edit move by what it added)."""
        runs = state.runs()
        for replacement in change.replacements:
            at = next((n for n, (_, text) in enumerate(runs) if replacement.old in text), None)
            if at is None:  # not in what is known: the new text is known, somewhere after it
                first, text = runs[-1] if runs else (1, "")
                runs[-1:] = [(first, f"{text}\n{replacement.new}")]
                state.whole = False
            else:
                first, text = runs[at]
                edited = replacement.apply(text)
                moved = edited.count("\n") - text.count("\n")
                runs[at] = (first, edited)
                runs[at + 1 :] = [(n + moved, later) for n, later in runs[at + 1 :]]
        state.lines = {
            n: line for first, text in runs for n, line in enumerate(text.split("\n"), first)
        }
