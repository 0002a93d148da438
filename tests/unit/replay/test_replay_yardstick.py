"""The yardstick itself: the TTL a session used, billed token counts, billing, prices.

Each test builds a small transcript whose recorded usage is what Anthropic's cache returns
for it, and checks one rule of the replay: the `recorded` strategy writes with the TTL the
usage shows and baselines share the session's regime; the blocks added between two recorded
calls cost exactly the recorded growth; usage Anthropic's cache cannot produce, or without
its cache counts, is billed "other"; an unknown model is priced as the reference model with a
warning; a session with some calls unrecorded says how many were.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from ephemeral_context.prices import REFERENCE_MODEL, lookup
from ephemeral_context.replay.billing import Billing, classify
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import render, replay, to_json
from ephemeral_context.replay.strategies import STRATEGIES
from rich.console import Console

from tests.unit.replay.builder import Transcript, text

PREFIX = 6000
"""Tools + system prompt of the built sessions: above every model's minimum cacheable size."""


def two_turns(tmp_path: Path, ttl: str, gap: float, model: str | None = None) -> Path:
    """Two calls `gap` seconds apart, with the usage Anthropic returns under `ttl` caching.

    The second call reads the whole first request back when the cache outlives the gap.
    """
    key = "write_1h" if ttl == "1h" else "write"
    first = PREFIX + 120
    warm = gap < (3600 if ttl == "1h" else 300)
    t = Transcript(model=model or "claude-sonnet-4-5-20250929")
    t.user("Explain the retry loop in client.py, please, in some detail.")
    t.assistant([text("It retries with backoff. " * 20)], usage={"input": 3, key: first})
    t.wait(gap).user("And what does it do on a 529?")
    second = {"input": 3, key: 400, "read": first} if warm else {"input": 3, key: first + 400}
    t.assistant([text("It waits and tries again.")], usage=second)
    return t.write(tmp_path / f"{ttl}-{gap:.0f}.jsonl")


def test_a_session_caching_for_an_hour_is_replayed_with_one_hour_writes(tmp_path: Path) -> None:
    session = read_session(two_turns(tmp_path, "1h", gap=20 * 60))
    assert session.cache_ttl == "1h"
    assert [session.call_ttl(call) for call in session.calls] == ["1h", "1h"]
    modelled = STRATEGIES["recorded"].replay(session)
    second = modelled.calls[1].usage
    assert second.cache_read_input_tokens > 0  # a 20-minute gap does not outlive an hour
    assert second.ephemeral_1h_input_tokens > 0 and second.ephemeral_5m_input_tokens == 0
    report = to_json(replay([session_path := Path(session.path)]))
    (item,) = report["sessions"]
    assert item["path"] == str(session_path)
    assert abs(item["fidelity"]["billed_input_error"]) < 0.01


def test_baselines_share_the_sessions_regime(tmp_path: Path) -> None:
    session = read_session(two_turns(tmp_path, "1h", gap=20 * 60))
    for name in ("cc-dedup", "clear-tool-uses", "aider", "seed-inplace"):
        usage = STRATEGIES[name].replay(session).calls[1].usage
        assert usage.cache_read_input_tokens > 0, name
        assert usage.ephemeral_5m_input_tokens == 0, name


def test_five_minute_caching_finds_the_cache_cold_after_twenty_minutes(tmp_path: Path) -> None:
    session = read_session(two_turns(tmp_path, "5m", gap=20 * 60))
    assert session.cache_ttl == "5m"
    second = STRATEGIES["recorded"].replay(session).calls[1].usage
    assert second.cache_read_input_tokens == 0


def test_added_blocks_cost_exactly_the_recorded_growth(tmp_path: Path) -> None:
    session = read_session(two_turns(tmp_path, "1h", gap=60))
    first, second = session.calls
    assert first.usage is not None and second.usage is not None
    added = session.threads[second.thread].messages[first.n_messages : second.n_messages]
    growth = second.usage.total_input_tokens - first.usage.total_input_tokens
    assert sum(message.tokens for message in added) == growth == 400


def test_a_usage_that_lost_its_cache_counts_is_no_baseline(tmp_path: Path) -> None:
    """Read as 0, a missing cache_read_input_tokens makes the next growth most of the request:
    those tokens would land on the few blocks added next, in every later request."""
    t = Transcript()
    t.user("Read it all: " + "context " * 12_000)
    t.assistant([text("Read.")], usage={"input": 3, "write": PREFIX + 12_000})
    t.user("What does it say?")
    t.assistant([text("Much.")], usage={"input": 3, "write": 30, "read": PREFIX + 12_000})
    del t.lines[-1]["message"]["usage"]["cache_read_input_tokens"]
    t.user("Thanks.")
    t.assistant([text("Welcome.")], usage={"input": 3, "write": 20, "read": PREFIX + 12_040})
    session = read_session(t.write(tmp_path / "lost.jsonl"))
    second, third = session.calls[1:]
    added = session.threads[third.thread].messages[second.n_messages : third.n_messages]
    assert sum(message.tokens for message in added) < 1000  # estimated: 18,030 anchored


def test_reads_that_nothing_wrote_are_billed_other(tmp_path: Path) -> None:
    t = Transcript(model="glm-4.7")
    t.user("hello")
    t.assistant([text("hi")], usage={"input": 900, "read": 12_000})
    t.user("again")
    t.assistant([text("hi again")], usage={"input": 40, "read": 12_900})
    path = t.write(tmp_path / "gateway.jsonl")
    session = read_session(path)
    assert classify(session) is Billing.OTHER
    report = replay([path])
    (item,) = to_json(report)["sessions"]
    assert item["billing"] == "other"
    assert item["fidelity"] is None  # not Anthropic's cache: nothing to claim
    assert set(item["strategies"]) == set(STRATEGIES)  # still compared under Anthropic's rules
    warnings = [p.message for p in report.problems]
    assert f"no list price for model 'glm-4.7': its calls are priced as {REFERENCE_MODEL}" in (
        warnings
    )
    recorded = report.sessions[0].strategies["recorded"]
    assert recorded.cost_usd > 0  # at the reference prices, never $0 and never a traceback


@pytest.mark.parametrize("lost", ["cache_read_input_tokens", "cache_creation_input_tokens"])
def test_a_usage_without_a_cache_count_is_billed_other(tmp_path: Path, lost: str) -> None:
    """Every usage Anthropic returns has both cache counts; one an export or a gateway
    dropped reads as 0, and a fidelity claimed against it is measured against a made-up
    bill (here it would claim a near-perfect or a far-off model for the same replay)."""
    path = two_turns(tmp_path, "1h", gap=60)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    usage = lines[-1]["message"]["usage"]
    del usage[lost]
    usage.pop("cache_creation", None)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    session = read_session(path)
    assert session.recorded  # still read, so it still sizes the blocks it can
    assert classify(session) is Billing.OTHER
    (item,) = to_json(replay([path]))["sessions"]
    assert (item["billing"], item["fidelity"]) == ("other", None)


def test_a_usage_that_counts_no_input_is_billed_other(tmp_path: Path) -> None:
    """A request holds at least its prompt; a gateway that does not count answers 0 for
    every count. Claimed as Anthropic's, that bill of 0 gave a fidelity of +100%."""
    path = two_turns(tmp_path, "1h", gap=60)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        usage = line.get("message", {}).get("usage")
        if usage is not None:
            usage.update(dict.fromkeys(usage, 0), cache_creation={})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    session = read_session(path)
    assert session.recorded
    assert classify(session) is Billing.OTHER
    (item,) = to_json(replay([path]))["sessions"]
    assert (item["billing"], item["fidelity"]) == ("other", None)


def test_sessions_anthropic_billed_are_anthropic_and_unrecorded_ones_none(tmp_path: Path) -> None:
    assert classify(read_session(two_turns(tmp_path, "1h", gap=60))) is Billing.ANTHROPIC
    t = Transcript()
    t.user("hello")
    t.assistant([text("hi")])
    assert classify(read_session(t.write(tmp_path / "none.jsonl"))) is Billing.NONE


def test_a_call_of_a_model_that_is_no_claude_model_bills_the_session_other(
    tmp_path: Path,
) -> None:
    """Usage shaped as Anthropic's cache's (it reads what it wrote), from calls a gateway
    served to glm-5: whoever billed them, it was not Anthropic, at prices nobody knows."""
    session = read_session(two_turns(tmp_path, "1h", gap=60, model="glm-5"))
    assert classify(session) is Billing.OTHER
    assert classify(read_session(two_turns(tmp_path, "1h", gap=60))) is Billing.ANTHROPIC


def test_a_session_with_some_calls_unrecorded_says_how_many_were(tmp_path: Path) -> None:
    """Not "no recorded usage": one lost usage leaves the others on record."""
    path = two_turns(tmp_path, "1h", gap=60)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    del lines[-1]["message"]["usage"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = replay([path])
    assert report.sessions[0].billing is Billing.NONE
    out = io.StringIO()
    render(report, Console(file=out, width=200))
    assert "usage recorded for 1 of 2 calls: fidelity not checked" in out.getvalue()


@pytest.mark.parametrize(("model", "read"), [("claude-opus-4-5", 0.1), ("claude-opus-5-5", 0.05)])
def test_billed_input_uses_the_sessions_model(tmp_path: Path, model: str, read: float) -> None:
    report = replay([two_turns(tmp_path, "1h", gap=60, model=model)])
    recorded = report.sessions[0].strategies["recorded"]
    assert recorded.calls[1].price == lookup(model, recorded.calls[1].started)
    usage = recorded.calls[1].usage
    expected = usage.input_tokens + 2 * usage.ephemeral_1h_input_tokens
    assert recorded.calls[1].billed_input == pytest.approx(
        expected + read * usage.cache_read_input_tokens
    )


def fast_toggled(tmp_path: Path, model: str) -> Path:
    """Five calls seconds apart, the usage Anthropic returns: two standard, two in fast mode
    (`/fast`), then standard again. Fast mode shares no cached prefix with standard speed:
    the first fast call writes everything, the last standard call reads what the second one
    wrote (still warm) and writes the rest."""
    t = Transcript(model=model)
    turns = ("Why does the build fail?", "And the linker?", "Go faster.", "More.", "Slow down.")
    speeds = ("standard", "standard", "fast", "fast", "standard")
    prompt = PREFIX + 20
    total = [prompt + 40 * i for i in range(5)]  # each turn adds about 40 tokens
    usages = [
        {"input": 3, "write": total[0]},
        {"input": 3, "write": 40, "read": total[0]},
        {"input": 3, "write": total[2]},
        {"input": 3, "write": 40, "read": total[2]},
        {"input": 3, "write": total[4] - total[1], "read": total[1]},
    ]
    for turn, speed, usage in zip(turns, speeds, usages, strict=True):
        t.user(turn)
        t.assistant([text("Because of the flags.")], usage=usage, served={"speed": speed})
    return t.write(tmp_path / "fast.jsonl")


def test_fast_mode_has_a_cache_of_its_own_and_its_prices(tmp_path: Path) -> None:
    session = read_session(fast_toggled(tmp_path, "claude-opus-5"))
    assert [call.speed for call in session.calls] == ["standard"] * 2 + ["fast"] * 2 + ["standard"]
    recorded = STRATEGIES["recorded"].replay(session)
    usages = [call.usage for call in recorded.calls]
    cached = [u.cache_read_input_tokens + u.cache_creation_input_tokens for u in usages]
    reads = [u.cache_read_input_tokens for u in usages]
    assert reads[1] == cached[0] > 0
    assert reads[2] == 0  # the first fast call finds no fast cache
    assert reads[3] == cached[2]
    assert reads[4] == cached[1]  # back at standard speed: the standard cache, still warm
    assert session.problems == []
    report = replay([Path(session.path)])
    (item,) = report.sessions
    assert item.fidelity is not None and abs(item.fidelity.billed_input_error) < 0.02
    standard, fast = lookup("claude-opus-5"), recorded.calls[2].price
    assert fast.billed_input(recorded.calls[2].usage) == pytest.approx(
        2 * standard.billed_input(recorded.calls[2].usage)
    )
    assert fast.cost_usd(recorded.calls[2].usage, 100) == pytest.approx(
        2 * standard.cost_usd(recorded.calls[2].usage, 100)
    )


def test_a_fast_call_of_a_model_without_a_fast_price_is_priced_standard_with_a_warning(
    tmp_path: Path,
) -> None:
    session = read_session(fast_toggled(tmp_path, "claude-opus-5-5"))
    assert [str(p) for p in session.problems] == [
        f"{session.path}: no fast-mode price for model 'claude-opus-5-5': its fast calls are "
        "priced at its standard rates"
    ]
    assert session.calls[2].price == lookup("claude-opus-5-5", session.calls[2].started)


def test_us_only_inference_costs_a_tenth_more(tmp_path: Path) -> None:
    """An organisation's US-only inference (usage.inference_geo "us"): every price 1.1x."""
    t = Transcript(model="claude-opus-4-6")
    t.user("Explain the retry loop in client.py, please, in some detail.")
    usage = {"input": 3, "write": PREFIX + 120}
    t.assistant([text("It retries.")], usage=usage, served={"inference_geo": "us"})
    session = read_session(t.write(tmp_path / "us.jsonl"))
    (call,) = session.calls
    assert call.usage is not None
    row = lookup("claude-opus-4-6", call.started)
    assert call.price.cost_usd(call.usage, 100) == pytest.approx(
        1.1 * row.cost_usd(call.usage, 100)
    )
    assert call.price.billed_input(call.usage) == pytest.approx(1.1 * row.billed_input(call.usage))
