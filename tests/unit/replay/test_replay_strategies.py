"""Each strategy on small hand-written sessions, against usage worked out by hand.

The sessions carry no usage, so every thread's prefix is the default 15,000 tokens (P) and
no cache is warm at the start. Block sizes come from the session itself (the estimate is
tokens.py's business); what is checked here is where each token is billed. The model is
Sonnet 4.5 (minimum cacheable prefix 1,024 tokens), calls are seconds apart (cache warm).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from ephemeral_context.replay.flow import Session
from ephemeral_context.replay.reader import DEFAULT_PREFIX_TOKENS, INTERRUPTED, read_session
from ephemeral_context.replay.simulate import StrategyResult
from ephemeral_context.replay.strategies import (
    AIDER_FILE_NOTE,
    CLEARED_PLACEHOLDER,
    FILE_REFERENCE,
    STRATEGIES,
    UNCHANGED_STUB,
)
from ephemeral_context.tokens import estimate_block_tokens

from tests.unit.replay.builder import Transcript, cat_n, text, tool_use

P = DEFAULT_PREFIX_TOKENS["main"]
APP = "\n".join(f"def handler_{i}(request):\n    return respond(request, {i})" for i in range(60))


def usage_of(result: StrategyResult) -> list[tuple[int, int, int]]:
    """(input, cache write, cache read) per call."""
    return [
        (c.usage.input_tokens, c.usage.cache_creation_input_tokens, c.usage.cache_read_input_tokens)
        for c in result.calls
    ]


def tokens(session: Session) -> list[int]:
    """Token size of every message block of the main thread, in order."""
    (thread,) = session.threads.values()
    return [b.tokens for m in thread.messages for b in m.blocks]


@pytest.fixture
def reread(tmp_path: Path) -> Session:
    """Read app.py, read it again unchanged, answer."""
    t = Transcript()
    t.user("Why does handler_7 return the wrong value?")
    t.assistant([tool_use("t1", "Read", file_path="/w/app.py")])
    t.tool_result("t1", cat_n(APP))
    t.assistant([tool_use("t2", "Read", file_path="/w/app.py")])
    t.tool_result("t2", cat_n(APP))
    t.assistant([text("It returns 7 by design.")])
    return read_session(t.write(tmp_path / "reread.jsonl"))


def test_recorded(reread: Session) -> None:
    u1, a1, r1, a2, r2 = tokens(reread)
    result = STRATEGIES["recorded"].replay(reread)
    assert usage_of(result) == [
        (0, P + u1, 0),  # cold: prefix and message written
        (0, a1 + r1, P + u1),  # the last breakpoint of call 1 is read back
        (0, a2 + r2, P + u1 + a1 + r1),
    ]
    assert result.peak_context == P + u1 + a1 + r1 + a2 + r2
    assert result.billed_input == pytest.approx(
        1.25 * (P + u1 + a1 + r1 + a2 + r2) + 0.1 * (2 * (P + u1) + a1 + r1)
    )
    assert result.retrievable == 1.0


def test_cc_dedup_replaces_the_unchanged_reread_with_the_stub(reread: Session) -> None:
    u1, a1, r1, a2, _ = tokens(reread)
    stub = estimate_block_tokens(UNCHANGED_STUB, "prose")
    result = STRATEGIES["cc-dedup"].replay(reread)
    assert usage_of(result)[2] == (0, a2 + stub, P + u1 + a1 + r1)
    assert result.peak_context == P + u1 + a1 + r1 + a2 + stub
    assert result.retrievable == 1.0


def twice(path: Path, first: dict[str, int], second: dict[str, int]) -> Session:
    """Read app.py with `first` offset/limit, then unchanged with `second`, answer."""
    t = Transcript()
    t.user("Why does handler_7 return the wrong value?")
    t.assistant([tool_use("t1", "Read", file_path="/w/app.py", **first)])
    t.tool_result("t1", cat_n(APP))
    t.assistant([tool_use("t2", "Read", file_path="/w/app.py", **second)])
    t.tool_result("t2", cat_n(APP))
    t.assistant([text("It returns 7 by design.")])
    return read_session(t.write(path / "twice.jsonl"))


@pytest.mark.parametrize(
    ("first", "second", "stubbed"),
    [
        ({}, {"offset": 1}, True),  # offset 1 is what a Read without one asks for
        ({"limit": 500}, {"limit": 500}, True),
        ({}, {"limit": 2000}, False),  # the same lines, other arguments: Claude Code resends
        ({"limit": 2000}, {}, False),
    ],
)
def test_cc_dedup_stubs_only_a_reread_with_the_same_arguments(
    tmp_path: Path, first: dict[str, int], second: dict[str, int], stubbed: bool
) -> None:
    """As Claude Code 2.1.97 to 2.1.197 decide (tests/e2e/test_claude_code_reread.py)."""
    session = twice(tmp_path, first, second)
    recorded = STRATEGIES["recorded"].replay(session)
    deduped = STRATEGIES["cc-dedup"].replay(session)
    stub = estimate_block_tokens(UNCHANGED_STUB, "prose")
    r2 = tokens(session)[-1]
    assert deduped.peak_context == recorded.peak_context - (r2 - stub if stubbed else 0)


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("replace_symbol_body", {"name_path": "handler_50", "body": "def handler_50(r): pass"}),
        ("delete_lines", {"start_line": 100, "end_line": 101}),
        ("replace_content", {"needle": "50\\)$", "repl": "0)", "mode": "regex"}),
    ],
)
def test_cc_dedup_does_not_stub_a_reread_after_a_serena_edit_of_the_file(
    tmp_path: Path, tool: str, tool_input: dict[str, object]
) -> None:
    """Serena's edit changes the file's time, outside the lines read again: Claude Code
    sends the Read in full (its stub needs the file unchanged since the last Read)."""
    t = Transcript()
    t.user("Why does handler_7 return the wrong value?")
    t.assistant([tool_use("p", "mcp__serena__activate_project", project="w")])
    t.tool_result("p", "The project with name 'w' at /w is activated.")
    head = "\n".join(APP.split("\n")[:20])
    for use in ("t1", "t3"):
        t.assistant([tool_use(use, "Read", file_path="/w/app.py", limit=20)])
        t.tool_result(use, cat_n(head))
        if use == "t1":
            t.assistant(
                [tool_use("t2", f"mcp__serena__{tool}", relative_path="app.py", **tool_input)]
            )
            t.tool_result("t2", "OK")
    t.assistant([text("It returns 7 by design.")])
    session = read_session(t.write(tmp_path / "edited.jsonl"))
    recorded = STRATEGIES["recorded"].replay(session)
    assert STRATEGIES["cc-dedup"].replay(session).peak_context == recorded.peak_context


def test_seed_inplace_puts_the_file_before_the_conversation(reread: Session) -> None:
    u1, a1, _r1, a2, _ = tokens(reread)
    ref = estimate_block_tokens(FILE_REFERENCE.format(path="/w/app.py"), "prose")
    file = estimate_block_tokens(APP, "code")
    result = STRATEGIES["seed-inplace"].replay(reread)
    assert usage_of(result) == [
        (0, P + u1, 0),
        # the file block lands between the prefix and the conversation: all after P re-written
        (0, file + u1 + a1 + ref, P),
        (0, a2 + ref, P + file + u1 + a1 + ref),
    ]


def test_aider_sends_files_after_the_history_with_a_breakpoint_there(reread: Session) -> None:
    u1, a1, _, a2, _ = tokens(reread)
    note = estimate_block_tokens(AIDER_FILE_NOTE.format(path="/w/app.py"), "prose")
    file = estimate_block_tokens(APP, "code")
    result = STRATEGIES["aider"].replay(reread)
    assert usage_of(result) == [
        (u1, P, 0),  # no chat files yet: only the system prompt is cached
        (u1 + a1 + note, file, P),  # the current turn comes after the last breakpoint
        (u1 + a1 + note + a2 + note, 0, P + file),
    ]


def slow_suites(path: Path, count: int) -> Session:
    """`count` commands with ~25K-token outputs each, then a short answer."""
    t = Transcript()
    t.user(f"Run the {count} slow suites and summarise.")
    for i in range(1, count + 1):
        t.assistant([tool_use(f"b{i}", "Bash", command=f"make suite-{i}")])
        t.tool_result(f"b{i}", f"suite {i} line of output\n" * 3300)
    t.assistant([text(f"All {count} pass.")])
    return read_session(t.write(path))


@pytest.fixture
def big_outputs(tmp_path: Path) -> Session:
    """Five commands: the context passes 100K at the fourth call."""
    return slow_suites(tmp_path / "big.jsonl", 5)


def test_clear_tool_uses_clears_old_results_and_breaks_the_cache(big_outputs: Session) -> None:
    sizes = tokens(big_outputs)
    u1, uses, results = sizes[0], sizes[1::2], sizes[2::2]
    assert 24_000 < results[0] < 35_000
    placeholder = estimate_block_tokens(CLEARED_PLACEHOLDER, "prose")
    recorded = STRATEGIES["recorded"].replay(big_outputs)
    result = STRATEGIES["clear-tool-uses"].replay(big_outputs)
    # Calls 1-4 stay under the trigger or keep all three tool uses: as recorded.
    assert usage_of(result)[:4] == usage_of(recorded)[:4]
    a, r = uses, results
    # Call 5 is over 100K: the first result is cleared, so the cache breaks right after u1
    # (the latest breakpoint position still equal to an earlier one within the lookback).
    written = a[0] + placeholder + a[1] + r[1] + a[2] + r[2] + a[3] + r[3]
    assert usage_of(result)[4] == (0, written, P + u1)
    # Call 6 clears the second result too; nothing after u1 was ever written with this
    # content, so everything after u1 is written again.
    after_u1 = a[0] + 2 * placeholder + a[1] + a[2] + r[2] + a[3] + r[3] + a[4] + r[4]
    assert usage_of(result)[5] == (0, after_u1, P + u1)
    context_6 = P + u1 + sum(a) + 2 * placeholder + r[2] + r[3] + r[4]
    assert result.calls[5].context_tokens == context_6
    shown = u1 + sum(a) + sum(r)  # the session's content, not the placeholders
    assert result.shown_tokens == recorded.shown_tokens == shown
    assert result.retrievable == pytest.approx(1 - (r[0] + r[1]) / shown)
    assert result.peak_context < recorded.peak_context


def test_results_cleared_before_the_model_saw_them_count_against_the_session(
    tmp_path: Path,
) -> None:
    """Six parallel commands past the trigger: the first three results are cleared in the
    very request that carries them (only the last 3 tool uses are kept). They are lost
    content the session produced, so retrievable counts them against what the session
    showed, not against what this layout sent (it had come to below zero)."""
    t = Transcript()
    t.user("Run the six slow suites at once.")
    uses = [tool_use(f"b{i}", "Bash", command=f"make suite-{i}") for i in range(1, 7)]
    t.assistant(uses)
    for i in range(1, 7):
        t.tool_result(f"b{i}", f"suite {i} line of output\n" * 3300)
    t.assistant([text("All six pass.")])
    session = read_session(t.write(tmp_path / "parallel.jsonl"))
    u1, *rest = tokens(session)
    a, r = rest[:6], rest[6:]
    result = STRATEGIES["clear-tool-uses"].replay(session)
    assert result.shown_tokens == u1 + sum(a) + sum(r)
    assert result.lost_tokens == sum(r[:3])
    assert result.retrievable == pytest.approx(1 - sum(r[:3]) / result.shown_tokens)


def test_twelve_parallel_reads_do_not_push_the_last_turn_out_of_the_lookback(
    tmp_path: Path,
) -> None:
    """24 blocks after the first call's breakpoint, but two runs (the uses, the results):
    the second call reads what the first wrote, as the API's lookback counts positions."""
    t = Transcript()
    t.user("Read the twelve modules.")
    t.assistant([tool_use(f"r{i}", "Read", file_path=f"/w/m{i}.py") for i in range(12)])
    for i in range(12):
        t.tool_result(f"r{i}", cat_n(f"def f{i}():\n    return {i}"))
    t.assistant([text("They all return their index.")])
    session = read_session(t.write(tmp_path / "parallel.jsonl"))
    u1, *rest = tokens(session)
    assert len(rest) == 24
    recorded = STRATEGIES["recorded"].replay(session)
    assert usage_of(recorded)[1] == (0, sum(rest), P + u1)


def test_idle_gap_and_model_switch_find_the_cache_cold(tmp_path: Path) -> None:
    """A gap over 5 minutes expires everything; a new model has its own, empty cache."""
    t = Transcript()
    t.user("first question")
    t.assistant([text("first answer")])
    t.wait(301).user("second question, after a coffee")
    t.assistant([text("second answer")])
    t.wait(10).user("third question")
    t.assistant([text("third answer")], model="claude-opus-4-5-20251101")
    t.wait(10).user("fourth question")
    t.assistant([text("fourth answer")], model="claude-opus-4-5-20251101")
    session = read_session(t.write(tmp_path / "gaps.jsonl"))
    u1, a1, u2, a2, u3, a3, u4 = tokens(session)
    result = STRATEGIES["recorded"].replay(session)
    assert usage_of(result) == [
        (0, P + u1, 0),
        (0, P + u1 + a1 + u2, 0),  # 5 min 3 s after the first call started: expired
        (0, P + u1 + a1 + u2 + a2 + u3, 0),  # another model, another cache
        (0, a3 + u4, P + u1 + a1 + u2 + a2 + u3),
    ]
    assert [c.model for c in result.calls][2:] == ["claude-opus-4-5-20251101"] * 2


def test_first_call_reads_a_prefix_an_earlier_session_warmed(tmp_path: Path) -> None:
    """Recorded: 9,000 read at the first call. The prefix is 9,000 and is modelled warm."""
    t = Transcript()
    t.user("continue where we stopped")
    t.assistant([text("On it.")], usage={"read": 9000, "write": 500})
    t.user("thanks")
    t.assistant([text("Done.")], usage={"read": 9500, "write": 30})
    session = read_session(t.write(tmp_path / "warm.jsonl"))
    u1, a1, u2 = tokens(session)
    hidden = 9500 - 9000 - u1  # counted by the first call beyond prefix and message
    assert session.threads[session.calls[0].thread].hidden_tokens == hidden
    result = STRATEGIES["recorded"].replay(session)
    assert usage_of(result) == [(0, hidden + u1, 9000), (0, a1 + u2, 9500)]


@pytest.mark.parametrize("name", ["ours", "ours-lossless"])
def test_the_engine_writes_the_unrecorded_context_the_warm_prefix_does_not_hold(
    tmp_path: Path, name: str
) -> None:
    """Only the client's prefix was warm: what Claude Code added after it unrecorded is
    written at the first call by every strategy (the engine's single system block had let
    the warm entry cover it too)."""
    t = Transcript()
    t.user("continue where we stopped")
    t.assistant([text("On it.")], usage={"read": 9000, "write": 500})
    session = read_session(t.write(tmp_path / "warm.jsonl"))
    first = STRATEGIES[name].replay(session).calls[0].usage
    assert first.cache_read_input_tokens == 9000
    assert first.cache_creation_input_tokens + first.input_tokens >= 500


@pytest.fixture
def seven_outputs(tmp_path: Path) -> Session:
    """Seven commands: the context passes 150K at the seventh call."""
    return slow_suites(tmp_path / "long.jsonl", 7)


def test_clear_at_least_clears_in_chunks_and_keeps_the_cache_warm(
    seven_outputs: Session,
) -> None:
    every_call = STRATEGIES["clear-tool-uses"].replay(seven_outputs)
    chunked = STRATEGIES["clear-at-least"].replay(seven_outputs)
    sizes = [c.context_tokens for c in chunked.calls]
    first = next(i for i, (a, b) in enumerate(itertools.pairwise(sizes)) if b < a) + 1
    # The chunk (at least 50K: three ~25K results) is cleared once, then the cache is warm:
    # the next call reads everything the clearing call wrote.
    clearing = chunked.calls[first].usage
    recorded = [c.context_tokens for c in STRATEGIES["recorded"].replay(seven_outputs).calls]
    added = recorded[first] - recorded[first - 1]
    assert sizes[first - 1] - sizes[first] >= 50_000 - added
    after = chunked.calls[first + 1].usage
    assert after.cache_read_input_tokens == clearing.total_input_tokens - clearing.input_tokens
    assert chunked.billed_input < every_call.billed_input
    assert 0 < chunked.retrievable < 1  # lossy: the cleared results are gone


def test_compaction_summarises_past_the_trigger_and_restarts_from_the_summary(
    seven_outputs: Session,
) -> None:
    recorded = STRATEGIES["recorded"].replay(seven_outputs)
    compacted = STRATEGIES["compaction"].replay(seven_outputs)
    sizes = [c.context_tokens for c in recorded.calls]
    first = next(i for i, size in enumerate(sizes) if size > 150_000)
    # Until the trigger, the same requests as recorded.
    assert usage_of(compacted)[:first] == usage_of(recorded)[:first]
    # The compacting call pays the summarising step over the whole prompt, then the answer.
    assert compacted.calls[first].context_tokens == sizes[first]
    assert compacted.calls[first].output_tokens > recorded.calls[first].output_tokens
    assert compacted.calls[first].billed_input > recorded.calls[first].billed_input
    # Afterwards the thread is the prefix, the summary and what came after.
    assert compacted.calls[first + 1].context_tokens < 0.5 * sizes[first + 1]
    assert compacted.peak_context == sizes[first] < recorded.peak_context
    assert compacted.retrievable < 0.5


def test_a_compaction_the_person_interrupted_is_done_again_by_the_next_call(
    tmp_path: Path,
) -> None:
    """The request that passes the trigger is interrupted before its answer: the client never
    gets the compaction block, so the next call sends the whole conversation and is the one
    that pays the summarising step (the interrupted one was sent, unbilled, lost nothing)."""
    t = Transcript()
    t.user("Run the 6 slow suites and summarise.")
    for i in range(1, 7):
        t.assistant([tool_use(f"b{i}", "Bash", command=f"make suite-{i}")])
        t.tool_result(f"b{i}", f"suite {i} line of output\n" * 3300)
    t.wait(4).user([text(INTERRUPTED)])
    t.wait(10).user("Go on.")
    t.assistant([text("All 6 pass.")])
    session = read_session(t.write(tmp_path / "interrupted.jsonl"))
    assert len(session.unanswered) == 1
    recorded = STRATEGIES["recorded"].replay(session)
    compacted = STRATEGIES["compaction"].replay(session)
    last, summarised = recorded.calls[-1], compacted.calls[-1]
    assert last.context_tokens > 150_000
    assert summarised.context_tokens == last.context_tokens
    assert summarised.output_tokens > last.output_tokens
    assert summarised.billed_input > last.billed_input


def test_clear_thinking_drops_earlier_turns_thinking(tmp_path: Path) -> None:
    t = Transcript()
    for turn in range(3):
        t.user(f"Question {turn}?")
        t.assistant(
            [
                {
                    "type": "thinking",
                    "thinking": "Let me think it through. " * 400,
                    "signature": "s",
                },
                text(f"Answer {turn}."),
            ],
            usage={"write": 9000 + 3000 * turn},
        )
    session = read_session(t.write(tmp_path / "thinking.jsonl"))
    recorded = STRATEGIES["recorded"].replay(session)
    cleared = STRATEGIES["clear-thinking"].replay(session)
    assert cleared.calls[0].context_tokens == recorded.calls[0].context_tokens
    assert cleared.calls[2].context_tokens < recorded.calls[2].context_tokens
    assert cleared.retrievable < 1.0


def test_clear_thinking_keeps_the_last_assistant_turns_thinking_until_the_next_answers(
    tmp_path: Path,
) -> None:
    """keep's default, one thinking turn, is the most recent assistant turn: a request that
    opens a new turn (a prompt after the answer) still carries the answer's thinking; it
    goes once the new turn has an assistant message of its own."""
    thinking = {"type": "thinking", "thinking": "Let me think it through. " * 400, "signature": "s"}
    t = Transcript()
    t.user("Question 0?")
    t.assistant([thinking, text("Answer 0.")], usage={"write": 9000})
    t.user("Question 1?")
    t.assistant([thinking, tool_use("b1", "Bash", command="make")], usage={"write": 12000})
    t.tool_result("b1", "ok")
    t.assistant([text("Answer 1.")], usage={"write": 12100})
    session = read_session(t.write(tmp_path / "thinking-turns.jsonl"))
    recorded = STRATEGIES["recorded"].replay(session)
    cleared = STRATEGIES["clear-thinking"].replay(session)
    contexts = [c.context_tokens for c in cleared.calls]
    assert contexts[:2] == [c.context_tokens for c in recorded.calls[:2]]
    assert contexts[2] < recorded.calls[2].context_tokens


def test_a_warm_prefix_keeps_the_clients_ttl_whatever_the_strategy_asks(tmp_path: Path) -> None:
    """The client wrote the warm prefix with its 1-hour TTL: `ours`, whose first request
    asks for 5 minutes, still reads it after a 10-minute gap, as `recorded` does."""
    t = Transcript()
    t.user("continue where we stopped")
    t.assistant([text("On it.")], usage={"read": 9000, "write_1h": 500})
    t.wait(600).user("thanks")
    t.assistant([text("Done.")], usage={"read": 9500, "write_1h": 30})
    session = read_session(t.write(tmp_path / "warm-1h.jsonl"))
    for name in ("recorded", "ours"):
        second = STRATEGIES[name].replay(session).calls[1].usage
        assert second.cache_read_input_tokens >= 9000, name
