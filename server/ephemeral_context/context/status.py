"""The status-bar numbers: context size, hit rate and savings over the conversations.

Savings compare the cache model's bill for the requests built (accounting.py) with that of
the recorded-style baseline at the same times. `next_tokens` estimates the next request's
size from the state the engine keeps, without building it.

API:
- `status(state, convs, ...)`: the numbers for `ephemeralContext/status`, an `EngineStatus`.
- `next_tokens(state, c, pending)`: the next request's estimated size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ephemeral_context.cache_sim import Usage
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.context.items import listed, unseen_pins
from ephemeral_context.context.ledger import ItemState
from ephemeral_context.context.state import EngineState
from ephemeral_context.prices import priced


@dataclass(frozen=True)
class EngineStatus:
    """The numbers a status bar needs (docs/protocol.md, ephemeralContext/status)."""

    context_tokens: int
    budget: int
    items: int
    cache_hit_rate: float
    saved_tokens: float
    saved_usd: float
    breakdown: dict[str, int]
    last_call: Usage | None
    evictions: int
    rehydrations: int


def status(
    state: EngineState, convs: list[Conversation], pending: Mapping[str, int]
) -> EngineStatus:
    """The status-bar numbers over `convs`. Savings compare the cache model's bill for the
    requests built with that of the recorded-style baseline at the same times. `pending`:
    tokens of pinned files whose text changed since they were pinned (see `next_tokens`)."""
    ours = sum((c.accounting.ours for c in convs), Usage())
    base = sum((c.accounting.baseline for c in convs), Usage())
    recorded = sum((c.accounting.recorded for c in convs), Usage())
    rate_source = recorded if recorded.total_input_tokens else ours
    hit_rate = (
        rate_source.cache_read_input_tokens / rate_source.total_input_tokens
        if rate_source.total_input_tokens
        else 0.0
    )
    model = next((c.accounting.model for c in convs if c.accounting.model), "")
    price = priced(model)
    saved = price.billed_input(base) - price.billed_input(ours)
    saved_usd = price.input_usd(base) - price.input_usd(ours) if price.known else 0.0
    breakdown = {s.value: 0 for s in ItemState}
    for item in state.ledger:
        breakdown[item.state.value] += item.tokens
    context = max(
        (next_tokens(state, c, pending) for c in convs), default=next_tokens(state, None, pending)
    )
    last = next((c.accounting.last_usage for c in reversed(convs) if c.accounting.last_usage), None)
    return EngineStatus(
        context_tokens=context,
        budget=state.config.context_budget,
        items=len(listed(state)),
        cache_hit_rate=hit_rate,
        saved_tokens=saved,
        saved_usd=saved_usd,
        breakdown=breakdown,
        last_call=last,
        evictions=sum(len(e.item_ids) for e in state.events),
        rehydrations=sum(c.rehydrations for c in convs),
    )


def next_tokens(state: EngineState, c: Conversation | None, pending: Mapping[str, int]) -> int:
    """Tokens the next request of `c` (or of a new conversation) would carry, from state the
    engine keeps, without building it: tool schemas and system prompt as last sent, the file
    segment, the thread, and the pinned files it would show as they are now. A pinned URI in
    `pending` changed since it was pinned: every conversation will be shown its new text, at
    the tokens given, once it is pinned again (just before the next request)."""
    built = [b for x in state.conversations.values() if (b := x.accounting.last_built)]
    if c is not None and c.accounting.last_built is not None:
        head = c.accounting.last_built.head_tokens
    else:
        head = max((b.head_tokens for b in built), default=0)
    held = sum(e.tokens for e in c.segment) + c.thread.tokens if c is not None else 0
    pins = sum(i.tokens for i in unseen_pins(state, c) if i.key not in pending)
    return head + held + pins + sum(pending.values())
