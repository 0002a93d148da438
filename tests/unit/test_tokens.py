"""tokens.py: the offline estimate, its fitted constants, and the count_tokens path."""

from __future__ import annotations

import math

import anthropic
import pytest
from ephemeral_context import tokens
from ephemeral_context.replay.calibrate import fit_paths
from ephemeral_context.tokens import (
    BLOCK_OVERHEAD_TOKENS,
    CHARS_PER_TOKEN,
    KINDS,
    TOKENS_PER_OTHER_CHAR,
    TOKENS_PER_WIDE_CHAR,
    count_tokens,
    estimate_block_tokens,
    estimate_tokens,
    script_counts,
)

from tests.fakes import FakeMessagesAPI
from tests.transcripts import all_transcripts, shared

CODE = "def add(a: int, b: int) -> int:\n    return a + b\n" * 20


def test_estimate_is_characters_over_the_kind_ratio() -> None:
    assert estimate_tokens("", "prose") == 0
    for kind in KINDS:
        assert estimate_tokens("x" * 1000, kind) == math.ceil(1000 / CHARS_PER_TOKEN[kind])
    assert estimate_tokens(CODE, "no-such-kind") == estimate_tokens(CODE, "code")
    # denser kinds cost more tokens for the same characters
    assert estimate_tokens(CODE, "code") > estimate_tokens(CODE, "prose")


def test_block_estimate_adds_the_fixed_block_cost() -> None:
    assert estimate_block_tokens("", "json") == BLOCK_OVERHEAD_TOKENS
    assert (
        estimate_block_tokens(CODE, "code") == estimate_tokens(CODE, "code") + BLOCK_OVERHEAD_TOKENS
    )


def test_other_scripts_cost_per_character() -> None:
    chinese = "这个函数在请求失败时会重试三次" * 10
    assert script_counts(chinese) == (0, len(chinese), 0)
    assert estimate_tokens(chinese, "prose") == math.ceil(len(chinese) * TOKENS_PER_WIDE_CHAR)
    russian = "Функция повторяет запрос" * 10
    ascii_chars, wide, other = script_counts(russian)
    assert wide == 0 and ascii_chars == russian.count(" ")
    assert estimate_tokens(russian, "prose") == math.ceil(
        ascii_chars / CHARS_PER_TOKEN["prose"] + other * TOKENS_PER_OTHER_CHAR
    )
    # a Chinese sentence costs more than an English one of the same length
    assert estimate_tokens(chinese, "prose") > estimate_tokens("x" * len(chinese), "prose")


@pytest.mark.slow
def test_constants_are_the_fit_on_the_real_transcripts() -> None:
    """Re-running the fit on shared/corpus and the four traces gives the shipped constants."""
    fit = fit_paths([*sorted(shared("corpus").glob("*.jsonl")), *all_transcripts()])
    assert fit.steps >= 2400
    for kind in KINDS:
        assert fit.chars_per_token[kind] == pytest.approx(CHARS_PER_TOKEN[kind], abs=0.02)
    assert fit.tokens_per_char["wide"] == pytest.approx(TOKENS_PER_WIDE_CHAR, abs=0.01)
    assert fit.tokens_per_char["other"] == pytest.approx(TOKENS_PER_OTHER_CHAR, abs=0.01)
    assert fit.block_overhead == pytest.approx(BLOCK_OVERHEAD_TOKENS, abs=1)
    assert set(fit.script_error) >= {"ascii", "cjk"}


def test_count_tokens_without_a_key_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY"):
        count_tokens("hello", "claude-sonnet-4-5")


def test_count_tokens_asks_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the anthropic SDK, against the local Messages API (no real key exists here)."""
    with FakeMessagesAPI() as api:
        with anthropic.Anthropic(api_key="test-key", base_url=api.base_url) as client:
            assert count_tokens(CODE, "claude-sonnet-4-5", client) == estimate_tokens(CODE, "prose")
        # From the environment, as a user with a key would run it.
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        assert tokens.count_tokens("hello there", "claude-sonnet-4-5") == estimate_tokens(
            "hello there", "prose"
        )
        paths = [r.path for r in api.requests]
        assert paths == ["/v1/messages/count_tokens"] * 2
        assert api.requests[0].body["messages"] == [{"role": "user", "content": CODE}]
