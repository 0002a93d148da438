"""gateway/savings.py: what the client's own requests would have cost, per model and speed."""

from __future__ import annotations

from typing import Any

import pytest
from ephemeral_context.cache_sim import Usage
from ephemeral_context.gateway.savings import Savings
from ephemeral_context.prices import lookup
from ephemeral_context.tokens import estimate_tokens

MODEL = "claude-opus-5"  # fast mode at 2x
SYSTEM = [{"type": "text", "text": "You are terse. " * 300, "cache_control": {"type": "ephemeral"}}]


def body(prompt: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 64,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": prompt}],
        **extra,
    }


def test_fast_requests_have_a_cache_of_their_own() -> None:
    """Requests at different speeds share no cached prefix: the first fast request of a
    session writes the system prompt a standard one had cached."""
    savings = Savings()
    standard = savings.price_direct("s", body("one"), None, now=0.0)
    again = savings.price_direct("s", body("two"), None, now=1.0)
    fast = savings.price_direct("s", body("three", speed="fast"), None, now=2.0)
    assert standard.direct is not None and again.direct is not None and fast.direct is not None
    system = again.direct.cache_read_input_tokens
    assert system >= estimate_tokens("You are terse. " * 300, "prose")  # the system prompt
    assert fast.direct.cache_read_input_tokens == 0
    assert fast.direct.cache_creation_input_tokens == system


@pytest.mark.parametrize(("speed", "times"), [("standard", 1.0), ("fast", 2.0)])
def test_a_request_is_billed_at_its_speed(speed: str, times: float) -> None:
    savings = Savings()
    pricing = savings.price_direct("s", body("one", speed=speed), None, now=0.0)
    upstream = {"input_tokens": 10, "cache_creation_input_tokens": 2000}
    savings.record("s", pricing, [upstream], passthrough=True)
    standard = lookup(MODEL).billed_input(Usage(10, 2000, 0, 2000, 0))
    assert savings.figures("s").billed_input_sent == pytest.approx(times * standard)


def test_the_cache_of_a_session_idle_past_its_ttls_is_dropped() -> None:
    """A gateway runs for weeks: a session whose cached prefixes all expired keeps no cache
    model (each was kept for good: up to 4,096 entries and a request's keys per session),
    and coming back it is priced as it was, its prefix written again."""
    savings = Savings()
    first = savings.price_direct("old", body("one"), None, now=0.0)
    savings.price_direct("live", body("two"), None, now=3400.0)  # cached till 3700
    savings.price_direct("new", body("three"), None, now=3500.0)
    assert set(savings._caches) == {("live", MODEL), ("new", MODEL)}
    back = savings.price_direct("old", body("one"), None, now=3600.0)
    assert back.direct == first.direct
