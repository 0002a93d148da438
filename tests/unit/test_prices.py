"""The price table: dated rows, per-model multipliers, bands, and unknown models."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from ephemeral_context.cache_sim import Usage
from ephemeral_context.prices import (
    REFERENCE_MODEL,
    Geo,
    Speed,
    UnknownModelError,
    lookup,
    priced,
    rows,
)


def at(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("model_id", "name"),
    [
        ("claude-opus-4-5-20251101", "Claude Opus 4.5"),
        ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5"),
        ("claude-sonnet-4-20250514", "Claude Sonnet 4"),
        ("claude-haiku-4-5-20251001", "Claude Haiku 4.5"),
        ("claude-3-5-haiku-20241022", "Claude Haiku 3.5"),
        ("claude-3-7-sonnet-latest", "Claude Sonnet 3.7"),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", "Claude Opus 4.1"),
        ("claude-sonnet-4@20250514", "Claude Sonnet 4"),
        ("claude-opus-4-6[1m]", "Claude Opus 4.6"),
        ("claude-opus-4", "Claude Opus 4"),
        ("claude-haiku-5-5", "Claude Haiku 5.5"),
        ("claude-fable-5-1", "Claude Fable 5.1"),
        # the API's -0 aliases, and a gateway's dotted versions (never Opus 4's $15)
        ("claude-opus-4-0", "Claude Opus 4"),
        ("claude-sonnet-4-0", "Claude Sonnet 4"),
        ("anthropic/claude-opus-4.5", "Claude Opus 4.5"),
        ("anthropic/claude-haiku-4.5", "Claude Haiku 4.5"),
        ("anthropic/claude-3.5-sonnet", "Claude Sonnet 3.5"),
        ("claude-opus-4.1-20250805", "Claude Opus 4.1"),
    ],
)
def test_model_ids_find_their_row(model_id: str, name: str) -> None:
    assert lookup(model_id).name == name


@pytest.mark.parametrize("model_id", ["glm-4.7", "glm-5", "<synthetic>", "claude-sonnet-4-9"])
def test_unknown_models_and_unlisted_versions_are_unknown_never_an_older_price(
    model_id: str,
) -> None:
    with pytest.raises(UnknownModelError, match=model_id.replace("<", ".")):
        lookup(model_id)
    stand_in = priced(model_id)
    assert not stand_in.known
    assert stand_in.name == lookup(REFERENCE_MODEL).name


@pytest.mark.parametrize(
    ("model_id", "write_5m", "write_1h", "read"),
    [  # rows of the documented price table, USD per million tokens
        ("claude-opus-4-1", 18.75, 30.0, 1.50),
        ("claude-opus-4-5", 6.25, 10.0, 0.50),
        ("claude-sonnet-4-5", 3.75, 6.0, 0.30),
        ("claude-haiku-4-5", 1.25, 2.0, 0.10),
        ("claude-3-5-haiku", 1.0, 1.6, 0.08),
        ("claude-opus-5-5", 5.0, 8.0, 0.20),
        ("claude-fable-5-1", 12.5, 20.0, 0.25),
    ],
)
def test_cache_prices_match_the_documented_table(
    model_id: str, write_5m: float, write_1h: float, read: float
) -> None:
    rates = lookup(model_id).rates
    assert (rates.write_5m, rates.write_1h, rates.read) == pytest.approx((write_5m, write_1h, read))


def test_multipliers_are_per_model() -> None:
    assert lookup("claude-sonnet-4-6").multipliers.read == pytest.approx(0.1)
    assert lookup("claude-opus-5-5").multipliers.read == pytest.approx(0.05)
    assert lookup("claude-fable-5-1").multipliers.read == pytest.approx(0.025)
    assert lookup("claude-opus-4-5").multipliers.write("1h") == pytest.approx(2.0)


def test_a_call_takes_the_row_in_effect_when_it_started() -> None:
    before, after = at("2026-10-06"), at("2026-10-07")
    assert lookup("claude-sonnet-5-5", before).multipliers.read == pytest.approx(0.1)
    assert lookup("claude-sonnet-5-5", after).multipliers.read == pytest.approx(0.05)
    assert lookup("claude-sonnet-5-5").multipliers.read == pytest.approx(0.05)  # the newest
    assert lookup("claude-sonnet-5-5", at("2020-01-01")).rates.read == pytest.approx(0.20)


def test_cost_and_billed_input_use_the_models_own_prices() -> None:
    usage = Usage(
        input_tokens=1_000_000,
        cache_creation_input_tokens=3_000_000,
        cache_read_input_tokens=10_000_000,
        ephemeral_5m_input_tokens=2_000_000,
        ephemeral_1h_input_tokens=1_000_000,
    )
    opus = lookup("claude-opus-4-5-20251101")
    # $5 input, $6.25 5m write, $10 1h write, $0.50 read, $25 output per MTok.
    assert opus.cost_usd(usage, 500_000) == pytest.approx(5 + 2 * 6.25 + 10 + 10 * 0.5 + 12.5)
    assert opus.billed_input(usage) == pytest.approx(1e6 + 1.25 * 2e6 + 2 * 1e6 + 0.1 * 1e7)
    cheap_reads = lookup("claude-opus-5-5")
    assert cheap_reads.billed_input(usage) == pytest.approx(1e6 + 1.25 * 2e6 + 2 * 1e6 + 0.05 * 1e7)


def test_a_long_prompt_band_prices_every_token_of_that_request() -> None:
    haiku = lookup("claude-haiku-5-5")
    short = Usage(input_tokens=100_000)
    long = Usage(input_tokens=100_001)
    assert haiku.cost_usd(short, 1_000) == pytest.approx(0.1 * 0.1 + 0.001 * 0.5)
    assert haiku.cost_usd(long, 1_000) == pytest.approx(100_001 * 0.5 / 1e6 + 0.001 * 2.5)
    assert haiku.billed_input(long) == pytest.approx(5 * 100_001)  # in base-input equivalents


def test_every_row_is_dated_sourced_and_complete() -> None:
    table = rows()
    assert len({row.id for row in table}) >= 20
    for row in table:
        assert row.source and row.effective.year >= 2024
        assert 0 < row.rates.read < row.rates.input < row.rates.write_5m < row.rates.write_1h
        assert row.min_cacheable_tokens > 0 and row.context_window >= 200_000


@pytest.mark.parametrize(
    ("model_id", "betas", "limit"),
    [  # the models' pages, and the API's own 400s (prices.toml cites them)
        ("claude-opus-4-5-20251101", (), 64_000),
        ("claude-sonnet-4-5-20250929", (), 64_000),
        ("claude-opus-4-1", (), 32_000),
        ("claude-opus-4-6", (), 128_000),
        ("claude-3-haiku-20240307", (), 4_096),
        ("claude-3-7-sonnet-20250219", (), 64_000),
        ("claude-3-7-sonnet-20250219", ("output-128k-2025-02-19",), 128_000),
        ("claude-sonnet-4-6", ("output-128k-2025-02-19",), 128_000),  # nothing to raise
        ("claude-opus-4-5", ("output-128k-2025-02-19",), 64_000),
    ],
)
def test_every_model_has_its_output_limit_and_a_beta_raises_sonnet_3_7s(
    model_id: str, betas: tuple[str, ...], limit: int
) -> None:
    assert lookup(model_id).output_limit(betas) == limit
    assert all(row.output_limit() for row in rows())


@pytest.mark.parametrize(
    ("model_id", "fast"),
    [  # the fast-mode page: Opus 5 and 4.8 at $10 / $50; Opus 4.6 at $30 / $150 in 2026-02
        ("claude-opus-5", 2.0),
        ("claude-opus-4-8", 2.0),
        ("claude-opus-4-6", 6.0),
        ("claude-sonnet-4-6", None),  # no fast mode: a fast call is priced standard
    ],
)
def test_fast_mode_multiplies_every_price_and_billed_input_counts_standard_tokens(
    model_id: str, fast: float | None
) -> None:
    row = lookup(model_id)
    assert row.fast == fast
    usage = Usage(100, 3000, 20_000, 1000, 2000)
    quick = row.served(Speed.FAST)
    times = fast or 1.0
    assert quick.cost_usd(usage, 500) == pytest.approx(times * row.cost_usd(usage, 500))
    assert quick.billed_input(usage) == pytest.approx(times * row.billed_input(usage))
    assert quick.multipliers == row.multipliers  # the cache's prices relative to input stay
    assert row.served(Speed.STANDARD) == row
    us = row.served(Speed.FAST, Geo.US)  # US-only inference: 1.1x, on top of fast mode's
    assert us.cost_usd(usage, 500) == pytest.approx(1.1 * times * row.cost_usd(usage, 500))
