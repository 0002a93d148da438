"""Accounting: what each request costs, what the cache holds afterwards, what was saved.

Every request the engine builds is priced twice in the cache model (cache_sim): as built,
and as its recorded-style twin (every block re-sent as first shown, one breakpoint at the
end), at the same time, so `status()` can report the savings. The breakpoints a request
wrote become entries of the conversation's CacheView; the usage the API reports back
(`record_usage`) corrects that view when nothing was read, and gives the hit rate.
`next_tokens` estimates the next request's size from the same state, without building it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ephemeral_context.cache_sim import (
    TTL_SECONDS,
    Block,
    PromptCache,
    Request,
    Usage,
    usage_from_dict,
)
from ephemeral_context.context.cacheview import END_OF_SEGMENT, END_OF_SYSTEM
from ephemeral_context.context.items import listed, unseen_pins
from ephemeral_context.context.layout import BuiltRequest, content_key
from ephemeral_context.context.ledger import ItemState
from ephemeral_context.context.state import EngineState
from ephemeral_context.context.thread import Conversation
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


def account(
    c: Conversation,
    built: BuiltRequest,
    model: str,
    now: float,
    sys_tokens: int,
    tool_blocks: list[Block],
) -> None:
    """Simulate this request and its recorded-style twin; remember the new boundaries."""
    if c.sim is None or c.model != model:
        c.model = model
        c.sim = PromptCache(model)
        c.baseline_sim = PromptCache(model)
    assert c.baseline_sim is not None
    c.ours_usage = c.ours_usage + c.sim.call(built.cache_request, now)
    system = [Block(content_key("system"), sys_tokens, "5m")] if sys_tokens else []
    base = list(c.baseline)
    if base:
        base[-1] = replace(base[-1], cache_ttl="5m")
    c.baseline_usage = c.baseline_usage + c.baseline_sim.call(
        Request(tools=tool_blocks, system=system, messages=base), now
    )
    points = built.breakpoints
    written: dict[int, int] = {}
    for p in (points.anchor, points.last):
        if p is not None:
            written[p] = built.prefix_tokens + c.offsets[p] + c.thread[p].tokens
    if points.segment:
        written[END_OF_SEGMENT] = built.prefix_tokens
    if points.system:
        written[END_OF_SYSTEM] = sum(b.tokens for b in tool_blocks) + sys_tokens
    c.cache.record_call(written, now, TTL_SECONDS[points.ttl], TTL_SECONDS[points.thread_ttl])


def record_usage(c: Conversation, usage: Any) -> None:
    """Usage the API returned for the last call (SDK object or dict).

    A call that read nothing from the cache tells the engine its boundaries are gone.
    """
    u = usage_from_dict(usage)
    c.recorded = c.recorded + u
    c.last_usage = u
    built = c.last_built
    if u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens > 0 and built:
        points = built.breakpoints
        c.cache.keep_only(
            (points.anchor, points.last, END_OF_SEGMENT if points.segment else None,
             END_OF_SYSTEM)
        )  # fmt: skip


def status(
    state: EngineState, convs: list[Conversation], pending: Mapping[str, int]
) -> EngineStatus:
    """The status-bar numbers over `convs`. Savings compare the cache model's bill for the
    requests built with that of the recorded-style baseline at the same times. `pending`:
    tokens of pinned files whose text changed since they were pinned (see `next_tokens`)."""
    ours = sum((c.ours_usage for c in convs), Usage())
    base = sum((c.baseline_usage for c in convs), Usage())
    recorded = sum((c.recorded for c in convs), Usage())
    rate_source = recorded if recorded.total_input_tokens else ours
    hit_rate = (
        rate_source.cache_read_input_tokens / rate_source.total_input_tokens
        if rate_source.total_input_tokens
        else 0.0
    )
    model = next((c.model for c in convs if c.model), "")
    price = priced(model)
    saved = price.billed_input(base) - price.billed_input(ours)
    saved_usd = price.input_usd(base) - price.input_usd(ours) if price.known else 0.0
    breakdown = {s.value: 0 for s in ItemState}
    for item in state.ledger:
        breakdown[item.state.value] += item.tokens
    context = max(
        (next_tokens(state, c, pending) for c in convs), default=next_tokens(state, None, pending)
    )
    last = next((c.last_usage for c in reversed(convs) if c.last_usage), None)
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
        rehydrations=sum(sum(c.rehydrated.values()) for c in convs),
    )


def next_tokens(state: EngineState, c: Conversation | None, pending: Mapping[str, int]) -> int:
    """Tokens the next request of `c` (or of a new conversation) would carry, from state the
    engine keeps, without building it: tool schemas and system prompt as last sent, the file
    segment, the thread, and the pinned files it would show as they are now. A pinned URI in
    `pending` changed since it was pinned: every conversation will be shown its new text, at
    the tokens given, once it is pinned again (just before the next request)."""
    built = [x.last_built for x in state.conversations.values() if x.last_built]
    if c is not None and c.last_built is not None:
        head = c.last_built.head_tokens
    else:
        head = max((b.head_tokens for b in built), default=0)
    held = sum(e.tokens for e in c.segment) + c.thread_tokens if c is not None else 0
    pins = sum(i.tokens for i in unseen_pins(state, c) if i.key not in pending)
    return head + held + pins + sum(pending.values())
