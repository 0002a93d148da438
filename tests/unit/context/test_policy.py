"""The cost model as pure functions: the seed's worked examples and the decisions built on them."""

from __future__ import annotations

import math

import pytest
from ephemeral_context.cache_sim import Ttl
from ephemeral_context.context import policy
from ephemeral_context.context.policy import Boundary, Candidate, fit_budget
from ephemeral_context.prices import Multipliers


def pays(s: int, m: float, x: int, rates: Multipliers = policy.RATES, ttl: Ttl = "5m") -> bool:
    """The cost gate on one item of `s` tokens whose eviction rewrites `x` warm tokens after
    it, never needed again, with `m` calls to come."""
    item = [Candidate(1, 10_000, s, 0.0)]
    return policy.plan_eviction(
        item, [Boundary(1, 10_000)], 10_000 + s + x, m, rates, ttl
    ).evict == (1,)


def test_seed_worked_examples_at_five_minute_prices() -> None:
    """s=2000, X=1500: M=50 evicts, M=5 keeps, break-even at M=9.375 (rho*s*M = omega*X)."""
    assert pays(2000, 50, 1500)
    assert not pays(2000, 5, 1500)
    assert not pays(2000, 9.3, 1500)
    assert pays(2000, 9.5, 1500)


def test_one_hour_writes_raise_the_break_even() -> None:
    """At 2.0x writes the same item breaks even at M=15."""
    assert not pays(2000, 14.9, 1500, ttl="1h") and pays(2000, 15.1, 1500, ttl="1h")


def test_remaining_calls_is_capped_by_the_compaction_horizon() -> None:
    assert policy.remaining_calls(0) == 1.0
    assert policy.remaining_calls(40) == 40.0  # no horizon: the median, the age so far
    assert policy.remaining_calls(40, horizon=40) == pytest.approx(40 * math.log(2))
    assert policy.remaining_calls(40, horizon=0) == 1.0
    assert policy.calls_until_full(150_000, 50_000, 1000) == 100
    assert policy.calls_until_full(150_000, 50_000, 0) == math.inf


def test_reuse_probabilities_follow_the_session_history() -> None:
    assert policy.idle_reuse_probability(0, [], []) == 0.5  # nothing seen: Laplace's prior
    # Files re-used after long idles make a long idle a weak signal, and vice versa.
    assert policy.idle_reuse_probability(10, [12, 15, 30], []) == pytest.approx(0.8)
    assert policy.idle_reuse_probability(10, [1, 2], [20, 30, 40]) == pytest.approx(0.2)


def test_a_file_used_every_call_is_not_worth_evicting() -> None:
    gaps = [1] * 20
    reuse = policy.idle_reuse_probability(1, gaps, [1])
    wait = policy.expected_wait(1, gaps)
    busy = Candidate(0, 0, 2000, reuse, wait)
    assert policy.candidate_value(busy, 100, policy.RATES, "5m") < 0
    idle = Candidate(0, 0, 2000, policy.idle_reuse_probability(30, gaps, [30, 40]), None)
    assert policy.candidate_value(idle, 100, policy.RATES, "5m") > 0


def test_ttl_stays_five_minutes_until_a_long_gap_is_seen() -> None:
    assert policy.choose_ttl([], 0) == "5m"
    assert policy.choose_ttl([5.0] * 30, 30) == "5m"
    assert policy.choose_ttl([5.0] * 29 + [1200.0], 30) == "1h"
    # Gaps longer than an hour are cold under either TTL: no reason to pay for 1h.
    assert policy.choose_ttl([5.0] * 29 + [7200.0], 30) == "5m"


def test_short_lived_thread_content_keeps_five_minutes() -> None:
    gaps = [5.0] * 29 + [1200.0]
    assert policy.choose_ttl(gaps, 30, lifetime=20) == "1h"
    assert policy.choose_ttl(gaps, 30, lifetime=3) == "5m"  # evicted before a gap comes
    assert policy.mean_lifetime(10_000, 1_000) == 10.0  # Little's law
    assert policy.mean_lifetime(0, 0) == math.inf


def test_plan_on_a_cold_cache_evicts_everything_worth_it() -> None:
    candidates = [Candidate(2, 1000, 3000, 0.1), Candidate(5, 9000, 10, 0.9)]
    plan = policy.plan_eviction(candidates, [Boundary(0, 500)], warm_end=0, m=5)
    assert plan.evict == (2,)
    assert plan.tokens_reprocessed == 0
    assert plan.tokens_freed == 3000


def test_a_cut_pays_for_what_it_appends() -> None:
    """Found by the fuzz command: the first cut of a conversation that fetches with the
    client's Read brings the route's note (81 tokens), so a cold cut freeing 63 made the
    request larger than its twin. The note is written once and read at each call to come."""
    small = [Candidate(2, 1000, 63, 0.0)]
    assert policy.plan_eviction(small, [Boundary(0, 500)], warm_end=0, m=5).evict == (2,)
    assert policy.plan_eviction(small, [Boundary(0, 500)], 0, 5, overhead=81).evict == ()
    large = [Candidate(2, 1000, 3000, 0.0)]
    plan = policy.plan_eviction(large, [Boundary(0, 500)], 0, 5, overhead=81)
    assert plan.evict == (2,)
    rates = policy.RATES
    expected = rates.read * 3000 * 5 - 81 * (rates.write("5m") + rates.read * 5)
    assert plan.net_benefit == pytest.approx(expected)


def test_plan_while_warm_pays_only_when_the_gate_says_so() -> None:
    # s=2000 at offset 10_000, prompt warm to 13_500: X = 3_500 - 2_000 = 1_500.
    item = [Candidate(3, 10_000, 2000, 0.0)]
    bounds = [Boundary(0, 1000), Boundary(3, 10_000)]
    assert policy.plan_eviction(item, bounds, warm_end=13_500, m=5).evict == ()
    plan = policy.plan_eviction(item, bounds, warm_end=13_500, m=50)
    assert plan.evict == (3,)
    assert plan.cut == 3
    assert plan.tokens_reprocessed == 1500


def test_plan_picks_the_cut_with_the_best_net_benefit() -> None:
    """Evicting an old item too would rewrite far more than it saves: cut after it."""
    items = [Candidate(1, 1_000, 100, 0.0), Candidate(9, 50_000, 5_000, 0.0)]
    bounds = [Boundary(0, 0), Boundary(9, 50_000)]
    plan = policy.plan_eviction(items, bounds, warm_end=56_000, m=30)
    assert plan.evict == (9,)


def test_read_form_reference_diff_or_full() -> None:
    def count(s: str) -> int:
        return len(s) // 4

    text = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(100))
    assert policy.read_form(text, text, "a.py", count) == ("reference", "")
    form, body = policy.read_form(text, text.replace("x + 7\n", "x - 7\n"), "a.py", count)
    assert form == "diff"
    assert "-    return x + 7" in body and "+    return x - 7" in body
    assert policy.read_form(None, text, "a.py", count) == ("full", text)
    assert policy.read_form("short\n", text, "a.py", count)[0] == "full"
    small = text.replace("x + 7\n", "x - 7\n")
    framed = policy.read_form(text, small, "a.py", count, frame=lambda diff: "Changed:\n" + diff)
    assert framed[0] == "diff" and framed[1].startswith("Changed:\n")
    # the full answer as the client sent it is the measure, framing included
    assert policy.read_form(text, small, "a.py", count, full_tokens=count(body))[0] == "full"


def test_the_gate_weighs_the_conversations_own_model() -> None:
    """With 0.05x reads (Opus 5.5) keeping content costs half as much: eviction pays later."""
    from ephemeral_context.context.conversation import Conversation

    c = Conversation("c")
    rates = c.policy.outlook(c, 0.0, "5m", "auto", 150_000).rates
    assert rates == policy.RATES  # before any request: the reference model's
    c.accounting.model = "claude-opus-5-5"
    cheap = c.policy.outlook(c, 0.0, "5m", "auto", 150_000).rates
    assert cheap.read == pytest.approx(0.05)
    s, x = 2_000, 20_000  # break-even at M=125 at 0.1x reads, 250 at 0.05x
    assert pays(s, 126, x, policy.RATES) and not pays(s, 249, x, cheap) and pays(s, 251, x, cheap)


def test_the_twin_bound_takes_what_was_just_fetched_back_last() -> None:
    """Newest first is the shortest rewrite, but content fetched back for the last call is
    what its response used: the bound takes older content first when that suffices, and
    the fetched content when nothing else does."""
    older, fetched = Candidate(1, 100, 300, 0.5), Candidate(2, 900, 3000, 0.5)
    assert fit_budget([older, fetched], 10_000, 9_800) == (2,)
    last = frozenset({2})
    assert fit_budget([older, fetched], 10_000, 9_800, last=last) == (1,)
    assert fit_budget([older, fetched], 10_000, 9_000, last=last) == (1, 2)


def test_a_diff_numbers_lines_as_the_editor_does() -> None:
    """A U+2028 inside a string ends no line in the editor (LSP): the hunk spans lines 1-3,
    where the model finds them (str.splitlines made them 2-4, the first one half a line)."""
    old = "s = 'a\u2028b'\nx = 1\ny = 2\n"
    diff = policy.unified_diff(old, old.replace("y = 2", "y = 3"), "a.py")
    assert "@@ -1,3 +1,3 @@\n s = 'a\u2028b'\n x = 1\n" in diff


def test_a_diff_marks_a_last_line_without_a_line_end() -> None:
    """A newline added at the end had shown as `-x = 1` `+x = 1`, a change of nothing, and
    the old version as one ending with a newline."""
    diff = policy.unified_diff("w = 0\nx = 1", "w = 0\nx = 1\n", "a.py")
    assert diff.endswith("-x = 1\n\\ No newline at end of file\n+x = 1\n")
    crlf = policy.unified_diff("w = 0\r\nx = 1\r\n", "w = 0\r\nx = 2\r\n", "a.py")
    assert "No newline" not in crlf


def test_a_files_reuse_is_the_rule_over_every_other_file() -> None:
    """Files last used at uneven calls, one never used (shown at `since`): each file's
    estimate is the rule over the spans of all the others (the outlook counts by search)."""
    last_use = {f"file:///f{n}.py": n * 3 % 17 for n in range(12)}
    gaps = [1, 2, 2, 5, 9, 14]
    outlook = policy.Outlook(policy.RATES, 10.0, "5m", "5m", 0.0, True, 20, last_use, gaps, 150_000)
    for uri, since in [*((u, 0) for u in last_use), ("file:///new.py", 16)]:
        idle = 20 - last_use.get(uri, since)
        others = [20 - last for other, last in last_use.items() if other != uri]
        expected = (
            policy.idle_reuse_probability(idle, gaps, others),
            policy.expected_wait(idle, gaps),
        )
        assert outlook.file_reuse(uri, since) == expected
