"""What the model's tool calls did, as far as the replay follows them: what an edit
replaces (Edit, MultiEdit, the bridge's, Serena's), the change a Serena edit made, and the
project root Serena's relative paths resolve under. The names themselves, and which tools
stand for which built-in, are claude_tools.py's.

API:
- `replaced_strings(name, tool_input)`, `serena_change(name, tool_input, path)`,
  `text_field(fields, name)`, `whole_number(value)`.
- `ToolCalls`: a conversation's tool calls by id and the project root its Serena tools
  resolve against (`activated_root(text)` reads it from an activation's result).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ephemeral_context.claude_tools import builtin_tool, serena_tool
from ephemeral_context.replay.flow import FileChange, LineEdit, Pattern, Replacement

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


_NUMBER = re.compile(r"\s*\+?([0-9](?:_?[0-9]){0,39})(?:\.0*)?\s*")
"""A whole number written as text, as pydantic's lax mode reads one ("3", " +3 ", "1_000",
"3.0"): ASCII digits only (`str.isdigit` takes "²", which `int` refuses), and not so many
that `int` refuses them (4,300 digits)."""

LINE_LIMIT = 10**18
"""Line numbers are below it (a larger one, which `int` can print only up to 4,300 digits,
names no line)."""


def whole_number(value: Any) -> int | None:
    """A whole-number argument as pydantic's lax mode reads it (Serena's are validated so:
    an int, a bool, a float with no fraction, or such a number written as text), if it can
    be a line number; None for anything else a transcript may hold there."""
    number: int | None = None
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        number = int(value)  # a bool too: True is 1
    elif isinstance(value, str) and (digits := _NUMBER.fullmatch(value)):
        number = int(digits[1])
    return number if number is not None and 0 <= number < LINE_LIMIT else None


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
