"""`ContextEngine.fork`: a branch continues from the shared prefix as it was sent.

The replay-wide property (tests/property) checks forks on whole sessions; these tests pin
down what a fork keeps and what it leaves behind.
"""

from __future__ import annotations

import pytest
from ephemeral_context.context.engine import BlockKind, ContextEngine, EngineConfig, ToolOutput
from ephemeral_context.context.rehydration import Need
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import Clock, Driver, source


def _messages(kwargs: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    """Every content block with its role, breakpoints left out (they move)."""
    messages = kwargs["messages"]
    assert isinstance(messages, list)
    return [
        (m["role"], {k: v for k, v in b.items() if k != "cache_control"})
        for m in messages
        for b in m["content"]
    ]


def test_a_fork_starts_as_the_shared_prefix_was_last_sent(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine, "main")
    engine.add_user_text("main", "run the tests")
    for step in range(10):
        d.call()
        d.bash(f"FAILED test_{step}\n" * 300)
        clock.advance(20)
    d.call()
    engine.add_assistant_content("main", [{"type": "text", "text": "read it"}])
    at = engine.position("main")
    clock.advance(7200)  # cold: the consumed outputs leave as placeholders
    engine.add_user_text("main", "and then?")
    d.call()
    sent = _messages(d.requests[-1])
    assert any("evicted" in str(b) for _, b in sent[:at])
    d.read("/later.py", source(30))  # after the fork point: not the branch's

    engine.fork("main", "branch", at)
    engine.add_user_text("branch", "something else")
    branch = Driver(engine, "branch")
    branch.call()

    assert _messages(branch.requests[-1])[:at] == sent[:at]
    assert _messages(branch.requests[-1])[at:] == [
        ("user", {"type": "text", "text": "something else"})
    ]
    assert [v.uri for v in engine.file_views("branch")] == []
    built = engine.last_request("branch")
    assert built is not None  # its bill starts with its own first request
    assert engine.conversation("branch").accounting.ours.total_input_tokens == built.total_tokens


def test_a_branch_reads_the_shared_prefix_from_the_cache(store: Store, clock: Clock) -> None:
    engine = ContextEngine(store, EngineConfig(eviction=False), clock=clock)
    d = Driver(engine, "main")
    engine.add_user_text("main", "go")
    d.call()
    d.read("/a.py", source(200))
    d.call()  # its last breakpoint ends on the read
    at = engine.position("main")
    shared = engine.last_request("main")
    assert shared is not None
    engine.add_assistant_content("main", [{"type": "text", "text": "first answer"}])
    engine.add_user_text("main", "first try")
    d.call()
    clock.advance(10)
    engine.fork("main", "branch", at)  # the answer was regenerated
    engine.add_assistant_content("branch", [{"type": "text", "text": "second answer"}])
    engine.add_user_text("branch", "second try")
    branch = Driver(engine, "branch")
    branch.cache = d.cache  # one API, one cache
    usage = branch.call()
    assert usage.cache_read_input_tokens == shared.total_tokens
    built = engine.last_request("branch")
    assert built is not None  # only what follows the shared prefix is written
    assert usage.cache_creation_input_tokens == built.total_tokens - shared.total_tokens


@pytest.mark.parametrize("edited_before", [False, True], ids=["unseen", "edited-unread"])
def test_a_file_the_segment_took_in_after_the_fork_point_stays_behind(
    engine: ContextEngine, clock: Clock, edited_before: bool
) -> None:
    """Found by hypothesis (tests/property): the branch carried the segment's copy of a file
    only the original read, so its first request was larger than its twin, and an Edit of the
    file cost a round trip for content the branch never saw. A prefix that edited the file
    without reading it did not show it either (found by the fuzz command: the Edit's result
    names the file, and the branch had kept the segment's copy on that)."""
    d = Driver(engine, "main")
    engine.add_user_text("main", "go")
    d.call()
    if edited_before:
        tool_id = d.tool("edit_file", {"path": "/later.py", "old": "x + 1", "new": "x - 1"})
        engine.add_tool_result(
            "main", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///later.py")
        )
        d.call()
    engine.add_assistant_content("main", [{"type": "text", "text": "what next?"}])
    at = engine.position("main")
    engine.add_user_text("main", "read it")
    for _ in range(3):  # in active use: read on consecutive calls
        d.call()
        d.read("/later.py", source(40))
    clock.advance(7200)  # cold: the file moves into the segment
    d.call()
    assert [e.uri for e in engine.conversation("main").segment] == ["file:///later.py"]

    engine.fork("main", "branch", at)
    engine.add_user_text("branch", "edit it")
    branch = Driver(engine, "branch")
    branch.call()

    assert "def f7" not in str(branch.requests[-1])
    assert engine.conversation("branch").segment == []
    assert [v.uri for v in engine.file_views("branch")] == []
    needed = Need("file:///later.py", ("def f7(x):\n    return x + 7",))
    assert engine.rehydrate("branch", [needed]) is None


@pytest.mark.parametrize("at", [-5, 10**6])
def test_a_fork_outside_its_source_is_refused_and_changes_nothing(
    engine: ContextEngine, at: int
) -> None:
    """A negative position had sliced the thread from its end (a tool_use kept without its
    result, a request the API refuses); one past the end, or an unknown source, had raised
    IndexError after creating the source as an empty conversation."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    d.bash("ok\n")
    for name in ("c", "unknown"):
        with pytest.raises(ValueError, match=f"cannot fork '{name}' at {at}"):
            engine.fork(name, "branch", at)
    assert engine.conversations() == ["c"]
