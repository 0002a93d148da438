"""`ours` on the real transcripts and the honesty rule for evicted content."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from ephemeral_context.context.accounting import kept_request
from ephemeral_context.context.engine import BlockKind, ContextEngine, Need
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import Report, replay, replay_session

from tests.transcripts import SUBAGENT, all_transcripts, shared, transcript
from tests.unit.context.context_helpers import Clock, Driver

PYTHON = "".join(
    f"def handler_{i}(request):\n    value = request.get('k{i}')\n    return value * {i}\n\n\n"
    for i in range(60)
)


def test_an_edit_of_evicted_text_pays_a_symbol_rehydration(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "fix handler_42")
    d.call()
    d.read("/app.py", PYTHON)
    for step in range(20):
        d.call()
        d.bash(f"log {step}\n" * 100)
        clock.advance(10)
    clock.advance(7200)  # cold: the read is evicted or moved at no rewrite cost
    d.call()
    d.bash("more\n" * 50)
    clock.advance(10)
    d.call()
    conversation = engine.conversation("c")
    view = conversation.files["file:///app.py"]
    assert not view.in_segment and all(conversation.thread[i].evicted for i in view.blocks)
    needle = "    value = request.get('k42')\n    return value * 42"
    trip = engine.rehydrate("c", [Need("file:///app.py", (needle,))])
    assert trip is not None and trip.items == 1
    assert 0 < trip.tokens < 200  # one definition, not the whole file
    assert trip.output_tokens > 0  # the model's tool_use is output
    assert conversation.policy.touches["file:///app.py"][-1] == conversation.calls  # a use
    ask, answer = conversation.thread[-2], conversation.thread[-1]
    assert ask.role == "assistant" and ask.block["name"] == "read_session_file"
    assert ask.block["input"] == {"id": view.item_id, "symbol": "handler_42"}
    assert answer.block["type"] == "tool_result"
    assert answer.block["content"].startswith(f"[{view.item_id}: handler_42]\ndef handler_42(")
    assert answer.block["tool_use_id"] == ask.block["id"]
    # The request after the round trip goes on with the same call: the recorded-style
    # client makes no such request, so neither twin is billed for it again.
    bills = conversation.accounting
    twins, ours = (bills.baseline_billed, bills.kept_billed), bills.ours_billed
    d.call()
    assert (bills.baseline_billed, bills.kept_billed) == twins and bills.ours_billed > ours
    built = engine.last_request("c")
    assert built is not None
    kept = kept_request(conversation.thread, built)
    assert len(kept.messages) == len(conversation.thread) - 2  # no tool_use, no tool_result
    restored = sum(
        tb.original_tokens - tb.tokens
        for tb in conversation.thread
        if tb.evicted and tb.kind is not BlockKind.CONSOLIDATED
    )
    fetched = sum(tb.tokens for tb in conversation.thread.blocks[-2:])
    sent = sum(b.tokens for b in built.cache_request.messages)
    assert restored > 0 and sum(b.tokens for b in kept.messages) == sent - fetched + restored
    last = repr(d.requests[-1])
    assert "'symbol': 'handler_42'" in last
    assert "def handler_41" not in last.split("'symbol': 'handler_42'")[-1]
    assert engine.rehydrate("c", [Need("file:///app.py", (needle,))]) is None  # now visible


@pytest.fixture(scope="module")
def sessions() -> Report:
    """The four traces and the 2026 corpus (issue 11's 65 sessions), replayed once."""
    return replay([*all_transcripts(), *sorted(shared("corpus").glob("*.jsonl"))])


@pytest.mark.slow
def test_ours_keeps_everything_retrievable_and_cuts_the_peak_on_the_real_sessions(
    sessions: Report,
) -> None:
    assert len(sessions.sessions) == 65
    peaks, billed = [], []
    for session in sessions.sessions:
        results = session.strategies
        assert results["ours"].retrievable == 1.0
        peaks.append(results["ours"].peak_context / results["recorded"].peak_context - 1)
        billed.append(results["ours"].billed_input / results["recorded"].billed_input - 1)
    # Issue 11's targets: billed at least 25% below recorded (-25.2% since the 5-minute
    # bet is hedged; -24.7% before, once `ours` paid for the unrecorded context as
    # `recorded` does), peak at least 35% below: -31.7%, not reached (docs/cost-model.md,
    # Known limits); the floors keep them there.
    # Over the four traces alone the peak is -0.4% since a warm cut must be able to lose a
    # round trip (-20.4% before): against 5-minute clients the engine is level with its
    # twins and has only the 1% tolerance to bet with.
    # Since the engine writes the client's head at the client's TTL, as the gateway sends
    # it (the replay had bet the first request's system prompt on 5 minutes, which the
    # gateway, keeping the client's cache_control, never sends): -21.4%, the floor -21%.
    # Since a tool result carrying an image stays as sent (the store holds text: an evicted
    # screenshot could never come back, and the gateway sends the client's image), two
    # sessions keep their screenshots: billed -21.3%, peak -30.5% (-31.7% before), the
    # floor -30%.
    assert statistics.median(billed) <= -0.21
    assert statistics.median(peaks) <= -0.30


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="a cut is a bet that can lose on the session it is made in: over the 65 sessions "
    "ours bills more than the cheapest lossless strategy on 10, by at most 5.8% "
    "(docs/benchmarks.md, baselines), most by a read cut and then edited or quoted "
    "right after, a round trip at one of their last calls (docs/cost-model.md, Do no harm "
    "and the eighth round)",
)
def test_ours_is_the_cheapest_lossless_strategy_on_every_real_session(sessions: Report) -> None:
    for session in sessions.sessions:
        results = session.strategies
        lossless = [r.billed_input for r in results.values() if r.retrievable == 1.0]
        assert results["ours"].billed_input <= min(lossless)


def _replay_json(path: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "replay", str(path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout


def test_the_replay_report_is_the_same_run_to_run_and_across_hash_seeds() -> None:
    """Nothing in the engine's decisions may depend on str hashing, id() or the clock."""
    path = transcript(SUBAGENT)
    first = _replay_json(path, "1")
    assert json.loads(first)["sessions"]
    assert _replay_json(path, "1") == first
    assert _replay_json(path, "2") == first


def test_a_new_tool_list_with_other_schemas_is_priced_anew(engine: ContextEngine) -> None:
    engine.add_user_text("c", "go")
    short = [{"name": "a", "description": "x", "input_schema": {"type": "object"}}]
    engine.build_request("c", "claude-sonnet-4-6", "system", short)
    first = engine.last_request("c")
    longer = [{**short[0], "description": "x" * 4000}]
    engine.build_request("c", "claude-sonnet-4-6", "system", longer)
    second = engine.last_request("c")
    assert first is not None and second is not None
    assert second.cache_request.tools[0].tokens > first.cache_request.tools[0].tokens
    assert second.cache_request.tools[0].key != first.cache_request.tools[0].key


def test_what_a_call_fetched_back_stays_for_the_next_when_older_content_suffices() -> None:
    """3e72c419b0: a 2,679-token output cut at call 9 and quoted at call 11 comes back at
    the count it was first shown with; at call 12 the request is 128 tokens over its twin
    (the placeholder and the round trip's tool_use), and the twin bound takes two older
    small outputs rather than the fetched copy, which call 13 quotes again: one round
    trip, not two (ours 0.910 -> 0.832 of recorded; test_policy.py holds the rule). Since
    its Zed bridge Reads are file reads, the quote is fetched by its one definition or not
    cut at all: still no second round trip, 0.776 of recorded. Since the engine writes the
    client's head at the client's TTL, as the gateway sends it (the replay had bet the
    head on 5 minutes, a lead the gateway never has, which paid for that cut), nothing is
    cut there: 0.950 of recorded (1.011x `ours-lossless`)."""
    path = next(iter(sorted(shared("corpus").glob("*__3e72c419b0__*.jsonl"))), None)
    if path is None:
        pytest.skip("the corpus has no 3e72c419b0 session")
    results = replay_session(read_session(path)).strategies
    assert results["ours"].rehydrations == 0
    assert results["ours"].billed_input < 0.96 * results["recorded"].billed_input
    assert results["ours"].peak_context <= results["recorded"].peak_context
