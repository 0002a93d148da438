"""Fidelity on the 2026 corpus (shared data: 61 real sessions of three other users).

The issue's targets are billed input within 5% of the recorded figure on at least 90% of the
sessions Anthropic billed, within 10% on at least 98%, and a median per-call error of at
most 3%. The per-call target holds; the per-session ones do not yet (docs/cost-model.md,
"Replay fidelity", names the mechanisms behind the sessions that miss). The floors below are
what the yardstick reaches now, so a change that makes it worse fails here.
"""

from __future__ import annotations

import statistics

import pytest
from ephemeral_context.replay.report import Report, replay

from tests.transcripts import shared

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus() -> Report:
    """The corpus replayed once (skips without the shared data: tests/transcripts.py)."""
    return replay(sorted(shared("corpus").glob("*.jsonl")))


def test_every_session_replays_and_anthropic_billed_them_all(corpus: Report) -> None:
    assert corpus.errors == []
    assert len(corpus.sessions) == 61
    assert {item.billing.value for item in corpus.sessions} == {"anthropic"}


def test_billed_input_is_close_to_the_recorded_figure(corpus: Report) -> None:
    errors = [abs(item.fidelity.billed_input_error) for item in corpus.sessions if item.fidelity]
    within_5 = sum(e <= 0.05 for e in errors) / len(errors)
    within_10 = sum(e <= 0.10 for e in errors) / len(errors)
    assert within_5 >= 0.86, within_5
    assert within_10 >= 0.93, within_10
    assert statistics.median(errors) <= 0.01


def test_median_per_call_error_is_at_most_three_percent(corpus: Report) -> None:
    calls = [abs(e) for item in corpus.sessions if item.fidelity for e in item.fidelity.call_errors]
    assert statistics.median(calls) <= 0.03


def test_every_strategy_loses_only_content_the_session_showed(corpus: Report) -> None:
    """`retrievable` weighs what a strategy lost against the session's content, the same
    for every strategy, so a strategy that clears results before any request showed them
    cannot lose more than there was (clear-tool-uses had lost 110% of what it sent on
    e2c6dfbdfb, and the JSON had clamped that to 0)."""
    for item in corpus.sessions:
        shown = {result.shown_tokens for result in item.strategies.values()}
        assert len(shown) == 1, item.path
        for name, result in item.strategies.items():
            assert 0 <= result.lost_tokens <= result.shown_tokens, (item.path, name)
