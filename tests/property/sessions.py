"""Synthetic Claude Code sessions for the property tests, written as Claude Code writes them.

A hypothesis strategy draws a plan (a list of steps) and `write_session` turns it into a
session JSONL through tests/unit/replay/builder.py, so the transcript reader, the replay and
the engine all run as they do on real files. Steps: a prompt, a Read of a file (whole or a
range, of any size, the file as the session's own edits left it), an Edit of a line the
model read, a Write, a tool output of any size (Bash), parallel tool calls, an idle gap past
the cache TTL, a clock that goes backwards, a rewind (a prompt re-sent from an earlier point
of the chain, as an edited message or Claude Code's rewind does) and a sub-agent (a Task whose
sidechain runs its own reads before the Task result comes back).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.unit.replay.builder import Transcript, cat_n, text, tool_use

MODELS = ("claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-8", "claude-haiku-4-5")
LINE_CHARS = 40
"""Characters of one generated file or output line (with its newline)."""


@dataclass(frozen=True)
class Step:
    """One thing that happens in the session; `size` is in lines, `at` picks a file,
    a line or an earlier prompt (taken modulo what exists), `seconds` moves the clock."""

    kind: str
    size: int = 1
    at: int = 0
    seconds: float = 5.0
    fan: int = 1


READ_LINES = 2000
"""The most lines a Read returns (Claude Code's default limit)."""
OUTPUT_LINES = 750
"""About 30,000 characters, where Claude Code truncates a Bash output."""


def _sizes(most: int) -> st.SearchStrategy[int]:
    """Mostly small, sometimes up to `most` lines (a whole large file: ~20K tokens)."""
    return st.one_of(st.integers(1, 60), st.integers(1, 60), st.integers(60, most), st.just(most))


def steps() -> st.SearchStrategy[Step]:
    seconds = st.one_of(st.floats(0.5, 60.0), st.floats(301.0, 4000.0))
    rewinds = [  # twice as likely as the others: every branch is a fork to check
        st.builds(Step, st.just("rewind"), st.integers(1, 40), st.integers(0, 99)) for _ in range(2)
    ]
    return st.one_of(
        st.builds(Step, st.just("prompt"), st.integers(1, 80), seconds=seconds),
        st.builds(Step, st.just("read"), _sizes(READ_LINES), st.integers(0, 9), seconds=seconds),
        st.builds(
            Step, st.just("read_range"), _sizes(READ_LINES), st.integers(0, 9), seconds=seconds
        ),
        st.builds(Step, st.just("edit"), st.just(1), st.integers(0, 999), seconds=seconds),
        st.builds(Step, st.just("write"), _sizes(READ_LINES), st.integers(0, 9), seconds=seconds),
        st.builds(Step, st.just("bash"), _sizes(OUTPUT_LINES), seconds=seconds),
        st.builds(
            Step,
            st.just("parallel"),
            _sizes(OUTPUT_LINES),
            st.integers(0, 9),
            fan=st.integers(2, 4),
        ),
        st.builds(Step, st.just("clock_back"), seconds=st.floats(1.0, 7200.0)),
        *rewinds,
        st.builds(
            Step, st.just("subagent"), _sizes(READ_LINES), st.integers(0, 9), fan=st.integers(1, 4)
        ),
    )


@dataclass(frozen=True)
class Plan:
    model: str
    steps: tuple[Step, ...]


def plans(max_steps: int = 40) -> st.SearchStrategy[Plan]:
    return st.builds(
        Plan,
        st.sampled_from(MODELS),
        st.lists(steps(), min_size=1, max_size=max_steps).map(tuple),
    )


def _lines(tag: str, n: int) -> list[str]:
    """`n` distinct lines of about LINE_CHARS characters."""
    return [f"{tag} line {i:05d} " + "x" * (LINE_CHARS - len(tag) - 17) for i in range(n)]


class _Writer:
    """Turns a plan into transcript lines, keeping the files as the session changed them."""

    def __init__(self, plan: Plan) -> None:
        self.t = Transcript(model=plan.model)
        self.files: dict[int, list[str]] = {}
        self.prompts: list[str] = []
        """The prompts sent so far."""
        self.turn_ends: list[str | None] = []
        """The last line of each answered turn (a rewind sends a new prompt from one)."""
        self._ids = itertools.count()
        self.pending = False
        """A prompt was written and not answered yet."""

    def path(self, f: int) -> str:
        return f"/work/project/src/module_{f}.py"

    def file(self, f: int) -> list[str]:
        return self.files.setdefault(f, _lines(f"file{f}", 200 + 37 * f))

    def tool_id(self) -> str:
        return f"toolu_{next(self._ids):06d}"

    def prompt(self, words: int) -> None:
        self.prompts.append(" ".join(f"please{len(self.prompts)}-{i}" for i in range(words)))
        self.t.user(self.prompts[-1])
        self.pending = True

    def answer(self) -> None:
        """Close a turn the model still owes (every request ends with a user message)."""
        if self.pending:
            self.t.assistant([text(f"done {len(self.prompts)}")])
            self.turn_ends.append(self.t.parent)
            self.pending = False

    def call(self, uses: list[tuple[dict[str, Any], str, Any]]) -> None:
        """One response with these tool calls, then their results (one line each)."""
        if not self.prompts:
            self.prompt(3)
        self.t.assistant([use for use, _, _ in uses])
        for use, result, structured in uses:
            self.t.tool_result(use["id"], result, structured)
        self.pending = True

    def read(self, f: int, size: int, whole: bool) -> tuple[dict[str, Any], str, Any]:
        lines = self.file(f)
        if whole or size >= len(lines):
            start, shown = 1, lines
            if size > len(lines):  # a larger file: it grows to `size` lines
                lines += _lines(f"file{f}-more", size - len(lines))
                shown = lines
        else:
            start = 1 + (size * 7) % (len(lines) - size + 1)
            shown = lines[start - 1 : start - 1 + size]
        shown = shown[:READ_LINES]
        content = "\n".join(shown)
        tool_input: dict[str, str | int] = {"file_path": self.path(f)}
        if start > 1 or len(shown) < len(lines):
            tool_input |= {"offset": start, "limit": len(shown)}
        structured = {
            "type": "text",
            "file": {
                "filePath": self.path(f),
                "content": content,
                "numLines": len(shown),
                "startLine": start,
                "totalLines": len(lines),
            },
        }
        return tool_use(self.tool_id(), "Read", **tool_input), cat_n(content, start), structured

    def edit(self, at: int) -> tuple[dict[str, Any], str, Any]:
        f = at % max(1, len(self.files)) if self.files else 0
        lines = self.file(f)
        row = at % len(lines)
        old, new = lines[row], lines[row].replace("line", "LINE", 1) + " edited"
        original = "\n".join(lines)
        lines[row] = new
        use = tool_use(
            self.tool_id(), "Edit", file_path=self.path(f), old_string=old, new_string=new
        )
        structured = {"filePath": self.path(f), "originalFile": original}
        return use, f"The file {self.path(f)} has been updated.", structured

    def write(self, f: int, size: int) -> tuple[dict[str, Any], str, Any]:
        lines = self.files[f] = _lines(f"file{f}-written{next(self._ids)}", size)
        use = tool_use(self.tool_id(), "Write", file_path=self.path(f), content="\n".join(lines))
        return use, f"File created successfully at: {self.path(f)}", {"type": "create"}

    def bash(self, size: int) -> tuple[dict[str, Any], str, Any]:
        n = next(self._ids)
        use = tool_use(self.tool_id(), "Bash", command=f"make test-{n}")
        return use, "\n".join(_lines(f"out{n}", size)), None

    def subagent(self, f: int, size: int, reads: int) -> None:
        """A Task: its sidechain (own root, own prefix) runs, then its result comes back."""
        if not self.prompts:
            self.prompt(3)
        task = f"investigate module {f} ({next(self._ids)})"
        use = tool_use(self.tool_id(), "Task", description="look", prompt=task)
        self.t.assistant([use])
        main = self.t.parent
        self.t.sidechain, self.t.parent = True, None
        self.t.user(task)
        for i in range(reads):
            read, result, structured = self.read(f + i, size, whole=i % 2 == 0)
            self.t.assistant([read])
            self.t.tool_result(read["id"], result, structured)
        self.t.assistant([text(f"report on module {f}")])
        self.t.sidechain, self.t.parent = False, main
        self.t.tool_result(use["id"], f"report on module {f}")
        self.pending = True

    def rewind(self, back: int, words: int) -> None:
        """A new prompt from the end of an earlier turn (a new branch of the chain)."""
        if not self.prompts:
            return self.prompt(words)
        self.answer()
        self.t.parent = self.turn_ends[back % len(self.turn_ends)]
        self.prompt(words)

    def step(self, step: Step) -> None:
        kind = step.kind
        if kind == "clock_back":
            self.t.wait(-step.seconds)
            return
        self.t.wait(step.seconds)
        if kind == "prompt":
            self.answer()
            self.prompt(step.size)
        elif kind in ("read", "read_range"):
            self.call([self.read(step.at, step.size, whole=kind == "read")])
        elif kind == "edit":
            self.call([self.edit(step.at)])
        elif kind == "write":
            self.call([self.write(step.at, step.size)])
        elif kind == "bash":
            self.call([self.bash(step.size)])
        elif kind == "parallel":
            self.call(
                [
                    self.read(step.at + i, step.size, whole=True) if i % 2 else self.bash(step.size)
                    for i in range(step.fan)
                ]
            )
        elif kind == "rewind":
            self.rewind(step.at, step.size)
        elif kind == "subagent":
            self.subagent(step.at, step.size, step.fan)
        else:
            raise ValueError(kind)


def write_session(plan: Plan, path: Path) -> Path:
    """The plan as a Claude Code session file at `path`; every request gets its answer."""
    writer = _Writer(plan)
    for step in plan.steps:
        writer.step(step)
    if not writer.prompts:
        writer.prompt(3)
    writer.answer()
    return writer.t.write(path)
