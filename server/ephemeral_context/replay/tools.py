"""Claude Code's tool vocabulary: which tools exist, what their results mean, and what a
bridge's or an MCP server's tools stand for.

The reader, the engine's feed and the `ours` replay ask the same questions of a tool name
(does it change a file, start a sub-agent, load a skill?) and of a file tool's input (which
file?); the answers live here once. A tool of Zed's bridge answers them as the built-in it
stands for (`builtin_tool`), and so do Serena's file tools, whose paths are relative to
the project it activated (`ToolCalls.project_root`); Claude Code's own handling of its
built-ins (the file-unchanged stub, microcompaction) keys on the name as sent.

API:
- `KNOWN_TOOLS`, `TASK_TOOLS`, `SKILL_TOOLS`,
  `BRIDGE_TOOLS`, `BRIDGE_FAILURES`, `SERENA_TOOLS`, `SERENA_FAILURES`: the vocabularies.
- `builtin_tool(name)`, `stands_in(name)`, `serena_tool(name)`,
  `tool_file_path(tool_input, root)`, `replaced_strings(name, tool_input)`,
  `serena_change(name, tool_input, path)`, `text_field(fields, name)`,
  `whole_number(value)`.
- `ToolCalls`: a conversation's tool calls by id and the project root its Serena tools
  resolve against (`activated_root(text)` reads it from an activation's result).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ephemeral_context.replay.flow import FileChange, LineEdit, Pattern, Replacement

KNOWN_TOOLS = frozenset(
    {
        "Read",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "NotebookRead",
        "Bash",
        "BashOutput",
        "KillBash",
        "KillShell",
        "Grep",
        "Glob",
        "LS",
        "Task",
        "TaskOutput",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "Skill",
        "SlashCommand",
        "ExitPlanMode",
        "EnterPlanMode",
        "AskUserQuestion",
        "Agent",
        "ToolSearch",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskUpdate",
        "TaskStop",
        "SendMessage",
        "CronCreate",
        "CronDelete",
        "CronList",
        "ScheduleWakeup",
        "EnterWorktree",
        "ExitWorktree",
        "Workflow",
        "ReportFindings",
    }
)
"""Claude Code's built-in tools (2.0 to 2.1.x); MCP tools (mcp__*) are known by their prefix."""

TASK_TOOLS = frozenset({"Task", "Agent"})
"""The tools that start a sub-agent (Task until 2.1.x renamed it Agent)."""

SKILL_TOOLS = frozenset({"Skill"})
"""The tool whose result is a skill's body."""

BRIDGE_TOOLS = {
    **dict.fromkeys(("mcp__acp__Read", "mcp__acp__read"), "Read"),
    **dict.fromkeys(("mcp__acp__Edit", "mcp__acp__edit"), "Edit"),
    **dict.fromkeys(("mcp__acp__MultiEdit", "mcp__acp__multi-edit"), "MultiEdit"),
    **dict.fromkeys(("mcp__acp__Write", "mcp__acp__write"), "Write"),
}
"""Tools of Zed's bridge to Claude Code (claude-code-acp's in-process `acp` MCP server,
late 2025 to early 2026; lower-case names first) that stand for built-in ones: the model
reads and edits files through them and the editor answers. A bridge Read returns the lines
as they are, from `offset`, with a reminder appended; no bridge tool records a structured
result. Claude Code's own handling of its built-ins (the file-unchanged stub, clearing old
results) does not reach them, so only what a result means takes the built-in's name."""

BRIDGE_FAILURES = (
    "Reading file failed: ",
    "Writing file failed: ",
    "The user has left the building",
)
"""How the bridge's answers begin when the editor did not do what its tool asked (a path it
refused, a file not found, the session gone). Releases from early 2026 mark them
`is_error`; the first ones answered them as plain text, which is no change made."""


SERENA_TOOLS = {"read_file": "Read", "create_text_file": "Write"}
"""Serena's file tools (an MCP server, `mcp__serena__*` or, as Claude Code's plugin,
`mcp__plugin_serena_serena__*`) that stand for built-in ones. Their paths are
`relative_path`s under the project Serena activated; `read_file` returns the lines from
the 0-based `start_line` to the inclusive `end_line` (the whole file by default; a
`limit` or `offset` the model passes is ignored), joined without the last newline, as
`{"result": ...}` JSON (plain text from other releases or clients). Its `replace_content`
in literal mode is an edit (`replaced_strings`); its other edits are changes of the file
they name too (`serena_change`)."""

SERENA_FAILURES = (
    "Error: ",
    "Error executing tool",
    "RuntimeError while",
    "The answer is too long",
)
"""How Serena's answers that carry no result begin (its tools' errors, a failed check, an
answer over `max_answer_chars`): answers all the same, not `is_error` results."""

_ACTIVATED = re.compile(
    r"project with name .+? at (.+?)(?: is activated\.|, language:|\.(?:\s|$))", re.DOTALL
)
"""What Serena's `activate_project` answers, in its releases' words ("The project with name
'x' at ROOT is activated.", "Created and activated a new project with name 'x' at ROOT.",
"Activated existing project with name x at ROOT, language: ..."): the project's root."""


@dataclass
class ToolCalls:
    """A conversation's tool calls so far, and where Serena's relative paths point."""

    uses: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    """Tool calls by id (name, input): a result is read by its call's tool."""
    project_root: str | None = None
    """The root of the project Serena last activated (None: none seen; a transcript's
    reader then takes the working directory)."""

    def branch(self, project_root: str | None) -> ToolCalls:
        """An independent copy for a fork, under the project in effect where it branched
        (the source may have activated another one since)."""
        return ToolCalls(dict(self.uses), project_root)


def serena_tool(name: str) -> str | None:
    """The Serena tool `name` calls (`read_file`, ...), None unless Serena's."""
    server, _, tool = name.rpartition("__")
    return tool if server.startswith("mcp__") and "serena" in server else None


def builtin_tool(name: str) -> str:
    """The built-in tool `name` stands for: itself unless a bridge (BRIDGE_TOOLS) or
    Serena (SERENA_TOOLS) file tool."""
    return BRIDGE_TOOLS.get(name) or SERENA_TOOLS.get(serena_tool(name) or "", name)


def stands_in(name: str) -> bool:
    """Whether `name` is another tool standing for a built-in one (Claude Code's own
    handling of its built-ins does not reach it)."""
    return builtin_tool(name) != name


def replaced_strings(name: str, tool_input: Mapping[str, Any]) -> list[Replacement]:
    """What an edit replaces: an Edit's strings, each of a MultiEdit's edits', a Serena
    `replace_content`'s in literal mode (its `allow_multiple_occurrences` is every one);
    none for any other tool (a Serena regex names no text the model must have seen). A
    string field that holds anything else (a transcript is untrusted) is an empty string."""
    if serena_tool(name) == "replace_content":
        if tool_input.get("mode") != "literal":
            return []
        every = _flag(tool_input.get("allow_multiple_occurrences"))
        return [
            Replacement(
                text_field(tool_input, "needle") or "", text_field(tool_input, "repl") or "", every
            )
        ]
    tool = builtin_tool(name)
    if tool == "Edit":
        edits: list[Any] = [tool_input]
    elif tool == "MultiEdit":
        listed = tool_input.get("edits")
        edits = listed if isinstance(listed, list) else []
    else:
        return []
    return [
        Replacement(
            text_field(e, "old_string") or "",
            text_field(e, "new_string") or "",
            e.get("replace_all") is True,
        )
        for e in edits
        if isinstance(e, Mapping)
    ]


def serena_change(name: str, tool_input: Mapping[str, Any], path: str) -> FileChange | None:
    """The change a Serena edit other than a literal `replace_content` (`replaced_strings`)
    or `create_text_file` (a Write) made to `path`, as its source says
    (oraios/serena src/serena/tools/file_tools.py, symbol_tools.py, code_editor.py); None
    for any other tool. A regex `replace_content` (or an older release's `replace_regex`)
    is a `Pattern`, a line edit a `LineEdit`
    (line numbers that are not 0-based lines in order leave what it did unsaid); a
    definition's body replaced or text put before or after one, a `FileChange` that does
    not say what the file holds (the language server says where a definition ends), and a
    rename one that may have changed other files as well."""
    tool = serena_tool(name)
    every = _flag(tool_input.get("allow_multiple_occurrences"))
    repl = text_field(tool_input, "repl") or ""
    if tool == "replace_content" and tool_input.get("mode") == "regex":
        needle = text_field(tool_input, "needle") or ""
        return FileChange(path, pattern=Pattern(needle, repl, every))
    if tool == "replace_regex":  # its releases before replace_content
        regex = text_field(tool_input, "regex") or ""
        return FileChange(path, pattern=Pattern(regex, repl, every, template=True))
    if tool in ("delete_lines", "replace_lines", "insert_at_line"):
        return FileChange(path, lines=_line_edit(tool, tool_input))
    if tool == "replace_symbol_body":
        return FileChange(path, symbol=text_field(tool_input, "name_path"))
    if tool in ("insert_after_symbol", "insert_before_symbol", "rename_symbol"):
        return FileChange(path, elsewhere=tool == "rename_symbol")
    return None


def _line_edit(tool: str, tool_input: Mapping[str, Any]) -> LineEdit | None:
    """What a Serena line edit did: `delete_lines` removes its 0-based `start_line` to
    `end_line`, inclusive; `insert_at_line` puts `content`, a newline added when it has
    none, before its 0-based `line`; `replace_lines` does both at `start_line`. None when
    the numbers are not such lines."""
    if tool == "insert_at_line":
        start, removed = whole_number(tool_input.get("line")), 0
    else:
        start = whole_number(tool_input.get("start_line"))
        end = whole_number(tool_input.get("end_line"))
        removed = end - start + 1 if start is not None and end is not None else -1
    if start is None or start < 0 or removed < 0:
        return None
    if tool == "delete_lines":
        return LineEdit(start + 1, removed)
    content = text_field(tool_input, "content") or ""
    return LineEdit(start + 1, removed, tuple(content.removesuffix("\n").split("\n")))


_DIGITS = re.compile(r"\s*([0-9]{1,18})\s*")
"""A whole number written as text: ASCII digits only (`str.isdigit` takes "²", which `int`
refuses), and no more than fit a line number (`int` refuses 4,300 digits and more)."""


def whole_number(value: Any) -> int | None:
    """A whole-number argument as pydantic reads it (an int, or a string of digits); None
    for anything else a transcript may hold there."""
    if isinstance(value, str):
        digits = _DIGITS.fullmatch(value)
        return int(digits[1]) if digits else None
    return value if type(value) is int else None


def text_field(fields: Mapping[str, Any], name: str) -> str | None:
    """A recorded field's text; None when absent or not text (a transcript is untrusted)."""
    value = fields.get(name)
    return value if isinstance(value, str) else None


_TRUE_WORDS = frozenset({"true", "t", "yes", "y", "on", "1"})
"""The strings pydantic's lax mode takes for True (Serena's arguments are validated so)."""


def _flag(value: Any) -> bool:
    """A boolean argument as pydantic reads it: True, 1, or one of its words for true."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_WORDS
    return value is True or (type(value) in (int, float) and value == 1)


def activated_root(text: str) -> str | None:
    """The project root a Serena `activate_project` result names, if it does."""
    found = _ACTIVATED.search(text)
    return found.group(1) if found else None


_WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
"""A drive letter's root (`C:\\`, `C:/`) or a UNC share (`\\\\server`)."""


def tool_file_path(tool_input: Mapping[str, Any], root: str | None = None) -> str:
    """The file a file tool's input names (`abs_path` in the bridge's first releases; a
    Serena `relative_path` under `root`, left relative when no root is known, joined as
    the root's system joins paths: Windows roots by Windows rules)."""
    path = tool_input.get("file_path") or tool_input.get("abs_path")
    if path:
        return str(path)
    relative = str(tool_input.get("relative_path") or "")
    if not relative:
        return ""
    if not root:
        return posixpath.normpath(relative)
    if _WINDOWS_ROOT.match(root):
        return ntpath.normpath(ntpath.join(root, relative))
    return posixpath.normpath(posixpath.join(root, relative))
