"""How the model calls for content by id: the client's Read, or the engine's own tool."""

from __future__ import annotations

from typing import Any

from ephemeral_context.context.engine import ContextEngine, Need
from ephemeral_context.context.fetching import (
    CLIENT_READ,
    FETCH_ROOT,
    OWN_TOOL,
    READ_SESSION_FILE,
    FetchRoute,
    route_for,
)
from ephemeral_context.context.kinds import BlockKind

from tests.unit.context.context_helpers import MODEL, SYSTEM, Clock, Driver

CLAUDE_READ = {
    "name": "Read",
    "description": "Reads a file from the local filesystem.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "offset": {"type": "number"}},
        "required": ["file_path"],
    },
}
BASH = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}}}}
PYTHON = "".join(
    f"def handler_{i}(request):\n    value = request.get('k{i}')\n    return value * {i}\n\n\n"
    for i in range(60)
)


def test_a_client_with_a_read_of_a_file_path_fetches_with_it() -> None:
    assert route_for([BASH, CLAUDE_READ]) is CLIENT_READ
    assert route_for([BASH]) is OWN_TOOL
    assert route_for([{"name": "Read", "input_schema": {"type": "object"}}]) is OWN_TOOL
    assert CLIENT_READ.tools([BASH, CLAUDE_READ]) == [BASH, CLAUDE_READ]
    assert OWN_TOOL.tools([BASH]) == [BASH, READ_SESSION_FILE]
    own = {"name": "read_session_file", "input_schema": {"type": "object"}}
    assert OWN_TOOL.tools([own]) == [own]  # never two tools of one name (the API refuses it)


def test_a_path_under_the_root_names_an_id_and_a_definition() -> None:
    asked = CLIENT_READ.tool_input({"id": "ab12cd34", "symbol": "App.run"})
    assert asked == {"file_path": f"{FETCH_ROOT}ab12cd34#App.run"}
    use = {"type": "tool_use", "id": "t", "name": "Read", "input": asked}
    assert CLIENT_READ.asks(use) and not OWN_TOOL.asks(use)
    assert CLIENT_READ.arguments(asked) == {"id": "ab12cd34", "symbol": "App.run"}
    assert CLIENT_READ.arguments({"file_path": f"{FETCH_ROOT}ab12cd34"}) == {"id": "ab12cd34"}
    ranged = {"file_path": f"{FETCH_ROOT}ab12cd34", "offset": 40, "limit": 10}
    assert CLIENT_READ.arguments(ranged) == {"id": "ab12cd34", "first_line": 40, "line_count": 10}
    assert CLIENT_READ.call_text("ab12cd34") == f'Read "{FETCH_ROOT}ab12cd34"'
    assert (
        OWN_TOOL.call_text("ab12cd34", part=True) == "read_session_file('ab12cd34', offset, limit)"
    )
    real = {**use, "input": {"file_path": "/w/app.py"}}
    assert not CLIENT_READ.asks(real)  # the client's own Read goes to the client
    assert CLIENT_READ.undecided({"type": "tool_use", "name": "Read"})  # its input decides
    assert not OWN_TOOL.undecided({"type": "tool_use", "name": "read_session_file"})
    own = {"type": "tool_use", "id": "t", "name": "read_session_file", "input": {"id": "ab"}}
    assert OWN_TOOL.asks(own) and OWN_TOOL.arguments(own["input"]) == {"id": "ab"}


def _evicted_read(engine: ContextEngine, clock: Clock, route: FetchRoute) -> list[dict[str, Any]]:
    """A file read, twenty calls of logs, a cold gap (the read is cut), two more calls:
    the requests as built with `route` and the client's Read as its tools."""
    d = Driver(engine)
    sent: list[dict[str, Any]] = []

    def call() -> None:
        sent.append(engine.build_request("c", MODEL, SYSTEM, [CLAUDE_READ]))

    engine.set_route("c", route)

    engine.add_user_text("c", "fix handler_42")
    call()
    d.read("/app.py", PYTHON)
    for step in range(20):
        call()
        d.bash(f"log {step}\n" * 100)
        clock.advance(10)
    clock.advance(7200)
    call()
    d.bash("more\n" * 50)
    clock.advance(10)
    call()
    return sent


def _notes(request: dict[str, Any], note: str) -> int:
    return sum(b.get("text") == note for m in request["messages"] for b in m["content"])


def test_the_note_comes_once_when_the_conversation_first_hides_content(
    engine: ContextEngine, clock: Clock
) -> None:
    note = CLIENT_READ.note
    assert note is not None
    sent = _evicted_read(engine, clock, CLIENT_READ)
    c = engine.conversation("c")
    assert c.hides_content()
    first = next(i for i, r in enumerate(sent) if _notes(r, note))
    assert first > 0 and all(_notes(r, note) == 0 for r in sent[:first])
    assert all(_notes(r, note) == 1 for r in sent[first:])  # said once, kept where it was
    assert all(r["tools"] == [CLAUDE_READ] for r in sent)  # nothing added to the tools
    noted = next(tb for tb in c.thread if tb.kind is BlockKind.NOTE)
    assert not noted.evicted
    twin_keys = {b.key for b in c.thread.baseline}
    assert hash((noted.key, "user")) not in twin_keys  # the client's requests never carry it


def test_the_engine_tool_goes_in_every_request_and_no_note(
    engine: ContextEngine, clock: Clock
) -> None:
    sent = _evicted_read(engine, clock, OWN_TOOL)
    assert engine.conversation("c").hides_content()
    assert all(r["tools"] == [CLAUDE_READ, READ_SESSION_FILE] for r in sent)
    assert all(b.kind is not BlockKind.NOTE for b in engine.conversation("c").thread)


def test_a_round_trip_calls_the_route_the_conversation_has(
    engine: ContextEngine, clock: Clock
) -> None:
    _evicted_read(engine, clock, CLIENT_READ)
    view = engine.conversation("c").files["file:///app.py"]
    needle = "    value = request.get('k42')\n    return value * 42"
    trip = engine.rehydrate("c", [Need("file:///app.py", (needle,))])
    assert trip is not None and trip.items == 1
    ask = engine.conversation("c").thread[-2]
    assert ask.block["name"] == "Read"
    assert ask.block["input"] == {"file_path": f"{FETCH_ROOT}{view.item_id}#handler_42"}


def test_a_file_as_it_is_now_comes_back_by_a_read_of_the_file(
    engine: ContextEngine, clock: Clock
) -> None:
    """An edit that names a file the model cannot see (no old string to find): through the
    client's Read, the model reads the file itself; with the engine's tool, it asks for the
    current version's id."""
    _evicted_read(engine, clock, CLIENT_READ)
    trip = engine.rehydrate("c", [Need("file:///app.py")])
    assert trip is not None and trip.items == 1
    ask = engine.conversation("c").thread[-2]
    assert (ask.block["name"], ask.block["input"]) == ("Read", {"file_path": "/app.py"})
    current = engine.conversation("c").files["file:///app.py"].item_id
    assert OWN_TOOL.current_input(current, "/app.py") == {"id": current}
