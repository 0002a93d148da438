"""Eviction: re-hydrated content may leave again, and no request is larger than its twin."""

from __future__ import annotations

from dataclasses import replace

from ephemeral_context.context import eviction
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.context.kinds import BlockKind

from tests.unit.context.context_helpers import Clock, Driver, grow_a_file_in_the_segment


def log(step: int) -> str:
    return "".join(f"test_{step}_{i} passed in {i}.{step}s, output line {i}\n" for i in range(150))


def _evict_then_fetch(engine: ContextEngine, clock: Clock) -> tuple[Driver, str]:
    """A test log the model answered, evicted at a cold gap, then quoted: one round trip
    fetches it back and the model answers after it."""
    d = Driver(engine)
    engine.add_user_text("c", "run the tests")
    d.call()
    out = log(0)
    d.bash(out)
    d.call()
    engine.add_assistant_content("c", [{"type": "text", "text": "all passed"}])
    clock.advance(7200)
    d.call()
    thread = engine.conversation("c").thread
    assert [tb.evicted for tb in thread if tb.text == out] == [True]
    quote = "".join(out.splitlines(keepends=True)[10:14])
    trip = engine.rehydrate("c", [], [quote])
    assert trip is not None and trip.items == 1
    d.call()  # the call itself: what came back is not answered yet, so it stays
    assert not thread[-1].evicted and thread[-1].kind is BlockKind.REHYDRATION
    engine.add_assistant_content("c", [{"type": "text", "text": f"as the log says:\n{quote}"}])
    return d, out


def test_re_hydrated_content_may_leave_again_once_answered(
    engine: ContextEngine, clock: Clock
) -> None:
    d, out = _evict_then_fetch(engine, clock)
    thread = engine.conversation("c").thread
    fetched = next(i for i, tb in enumerate(thread) if tb.kind is BlockKind.REHYDRATION and tb.text)
    clock.advance(7200)  # cold again: leaving is free
    d.call()
    assert thread[fetched].evicted
    item = thread[fetched].item_id
    assert item is not None and f"[[rehydration:{item}]] output evicted" in repr(d.requests[-1])
    assert engine.read_session_file(item).text == out  # still hydratable by its id


def test_a_request_larger_than_its_recorded_twin_sheds_its_newest_consumed_content(
    engine: ContextEngine, clock: Clock
) -> None:
    _, out = _evict_then_fetch(engine, clock)
    clock.advance(5)  # warm: a cut rewrites what follows it
    c = engine.conversation("c")
    built = engine.last_request("c")
    assert built is not None
    head = built.head_tokens

    def twin() -> int:
        return head + sum(b.tokens for b in c.thread.baseline)

    # The placeholder and the round trip's tool_use have no twin: ours is the larger one.
    assert head + c.thread.tokens > twin()
    outlook = c.policy.outlook(c, clock(), "5m", "auto", engine.config.context_budget)
    behind = replace(outlook, max_rewrite=0.0)  # a conversation behind its twins makes no cut
    before = len(engine.events)
    eviction.consolidate(engine.state, c, head, behind)
    assert head + c.thread.tokens <= twin()
    (event,) = engine.events[before:]
    assert event.reason == "larger than its recorded twin"
    newest = max(i for i, tb in enumerate(c.thread) if tb.text == out)
    assert c.thread[newest].evicted and event.item_ids == (c.thread[newest].item_id,)


def test_a_cold_rebuild_that_grows_the_segment_is_weighed_at_its_new_size(
    engine: ContextEngine, clock: Clock
) -> None:
    """A file in the segment since one cold gap grows by more than the thread holds about
    it; at the next cold gap the rebuild shows its current version. The bound on the twin
    must weigh the request with the segment as rebuilt, not as it was (the old size let
    this request past its twin by what the file grew): a consumed log goes instead."""
    d = grow_a_file_in_the_segment(engine, clock)
    c = engine.conversation("c")
    d.call()
    out = log(1)
    d.bash(out)
    d.call()
    engine.add_assistant_content("c", [{"type": "text", "text": "done"}])
    clock.advance(7200)  # cold again: the segment is rebuilt from the grown file
    built = engine.last_request("c")
    assert built is not None
    head = built.head_tokens
    (before,) = [e.tokens for e in c.segment]
    c.thread.cache.expire(clock())
    outlook = c.policy.outlook(c, clock(), "5m", "auto", engine.config.context_budget, head)
    # No cost-gate cut (as in the request after a round trip): only the bounds may evict.
    eviction.consolidate(engine.state, c, head, replace(outlook, evicts=False))
    (after,) = [e.tokens for e in c.segment]
    assert after > before + 500  # the rebuild showed the grown file
    size = head + after + c.thread.tokens
    assert size <= head + sum(b.tokens for b in c.thread.baseline)
    assert engine.events[-1].reason == "larger than its recorded twin"
    assert [tb.evicted for tb in c.thread if tb.text == out] == [True]
