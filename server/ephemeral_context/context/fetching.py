"""How the model calls for content it can no longer see: the engine's tool, or the client's Read.

Evicted content leaves a placeholder that names an id (`[[kind:id]]`); a file demoted in the
segment shows its synopsis and id. The model brings either back with one tool call, which a
gateway answers itself (gateway/core.py) and the replay charges as a round trip
(context/rehydration.py). A `FetchRoute` says which call that is.

- `CLIENT_READ`: a client whose tools include a Read of a `file_path` (Claude Code's) has the
  tool already. A path under `FETCH_ROOT` names the id, `#Name` one definition of a file's
  content; a note, said once in a conversation when it first hides something, tells the
  model so. Nothing is added to the client's tools: a conversation that never hides
  anything sends what the client sent, and a cache the client warmed outside the gateway
  still holds its head.
- `OWN_TOOL`: any other client gets `read_session_file` after its tools, in every request
  (it must be there before the first cut: adding a tool later rewrites the whole prompt).

API:
- `FetchRoute`: `tools(client_tools)`, `note`, `asks(block)`, `undecided(block)`,
  `arguments(tool_input)`, `error_text(text)`, `tool_input(arguments)`,
  `current_input(item_id, path)`, `call_text(item_id, part)`.
- `route_for(client_tools)`, `CLIENT_READ`, `OWN_TOOL`, `FETCH_ROOT`.
- `READ_SESSION_FILE`: the schema of the engine's own tool (model/tools.py lists it too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FETCH_ROOT = "/.ectx/"
"""The folder of no file system whose paths name stored content by id."""

READ_SESSION_FILE: dict[str, Any] = {
    "name": "read_session_file",
    "description": (
        "Read content shown earlier in this session by its id (the [[kind:id]] in a "
        "reference). offset and limit are in characters; symbol reads one definition "
        "of a file's content by name, e.g. 'App.run'."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1},
            "symbol": {"type": "string"},
        },
        "required": ["id"],
    },
}


_READ_LINES = (("offset", "first_line"), ("limit", "line_count"))
"""A Read's arguments, in lines, and `read_session_file`'s that take them."""


@dataclass(frozen=True)
class FetchRoute:
    """One way for the model to call for content by id."""

    tool: str
    """The tool the model calls."""
    schema: Mapping[str, Any] | None
    """The tool the engine adds after the client's (None: the client has it)."""
    note: str | None
    """Said once in a conversation, when it first hides content (None: the tool's own
    description says it)."""

    def tools(self, client_tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The tools a request carries: the client's, then the engine's own, unless the
        client has one so named (its calls are then taken for the engine's)."""
        if self.schema is None or any(t.get("name") == self.tool for t in client_tools):
            return list(client_tools)
        return [*client_tools, self.schema]

    def asks(self, block: Mapping[str, Any]) -> bool:
        """This tool_use block calls for content by id (the client never sees it)."""
        if block.get("type") != "tool_use" or block.get("name") != self.tool:
            return False
        if self.schema is not None:
            return True
        tool_input = block.get("input")
        path = tool_input.get("file_path") if isinstance(tool_input, Mapping) else None
        return isinstance(path, str) and path.startswith(FETCH_ROOT)

    def undecided(self, block: Mapping[str, Any]) -> bool:
        """A call of the client's tool whose input, streamed after its start, decides
        whether it is one (the gateway holds it back until then)."""
        return (
            self.schema is None
            and block.get("type") == "tool_use"
            and block.get("name") == self.tool
        )

    def arguments(self, tool_input: Any) -> Any:
        """A call's input as `read_session_file` takes it (a malformed one as it came, for
        the tool to refuse); a Read's `offset` and `limit`, in lines, as `first_line` and
        `line_count`. Claude Code's Read takes offset 0 for the first line, as 1 (2.1.332):
        a call the model makes of it must not fail here alone."""
        if self.schema is not None or not isinstance(tool_input, Mapping):
            return tool_input
        item_id, _, symbol = str(tool_input.get("file_path", ""))[len(FETCH_ROOT) :].partition("#")
        arguments: dict[str, Any] = {"id": item_id}
        if symbol:
            arguments["symbol"] = symbol
        for read, name in _READ_LINES:
            if read in tool_input:
                arguments[name] = tool_input[read]
        if arguments.get("first_line") == 0:
            arguments["first_line"] = 1
        return arguments

    def error_text(self, text: str) -> str:
        """`read_session_file`'s error in the words of the call the model made: a Read names
        neither that tool, which the model does not have (it would call it next), nor its
        arguments."""
        if self.schema is not None:
            return text
        text = text.removeprefix(f"{READ_SESSION_FILE['name']}: ")
        for read, name in _READ_LINES:
            text = text.replace(f"'{name}'", f"'{read}'")
        return text

    def call_text(self, item_id: str, part: bool = False) -> str:
        """How to call for `item_id` (with `part`: for a part of it), as a placeholder or a
        note says it."""
        if self.schema is not None:
            return (
                f"{self.tool}('{item_id}', offset, limit)" if part else f"{self.tool}('{item_id}')"
            )
        path = f'{self.tool} "{FETCH_ROOT}{item_id}"'
        return f"{path} with offset and limit (lines)" if part else path

    def current_input(self, item_id: str, path: str) -> dict[str, Any]:
        """The input of a call for a file as it is now (`item_id` its current version):
        the client's Read of the file itself, or the engine's tool by that id."""
        return {"id": item_id} if self.schema is not None else {"file_path": path}

    def tool_input(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The input of a call for `read_session_file`'s `arguments` (id, symbol)."""
        if self.schema is not None:
            return dict(arguments)
        symbol = arguments.get("symbol")
        return {"file_path": f"{FETCH_ROOT}{arguments['id']}" + (f"#{symbol}" if symbol else "")}


OWN_TOOL = FetchRoute(READ_SESSION_FILE["name"], READ_SESSION_FILE, None)
CLIENT_READ = FetchRoute(
    "Read",
    None,
    (
        f"Note: content shown as [[kind:id]] is read back with the Read tool at file_path "
        f'"{FETCH_ROOT}<id>" (add "#Name" for one definition of a file).'
    ),
)


def route_for(client_tools: Sequence[Mapping[str, Any]]) -> FetchRoute:
    """The client's Read when it has one that takes a `file_path`, else the engine's tool."""
    for tool in client_tools:
        schema = tool.get("input_schema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if tool.get("name") == "Read" and isinstance(properties, Mapping):
            return CLIENT_READ if "file_path" in properties else OWN_TOOL
    return OWN_TOOL
