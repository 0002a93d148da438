"""Parallel tool results: sent in the order they finished, rendered in the order asked."""

from __future__ import annotations

from pathlib import Path

from ephemeral_context.replay.flow import Session
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.strategies import STRATEGIES

from tests.unit.replay.builder import Transcript, text, tool_use

SLOW = "slow " * 2_000
FAST = "fast"


def _session(tmp_path: Path, written: tuple[str, str]) -> Session:
    """Two parallel searches, their results written in the order `written`, then a reply."""
    t = Transcript()
    t.user("search both")
    t.assistant(
        [tool_use("t1", "Grep", pattern="slow"), tool_use("t2", "Grep", pattern="fast")],
        usage={"write": 6_000},
    )
    for tool_use_id in written:
        t.tool_result(tool_use_id, SLOW if tool_use_id == "t1" else FAST)
    t.assistant([text("found")], usage={"read": 6_000, "write": 3_000})
    t.user("thanks").assistant([text("ok")], usage={"read": 9_000, "write": 20})
    return read_session(t.write(tmp_path / "s.jsonl"))


def test_results_are_rendered_in_the_order_of_their_tool_uses(tmp_path: Path) -> None:
    """The fast result was written (and sent) first; the API renders the slow one first, so
    Claude Code's breakpoint, on the last result it sent, is on the first one rendered."""
    session = _session(tmp_path, written=("t2", "t1"))
    last = session.request(session.calls[1])[-1]
    assert [b.tool_use_id for b in last.blocks] == ["t1", "t2"]
    assert last.marked == 0


def test_what_follows_the_marked_result_is_plain_input_and_read_by_no_one(
    tmp_path: Path,
) -> None:
    """The fast result is billed as input; the next call reads up to the slow one only."""
    calls = STRATEGIES["recorded"].replay(_session(tmp_path, written=("t1", "t2"))).calls
    in_order = calls[1].usage
    calls = STRATEGIES["recorded"].replay(_session(tmp_path, written=("t2", "t1"))).calls
    reordered, after = calls[1].usage, calls[2].usage
    assert in_order.input_tokens == 0
    assert reordered.input_tokens > 0
    assert reordered.cache_creation_input_tokens < in_order.cache_creation_input_tokens
    fast = reordered.input_tokens
    assert after.cache_creation_input_tokens > fast


def test_results_that_finished_in_order_are_left_as_they_are(tmp_path: Path) -> None:
    session = _session(tmp_path, written=("t1", "t2"))
    last = session.request(session.calls[1])[-1]
    assert [b.tool_use_id for b in last.blocks] == ["t1", "t2"]
    assert last.marked is None


def _reordered(tmp_path: Path, plain_input: int) -> Session:
    """Two parallel searches written fast first, and the reply's recorded plain input."""
    t = Transcript()
    t.user("search both")
    t.assistant(
        [tool_use("t1", "Grep", pattern="slow"), tool_use("t2", "Grep", pattern="fast")],
        usage={"write": 6_000},
    )
    t.tool_result("t2", FAST).tool_result("t1", SLOW)
    t.assistant([text("found")], usage={"input": plain_input, "read": 6_000, "write": 2_500})
    return read_session(t.write(tmp_path / "s.jsonl"))


def test_the_plain_input_sizes_what_follows_the_marked_result(tmp_path: Path) -> None:
    """What the API renders after the marked result is exactly the call's uncached input;
    the rest of the step's growth goes to the blocks before it."""
    session = _reordered(tmp_path, plain_input=40)
    results = session.request(session.calls[1])[-1].blocks
    assert [(b.tool_use_id, b.tokens) for b in results][1] == ("t2", 40)
    [_, second] = STRATEGIES["recorded"].replay(session).calls
    assert second.usage.input_tokens == 40
    assert second.usage.cache_creation_input_tokens == 2_500


def test_a_plain_input_that_counts_more_than_what_follows_sizes_nothing(tmp_path: Path) -> None:
    """A gateway that counts cached tokens as input too: most of the request, on a block
    estimated at a sliver of it, is no measure of that block."""
    session = _reordered(tmp_path, plain_input=50_000)
    fast = session.request(session.calls[1])[-1].blocks[1]
    assert fast.tool_use_id == "t2" and fast.tokens < 100
