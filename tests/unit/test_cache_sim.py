"""cache_sim against the worked examples in Anthropic's prompt-caching documentation.

Every expected number here can be computed by hand from the rules cited in
docs/cost-model.md ("Prompt cache model"); block sizes are chosen so that they can.
"""

from __future__ import annotations

from typing import Any

import pytest
from ephemeral_context.cache_sim import (
    Block,
    CacheControlError,
    PromptCache,
    Request,
    Ttl,
    Usage,
    resolve_breakpoints,
    usage_from_dict,
)
from ephemeral_context.prices import lookup
from ephemeral_context.request_view import request_from_messages_api
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.messages_api import usage_to_dict

SONNET = "claude-sonnet-4-5-20250929"  # minimum cacheable length 1024


def blocks(n: int, tokens: int = 200, breakpoints: dict[int, Ttl] | None = None) -> list[Block]:
    """Blocks 1..n (numbered as the documentation numbers them), each `tokens` long."""
    marks = breakpoints or {}
    return [Block(key=i, tokens=tokens, cache_ttl=marks.get(i)) for i in range(1, n + 1)]


def chars(text: str, kind: str) -> int:
    """One token per character: makes request_from_messages_api figures easy to check."""
    return len(text)


# ---------------------------------------------------------------------------------------------
# "How automatic prefix checking works": the lookback in a growing conversation


def test_lookback_growing_conversation_doc_example() -> None:
    """Turn 1 writes at block 10; turn 2 (15 blocks) finds it; turn 3 (35 blocks) does not."""
    cache = PromptCache(SONNET)
    turn1 = cache.call(Request(messages=blocks(10, breakpoints={10: "5m"})), now=0)
    assert turn1 == Usage(0, 2000, 0, 2000, 0)

    turn2 = cache.call(Request(messages=blocks(15, breakpoints={15: "5m"})), now=10)
    assert turn2 == Usage(
        input_tokens=0,
        cache_creation_input_tokens=1000,
        cache_read_input_tokens=2000,
        ephemeral_5m_input_tokens=1000,
    )

    # Blocks 35..16 are the 20 positions checked; the entry at 15 is one position outside.
    turn3 = cache.call(Request(messages=blocks(35, breakpoints={35: "5m"})), now=20)
    assert turn3.cache_read_input_tokens == 0
    assert turn3.cache_creation_input_tokens == 7000


def test_second_breakpoint_starts_a_second_lookback_window() -> None:
    cache = PromptCache(SONNET)
    cache.call(Request(messages=blocks(10, breakpoints={10: "5m"})), now=0)
    cache.call(Request(messages=blocks(15, breakpoints={15: "5m"})), now=10)
    turn3 = cache.call(Request(messages=blocks(35, breakpoints={15: "5m", 35: "5m"})), now=20)
    assert turn3 == Usage(0, 4000, 3000, 4000, 0)


def test_lookback_counts_the_breakpoint_as_first_of_twenty_positions() -> None:
    """An entry exactly 19 blocks back is found, 20 blocks back is not."""
    for gap, expect_hit in ((19, True), (20, False)):
        cache = PromptCache(SONNET)
        cache.call(Request(messages=blocks(10, breakpoints={10: "5m"})), now=0)
        usage = cache.call(Request(messages=blocks(10 + gap, breakpoints={10 + gap: "5m"})), now=1)
        assert (usage.cache_read_input_tokens == 2000) is expect_hit, gap


def test_a_run_of_parallel_tool_uses_or_results_is_one_lookback_position() -> None:
    """Twelve parallel tool calls and their results after the last turn's entry: 24 blocks,
    2 positions, so the entry is found; 24 text blocks are 24 positions, and it is not."""

    def turn(run: str) -> list[Block]:
        uses = [Block(100 + i, 50, run="tool_use" if run else "") for i in range(12)]
        results = [Block(200 + i, 50, run="tool_result" if run else "") for i in range(12)]
        marked = results[-1]
        return [*uses, *results[:-1], Block(marked.key, marked.tokens, "5m", run=marked.run)]

    for run, expect_hit in (("runs", True), ("", False)):
        cache = PromptCache(SONNET)
        cache.call(Request(messages=blocks(10, breakpoints={10: "5m"})), now=0)
        usage = cache.call(Request(messages=[*blocks(10), *turn(run)]), now=1)
        assert (usage.cache_read_input_tokens == 2000) is expect_hit, run


def test_a_request_view_marks_tool_blocks_as_runs() -> None:
    """From a Messages API body: tool_use and tool_result blocks carry their run, others none."""
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    request = request_from_messages_api(
        body(
            [
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}, use]},
                {"role": "user", "content": [result]},
            ]
        )
    )
    assert [b.run for b in request.messages] == ["", "", "tool_use", "tool_result"]


def test_breakpoint_on_changing_block_never_reads_doc_example() -> None:
    """Blocks 1-5 static, block 6 a timestamp: a breakpoint on 6 rewrites every time."""

    def request(stamp: int, mark: int) -> Request:
        static = [
            Block(key=i, tokens=400, cache_ttl="5m" if mark == i else None) for i in range(1, 6)
        ]
        varying = Block(key=1000 + stamp, tokens=50, cache_ttl="5m" if mark == 6 else None)
        return Request(system=static, messages=[varying])

    cache = PromptCache(SONNET)
    assert cache.call(request(1, mark=6), now=0).cache_creation_input_tokens == 2050
    second = cache.call(request(2, mark=6), now=1)
    assert second.cache_read_input_tokens == 0
    assert second.cache_creation_input_tokens == 2050

    fixed = PromptCache(SONNET)
    fixed.call(request(1, mark=5), now=0)
    assert fixed.call(request(2, mark=5), now=1) == Usage(50, 0, 2000, 0, 0)


# ---------------------------------------------------------------------------------------------
# "Mixing different TTLs": positions A, B and C


def test_mixed_ttl_reproduces_documented_usage() -> None:
    """The documented response: input 2048, read 1800, write 248 = 148 (5m) + 100 (1h)."""
    cache = PromptCache(SONNET)
    prefix = Block(key=1, tokens=1800, cache_ttl="1h")
    first = cache.call(Request(system=[prefix]), now=0)
    assert first == Usage(0, 1800, 0, 0, 1800)

    request = Request(
        system=[prefix, Block(key=2, tokens=100, cache_ttl="1h")],
        messages=[Block(key=3, tokens=148, cache_ttl="5m"), Block(key=4, tokens=2048)],
    )
    usage = cache.call(request, now=60)
    assert usage_to_dict(usage) == {
        "input_tokens": 2048,
        "cache_creation_input_tokens": 248,
        "cache_read_input_tokens": 1800,
        "cache_creation": {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100},
    }
    billed = lookup(SONNET).billed_input(usage)
    assert billed == pytest.approx(2048 + 1.25 * 148 + 2 * 100 + 0.1 * 1800)
    assert usage_from_dict(usage_to_dict(usage)) == usage


def test_usage_without_the_ttl_split_counts_every_write_as_5m() -> None:
    older = {"input_tokens": 5, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 7}
    assert usage_from_dict(older) == Usage(5, 300, 7, 300, 0)
    inconsistent = {**older, "cache_creation": {"ephemeral_1h_input_tokens": 1}}
    assert usage_from_dict(inconsistent) == Usage(5, 300, 7, 300, 0)


def test_mixed_ttl_without_hits_charges_b_minus_zero_at_1h() -> None:
    cache = PromptCache(SONNET)
    usage = cache.call(Request(messages=blocks(10, breakpoints={3: "1h", 6: "1h", 9: "5m"})), now=0)
    assert usage == Usage(200, 1800, 0, 600, 1200)


def test_one_hour_after_five_minutes_is_refused() -> None:
    with pytest.raises(CacheControlError, match="1h"):
        PromptCache(SONNET).call(Request(messages=blocks(10, breakpoints={3: "5m", 6: "1h"})), 0)


# ---------------------------------------------------------------------------------------------
# Minimum cacheable length, TTLs


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-sonnet-4-5-20250929", 1024),
        ("claude-sonnet-4-20250514", 1024),
        ("claude-opus-4-1-20250805", 1024),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-opus-4-6", 4096),
        ("claude-haiku-4-5-20251001", 4096),
        ("claude-3-5-haiku-20241022", 2048),
        ("claude-3-haiku-20240307", 2048),
    ],
)
def test_prefix_below_the_minimum_is_not_cached(model: str, minimum: int) -> None:
    short = PromptCache(model).call(
        Request(system=[Block(1, minimum - 1, "5m")], messages=[Block(2, 10)]), now=0
    )
    assert short == Usage(minimum - 1 + 10, 0, 0, 0, 0)
    enough = PromptCache(model).call(
        Request(system=[Block(1, minimum, "5m")], messages=[Block(2, 10)]), now=0
    )
    assert enough == Usage(10, minimum, 0, minimum, 0)


def test_five_minute_entry_expires_and_is_refreshed_on_each_hit() -> None:
    cache = PromptCache(SONNET)
    request = Request(system=[Block(1, 2000, "5m")], messages=[Block(2, 10)])
    assert cache.call(request, now=0).cache_creation_input_tokens == 2000
    assert cache.call(request, now=299).cache_read_input_tokens == 2000  # alive until 300
    assert cache.call(request, now=598).cache_read_input_tokens == 2000  # refreshed at 299
    late = cache.call(request, now=899)  # 301 s after the last hit
    assert late.cache_read_input_tokens == 0
    assert late.cache_creation_input_tokens == 2000


def test_a_hit_stamped_earlier_than_the_write_does_not_shorten_its_life() -> None:
    """A transcript whose clock went backwards sends a call stamped before the write it
    reads (calls follow their chain, not the clock): the read finds the entry alive and
    leaves it alive as long as the write made it (a hit stamped at 100 had cut it to 400)."""
    cache = PromptCache(SONNET)
    request = Request(system=[Block(1, 2000, "5m")], messages=[Block(2, 10)])
    cache.call(request, now=1000)
    assert cache.call(request, now=100).cache_read_input_tokens == 2000
    assert cache.call(request, now=1200).cache_read_input_tokens == 2000


def test_one_hour_entry_outlives_five_minutes() -> None:
    cache = PromptCache(SONNET)
    request = Request(system=[Block(1, 2000, "1h")])
    cache.call(request, now=0)
    assert cache.call(request, now=3000).cache_read_input_tokens == 2000
    assert cache.call(request, now=6599).cache_read_input_tokens == 2000
    assert cache.call(request, now=10200).cache_read_input_tokens == 0


# ---------------------------------------------------------------------------------------------
# Breakpoint limits and automatic caching


def test_more_than_four_breakpoints_is_an_error() -> None:
    marks: dict[int, Ttl] = {i: "5m" for i in (2, 4, 6, 8, 10)}
    with pytest.raises(CacheControlError, match="maximum of 4"):
        PromptCache(SONNET).call(Request(messages=blocks(10, breakpoints=marks)), now=0)


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": SONNET, "max_tokens": 100, "messages": messages, **extra}


def test_automatic_caching_moves_forward_doc_table() -> None:
    """System + User(1) + Asst(1) + User(2), then two more turns: the documented table."""
    system = "s" * 1000
    turns = [("user", "u1" * 50), ("assistant", "a1" * 50), ("user", "u2" * 50)]
    cache = PromptCache(SONNET)

    def ask(history: list[tuple[str, str]], now: float) -> Usage:
        messages = [{"role": r, "content": t} for r, t in history]
        return cache.call(
            request_from_messages_api(
                body(messages, system=system, cache_control={"type": "ephemeral"}), count=chars
            ),
            now,
        )

    first = ask(turns, 0)
    assert first == Usage(0, 1300, 0, 1300, 0)  # everything written
    turns += [("assistant", "a2" * 50), ("user", "u3" * 50)]
    second = ask(turns, 10)
    assert second == Usage(0, 200, 1300, 200, 0)  # Asst(2) + User(3) written
    turns += [("assistant", "a3" * 50), ("user", "u4" * 50)]
    assert ask(turns, 20) == Usage(0, 200, 1500, 200, 0)


def test_automatic_breakpoint_skips_blocks_that_cannot_carry_it() -> None:
    request = Request(
        system=[Block(1, 2000)],
        messages=[Block(2, 10), Block(3, 5, auto_target=False)],
        auto_cache_ttl="5m",
    )
    assert resolve_breakpoints(request.blocks(), "5m") == [(1, "5m")]
    assert PromptCache(SONNET).call(request, now=0) == Usage(5, 2010, 0, 2010, 0)


def test_automatic_caching_edge_cases() -> None:
    same = [Block(1, 10), Block(2, 10, "5m")]
    assert resolve_breakpoints(same, "5m") == [(1, "5m")]  # a no-op
    with pytest.raises(CacheControlError, match="conflicts"):
        resolve_breakpoints(same, "1h")
    four = [Block(i, 10, "5m") for i in range(4)] + [Block(9, 10)]
    with pytest.raises(CacheControlError, match="slot"):
        resolve_breakpoints(four, "5m")
    assert resolve_breakpoints([Block(1, 10, auto_target=False)], "5m") == []


def test_combining_explicit_and_automatic_breakpoints() -> None:
    """An explicit breakpoint on the system prompt plus automatic caching of the thread."""
    request = request_from_messages_api(
        body(
            [{"role": "user", "content": "q" * 500}],
            system=[{"type": "text", "text": "s" * 1500, "cache_control": {"type": "ephemeral"}}],
            cache_control={"type": "ephemeral"},
        ),
        count=chars,
    )
    assert resolve_breakpoints(request.blocks(), request.auto_cache_ttl) == [(0, "5m"), (1, "5m")]
    cache = PromptCache(SONNET)
    assert cache.call(request, 0) == Usage(0, 2000, 0, 2000, 0)


# ---------------------------------------------------------------------------------------------
# Reading Messages API bodies


def test_request_from_body_orders_tools_system_messages_and_reads_cache_control() -> None:
    request = request_from_messages_api(
        body(
            [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "x"},
                        {"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "text", "text": "file text"}],
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        }
                    ],
                },
            ],
            tools=[{"name": "read", "description": "d", "input_schema": {"type": "object"}}],
            system="be brief",
        ),
        count=chars,
    )
    assert len(request.tools) == 1 and len(request.system) == 1 and len(request.messages) == 4
    assert [b.tokens for b in request.messages] == [5, 3, len('read{"p":"a"}'), 9]
    assert request.messages[1].auto_target is False
    assert request.messages[3].cache_ttl == "1h"
    assert request.auto_cache_ttl is None


def test_parallel_results_render_in_the_order_of_their_tool_uses() -> None:
    """Claude Code sends results as their tools finish and marks the last one sent; the API
    renders them in the order asked, so a result sent before the marked one but asked after
    it is plain input (what ../shared/corpus records at such calls)."""
    uses = [{"type": "tool_use", "id": tool_id, "name": "Read", "input": {}} for tool_id in "ab"]

    def result(tool_id: str, text: str, mark: bool = False) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        return {**block, "cache_control": {"type": "ephemeral"}} if mark else block

    def ask(results: list[dict[str, Any]]) -> Usage:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "p" * 2000},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": results},
        ]
        return PromptCache(SONNET).call(request_from_messages_api(body(messages), count=chars), 0)

    finished_late = ask([result("b", "b" * 30), result("a", "a" * 500, mark=True)])
    assert finished_late.input_tokens == 30  # "b", rendered after the marked "a"
    in_order = ask([result("a", "a" * 500), result("b", "b" * 30, mark=True)])
    assert in_order.input_tokens == 0


def test_content_keys_ignore_cache_control_but_not_role_or_text() -> None:
    def key(role: str, block: dict[str, Any]) -> int:
        return request_from_messages_api(body([{"role": role, "content": [block]}])).messages[0].key

    plain = {"type": "text", "text": "same"}
    marked = {**plain, "cache_control": {"type": "ephemeral"}}
    assert key("user", plain) == key("user", marked)
    assert key("user", plain) != key("assistant", plain)
    assert key("user", plain) != key("user", {"type": "text", "text": "other"})


def test_string_content_is_the_one_text_block_it_stands_for() -> None:
    """Claude Code 2.1.154+ sends a role "system" attachment as a marked text block while it
    is the last message and as a string afterwards; the API caches both forms alike."""
    marked = {"type": "text", "text": "reminder", "cache_control": {"type": "ephemeral"}}
    as_block = request_from_messages_api(
        body([{"role": "system", "content": [marked]}], system=[{"type": "text", "text": "s"}])
    )
    as_string = request_from_messages_api(
        body([{"role": "system", "content": "reminder"}], system="s")
    )
    assert [b.key for b in as_string.system] == [b.key for b in as_block.system]
    assert [(b.key, b.tokens) for b in as_string.messages] == [
        (b.key, b.tokens) for b in as_block.messages
    ]
    empty = request_from_messages_api(body([{"role": "user", "content": ""}], system=""))
    assert empty.system == [] and empty.messages == []


def test_bad_cache_control_is_a_clear_error() -> None:
    with pytest.raises(CacheControlError, match="ttl"):
        request_from_messages_api(
            body(
                [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": "x",
                                "cache_control": {"type": "ephemeral", "ttl": "2h"},
                            }
                        ],
                    }
                ]
            )
        )
    with pytest.raises(CacheControlError, match="empty text"):
        request_from_messages_api(
            body(
                [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}
                        ],
                    }
                ]
            )
        )
    with pytest.raises(CacheControlError, match="messages"):
        request_from_messages_api(body([{"role": "user", "content": 7}]))


MARK = {"type": "ephemeral"}


def tool_loop(*items: dict[str, Any], marked: bool = False) -> dict[str, Any]:
    """A question, a tool call and its result holding `items` (the result marked if
    `marked`), for the cache model to read."""
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": list(items)}
    if marked:
        result["cache_control"] = MARK
    use = {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
    return body(
        [
            {"role": "user", "content": "q" * 1200},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    )


def test_breakpoints_inside_a_tool_result_count_toward_the_four() -> None:
    """The API reference gives cache_control to the blocks a tool result holds, a search
    result's text and a document's content source too ("Create a cache control breakpoint
    at this content block"): each is one of the four."""
    text = {"type": "text", "text": "x", "cache_control": MARK}
    document = {
        "type": "document",
        "source": {"type": "content", "content": [text]},
        "cache_control": MARK,
    }
    search = {"type": "search_result", "source": "s", "title": "t", "content": [text]}
    for items in ([text, text, text], [text, document], [document, search]):
        request = tool_loop(*items, marked=True)
        request["system"] = [{"type": "text", "text": "s", "cache_control": MARK}]
        with pytest.raises(CacheControlError, match="Found 5"):
            resolve_breakpoints(request_from_messages_api(request).blocks(), None)
    empty = {"type": "text", "text": "", "cache_control": MARK}
    with pytest.raises(CacheControlError, match="empty text"):
        request_from_messages_api(tool_loop(empty))


def test_a_breakpoint_inside_a_tool_result_writes_where_its_block_ends() -> None:
    """Marking a tool result's first item caches the prefix up to it, which a request whose
    result goes on differently reads; marks are no part of the prefix, so the result marked
    as a whole reads what its marked last item wrote."""
    first = {"type": "text", "text": "f" * 300}
    cache = PromptCache(SONNET)
    marked_first = tool_loop({**first, "cache_control": MARK}, {"type": "text", "text": "a" * 50})
    request = request_from_messages_api(marked_first, count=chars)
    assert (
        request.total_tokens
        == request_from_messages_api(
            tool_loop(first, {"type": "text", "text": "a" * 50}), count=chars
        ).total_tokens
    )
    written = cache.call(request, 0)
    assert written.cache_creation_input_tokens == request.total_tokens - 51  # "\n" + "a" * 50
    other = request_from_messages_api(
        tool_loop(first, {"type": "text", "text": "b" * 50}, marked=True), count=chars
    )
    assert cache.call(other, 1).cache_read_input_tokens == written.cache_creation_input_tokens

    cache = PromptCache(SONNET)
    only = {"type": "text", "text": "f" * 300}
    cache.call(
        request_from_messages_api(tool_loop({**only, "cache_control": MARK}), count=chars), 0
    )
    whole = request_from_messages_api(tool_loop(only, marked=True), count=chars)
    assert cache.call(whole, 1).cache_read_input_tokens == whole.total_tokens


def test_usage_adds_up() -> None:
    assert Usage(1, 2, 3, 2, 0) + Usage(10, 20, 30, 5, 15) == Usage(11, 22, 33, 7, 15)


# ---------------------------------------------------------------------------------------------
# The documented four-breakpoint example, and properties that hold for any request


def test_four_breakpoints_tools_instructions_documents_conversation_doc_example() -> None:
    """Tools, instructions, RAG documents and the last message each carry a breakpoint.

    The documentation: after one more user message (the fourth breakpoint moved onto it),
    the writes are the previous assistant turn plus the new user message, and the reads
    are everything cached before.
    """
    tools = [Block(1, 300), Block(2, 300, "5m")]
    instructions = Block(3, 800, "5m")
    documents = Block(4, 5000, "5m")
    turn1 = [Block(10, 40, "5m")]
    cache = PromptCache(SONNET)
    first = cache.call(Request(tools, [instructions, documents], turn1), now=0)
    assert first == Usage(0, 6440, 0, 6440, 0)
    turn2 = [Block(10, 40), Block(11, 250), Block(12, 30, "5m")]
    second = cache.call(Request(tools, [instructions, documents], turn2), now=60)
    assert second == Usage(0, 280, 6440, 280, 0)


block_lists = st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=45)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    sizes = draw(block_lists)
    marks = sorted(draw(st.sets(st.integers(0, len(sizes) - 1), max_size=4)))
    one_hour = draw(st.integers(0, len(marks)))
    ttls: dict[int, Ttl] = {p: ("1h" if i < one_hour else "5m") for i, p in enumerate(marks)}
    shared = draw(st.integers(0, len(sizes)))  # a prefix shared with other drawn requests
    return Request(
        messages=[
            Block(
                key=i if i < shared else 10_000 + draw(st.integers(0, 3)) * 100 + i,
                tokens=t,
                cache_ttl=ttls.get(i),
            )
            for i, t in enumerate(sizes)
        ]
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(requests(), st.floats(0, 4000)), min_size=1, max_size=8))
def test_usage_always_adds_up(calls: list[tuple[Request, float]]) -> None:
    cache = PromptCache(SONNET)
    now = 0.0
    for request, gap in calls:
        now += gap
        usage = cache.call(request, now)
        assert usage.total_input_tokens == request.total_tokens
        assert usage.cache_creation_input_tokens == (
            usage.ephemeral_5m_input_tokens + usage.ephemeral_1h_input_tokens
        )
        assert (
            min(
                usage.input_tokens,
                usage.ephemeral_5m_input_tokens,
                usage.ephemeral_1h_input_tokens,
                usage.cache_read_input_tokens,
            )
            >= 0
        )


@settings(max_examples=150, deadline=None)
@given(requests(), st.floats(0, 299))
def test_the_same_request_again_within_the_ttl_reads_what_it_wrote(
    request: Request, gap: float
) -> None:
    cache = PromptCache(SONNET)
    first = cache.call(request, 0.0)
    again = cache.call(request, gap)
    assert again.cache_creation_input_tokens == 0
    assert again.cache_read_input_tokens == first.cache_read_input_tokens + (
        first.cache_creation_input_tokens
    )


@pytest.mark.parametrize(
    "change",
    [
        {"tool_choice": {"type": "any"}},
        {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        {"output_config": {"effort": "low"}},
    ],
)
def test_settings_rendered_into_the_prompt_invalidate_messages_not_system(
    change: dict[str, Any],
) -> None:
    """ "What invalidates the cache": tool_choice, thinking and effort hit message blocks."""
    system = [{"type": "text", "text": "s" * 2000, "cache_control": {"type": "ephemeral"}}]
    messages = [
        {"role": "user", "content": [
            {"type": "text", "text": "m" * 1000, "cache_control": {"type": "ephemeral"}}
        ]}
    ]  # fmt: skip
    cache = PromptCache(SONNET)
    plain = request_from_messages_api(body(messages, system=system), count=chars)
    assert cache.call(plain, 0).cache_creation_input_tokens == 3000
    assert cache.call(plain, 1).cache_read_input_tokens == 3000
    changed = request_from_messages_api(body(messages, system=system, **change), count=chars)
    assert changed.system == plain.system
    assert cache.call(changed, 2) == Usage(0, 1000, 2000, 1000, 0)


def test_a_first_image_keeps_the_message_prefix() -> None:
    """The table in "What invalidates the cache" lists images, but real billing does not: in
    three corpus sessions (two users, Claude Code 2.1.22 and 2.1.97, an image pasted or read)
    the call that sent the first image read every message before it."""
    text = {"type": "text", "text": "m" * 1500, "cache_control": {"type": "ephemeral"}}
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    first = request_from_messages_api(body([{"role": "user", "content": [text]}]), count=chars)
    later = request_from_messages_api(
        body([{"role": "user", "content": [text]}, {"role": "user", "content": [image]}]),
        count=chars,
    )
    cache = PromptCache(SONNET)
    cache.call(first, 0)
    assert cache.call(later, 1).cache_read_input_tokens == 1500


def test_expired_entries_are_swept_so_a_long_replay_does_not_grow_without_bound() -> None:
    cache = PromptCache(SONNET, prune_at=50)
    for i in range(400):  # a new prefix every 10 minutes: each entry is dead before the next
        cache.call(Request(system=[Block(i, 2000, "5m")]), now=i * 600.0)
    assert len(cache.entries) <= 51
    assert (
        cache.call(
            Request(system=[Block(399, 2000, "5m")]), now=399 * 600.0 + 1
        ).cache_read_input_tokens
        == 2000
    )


def test_a_change_invalidates_its_level_and_everything_after_it() -> None:
    """ "What invalidates the cache": tools -> system -> messages, each level builds on the last."""

    def request(tool: str, system: str) -> Request:
        return request_from_messages_api(
            body(
                [{"role": "user", "content": [
                    {"type": "text", "text": "m" * 500, "cache_control": {"type": "ephemeral"}}
                ]}],
                tools=[{"name": tool, "description": "d" * 1480, "input_schema": {},
                        "cache_control": {"type": "ephemeral"}}],
                system=[{"type": "text", "text": system * 1000,
                         "cache_control": {"type": "ephemeral"}}],
            ),
            count=chars,
        )  # fmt: skip

    cache = PromptCache(SONNET)
    tools_tokens = request("t1", "a").tools[0].tokens
    first = cache.call(request("t1", "a"), 0)
    assert first.cache_creation_input_tokens == tools_tokens + 1500
    new_system = cache.call(request("t1", "b"), 1)
    assert new_system == Usage(0, 1500, tools_tokens, 1500, 0)
    new_tool = cache.call(request("t2", "b"), 2)
    assert new_tool.cache_read_input_tokens == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(1, 6), min_size=0, max_size=30).map(tuple),
        min_size=1,
        max_size=8,
    )
)
def test_a_cache_that_reuses_the_last_requests_prefix_hashes_bills_as_a_fresh_chain(
    requests: list[tuple[int, ...]],
) -> None:
    """Requests that grow, change in the middle or shrink (keys from a small alphabet, so
    prefixes are shared often): a cache that takes prefix hashes over from its last request
    gives the usage of one that hashes every request from the start."""
    reusing, fresh = PromptCache(SONNET), PromptCache(SONNET)
    for n, keys in enumerate(requests):
        messages = [
            Block(key, 300, "5m" if i in (len(keys) - 1, len(keys) // 2) else None)
            for i, key in enumerate(keys)
        ]
        fresh.last_keys, fresh.last_hashes = [], []
        request = Request(messages=messages)
        assert reusing.call(request, 10.0 * n) == fresh.call(request, 10.0 * n)
