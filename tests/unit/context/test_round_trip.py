"""`ContextEngine.round_trip`: the model's own calls for evicted content (the gateway's
`read_session_file`) go in as the replay's re-hydration round trips do, by the same append."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ephemeral_context.context.blocks import uri_of
from ephemeral_context.context.engine import (
    BlockKind,
    ContextEngine,
    EngineConfig,
    Fetched,
    Need,
    ToolOutput,
)
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import Clock, Driver

LOG = "".join(f"step {i}: compiled module_{i}.c into module_{i}.o\n" for i in range(120))


def _go_on_past_a_cold_gap(d: Driver, clock: Clock) -> None:
    """Twelve calls of test output, then two hours idle and two more calls: at the cold
    gap the policy cuts what came before them."""
    for step in range(12):
        d.call()
        d.bash(f"test {step} passed\n" * 60)
        clock.advance(10)
    clock.advance(7200)
    d.call()
    d.bash("done\n" * 40)
    d.call()


def _evicted_log(engine: ContextEngine, clock: Clock) -> str:
    """A conversation whose first long tool output the policy has evicted (cold cache);
    the output's id."""
    d = Driver(engine)
    engine.add_user_text("c", "build it")
    d.call()
    d.bash(LOG)
    _go_on_past_a_cold_gap(d, clock)
    source = next(tb for tb in engine.conversation("c").thread if "module_7.o" in tb.text)
    assert source.evicted and source.item_id
    return source.item_id


def _call(item_id: str, use_id: str = "toolu_h1") -> dict[str, object]:
    return {
        "type": "tool_use",
        "id": use_id,
        "name": "read_session_file",
        "input": {"id": f"[[tool_result:{item_id}]]"},
    }


@pytest.mark.parametrize("continues", [True, False], ids=["same-call", "with-client-results"])
def test_a_call_the_model_made_is_a_round_trip_its_twins_never_see(
    engine: ContextEngine, clock: Clock, continues: bool
) -> None:
    """The call and its answer never enter the twins; the request after them is the twins'
    only when the answers go with the client's own tool results (`continues=False`)."""
    item_id = _evicted_log(engine, clock)
    c = engine.conversation("c")
    baseline = list(c.thread.baseline)
    fetched = Fetched(_call(item_id), engine.read_session_file(item_id).text)
    trip = engine.round_trip("c", [fetched], continues=continues)
    assert trip.items == 1 and trip.tokens > 0 and trip.output_tokens > 0
    ask, answer = c.thread[-2], c.thread[-1]
    assert ask.kind is answer.kind is BlockKind.REHYDRATION
    assert ask.block["id"] == answer.block["tool_use_id"] == "toolu_h1"  # the model's own id
    assert answer.item_id == item_id and c.thread.shows("module_7.o")
    assert c.thread.baseline == baseline  # neither block enters the recorded-style twin
    assert engine.status("c").rehydrations == 1
    bills = c.accounting
    twins, ours = (bills.baseline_billed, bills.kept_billed), bills.ours_billed
    if not continues:
        engine.add_user_text("c", "and now?")
    engine.build_request("c", "claude-sonnet-4-5", "system")
    assert ((bills.baseline_billed, bills.kept_billed) == twins) is continues
    assert bills.ours_billed > ours


def test_a_failed_call_is_appended_and_brings_nothing_back(
    engine: ContextEngine, clock: Clock
) -> None:
    _evicted_log(engine, clock)
    c = engine.conversation("c")
    trip = engine.round_trip("c", [Fetched(_call("00000000"), "unknown id", is_error=True)])
    assert trip.items == 0 and engine.status("c").rehydrations == 0
    assert c.thread[-1].block["is_error"] is True and c.thread[-1].item_id is None
    assert c.accounting.continues  # the model still asks again: the same call goes on


@pytest.fixture
def twin_engines(tmp_path: Path) -> Iterator[list[tuple[ContextEngine, Clock]]]:
    stores = [Store(tmp_path / name) for name in ("replay", "gateway")]
    clocks = [Clock(), Clock()]
    yield [
        (ContextEngine(store, EngineConfig(), clock=clock), clock)
        for store, clock in zip(stores, clocks, strict=True)
    ]
    for store in stores:
        store.close()


def test_the_replay_and_the_gateway_append_a_round_trip_alike(
    twin_engines: list[tuple[ContextEngine, Clock]],
) -> None:
    """The replay's fetch of a whole evicted output and the same call made by a model leave
    the same thread, the same view and the same bills."""
    (replay, replay_clock), (gateway, gateway_clock) = twin_engines
    item_id = _evicted_log(replay, replay_clock)
    _evicted_log(gateway, gateway_clock)
    trip = replay.rehydrate("c", [Need(None, ("step 7: compiled module_7.c",))])
    assert trip is not None
    made = replay.conversation("c").thread[-2].block
    fetched = Fetched(made, replay.read_session_file(item_id).text)
    assert gateway.round_trip("c", [fetched]) == trip
    for engine in (replay, gateway):
        engine.build_request("c", "claude-sonnet-4-5", "system")
    a, b = replay.conversation("c"), gateway.conversation("c")
    assert [(tb.block, tb.kind, tb.item_id) for tb in a.thread] == [
        (tb.block, tb.kind, tb.item_id) for tb in b.thread
    ]
    assert a.thread.baseline == b.thread.baseline
    assert (a.accounting.ours_billed, a.accounting.baseline_billed) == (
        b.accounting.ours_billed,
        b.accounting.baseline_billed,
    )
    assert a.rehydrations == b.rehydrations


def test_a_block_fetched_back_whole_counts_the_tokens_it_was_first_shown_with(
    engine: ContextEngine, clock: Clock
) -> None:
    """One text, one count: the whole output fetched back weighs what it weighed when first
    shown (the replay anchors that to billing), not a second estimate of the same text, so
    the request after the round trip is not larger than its twin by the estimators' gap."""
    item_id = _evicted_log(engine, clock)
    c = engine.conversation("c")
    source = next(tb for tb in c.thread if tb.item_id == item_id and tb.evicted)
    trip = engine.rehydrate("c", [Need(None, ("compiled module_7.c into module_7.o",))])
    assert trip is not None and trip.items == 1
    assert c.thread[-1].tokens == trip.tokens == source.original_tokens


def test_a_writes_content_fetched_back_weighs_its_share_of_what_its_tool_use_was_billed(
    engine: ContextEngine, clock: Clock
) -> None:
    """A Write's content comes back as text, not as the tool_use JSON it was first shown in:
    it weighs its share of that tool_use's count (anchored to billing in the replay), not a
    fresh estimate, which prices the same text higher (code counts dearer than JSON) and
    had put the request after the round trip over its recorded-style twin."""
    d = Driver(engine)
    engine.add_user_text("c", "write the table")
    d.call()
    content = "".join(f"row {i}: value {i * i}\n" for i in range(400))
    billed = engine.count_tokens(content, "json")  # what the replay's anchoring may give
    write = {"file_path": "/table.txt", "content": content}
    engine.add_assistant_content(
        "c", [{"type": "tool_use", "id": "toolu_w", "name": "Write", "input": write}],
        tokens=[billed],
    )  # fmt: skip
    engine.add_tool_result("c", ToolOutput("toolu_w", "File created successfully"))
    _go_on_past_a_cold_gap(d, clock)
    c = engine.conversation("c")
    written = next(tb for tb in c.thread if tb.kind is BlockKind.WRITE_INPUT)
    assert written.evicted and written.original_tokens == billed
    trip = engine.rehydrate("c", [Need(uri_of("/table.txt"), ("row 7: value 49",))])
    assert trip is not None and trip.items == 1
    assert c.thread[-1].text == content
    assert trip.tokens <= billed < engine.count_tokens(content, "code")
