"""Do no harm: the policy's bets against the recorded-style twin, on synthetic sessions.

Each session is a run of calls whose responses run a tool with a fresh output, at the idle
gaps given. The client (the twin) caches with 1-hour breakpoints unless said otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from ephemeral_context.cache_sim import Ttl
from ephemeral_context.context import eviction, policy
from ephemeral_context.context.engine import (
    BlockKind,
    ContextEngine,
    EngineConfig,
    Fetched,
    ToolOutput,
)
from ephemeral_context.context.layout import BuiltRequest
from ephemeral_context.context.policy import Boundary, Candidate
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import MODEL, SYSTEM, Clock, Driver, source

SHORT = [0.0, 10, 10, 10, 10, 10]
"""Six calls 10 seconds apart: no gap so far says a 1-hour TTL pays."""


@dataclass
class Run:
    """A synthetic session as the engine built it."""

    engine: ContextEngine
    built: list[BuiltRequest]
    """The requests, one per gap."""
    margins: list[float]
    """After each request, the lead of the requests with nothing evicted (the kept twins:
    what the TTL bets are weighed by) over the recorded-style twins, less what the
    tolerance allows (negative: behind)."""
    excess: list[float]
    """After each request, how far the whole bill is above the bound the product promises
    (its recorded-style twins' bill plus the tolerance; negative: within it)."""

    def warm_cuts(self) -> list[int]:
        """The calls at which a cut rewrote part of a warm cache (a cost paid now)."""
        return [e.call for e in self.engine.events if not e.cold and e.tokens_reprocessed > 0]


def session(
    tmp_path: Path,
    name: str,
    gaps: list[float],
    client_ttl: Ttl = "1h",
    reread_from: int | None = None,
    fetch_at: frozenset[int] = frozenset(),
    told_from: int = 0,
    lines: dict[int, int] | None = None,
) -> Run:
    """One request per gap, each answered by a tool run with a fresh output. From call
    `reread_from` on, every call reads the same file (the engine answers the repeats with
    a reference: the layout saves against the twins). Before each call in `fetch_at` the
    model fetches back by id everything evicted so far (round trips only ours pays). The
    calls before `told_from` do not know the client's TTL (a transcript's lost usages).
    `lines`: the output's length (40 lines unless said) by call."""
    clock = Clock()
    engine = ContextEngine(Store(tmp_path / name), EngineConfig(), clock=clock)
    engine.add_user_text("c", "Make the test suite pass.")
    run = Run(engine, [], [], [])
    accounting = engine.conversation("c").accounting
    for i, gap in enumerate(gaps):
        clock.advance(gap)
        evicted = [item_id for e in engine.events for item_id in e.item_ids]
        if i in fetch_at and evicted:
            engine.round_trip(
                "c", [fetch(engine, item_id, f"{i}_{k}") for k, item_id in enumerate(evicted)]
            )
        told = client_ttl if i >= told_from else None
        engine.build_request("c", MODEL, SYSTEM, client_ttl=told)
        request = engine.last_request("c")
        assert request is not None
        run.built.append(request)
        bound = policy.HARM_TOLERANCE * accounting.baseline_billed
        run.margins.append(accounting.layout_lead + bound)
        run.excess.append(accounting.ours_billed - accounting.baseline_billed - bound)
        tool_id = f"toolu_{i}"
        engine.add_assistant_content(
            "c",
            [{"type": "tool_use", "id": tool_id, "name": "bash", "input": {"command": f"t {i}"}}],
        )
        if reread_from is not None and i >= reread_from:
            output = ToolOutput(tool_id, source(40, "app_"), BlockKind.FILE, uri="file:///app.py")
        else:
            output = ToolOutput(tool_id, source((lines or {}).get(i, 40), f"run{i}_"))
        engine.add_tool_result("c", output)
    return run


def fetch(engine: ContextEngine, item_id: str, n: str) -> Fetched:
    """The model's own read_session_file of an evicted item, and its answer."""
    use = {"type": "tool_use", "id": f"toolu_h{n}", "name": "read_session_file"}
    return Fetched({**use, "input": {"id": item_id}}, engine.read_session_file(item_id).text)


def ttls(built: list[BuiltRequest]) -> list[tuple[Ttl, Ttl]]:
    return [(b.breakpoints.ttl, b.breakpoints.thread_ttl) for b in built]


BIG = {4: 400}
"""Call 4's output ten times as long: the tail of request 5, which a gap after it loses."""


def test_a_winning_bet_goes_on(tmp_path: Path) -> None:
    """Short gaps: the 5-minute bet saves the dearer 1-hour writes the twin pays, and stays.
    It is hedged: from the second request on, the first block after the warm prefix takes
    an hour (so does the prefix, as the API's order requires), the rest 5 minutes."""
    run = session(tmp_path, "win", SHORT * 2)
    assert ttls(run.built) == [("1h", "5m")] * 12
    points = [b.breakpoints for b in run.built]
    assert all(p.anchor is not None and p.ttl_at(p.anchor) == "1h" for p in points[1:])
    assert all(p.last is not None and p.ttl_at(p.last) == "5m" for p in points)
    assert min(run.margins) >= 0 and run.engine.conversation("c").accounting.lead > 0


def test_a_gap_finds_the_hedge_and_rewrites_only_the_tail(tmp_path: Path) -> None:
    """A 10-minute gap after six calls: the 5-minute entries are gone, the hour's entry
    on the hedge is not, so the request after the gap reads up to it and writes again only
    what the request before put after it, at most `write_5m - read` per token over its
    twin's read (unhedged, the whole thread was written again: behind its twin from there,
    the conversation fell back to the hour). It stays ahead and goes on betting."""
    run = session(tmp_path, "gap", [*SHORT, 600, 10, 10, 10, 10])
    before = run.built[5]
    assert before.breakpoints.anchor is not None
    tail = sum(b.tokens for b in before.cache_request.messages[before.breakpoints.anchor + 1 :])
    rates = policy.RATES
    assert run.excess[6] - run.excess[5] <= (rates.write_5m - rates.read) * tail
    assert max(run.excess) <= 0 and min(run.margins) >= 0
    assert ttls(run.built)[7:] == [("1h", "5m")] * 4


def test_a_losing_bet_falls_back_to_the_twins_ttl_until_ahead_again(tmp_path: Path) -> None:
    """A 10-minute gap expires the 5-minute tail the twin keeps for an hour, here a long
    output: the conversation is behind its twin, so it sends the twin's 1-hour TTL from the
    next request on; once the reads its layout saves (repeated reads as references) put it
    ahead again, it bets again."""
    run = session(tmp_path, "lose", [*SHORT, 600] + [10] * 8, reread_from=7, lines=BIG)
    built, margins = run.built, run.margins
    assert ttls(built)[:6] == [("1h", "5m")] * 6
    assert min(margins[:6]) >= 0 and margins[6] < 0  # the gap's rewrite put it behind
    after = list(zip(margins[6:-1], ttls(built)[7:], strict=True))
    assert all(t == ("1h", "1h") for margin, t in after if margin < 0)
    assert any(margin >= 0 and t[1] == "5m" for margin, t in after)  # ahead: bets again


def test_against_a_five_minute_client_the_1h_prefix_waits_until_the_bill_can_pay_it(
    tmp_path: Path,
) -> None:
    """The twin loses its cache at the same gap, so the gap itself costs nothing against
    it; the forecast's answer to the gap, the prefix written for an hour, would be written
    whole by the request after it at 2.0 where the twin writes at 1.25: a premium paid for
    certain that the bill has not got to spare, so that request sends the client's 5
    minutes. The next ones write little, can pay the premium on it and take the hour; the
    thread stays at 5 minutes throughout, and the conversation never falls behind (a
    1-hour prefix sent at the cold call had put it behind, and a 3-call session that ended
    there 12% above its twin)."""
    run = session(tmp_path, "five", [*SHORT, 600, 10, 10, 10], client_ttl="5m")
    built, margins = run.built, run.margins
    assert ttls(built)[:7] == [("5m", "5m")] * 7
    assert ttls(built)[7:] == [("1h", "5m")] * 3
    assert min(margins) >= 0 and max(run.excess) <= 0


def test_no_decision_looks_at_a_later_call(tmp_path: Path) -> None:
    """Two sessions alike for six calls and different after: the first six requests are the
    same bytes, whatever comes later."""
    lose = session(tmp_path, "a", [*SHORT, 600, 10], lines=BIG).built
    win = session(tmp_path, "b", [*SHORT, 10, 10], lines=BIG).built
    assert [b.kwargs for b in lose[:6]] == [b.kwargs for b in win[:6]]
    assert ttls(lose[7:]) != ttls(win[7:])


def test_a_warm_cut_risks_no_more_than_the_bill_has_to_spare() -> None:
    """The cost gate's best cut rewrites 8,000 warm tokens (10,000 at 1.25x) and, should
    the next call need what it removes, one round trip reads the 15,000 warm tokens again
    (1,500 at 0.1x): made when the bill has both to spare, refused with less, and behind
    its twins (0); a cut on a cold cache costs nothing and is made either way."""
    candidates = [Candidate(3, 10_000, 5_000, 0.0)]
    boundaries = [Boundary(0, 2_000)]
    warm = policy.plan_eviction(candidates, boundaries, 15_000, 50, max_rewrite=11_500)
    assert warm.evict == (3,) and warm.tokens_reprocessed == 8_000
    assert policy.plan_eviction(candidates, boundaries, 15_000, 50, max_rewrite=11_499).evict == ()
    assert policy.plan_eviction(candidates, boundaries, 15_000, 50, max_rewrite=0.0).evict == ()
    cold = policy.plan_eviction(candidates, boundaries, 2_000, 50, max_rewrite=0.0)
    assert cold.evict == (3,) and cold.tokens_reprocessed == 0


def test_a_warm_cut_waits_until_the_bill_can_lose_a_round_trip(tmp_path: Path) -> None:
    """The same fresh outputs every 10 seconds, for three clients. Against a client that
    caches for an hour the 5-minute writes put the conversation ahead of its twins from the
    first request, and the gate cuts early. Against one that caches for 5 minutes it is
    level with them: the tolerance of its bill (1%) never covers one more read of the
    prompt (10% of it), so it makes no warm cut, until the layout saves (the same file read
    on every call, answered by references) and the cuts come once that lead can pay a
    round trip. Either way, had the session ended right after any request, cuts that
    saved nothing after them would leave the bill within the bound."""
    gaps = [0.0] + [10] * 30
    ahead = session(tmp_path, "ahead", gaps, client_ttl="1h")
    level = session(tmp_path, "level", gaps, client_ttl="5m")
    rereads = session(tmp_path, "rereads", gaps, client_ttl="5m", reread_from=3)
    assert ahead.warm_cuts() and rereads.warm_cuts() and not level.warm_cuts()
    assert min(rereads.warm_cuts()) > min(ahead.warm_cuts())  # refused at first, then made
    assert max(ahead.excess) <= 0 and max(level.excess) <= 0 and max(rereads.excess) <= 0


def test_level_with_its_twins_a_conversation_whose_cuts_come_back_stays_within_the_bound(
    tmp_path: Path,
) -> None:
    """Against a 5-minute client the layout saves nothing here, and before every call the
    model fetches back everything cut so far. A warm cut bounded by its rewrite alone was
    made at call 13 and fetched back at call 14, one round trip reading the whole prompt
    again: 2,535 tokens over the bound. Bounded with that read, no such cut is made."""
    gaps = [0.0] + [10] * 30
    fetched = session(tmp_path, "fetched", gaps, client_ttl="5m", fetch_at=frozenset(range(31)))
    assert max(fetched.excess) <= 0


def test_round_trips_that_put_the_bill_behind_stop_the_warm_cuts(tmp_path: Path) -> None:
    """The model fetches back what the first calls cut, at calls 5 to 7: round trips the twins
    never pay put the bill behind them while the layout keeps saving (the TTL bets stay
    on), and the warm cuts the same session makes without the fetches stop."""
    gaps = [0.0] + [10] * 20
    plain = session(tmp_path, "plain", gaps)
    fetched = session(tmp_path, "fetched", gaps, fetch_at=frozenset({5, 6, 7}))
    before = [c for c in plain.warm_cuts() if c < 5]
    assert before and fetched.warm_cuts() == before
    assert [c for c in plain.warm_cuts() if c > 7]
    assert min(fetched.excess[8:]) > 0 and min(fetched.margins[8:]) > 0


def test_a_clients_ttl_known_late_settles_what_its_twins_billed(tmp_path: Path) -> None:
    """A transcript whose first usages were lost: the client's 1-hour TTL is known from
    call 7 on, after a 10-minute gap that expired the 5-minute cache the client's hour
    kept. The twins were priced at an hour too: known, theirs is the bill, the
    conversation is behind and sends the hour, and the next 10-minute gap costs nothing
    (believing the twins were at 5 minutes, it bet on 5 minutes and lost there again).
    Told from the start, the conversation hedged its bets: the first gap cost it a tail
    and it went on betting."""
    gaps = [*SHORT, 600, 10, 10, 10, 600, 10]
    late = session(tmp_path, "late", gaps, told_from=7)
    told = session(tmp_path, "told", gaps)
    accounting = late.engine.conversation("c").accounting
    assert accounting.untold is None and accounting.twins_billed == accounting.baseline_billed
    assert late.margins[6] < 0 and late.margins[7] < 0
    assert ttls(late.built)[7:] == [("1h", "1h")] * 5
    assert told.margins[6] >= 0 and ttls(told.built)[7] == ("1h", "5m")
    assert max(late.excess) <= 0 and max(told.excess) <= 0


def test_while_the_clients_ttl_is_unknown_a_lead_must_hold_under_either(tmp_path: Path) -> None:
    """No usage at all (a markdown export): the 10-minute gap at call 6 expires the
    5-minute cache an hour's client would have kept. Against the cheaper twins' bill, the
    hour's then, the conversation is behind, and it sends the hour (believing the twins
    were at 5 minutes, it saw no loss and kept the 5 minutes that lose the next gap too)."""
    gaps = [*SHORT, 600, 10, 10, 10, 600, 10]
    run = session(tmp_path, "unknown", gaps, told_from=len(gaps))
    accounting = run.engine.conversation("c").accounting
    assert accounting.untold is not None and accounting.worst_ttl() == "1h"
    assert run.margins[6] < 0 and ttls(run.built)[7] == ("1h", "1h")
    after = run.built[10]  # the second gap: bridged, most of the request is read
    assert after.expected_read > after.total_tokens / 2


@pytest.mark.parametrize("client_ttl", ["5m", "1h"])
def test_the_twin_caches_with_the_clients_ttl(tmp_path: Path, client_ttl: Ttl) -> None:
    run = session(tmp_path, client_ttl, SHORT, client_ttl=client_ttl)
    twin = run.engine.conversation("c").accounting.baseline
    written = {"5m": twin.ephemeral_5m_input_tokens, "1h": twin.ephemeral_1h_input_tokens}
    assert written[client_ttl] == twin.cache_creation_input_tokens > 0


def test_what_no_request_carried_yet_is_no_candidate(engine: ContextEngine, clock: Clock) -> None:
    """Parallel tool calls written one by one (use, result, use, result) make the first
    result look answered; no request has carried it, so the model has not seen it, and
    the policy may not evict it until one has."""
    d = Driver(engine)
    engine.add_user_text("c", "run both")
    d.call()
    d.bash(source(200, "first_"))
    d.bash(source(200, "second_"))
    c = engine.conversation("c")
    first = next(i for i, tb in enumerate(c.thread) if "first_f0(" in tb.text)
    assert c.thread.consumed(first)  # the interleaving alone says "answered"

    def candidates() -> set[int]:
        outlook = c.policy.outlook(c, clock(), "5m", "auto", engine.config.context_budget)
        return {k.index for k in eviction.candidates(engine.state, c, 0, outlook)}

    assert first not in candidates()
    d.call()
    d.bash("ok")
    assert first in candidates()


@pytest.mark.parametrize("calls_before", [0, 8, 30])
def test_a_file_no_request_carried_yet_stays_in_the_thread_at_a_cold_rebuild(
    engine: ContextEngine, clock: Clock, calls_before: int
) -> None:
    """Found by the fuzz command: at a cold gap the segment took in the first of two
    parallel Reads (it looked answered) as its synopsis; the model, never shown the file
    whole, had to fetch it back at once, and the request went over its twin."""
    d = Driver(engine)
    engine.add_user_text("c", "read both")
    for step in range(calls_before):
        d.call()
        d.bash(f"check {step}: ok\n")
        clock.advance(10)
    d.call()
    d.read("/a.py", source(200, "a_"))
    d.read("/b.py", source(200, "b_"))
    c = engine.conversation("c")
    first = next(i for i, tb in enumerate(c.thread) if "a_f0(" in tb.text)
    assert c.thread.consumed(first) and not c.answered(first)
    clock.advance(7200)  # cold: the segment is rebuilt
    d.call()
    assert not c.segment
    assert not c.thread[first].evicted and "a_f199(" in repr(d.requests[-1])


def test_the_request_after_a_round_trip_makes_no_new_cut(
    engine: ContextEngine, clock: Clock
) -> None:
    """A round trip fetched what the call needs; the request that goes on with the call
    carries it and evicts nothing more (else it could evict what the call needs next and
    pay another round trip); the call after it may cut again."""
    engine.add_user_text("c", "go")
    engine.build_request("c", MODEL, SYSTEM)
    c = engine.conversation("c")
    budget = engine.config.context_budget
    c.accounting.continues = True  # what rehydration.rehydrate sets
    assert not c.policy.outlook(c, clock(), "5m", "auto", budget).evicts
    engine.build_request("c", MODEL, SYSTEM)
    assert c.policy.outlook(c, clock(), "5m", "auto", budget).evicts
