"""Forked sessions: the copies of the parent's lines a fork starts with are history, not calls.

`/fork` (and `/branch`) copy the parent's lines into a new session file, each marked
`forkedFrom`; `claude --resume ID --fork-session` copies them unmarked, after the queue
operation of the fork's own prompt (tests/e2e/test_claude_code.py runs the real CLI). The
copied responses are the parent's calls, billed in the parent; the fork's cache starts from
what they wrote (it is shared by content), and the fork is billed for its own calls only.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.prices import priced
from ephemeral_context.replay.billing import Billing
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import recorded_billed, replay
from ephemeral_context.replay.strategies import STRATEGIES

from tests.unit.replay.builder import Transcript, text

FIRST = {"input": 3, "write": 9_000}
SECOND = {"input": 1, "read": 9_000, "write": 120}


def _parent() -> Transcript:
    t = Transcript()
    t.user("what does app.py do?")
    t.assistant([text("it prints hello")], FIRST)
    t.wait(20).user("and b.py?")
    t.assistant([text("it prints bye")], SECOND)
    return t


def _fork(parent: Transcript, form: str, gap: float, fork_usage: dict[str, int]) -> Transcript:
    """The parent's lines copied as `form` ("/fork" or "--fork-session") writes them, then
    one prompt and answer of the fork's own `gap` seconds after the parent's last line."""
    copies: list[dict[str, Any]] = []
    for line in copy.deepcopy(parent.lines):
        line["sessionId"] = "fork"
        if form == "/fork":
            line["forkedFrom"] = {"sessionId": "parent", "messageUuid": line["uuid"]}
        copies.append(line)
    fork = Transcript(parent=copies[-1]["uuid"], seconds=parent.seconds + gap)
    fork._ids = itertools.count(1_000)  # new lines get uuids of their own
    if form == "--fork-session":
        fork.other("queue-operation", operation="dequeue")
        fork.lines[-1].pop("uuid")
        fork.parent = copies[-1]["uuid"]
    fork.lines.extend(copies)
    fork.user("and in one word?")
    fork.assistant([text("hello")], fork_usage)
    return fork


FORMS = pytest.mark.parametrize("form", ["/fork", "--fork-session"])


@FORMS
def test_the_copied_calls_are_the_parents_not_the_forks(tmp_path: Path, form: str) -> None:
    parent = _parent()
    fork = _fork(parent, form, 30, {"input": 2, "read": 9_120, "write": 40})
    session = read_session(fork.write(tmp_path / "fork.jsonl"))
    assert session.problems == []
    assert [c.index for c in session.inherited] == [0, 1]
    assert [c.usage.cache_creation_input_tokens for c in session.inherited if c.usage] == [
        9_000,
        120,
    ]
    [own] = session.calls
    assert own.index == 0 and own.usage is not None and own.usage.cache_read_input_tokens == 9_120
    # the fork's request carries the parent's conversation, then its own prompt
    texts = [b.text for m in session.request(own) for b in m.blocks]
    assert texts == [
        "what does app.py do?",
        "it prints hello",
        "and b.py?",
        "it prints bye",
        "and in one word?",
    ]


@FORMS
def test_the_fork_reads_what_the_parent_wrote_within_the_ttl(tmp_path: Path, form: str) -> None:
    warm = read_session(_fork(_parent(), form, 30, SECOND).write(tmp_path / "warm.jsonl"))
    cold = read_session(_fork(_parent(), form, 400, SECOND).write(tmp_path / "cold.jsonl"))
    [warm_call] = STRATEGIES["recorded"].replay(warm).calls
    [cold_call] = STRATEGIES["recorded"].replay(cold).calls
    # 30 s after the parent's last write (5-minute TTL): all of it is read
    assert warm_call.usage.cache_read_input_tokens > 9_000
    assert warm_call.usage.cache_creation_input_tokens < 1_000  # its own prompt
    # 400 s after: the cache has expired, the fork writes it all again
    assert cold_call.usage.cache_read_input_tokens == 0
    assert cold_call.usage.cache_creation_input_tokens > 9_000


def test_both_files_replayed_bill_the_parents_calls_once(tmp_path: Path) -> None:
    parent = _parent()
    parent_file = parent.write(tmp_path / "parent.jsonl")
    fork_file = _fork(parent, "/fork", 30, SECOND).write(tmp_path / "fork.jsonl")
    report = replay([parent_file, fork_file])
    assert [item.calls for item in report.sessions] == [2, 1]
    fork = report.sessions[1]
    price = priced(fork.session.model)
    calls = [*report.sessions[0].session.calls, *fork.session.calls]
    billed = [recorded_billed(item.session) for item in report.sessions]
    assert sum(b or 0.0 for b in billed) == pytest.approx(
        sum(price.billed_input(c.usage) for c in calls if c.usage)
    )
    assert fork.fidelity is not None and abs(fork.fidelity.billed_input_error) < 0.05


def test_a_session_that_starts_with_a_queued_prompt_is_no_fork(tmp_path: Path) -> None:
    """Print mode writes its prompt's queue operation first; lines stamped after it are the
    session's own."""
    t = Transcript()
    t.other("queue-operation", operation="dequeue")
    t.lines[-1].pop("uuid")
    t.parent = None
    t.user("what does app.py do?")
    t.assistant([text("it prints hello")], FIRST)
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.inherited == [] and len(session.calls) == 1


def test_a_fork_whose_copies_lost_a_cache_count_claims_no_fidelity(tmp_path: Path) -> None:
    """The copies' usage is the parent's bill, but it sizes the history the fork's own calls
    replay: counts an export dropped there make the fork's fidelity a made-up figure."""
    fork = _fork(_parent(), "/fork", 30, {"input": 2, "read": 9_120, "write": 40})
    del fork.lines[1]["message"]["usage"]["cache_creation_input_tokens"]  # the first response
    report = replay([fork.write(tmp_path / "fork.jsonl")])
    (item,) = report.sessions
    assert item.session.recorded and item.session.inherited[0].usage is not None
    assert (item.billing, item.fidelity) == (Billing.OTHER, None)
