"""What a sub-agent is told: the `delegate` tool, and a brief that carries ids, not content.

The main agent may hand a self-contained task to a sub-agent (model/agent.py runs it as a
nested run of the same loop, in a new conversation of the same context engine, with the
read-only tools only). Everything the main agent has seen is already in the store, so the
sub-agent's first message lists those file versions as `[[file:<id>]]` references with a
one-line synopsis, and any large chunk of a seen file that the main agent pasted into the
task is replaced by its reference too. The sub-agent hydrates what it needs with
read_session_file; nothing is sent twice.

API:
- `DELEGATE`, `DELEGATE_TOOL`, `SUBAGENT_SYSTEM`, `SUBAGENT_TOOLS`: the tool and what a
  sub-agent gets.
- `brief(...)`: the sub-agent's first message.
- `reference_pasted(...)`: pasted chunks of seen files replaced by references.
- `seen_files(...)`, `SeenFile`, `synopsis_line(...)`: the file versions a conversation was
  shown.
- `workspace_label(...)`: the short path the tools use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ephemeral_context.context.blocks import label_of
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import split_lines, uri_to_path
from ephemeral_context.model.secrets import Workspace
from ephemeral_context.syntax.outline import outline_text
from ephemeral_context.syntax.queries import SECTION
from ephemeral_context.tokens import estimate_tokens

DELEGATE = "delegate"
SUBAGENT_TOOLS = frozenset({"read_file", "read_symbol", "outline", "read_session_file", "search"})
"""Read-only: a sub-agent investigates and answers; edits stay with the main agent."""

PASTE_MIN_LINES = 20
"""A pasted run of at least this many lines of a seen file becomes its reference."""

BRIEF_MAX_FILES = 50
SYNOPSIS_NAMES = 6

SUBAGENT_SYSTEM = (
    "You are a sub-agent of a coding assistant. You get one task and read-only tools; "
    "investigate, then answer with a short, complete report: that report is all the main "
    "agent will see. Content the main agent has seen is listed as references such as "
    "[[file:3f9a2c10]]: read_session_file hydrates any id (pass offset and limit, in "
    "characters, to read a part). Prefer read_symbol and outline to whole files."
)

DELEGATE_TOOL: dict[str, Any] = {
    "name": DELEGATE,
    "description": (
        "Hand a self-contained investigation to a sub-agent with read-only tools (read, "
        "search, outline, read_session_file) and a small step budget; its final report "
        "comes back as this tool's result. It is told the ids of the files you have seen, "
        "so refer to them by path or [[file:<id>]] instead of pasting their content."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "what to find out or check, and what the report must say",
            }
        },
        "required": ["task"],
    },
}


@dataclass(frozen=True)
class SeenFile:
    """One file version a conversation has been shown, by its store id."""

    item_id: str
    label: str
    """The path as the model's tools name it."""
    text: str
    start_line: int = 1
    whole: bool = True

    @property
    def lines(self) -> int:
        return len(split_lines(self.text))


def workspace_label(workspace: Workspace) -> Callable[[str], str]:
    """URI -> the short path the tools use (relative to its workspace folder)."""

    def label(uri: str) -> str:
        path = uri_to_path(uri)
        return label_of(uri) if path is None else workspace.relative(path)

    return label


def seen_files(
    engine: ContextEngine, conversation: str, label: Callable[[str], str] = label_of
) -> list[SeenFile]:
    """The file versions `conversation` has been shown (each with the id it was shown
    under, hydratable whether or not it is still in the context), most recent first."""
    views = engine.file_views(conversation)
    ordered = sorted(views, key=lambda view: view.call, reverse=True)
    return [SeenFile(v.item_id, label(v.uri), v.text, v.start_line, v.whole) for v in ordered]


def synopsis_line(seen: SeenFile) -> str:
    """`[[file:<id>]] path — N lines, ~T tokens; defines a, b, c (+k)` on one line."""
    span = (
        f"{seen.lines} lines"
        if seen.whole
        else f"lines {seen.start_line}-{seen.start_line + max(seen.lines, 1) - 1}"
    )
    line = f"[[file:{seen.item_id}]] {seen.label} — {span}, ~{estimate_tokens(seen.text)} tokens"
    symbols = outline_text(seen.text, seen.label).symbols
    names = [s.qualname for s in symbols if s.depth == 0 and s.kind != SECTION]
    if names:
        more = f" (+{len(names) - SYNOPSIS_NAMES})" if len(names) > SYNOPSIS_NAMES else ""
        line += f"; defines {', '.join(names[:SYNOPSIS_NAMES])}{more}"
    return line


def reference_pasted(
    task: str, seen: Sequence[SeenFile], min_lines: int = PASTE_MIN_LINES
) -> tuple[str, int]:
    """`task` with every run of >= `min_lines` lines copied from a seen file replaced by
    that file's reference and the character range read_session_file takes; returns the
    new text and how many lines were replaced. Lines compare without trailing whitespace;
    the longest run wins where several files match."""
    if min_lines < 1:
        raise ValueError("min_lines must be at least 1")
    windows: dict[tuple[str, ...], list[tuple[SeenFile, int]]] = {}
    file_lines: dict[str, list[str]] = {}
    for file in seen:
        lines = [line.rstrip() for line in split_lines(file.text)]
        file_lines[file.item_id] = lines
        for start in range(len(lines) - min_lines + 1):
            window = tuple(lines[start : start + min_lines])
            if any(window):
                windows.setdefault(window, []).append((file, start))
    raw = split_lines(task)
    stripped = [line.rstrip() for line in raw]
    out: list[str] = []
    replaced = 0
    i = 0
    while i < len(raw):
        best: tuple[int, SeenFile, int] | None = None
        for file, start in windows.get(tuple(stripped[i : i + min_lines]), ()):
            lines = file_lines[file.item_id]
            n = min_lines
            while (
                i + n < len(raw) and start + n < len(lines) and stripped[i + n] == lines[start + n]
            ):
                n += 1
            if best is None or n > best[0]:
                best = (n, file, start)
        if best is None:
            out.append(raw[i])
            i += 1
            continue
        n, file, start = best
        out.append(_reference(file, start, n) + ("\n" if raw[i + n - 1].endswith("\n") else ""))
        replaced += n
        i += n
    return "".join(out), replaced


def _reference(file: SeenFile, start: int, count: int) -> str:
    """The reference standing for lines start..start+count (0-based) of `file`."""
    kept = split_lines(file.text)
    offset = sum(len(line) for line in kept[:start])
    limit = sum(len(line) for line in kept[start : start + count])
    first = file.start_line + start
    return (
        f"[[file:{file.item_id}]] {file.label} lines {first}-{first + count - 1} "
        f"(pasted text replaced by its reference: "
        f"read_session_file('{file.item_id}', offset={offset}, limit={limit}))"
    )


def brief(task: str, seen: Sequence[SeenFile]) -> str:
    """The sub-agent's first message: the task (pasted chunks as references), then the
    references of what the main agent has seen."""
    text, _ = reference_pasted(task, seen)
    listed = [synopsis_line(file) for file in seen[:BRIEF_MAX_FILES]]
    if len(seen) > BRIEF_MAX_FILES:
        listed.append(f"(and {len(seen) - BRIEF_MAX_FILES} more, older)")
    if not listed:
        return f"Task from the main agent:\n{text}"
    return (
        f"Task from the main agent:\n{text}\n\n"
        "Files the main agent has seen (read_session_file('<id>') gives the version it saw; "
        "read_file gives the current one):\n" + "\n".join(f"- {line}" for line in listed)
    )
