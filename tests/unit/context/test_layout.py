"""Request shape: breakpoints, one copy of each file, deltas instead of rewrites while warm."""

from __future__ import annotations

import json
from typing import Any

from ephemeral_context.cache_sim import Block, PromptCache, Ttl, lookback_run
from ephemeral_context.context.accounting import kept_request
from ephemeral_context.context.engine import (
    BlockKind,
    ContextEngine,
    EngineConfig,
    Need,
    ToolOutput,
)
from ephemeral_context.context.layout import choose_anchor, place_breakpoints
from ephemeral_context.context.thread import Thread
from ephemeral_context.request_view import request_from_messages_api
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import MODEL, SYSTEM, Clock, Driver, source


def _texts(kwargs: dict[str, Any]) -> list[str]:
    out = [b["text"] for b in kwargs.get("system", [])]
    for message in kwargs["messages"]:
        for block in message["content"]:
            if block["type"] == "text":
                out.append(block["text"])
            elif block["type"] == "tool_result":
                out.append(block["content"])
            elif block["type"] == "tool_use":
                out.append(json.dumps(block["input"]))
    return out


def _breakpoints(kwargs: dict[str, Any]) -> int:
    blocks = list(kwargs.get("system", []))
    for message in kwargs["messages"]:
        blocks.extend(message["content"])
    return sum(1 for b in blocks if "cache_control" in b)


def test_anchor_only_when_the_lookback_cannot_reach_the_last_hit() -> None:
    assert choose_anchor(30, 25) is None
    assert choose_anchor(30, 10) == 10
    assert choose_anchor(30, None) is None


def test_thread_breakpoints_never_take_one_hour_after_five_minutes() -> None:
    assert place_breakpoints(True, True, 40, 10, "5m", "1h").thread_ttl == "5m"
    assert place_breakpoints(True, True, 40, 10, "1h", "5m").thread_ttl == "5m"
    assert place_breakpoints(True, True, 40, 10, "1h", "1h").thread_ttl == "1h"


def test_a_hedge_is_a_one_hour_anchor_before_a_five_minute_last_breakpoint() -> None:
    """The hedge takes the anchor's slot (within the lookback of the last hit, which it
    reaches instead) with an hour, the last breakpoint keeps 5 minutes; only under a
    1-hour prefix, as the API's order requires, and only before the last block."""
    points = place_breakpoints(True, True, 40, 10, "1h", "5m", hedge=11)
    assert (points.anchor, points.ttl_at(11), points.ttl_at(39)) == (11, "1h", "5m")
    assert points.count == 4
    assert place_breakpoints(True, True, 40, 10, "5m", "5m", hedge=11).anchor_ttl is None
    assert place_breakpoints(True, True, 40, 10, "1h", "1h", hedge=11).anchor_ttl is None
    assert place_breakpoints(True, True, 12, 10, "1h", "5m", hedge=11).anchor_ttl is None


def test_a_hedged_request_is_valid_and_bills_its_tail_at_five_minutes(
    engine: ContextEngine, clock: Clock
) -> None:
    """Against a 1-hour client with no long gap seen, the thread is a 5-minute bet: each
    request writes what it adds after the warm prefix under the hedge (its first new
    block, an hour) and under the last breakpoint (5 minutes), longer TTLs first as the
    API requires. After a 10-minute gap the next request reads up to the hedge."""
    d = Driver(engine)
    engine.add_user_text("c", "Run the tests")
    cache = PromptCache(MODEL)
    usages = []
    for _ in range(3):
        kwargs = engine.build_request("c", MODEL, SYSTEM, client_ttl="1h")
        built = engine.last_request("c")
        assert built is not None and _breakpoints(kwargs) <= 4
        usages.append(cache.call(built.cache_request, clock()))  # raises on a TTL order error
        d.bash(source(40, f"run{len(usages)}_"))
        clock.advance(10)
    assert built is not None
    points = built.breakpoints
    assert points.anchor is not None and points.ttl_at(points.anchor) == "1h"
    marked = [b for m in kwargs["messages"] for b in m["content"] if "cache_control" in b]
    assert [b["cache_control"].get("ttl", "5m") for b in marked] == ["1h", "5m"]
    assert usages[-1].ephemeral_1h_input_tokens > 0 and usages[-1].ephemeral_5m_input_tokens > 0
    hedge_end = built.prefix_tokens + engine.conversation("c").thread.end(points.anchor)
    clock.advance(600)
    engine.build_request("c", MODEL, SYSTEM, client_ttl="1h")
    after = engine.last_request("c")
    assert after is not None
    assert cache.call(after.cache_request, clock()).cache_read_input_tokens >= hedge_end


def test_never_more_than_four_breakpoints(engine: ContextEngine, clock: Clock) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "Refactor the package")
    for step in range(120):
        d.call()
        if step % 7 == 0:
            d.read(f"/src/m{step % 5}.py", source(40, f"v{step}_"))
        else:
            for _ in range(step % 4 + 1):  # parallel tool calls: many blocks per turn
                d.bash(f"output {step}\n" * 50)
        clock.advance(3600 * 2 if step % 40 == 39 else 20)
    for kwargs in d.requests:
        assert _breakpoints(kwargs) <= 4
        request_from_messages_api(kwargs)  # the API's cache_control rules hold


def test_no_file_content_twice_in_one_request(engine: ContextEngine, clock: Clock) -> None:
    d = Driver(engine)
    text = source(60)
    changed = text.replace("x + 7\n", "x - 7\n")
    engine.add_user_text("c", "Look at a.py")
    d.call()
    d.read("/a.py", text)
    d.call()
    assert d.read("/a.py", text).startswith("unchanged since [[file:")
    d.call()
    assert "diff against what you saw" in d.read("/a.py", changed)
    clock.advance(7200)  # cold: the segment takes the current version
    d.call()
    d.read("/a.py", changed)
    d.call()
    head = changed[:400]
    for kwargs in d.requests:
        assert sum(t.count(head) for t in _texts(kwargs)) <= 1


def test_an_early_edit_in_a_long_thread_costs_a_delta_while_warm(
    store: Store, clock: Clock
) -> None:
    engine = ContextEngine(store, EngineConfig(eviction=False), clock=clock)
    d = Driver(engine)
    text = source(150)
    engine.add_user_text("c", "Fix f7")
    d.call()
    d.read("/a.py", text)
    for step in range(40):
        d.call()
        d.bash(f"test run {step}: 1 failed\n" * 20)
        clock.advance(15)
    d.call()
    edited = text.replace("x + 7\n", "x - 7\n")
    tool_id = d.tool("edit_file", {"path": "/a.py", "old": "x + 7", "new": "x - 7"})
    engine.add_tool_result(
        "c", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///a.py", content=edited)
    )
    clock.advance(15)
    before = d.call()
    assert d.read("/a.py", edited).startswith("unchanged since")  # the model made this edit
    clock.advance(15)
    after = d.call()
    total = after.total_input_tokens
    assert after.cache_read_input_tokens >= before.total_input_tokens - 50
    assert after.cache_creation_input_tokens + after.input_tokens < 0.05 * total


def test_the_engines_view_of_the_cache_matches_the_cache_model(
    engine: ContextEngine, clock: Clock
) -> None:
    """What the policy believes is warm is what the prompt cache then serves."""
    d = Driver(engine)
    engine.add_user_text("c", "Refactor the package")
    for step in range(90):
        usage = d.call()
        built = engine.last_request("c")
        assert built is not None
        assert built.expected_read == usage.cache_read_input_tokens, step
        if step % 6 == 0:
            d.read(f"/src/m{step % 4}.py", source(40, f"v{step}_"))
        else:
            for _ in range(step % 3 + 1):
                d.bash(f"output {step}\n" * 60)
        clock.advance(1800 if step % 30 == 29 else 20)


def _fresh_blocks(thread: Thread, ttls: list[Ttl | None], kept: Ttl | None = None) -> list[Block]:
    """The cache model's message blocks computed from nothing but the thread and their
    breakpoints: as sent, or as the `kept` twin (every evicted block as first shown, no
    re-hydration blocks, the last block with a breakpoint of that TTL)."""
    out: list[Block] = []
    role = None
    for tb, ttl in zip(thread, ttls, strict=True):
        if kept and tb.kind is BlockKind.REHYDRATION:
            continue
        first, role = tb.role != role, tb.role
        restored = kept and tb.evicted and tb.original is not None
        if restored and tb.kind is not BlockKind.CONSOLIDATED:
            key, tokens = tb.original_key, tb.original_tokens
        else:
            key, tokens = tb.key, tb.tokens
        run = lookback_run(tb.block.get("type"))
        out.append(Block(hash((key, tb.role, first)), tokens, ttl, run=run))
    if kept and out and out[-1].cache_ttl is None:
        out[-1] = Block(out[-1].key, out[-1].tokens, kept, run=out[-1].run)
    return out


def test_the_blocks_kept_with_the_thread_are_what_it_would_lay_out_afresh(
    engine: ContextEngine, clock: Clock
) -> None:
    """Each thread block carries its cache-model block, kept in step through placeholders,
    round trips and forks: every request's blocks, and its kept twin's, are the ones
    computed from the thread alone."""
    d = Driver(engine)
    engine.add_user_text("c", "Refactor the package")

    def check(conv: str) -> None:
        built = engine.last_request(conv)
        assert built is not None
        thread = engine.conversation(conv).thread
        ttls = [b.cache_ttl for b in built.cache_request.messages]
        assert list(built.cache_request.messages) == _fresh_blocks(thread, ttls)
        kept = _fresh_blocks(thread, ttls, built.breakpoints.thread_ttl)
        assert kept_request(thread, built).messages == kept

    for step in range(24):
        d.call()
        check("c")
        d.bash(f"output {step}: " + source(12, f"s{step}_"))
        clock.advance(3600 * 2 if step % 8 == 7 else 20)
    thread = engine.conversation("c").thread
    assert any(tb.evicted for tb in thread)
    needle = next(tb.text for tb in thread if tb.evicted and tb.text).splitlines()[0]
    assert engine.rehydrate("c", [Need(None, (needle,))]) is not None
    d.call()
    check("c")
    engine.fork("c", "branch", engine.position("c") - 3)
    engine.add_user_text("branch", "something else")
    Driver(engine, "branch").call()
    check("branch")


def test_the_clients_own_head_breakpoint_keeps_the_clients_ttl(
    engine: ContextEngine, clock: Clock
) -> None:
    """The gateway sends the client's system blocks with the cache_control the client put
    on them (gateway/outbound.py): told that (`head_ttl`), the engine lays out and bills
    its system breakpoint at that TTL whatever it bets on the thread. A conversation's
    first request bets 5 minutes against a 1-hour client, yet the head is written at the
    hour, as the client writes it; after a 5-minute head, nothing takes an hour."""
    engine.add_user_text("c", "Run the tests")
    kwargs = engine.build_request("c", MODEL, SYSTEM, client_ttl="1h", head_ttl="1h")
    built = engine.last_request("c")
    assert built is not None
    assert built.breakpoints.thread_ttl == "5m"  # the first request's bet
    assert kwargs["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert built.cache_request.system[0].cache_ttl == "1h"
    usage = PromptCache(MODEL).call(built.cache_request, clock())
    assert usage.ephemeral_1h_input_tokens >= built.head_tokens

    engine.add_user_text("d", "Run the tests")
    d = Driver(engine, "d")
    for n in range(3):
        kwargs = engine.build_request("d", MODEL, SYSTEM, client_ttl="5m", head_ttl="5m")
        d.bash(source(40, f"run{n}_"))
        clock.advance(1200)  # gaps an hour would bridge: the policy alone might ask one
    ttls = [
        b["cache_control"].get("ttl", "5m")
        for part in (kwargs["system"], *(m["content"] for m in kwargs["messages"]))
        for b in part
        if "cache_control" in b
    ]
    assert ttls and set(ttls) == {"5m"}


def test_without_the_clients_head_ttl_the_engine_places_the_heads() -> None:
    """`head_ttl` None (the replay of a client that marks nothing, a bare SDK client):
    the system breakpoint takes the prefix TTL the policy chose."""
    assert place_breakpoints(True, True, 40, 10, "5m", "5m").system_ttl == "5m"
    assert place_breakpoints(True, True, 40, 10, "5m", "5m", head_ttl="1h").system_ttl == "1h"
