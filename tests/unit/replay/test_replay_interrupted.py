"""Requests the person interrupted before any answer: sent, so they warm the cache, though
no line records them (a user line, then "[Request interrupted by user]")."""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.replay.reader import INTERRUPTED, read_session
from ephemeral_context.replay.report import replay_session
from ephemeral_context.replay.strategies import STRATEGIES

from tests.property.invariants import replay_invariants
from tests.unit.replay.builder import Transcript, text, tool_use

USAGE = {"input": 1, "read": 0, "write": 9_000}


def _interrupted(after_answer: bool) -> Transcript:
    t = Transcript()
    t.user("first question")
    t.assistant([text("first answer")], USAGE)
    t.wait(600).user("a long question")  # the cache of the first call has expired
    if after_answer:
        t.assistant([text("half an ans")])  # streaming had begun: its line is there
    t.wait(4).user([text(INTERRUPTED)])
    t.wait(200).user("the question again")
    t.assistant([text("second answer")], {"input": 1, "read": 9_000, "write": 30})
    return t


def test_an_interrupted_request_warms_the_cache_the_next_call_reads(tmp_path: Path) -> None:
    session = read_session(_interrupted(after_answer=False).write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 2
    [sent] = session.unanswered
    assert sent.thread == session.calls[1].thread
    cut = session.request(sent)[-1]
    assert [b.text for b in cut.blocks] == ["a long question"]
    modelled = STRATEGIES["recorded"].replay(session).calls
    # 200 s after the interrupted request, not 804 s after the first call: warm
    assert modelled[1].usage.cache_read_input_tokens > 0
    assert modelled[1].usage.cache_creation_input_tokens < 100
    # and nothing is billed for it
    assert len(modelled) == 2


def test_an_answer_that_had_begun_is_no_unanswered_request(tmp_path: Path) -> None:
    session = read_session(_interrupted(after_answer=True).write(tmp_path / "s.jsonl"))
    assert session.unanswered == []


def _interrupted_after_tools(fork: bool) -> Transcript:
    """A request sent with tool results and stopped before its answer, the notice linked
    to the progress record Claude Code (2.1.x) writes after each result; `fork`: a message
    after it is later edited and sent again, so two threads hold the notice."""
    t = Transcript()
    t.user("first question")
    t.assistant([tool_use("t1", "Grep", pattern="x")], USAGE)
    t.wait(600).tool_result("t1", "Found 3 files")  # the first call's cache has expired
    t.other("progress", data={"type": "hook_progress"})
    t.wait(4).user([text(INTERRUPTED)])
    t.wait(200).user("go on")
    t.assistant([text("second answer")], {"input": 1, "read": 9_000, "write": 30})
    if fork:
        asked = t.parent
        t.wait(30).user("a third question")
        t.assistant([text("third answer")], {"input": 1, "read": 9_030, "write": 10})
        t.parent = asked
        t.wait(30).user("the third question, edited")
        t.assistant([text("edited answer")], {"input": 1, "read": 9_030, "write": 10})
    return t


def test_a_request_stopped_after_tool_results_warms_the_cache(tmp_path: Path) -> None:
    session = read_session(_interrupted_after_tools(fork=False).write(tmp_path / "s.jsonl"))
    [sent] = session.unanswered
    cut = session.request(sent)[-1]
    assert [b.text for b in cut.blocks] == ["Found 3 files"]
    modelled = STRATEGIES["recorded"].replay(session).calls
    assert modelled[1].usage.cache_read_input_tokens > 0
    assert modelled[1].usage.cache_creation_input_tokens < 100


def test_a_stopped_request_goes_to_the_thread_that_goes_on_first(tmp_path: Path) -> None:
    """Both threads of a fork hold the notice; the request was sent in the one whose next
    call followed it, not in the fork whose calls began later."""
    session = read_session(_interrupted_after_tools(fork=True).write(tmp_path / "s.jsonl"))
    assert len(session.threads) == 2
    [sent] = session.unanswered
    assert sent.thread == session.calls[1].thread
    modelled = STRATEGIES["recorded"].replay(session).calls
    assert modelled[1].usage.cache_read_input_tokens > 0


def test_ours_sends_an_interrupted_request_as_every_strategy_does(tmp_path: Path) -> None:
    """A request the person stopped before its answer warms the cache (the API had read it);
    `ours` sends it too, so the call 200 s later reads what `recorded` reads, and that
    call's request carries the interrupted user message once, completed."""
    session = read_session(_interrupted(after_answer=False).write(tmp_path / "s.jsonl"))
    assert len(session.unanswered) == 1
    results = replay_session(session).strategies
    for name in ("ours", "ours-lossless"):
        second = results[name].calls[1].usage
        assert second.cache_read_input_tokens > 0
        assert (
            second.cache_read_input_tokens
            == results["recorded"].calls[1].usage.cache_read_input_tokens
        )
    assert len(results["ours"].calls) == 2  # and nothing is billed for it


@pytest.mark.parametrize("fork", [False, True])
def test_an_interrupted_request_keeps_the_invariants(tmp_path: Path, fork: bool) -> None:
    """Its cut last message is fed once, the rest with the next call; a thread edited after
    it branches off the messages fed whole (tests/property/invariants.py)."""
    path = _interrupted_after_tools(fork).write(tmp_path / "s.jsonl")
    found = replay_invariants(read_session(path))
    assert found.broken() == {}


def test_an_interrupted_request_whose_clock_went_back_follows_the_call_before_it(
    tmp_path: Path,
) -> None:
    """Found by a random run of tests/property's damages (a corpus session, timestamps
    reversed over a span): the request stopped after a tool result was stamped before the
    call whose answer asked for that tool, so it was sent first, carrying messages that call
    had not seen, and `ours` fed them before it. As a call, it follows its chain."""
    t = Transcript()
    t.user("first question")
    t.assistant([tool_use("t1", "Grep", pattern="x")], USAGE)
    t.wait(5).tool_result("t1", "Found 3 files")
    t.wait(5).assistant(
        [tool_use("t2", "Grep", pattern="y")], {"input": 1, "read": 9_000, "write": 20}
    )
    t.wait(-100).tool_result("t2", "Found 1 file")  # the clock goes back
    t.wait(4).user([text(INTERRUPTED)])
    t.wait(200).user("go on")
    t.assistant([text("second answer")], {"input": 1, "read": 9_020, "write": 30})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    [sent] = session.unanswered
    before = session.calls[1]
    assert sent.thread == before.thread and sent.n_messages > before.n_messages
    assert sent.started >= before.started
    assert replay_invariants(session).broken() == {}
