"""The re-use estimate for outputs: learnt from what the responses quote, visible or not."""

from __future__ import annotations

import itertools

import pytest
from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput
from ephemeral_context.context.policy import expected_wait, idle_reuse_probability
from ephemeral_context.context.quotes import QuoteIndex
from ephemeral_context.context.reuse import ReuseLog
from ephemeral_context.context.thread import Thread

from tests.unit.context.context_helpers import MODEL, SYSTEM, source


def outputs(n: int) -> Thread:
    """A thread of `n` tool outputs, output `i` shown at call `i`."""
    thread = Thread()
    for i in range(n):
        text = source(4, f"out{i}_")
        thread.append(i, "user", {"type": "text", "text": text}, 40, kind=BlockKind.TOOL_RESULT,
                      item_id=f"id{i}", text=text)  # fmt: skip
    return thread


def quote(i: int) -> str:
    """Three lines of output `i`, re-indented, in a response."""
    return f"As it said:\n  def out{i}_f1(x):\n      return x + 1\n  def out{i}_f2(x):\n"


def test_outputs_quoted_after_a_while_make_an_idle_output_likely_needed() -> None:
    """Every output was quoted four calls after it was shown: an output idle for three
    calls is more likely needed than not, and soon; in a session that quoted none, it is
    not."""
    thread = outputs(12)
    quoting, silent = ReuseLog(), ReuseLog()
    index = QuoteIndex()
    for call in range(4, 12):
        quoting.observe(thread.blocks, index, [quote(call - 4)], call)
        silent.observe(thread.blocks, index, ["Done."], call)
    idle = thread[8]  # shown at call 8, idle for 3 calls at call 11
    chance, wait = quoting.estimate(idle, 11)
    # 8 spans of 4 calls ended in a use; 5 outputs quoted once have been idle 3 calls since
    assert chance == pytest.approx((8 + 1) / (8 + 5 + 2))
    assert wait == 1.0
    silent_chance, silent_wait = silent.estimate(idle, 11)
    assert silent_chance == pytest.approx(1 / (8 + 2)) and silent_wait is None


def test_the_estimate_is_the_rule_over_every_item_of_the_kind() -> None:
    """Outputs quoted at uneven gaps, some twice, some never: each output's estimate is the
    policy's rule over the spans of all the others (the log counts them by search)."""
    thread = outputs(16)
    log, index = ReuseLog(), QuoteIndex()
    for call in range(3, 16):
        texts = [quote(i) for i in range(call) if (call - i) in (2, 5) and i % 3]
        log.observe(thread.blocks, index, texts, call)
    gaps = [g for uses in log.uses.values() for g in (b - a for a, b in itertools.pairwise(uses))]
    assert sorted(set(gaps)) == [2, 3] and any(len(uses) == 1 for uses in log.uses.values())
    for tb in thread.blocks:
        idle = 15 - log.uses[tb.item_id or ""][-1]
        others = [15 - uses[-1] for item, uses in log.uses.items() if item != tb.item_id]
        expected = (idle_reuse_probability(idle, gaps, others), expected_wait(idle, gaps))
        assert log.estimate(tb, 15) == expected


def test_a_quote_is_one_use_per_call_and_files_keep_their_own_history() -> None:
    thread = outputs(2)
    text = source(4, "file_")
    thread.append(2, "user", {"type": "text", "text": text}, 40, kind=BlockKind.FILE,
                  item_id="f", uri="file:///a.py", text=text)  # fmt: skip
    log = ReuseLog()
    log.observe(thread.blocks, QuoteIndex(), [quote(0), quote(0), text], 3)
    assert log.uses == {"id0": [0, 3], "id1": [1]}


def test_a_response_quoting_a_visible_output_is_a_use(engine: ContextEngine) -> None:
    """The engine learns from every response it is given, before any cut was made."""
    engine.add_user_text("c", "go")
    engine.build_request("c", MODEL, SYSTEM)
    engine.add_assistant_content(
        "c", [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]
    )
    engine.add_tool_result("c", ToolOutput("t1", source(40, "out0_")))
    engine.build_request("c", MODEL, SYSTEM)
    engine.add_assistant_content("c", [{"type": "text", "text": quote(0)}])
    log = engine.conversation("c").reuse
    assert [uses for uses in log.uses.values() if len(uses) > 1] == [[1, 2]]
