"""What a conversation's past says about its future, as the policy's inputs.

Nothing here looks ahead: the horizon (calls until the context would fill its budget), the
TTLs (from the idle gaps and the mean lifetime of thread content so far) and the chance a
file is used again (from the gaps between uses of the other files) all come from what the
conversation has done up to now. policy.py turns them into decisions.
"""

from __future__ import annotations

import itertools
from typing import Literal

from ephemeral_context.cache_sim import Ttl
from ephemeral_context.context import policy
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.prices import Multipliers, priced


def rates(c: Conversation) -> Multipliers:
    """The cost gate's read and write multipliers: those of the model the conversation's
    last request used (prices.py; the reference model's before the first request)."""
    return priced(c.accounting.model).multipliers


def horizon(c: Conversation, budget: int) -> float:
    """Calls until this conversation's context would fill its budget, at the growth so
    far of what it was shown (before any eviction)."""
    shown = sum(b.tokens for b in c.thread.baseline)
    current = c.accounting.last_built.total_tokens if c.accounting.last_built else shown
    return policy.calls_until_full(budget, current, shown / max(1, c.calls))


def ttls(c: Conversation, cache_ttl: Literal["auto", "5m", "1h"], budget: int) -> tuple[Ttl, Ttl]:
    """TTLs for the prefix (system, segment) and for the thread breakpoints.

    Prefix content stays for the rest of the session; thread content stays, on
    average, as long as Little's law says from this conversation so far.
    """
    if cache_ttl != "auto":
        return cache_ttl, cache_ttl
    until_full = horizon(c, budget)
    prefix = policy.choose_ttl(c.gaps, c.calls, rates(c), horizon=until_full)
    lifetime = policy.mean_lifetime(c.context_token_calls, c.thread.added_tokens)
    thread = policy.choose_ttl(c.gaps, c.calls, rates(c), horizon=until_full, lifetime=lifetime)
    return prefix, thread


def file_gaps(c: Conversation) -> tuple[list[int], dict[str, int]]:
    """Gaps between uses of a file so far, and each file's current idle span."""
    gaps: list[int] = []
    open_idles: dict[str, int] = {}
    for uri, uses in c.touches.items():
        calls = sorted(set(uses))
        gaps.extend(b - a for a, b in itertools.pairwise(calls))
        open_idles[uri] = c.calls - calls[-1]
    return gaps, open_idles


def file_reuse(
    c: Conversation, uri: str, since: int, gaps: list[int], open_idles: dict[str, int]
) -> tuple[float, float | None]:
    """Chance the file is used again and the expected wait, from the other files' history
    (the file's own open span is what is being predicted, so it is not evidence)."""
    uses = c.touches.get(uri, [])
    idle = c.calls - (uses[-1] if uses else since)
    others = [g for other, g in open_idles.items() if other != uri]
    return (
        policy.idle_reuse_probability(idle, gaps, others),
        policy.expected_wait(idle, gaps),
    )
