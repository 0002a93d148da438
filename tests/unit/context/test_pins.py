"""Pins are the user's, the status estimates the next request, and the Context view shows
one row per file: what an editor client relies on (docs/protocol.md)."""

from __future__ import annotations

from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput

from tests.unit.context.context_helpers import MODEL, SYSTEM, Driver, source


def test_context_tokens_estimate_the_next_request_and_follow_the_pins(
    engine: ContextEngine,
) -> None:
    assert engine.status().context_tokens == 0
    pinned = engine.pin("file:///pinned.py", source(20, "p"))
    before_any_call = engine.status().context_tokens
    assert before_any_call == pinned.tokens > 0  # no conversation yet: the pin alone

    d = Driver(engine)
    engine.add_user_text("c", "go")
    estimate = engine.status().context_tokens
    d.call()
    built = engine.last_request("c")
    assert built is not None
    # the estimate counts the pinned file's content, the request its one-line header too
    assert 0 <= built.total_tokens - estimate - built.head_tokens < 20
    assert engine.status().context_tokens == built.total_tokens

    # a newer version of the pinned file changes the estimate before anything is sent
    engine.pin("file:///pinned.py", source(40, "p"))
    grown = engine.status().context_tokens
    assert grown > built.total_tokens


def test_a_pin_made_before_a_conversation_is_shown_in_it_as_it_is_then(
    engine: ContextEngine,
) -> None:
    engine.pin("file:///pinned.py", source(3, "old_"))
    engine.pin("file:///pinned.py", source(3, "new_"))  # the buffer changed: the pin follows
    Driver(engine, "first").call()
    first = repr(engine.conversation("first").thread)
    assert "def new_f1" in first and "def old_f1" not in first
    assert "first" in engine.conversations() and "default" not in engine.conversations()

    engine.pin("file:///pinned.py", source(3, "newer_"))
    second = Driver(engine, "second")
    engine.add_user_text("second", "go")
    second.call()
    Driver(engine, "first").call()  # the older conversation gets the new version too
    assert "def newer_f1" in repr(second.requests[-1])
    assert "def newer_f1" in repr(engine.build_request("first", MODEL, SYSTEM))


def test_one_row_per_file_and_the_pin_survives_the_models_edit(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    engine.pin("file:///app.py", source(5, "a"))
    d.call()
    d.read("/app.py", source(5, "a"))
    tool_id = d.tool("edit_file", {"path": "/app.py", "old": "af1", "new": "af1b"})
    edited = source(5, "a").replace("af1", "af1b")
    engine.add_tool_result(
        "c",
        ToolOutput(tool_id, "edited", kind=BlockKind.EDIT, uri="file:///app.py", content=edited),
    )
    d.call()
    rows = [i for i in engine.items() if i.uri == "file:///app.py"]
    assert len(rows) == 1
    assert rows[0].pinned and rows[0].state == "full"
    assert engine.status().items == len(engine.items())


def test_a_dropped_file_leaves_the_items_and_stays_hydratable(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.read("/gone.py", source(5, "g"))
    d.call()
    item_id = next(i.id for i in engine.items() if i.uri == "file:///gone.py")
    assert engine.drop("file:///gone.py") == [item_id]
    assert all(i.uri != "file:///gone.py" for i in engine.items())
    assert "def gf1" in engine.read_session_file(item_id).text
    assert "def gf1" not in repr(engine.build_request("c", MODEL, SYSTEM))


def test_pinning_an_earlier_version_again_makes_it_full(engine: ContextEngine) -> None:
    """The editor's undo brings back text the ledger had superseded: the pin shows it."""
    original = source(5, "u")
    first = engine.pin("file:///undo.py", original)
    engine.pin("file:///undo.py", original.replace("uf1", "uf1b"))
    again = engine.pin("file:///undo.py", original)
    assert (again.id, again.state, again.pinned) == (first.id, "full", True)
    assert [i.state for i in engine.items()] == ["full"]
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    assert "def uf1(x)" in repr(d.requests[-1]) and "uf1b" not in repr(d.requests[-1])
