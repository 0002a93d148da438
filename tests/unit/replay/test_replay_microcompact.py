"""Claude Code's silent microcompaction (releases before 2.1.9), read from the transcript."""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.replay.flow import Session
from ephemeral_context.replay.microcompact import warning_threshold
from ephemeral_context.replay.reader import CLEARED_RESULT, read_session

from tests.unit.replay.builder import Transcript, text, tool_use

BIG = "a " * 50_000
"""100,000 characters: 25,000 tokens by Claude Code's measure (characters / 4)."""
LARGE = "b " * 40_000
"""20,000 tokens by that measure."""


def _session(
    tmp_path: Path,
    version: str,
    context: int = 136_000,
    model: str = "claude-sonnet-4-5-20250929",
) -> Session:
    """Four large tool results, then a response whose usage puts the context at `context`
    tokens, then one more prompt and answer."""
    t = Transcript(model=model)
    t.user("read the logs")
    for n, body in enumerate((BIG, LARGE, LARGE, LARGE), 1):
        t.assistant(
            [tool_use(f"t{n}", "Bash", command=f"cat {n}.log")],
            usage={"write": 100},
            version=version,
        )
        t.tool_result(f"t{n}", body)
    t.assistant([text("read")], usage={"read": context - 1_000, "write": 999}, version=version)
    t.user("and now?").assistant([text("done")], usage={"write": 10}, version=version)
    t.user("thanks").assistant([text("ok")], usage={"write": 10}, version=version)
    return read_session(t.write(tmp_path / "s.jsonl"))


def _results(session: Session, call: int) -> list[str]:
    request = session.request(session.calls[call])
    return [b.text for m in request for b in m.blocks if b.type == "tool_result"]


def test_past_the_warning_threshold_the_oldest_results_are_cleared_from_then_on(
    tmp_path: Path,
) -> None:
    """85,000 tokens of results: the oldest goes (the 3 newest are kept, 60,000 are left,
    25,000 saved), from the first request after the response that crossed the threshold."""
    session = _session(tmp_path, "2.0.8")
    assert session.problems == []
    assert _results(session, 4) == [BIG, LARGE, LARGE, LARGE]
    for call in (5, 6):
        assert _results(session, call) == [CLEARED_RESULT, LARGE, LARGE, LARGE]
    assert session.calls[5].thread != session.calls[4].thread


def test_releases_that_record_their_microcompactions_are_left_to_the_record(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path, "2.1.9")
    assert _results(session, 5) == [BIG, LARGE, LARGE, LARGE]


def test_below_the_threshold_nothing_is_cleared(tmp_path: Path) -> None:
    session = _session(tmp_path, "2.0.8", context=warning_threshold("claude-sonnet-4-5") - 2)
    assert _results(session, 6) == [BIG, LARGE, LARGE, LARGE]


def test_a_clearing_that_saves_less_than_20000_tokens_is_not_made(tmp_path: Path) -> None:
    t = Transcript()
    t.user("read the logs")
    for n, body in enumerate(("c " * 30_000, LARGE, LARGE, LARGE), 1):
        t.assistant(
            [tool_use(f"t{n}", "Read", file_path=f"/{n}")], usage={"write": 100}, version="2.0.8"
        )
        t.tool_result(f"t{n}", body)
    t.assistant([text("read")], usage={"read": 140_000}, version="2.0.8")
    t.user("and now?").assistant([text("done")], usage={"write": 10}, version="2.0.8")
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert CLEARED_RESULT not in _results(session, 5)


@pytest.mark.parametrize(
    ("model", "threshold"),
    [
        ("claude-sonnet-4-5-20250929", 135_000),
        ("claude-opus-4-5-20251101", 135_000),
        ("claude-haiku-4-5-20251001", 158_808),
        ("claude-3-5-sonnet-20241022", 158_808),
    ],
)
def test_the_threshold_leaves_room_for_the_output_and_the_compaction_buffers(
    model: str, threshold: int
) -> None:
    assert warning_threshold(model) == threshold
