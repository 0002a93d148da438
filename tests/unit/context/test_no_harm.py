"""Do no harm: the policy's bets against the recorded-style twin, on synthetic sessions.

Each session is a run of calls whose responses run a tool with a fresh output, at the idle
gaps given. The client (the twin) caches with 1-hour breakpoints unless said otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.cache_sim import Ttl
from ephemeral_context.context import policy
from ephemeral_context.context.engine import ContextEngine, EngineConfig, ToolOutput
from ephemeral_context.context.layout import BuiltRequest
from ephemeral_context.context.policy import Boundary, Candidate
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import MODEL, SYSTEM, Clock, source

SHORT = [0.0, 10, 10, 10, 10, 10]
"""Six calls 10 seconds apart: no gap so far says a 1-hour TTL pays."""


def session(
    tmp_path: Path, name: str, gaps: list[float], client_ttl: Ttl = "1h"
) -> tuple[ContextEngine, list[BuiltRequest], list[float]]:
    """The engine after one request per gap, the requests it built, and after each the
    lead over the twin less what the tolerance allows (negative: behind)."""
    clock = Clock()
    engine = ContextEngine(Store(tmp_path / name), EngineConfig(), clock=clock)
    engine.add_user_text("c", "Make the test suite pass.")
    built: list[BuiltRequest] = []
    margins: list[float] = []
    accounting = engine.conversation("c").accounting
    for i, gap in enumerate(gaps):
        clock.advance(gap)
        engine.build_request("c", MODEL, SYSTEM, client_ttl=client_ttl)
        request = engine.last_request("c")
        assert request is not None
        built.append(request)
        margins.append(accounting.lead + policy.HARM_TOLERANCE * accounting.baseline_billed)
        tool_id = f"toolu_{i}"
        engine.add_assistant_content(
            "c",
            [{"type": "tool_use", "id": tool_id, "name": "bash", "input": {"command": f"t {i}"}}],
        )
        engine.add_tool_result("c", ToolOutput(tool_id, source(40, f"run{i}_")))
    return engine, built, margins


def ttls(built: list[BuiltRequest]) -> list[tuple[Ttl, Ttl]]:
    return [(b.breakpoints.ttl, b.breakpoints.thread_ttl) for b in built]


def test_a_winning_bet_goes_on(tmp_path: Path) -> None:
    """Short gaps: the 5-minute bet saves the dearer 1-hour writes the twin pays, and stays."""
    engine, built, margins = session(tmp_path, "win", SHORT * 2)
    assert ttls(built) == [("5m", "5m")] * 12
    assert min(margins) >= 0 and engine.conversation("c").accounting.lead > 0


def test_a_losing_bet_falls_back_to_the_twins_ttl_until_ahead_again(tmp_path: Path) -> None:
    """A 10-minute gap expires the 5-minute cache the twin keeps for an hour: the
    conversation is behind its twin, so it sends the twin's 1-hour TTL from the next
    request on; once the reads it saves put it ahead again, it bets again."""
    _, built, margins = session(tmp_path, "lose", [*SHORT, 600] + [10] * 8)
    assert ttls(built)[:6] == [("5m", "5m")] * 6
    assert min(margins[:6]) >= 0 and margins[6] < 0  # the gap's rewrite put it behind
    after = list(zip(margins[6:-1], ttls(built)[7:], strict=True))
    assert all(t == ("1h", "1h") for margin, t in after if margin < 0)
    assert any(margin >= 0 and t[1] == "5m" for margin, t in after)  # ahead: bets again


def test_against_a_five_minute_client_the_same_gap_is_no_loss(tmp_path: Path) -> None:
    """The twin loses its cache at the same gap: the conversation is ahead after it, and
    its thread stays at 5 minutes (the forecast alone moves the prefix to 1 hour)."""
    _, built, margins = session(tmp_path, "five", [*SHORT, 600, 10, 10, 10], client_ttl="5m")
    assert min(margins[6:]) >= 0
    assert [thread for _, thread in ttls(built)[6:]] == ["5m"] * 4


def test_no_decision_looks_at_a_later_call(tmp_path: Path) -> None:
    """Two sessions alike for six calls and different after: the first six requests are the
    same bytes, whatever comes later."""
    _, lose, _ = session(tmp_path, "a", [*SHORT, 600, 10])
    _, win, _ = session(tmp_path, "b", [*SHORT, 10, 10])
    assert [b.kwargs for b in lose[:6]] == [b.kwargs for b in win[:6]]
    assert ttls(lose[7:]) != ttls(win[7:])


def test_behind_its_twins_no_warm_cut_is_made() -> None:
    """The cost gate's best cut rewrites 8,000 warm tokens: made while the policy may bet
    (`max_rewrite` unbounded), refused while it is behind (0); a cut on a cold cache costs
    nothing and is made either way."""
    candidates = [Candidate(3, 10_000, 5_000, 0.0)]
    boundaries = [Boundary(0, 2_000)]
    warm = policy.plan_eviction(candidates, boundaries, 15_000, 50)
    assert warm.evict == (3,) and warm.tokens_reprocessed == 8_000
    assert policy.plan_eviction(candidates, boundaries, 15_000, 50, max_rewrite=0.0).evict == ()
    cold = policy.plan_eviction(candidates, boundaries, 2_000, 50, max_rewrite=0.0)
    assert cold.evict == (3,) and cold.tokens_reprocessed == 0


@pytest.mark.parametrize("client_ttl", ["5m", "1h"])
def test_the_twin_caches_with_the_clients_ttl(tmp_path: Path, client_ttl: Ttl) -> None:
    engine, _, _ = session(tmp_path, client_ttl, SHORT, client_ttl=client_ttl)
    twin = engine.conversation("c").accounting.baseline
    written = {"5m": twin.ephemeral_5m_input_tokens, "1h": twin.ephemeral_1h_input_tokens}
    assert written[client_ttl] == twin.cache_creation_input_tokens > 0
