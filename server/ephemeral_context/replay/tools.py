"""Claude Code's tool vocabulary: which tools exist, what their results mean, and what a
bridge's tools stand for.

The reader, the engine's feed and the `ours` replay ask the same questions of a tool name
(does it change a file, start a sub-agent, load a skill?) and of a file tool's input (which
file?); the answers live here once. A tool of Zed's bridge answers them as the built-in it
stands for (`builtin_tool`); Claude Code's own handling of its built-ins (the
file-unchanged stub, microcompaction) keys on the name as sent.

API:
- `KNOWN_TOOLS`, `TASK_TOOLS`, `FILE_CHANGE_TOOLS`, `EDIT_TOOLS`, `SKILL_TOOLS`,
  `BRIDGE_TOOLS`: the vocabularies.
- `builtin_tool(name)`, `tool_file_path(tool_input)`.
"""

from __future__ import annotations

from collections.abc import Mapping
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

FILE_CHANGE_TOOLS = frozenset({"Edit", "MultiEdit", "Write"})
"""The tools whose results are the model's own changes to a file."""

EDIT_TOOLS = frozenset({"Edit", "MultiEdit"})
"""The changes that replace strings the model must see (old_string)."""

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


def builtin_tool(name: str) -> str:
    """The built-in tool `name` stands for: itself unless a bridge tool (BRIDGE_TOOLS)."""
    return BRIDGE_TOOLS.get(name, name)


def tool_file_path(tool_input: Mapping[str, Any]) -> str:
    """The file a file tool's input names (`abs_path` in the bridge's first releases)."""
    return str(tool_input.get("file_path") or tool_input.get("abs_path") or "")
