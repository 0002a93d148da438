"""Claude Code's tool vocabulary: which tools exist, and what a bridge's or an MCP
server's tools stand for.

The reader, the context engine and the `ours` replay ask the same questions of a tool name
(does it change a file, start a sub-agent, load a skill?) and of a file tool's input (which
file?); the answers live here once. A tool of Zed's bridge answers them as the built-in it
stands for (`builtin_tool`), and so do Serena's file tools, whose paths are relative to the
project it activated (replay/tools.py, `ToolCalls.project_root`); Claude Code's own
handling of its built-ins (the file-unchanged stub, microcompaction) keys on the name as
sent. What an edit through them changes is the replay's (replay/tools.py).

API:
- `KNOWN_TOOLS`, `TASK_TOOLS`, `SKILL_TOOLS`,
  `BRIDGE_TOOLS`, `BRIDGE_FAILURES`, `SERENA_TOOLS`, `SERENA_FAILURES`: the vocabularies.
- `builtin_tool(name)`, `stands_in(name)`, `serena_tool(name)`,
  `tool_file_path(tool_input, root)`, `client_path(path)`.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Mapping
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any

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


def client_path(path: str) -> PurePath:
    """A path as the client's system reads it: a Windows root's by Windows rules (Claude Code
    on Windows may reach a gateway in WSL, whose own rules would take it for one name)."""
    return PureWindowsPath(path) if _WINDOWS_ROOT.match(path) else PurePosixPath(path)
