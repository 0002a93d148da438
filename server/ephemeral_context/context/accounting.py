"""Accounting: what each request of one conversation costs, and what the API reported.

Every request the engine builds is priced three times in the cache model (cache_sim), at
the same time: as built; as its recorded-style twin (every block re-sent as first shown,
breakpoints after the system prompt and at the end, with the TTL the client itself asks
for); and as its kept twin (the request as built with every evicted block as first shown
and no re-hydration round trip). The request after a round trip goes on with the call
the one before started: neither twin is priced for it, since a client that evicts
nothing makes no such request. The status reports the savings (status.py); the policy
weighs its TTL bets by the kept twins' lead over the recorded-style ones and its warm cuts
by the requests' lead over the recorded-style ones (policy.py). Until the client's TTL is
known (the replay's first call, a transcript whose first usages were lost), the
recorded-style twins are priced under 5 minutes and an hour, and the leads are measured
against the cheaper bill: a lead must hold whatever TTL the client had. The breakpoints
a request wrote become entries of the thread's CacheView; the usage the API reports back
(`record_usage`) corrects that view when nothing was read, and gives the hit rate.

API:
- `Accounting`: `account(...)`, `settle(client_ttl)`, `record_usage(thread, usage)`; `lead`,
  `layout_lead`, `twins_billed`, `worst_ttl()`, `continues` (set by rehydration.py).
- `twin_request(thread, tool_blocks, sys_tokens, ttl)`: the recorded-style twin of a request.
- `kept_request(thread, built)`: the request had nothing been evicted."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ephemeral_context.cache_sim import (
    TTL_SECONDS,
    Block,
    PromptCache,
    Request,
    Ttl,
    Usage,
    usage_from_dict,
)
from ephemeral_context.context.blocks import content_key
from ephemeral_context.context.cacheview import END_OF_SEGMENT, END_OF_SYSTEM
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.layout import Breakpoints, BuiltRequest
from ephemeral_context.context.thread import Thread, message_block
from ephemeral_context.prices import priced


@dataclass
class Accounting:
    """One conversation's two bills in the cache model, the usage the API reported, and
    the last request built."""

    model: str = ""
    sim: PromptCache | None = None
    baseline_sim: PromptCache | None = None
    ours: Usage = field(default_factory=Usage)
    baseline: Usage = field(default_factory=Usage)
    ours_billed: float = 0.0
    """The requests built, in base-input-token equivalents at their model's prices."""
    baseline_billed: float = 0.0
    """Their recorded-style twins, likewise."""
    kept_sim: PromptCache | None = None
    kept_billed: float = 0.0
    """The requests as built but with nothing evicted and no round trip (each evicted block
    as first shown): against the recorded-style twins, what the layout and the TTLs saved
    with the cuts left out."""
    recorded: Usage = field(default_factory=Usage)
    last_usage: Usage | None = None
    last_built: BuiltRequest | None = None
    continues: bool = False
    """The next request goes on with the call the last one started (after a re-hydration
    round trip): a client that evicts nothing makes no such request, so neither twin is
    priced again."""
    told: bool = False
    """A request was accounted with the client's TTL known."""
    untold: TwinBill | None = None
    """Until the client's TTL is known (the replay's first call; a transcript whose first
    usages were lost), the recorded-style twins are priced at 5 minutes, the API's default,
    and here at an hour; the first request that knows it settles their bill (`settle`)."""

    def account(
        self,
        thread: Thread,
        built: BuiltRequest,
        model: str,
        now: float,
        sys_tokens: int,
        tool_blocks: list[Block],
        client_ttl: Ttl | None = None,
    ) -> None:
        """Simulate this request and, unless it `continues` a call, its kept twin and its
        recorded-style twin (breakpoints with `client_ttl`; None: not known yet, see
        `untold`); remember the new boundaries."""
        self.settle(client_ttl)
        if self.sim is None and not self.told:
            self.untold = TwinBill(PromptCache(model))
        if self.sim is None or self.model != model:
            self.model = model
            self.sim = PromptCache(model)
            self.baseline_sim = PromptCache(model)
            self.kept_sim = PromptCache(model)
            if self.untold is not None:
                self.untold.sim = PromptCache(model)
        assert self.sim is not None and self.baseline_sim is not None
        assert self.kept_sim is not None
        price = priced(model)
        ours = self.sim.call(built.cache_request, now)
        self.ours = self.ours + ours
        self.ours_billed += price.billed_input(ours)
        if not self.continues:
            kept = self.kept_sim.call(kept_request(thread, built), now)
            self.kept_billed += price.billed_input(kept)
            request = twin_request(thread, tool_blocks, sys_tokens, client_ttl or "5m")
            twin = self.baseline_sim.call(request, now)
            self.baseline = self.baseline + twin
            self.baseline_billed += price.billed_input(twin)
            if self.untold is not None:
                hour_twin = twin_request(thread, tool_blocks, sys_tokens, "1h")
                hour = self.untold.sim.call(hour_twin, now)
                self.untold.usage = self.untold.usage + hour
                self.untold.billed += price.billed_input(hour)
        self.continues = False
        points = built.breakpoints
        written: dict[int, int] = {}
        for p in (points.anchor, points.last):
            if p is not None:
                written[p] = built.prefix_tokens + thread.end(p)
        if points.segment:
            written[END_OF_SEGMENT] = built.prefix_tokens
        if points.system:
            written[END_OF_SYSTEM] = sum(b.tokens for b in tool_blocks) + sys_tokens
        ttls = {p: TTL_SECONDS[_ttl_at(points, p)] for p in written}
        thread.cache.record_call(written, now, ttls)
        self.last_built = built

    def settle(self, client_ttl: Ttl | None) -> None:
        """The client's TTL, if known now (None: not yet; it comes from a request already
        sent or this one): the twins so far are the cheaper of their two bills, so the lead
        counts only what was won whatever TTL the client had (a gap between 5 minutes and
        an hour while it was unknown makes the hour's the cheaper)."""
        if client_ttl is None or self.told:
            return
        if self.untold is not None and self.untold.billed < self.baseline_billed:
            self.baseline_sim, self.baseline = self.untold.sim, self.untold.usage
            self.baseline_billed = self.untold.billed
        self.told, self.untold = True, None

    @property
    def layout_lead(self) -> float:
        """What the requests with nothing evicted saved against the recorded-style twins:
        the layout and the TTL bets (negative: lost); while the client's TTL is unknown,
        against the cheaper of the two bills."""
        return self.twins_billed - self.kept_billed

    @property
    def lead(self) -> float:
        """What the requests built so far saved against their twins (negative: lost), in
        base-input-token equivalents; while the client's TTL is unknown, against the
        cheaper of the two bills."""
        return self.twins_billed - self.ours_billed

    @property
    def twins_billed(self) -> float:
        """The twins' bill the leads are measured against: the cheaper of the two while
        the client's TTL is unknown (a lead must hold whatever TTL it had)."""
        if self.untold is None:
            return self.baseline_billed
        return min(self.baseline_billed, self.untold.billed)

    def worst_ttl(self) -> Ttl | None:
        """While the client's TTL is unknown, the TTL of the cheaper twins' bill (the one
        the conversation fares worst against, which a losing policy falls back to)."""
        if self.untold is None:
            return None
        return "1h" if self.untold.billed < self.baseline_billed else "5m"

    def record_usage(self, thread: Thread, usage: Any) -> None:
        """Usage the API returned for the last call (SDK object or dict).

        A call that read nothing from the cache tells the engine its boundaries are gone.
        """
        u = usage_from_dict(usage)
        self.recorded = self.recorded + u
        self.last_usage = u
        built = self.last_built
        if u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens > 0 and built:
            points = built.breakpoints
            thread.cache.keep_only(
                (points.anchor, points.last, END_OF_SEGMENT if points.segment else None,
                 END_OF_SYSTEM)
            )  # fmt: skip


@dataclass
class TwinBill:
    """Recorded-style twins priced under one TTL: their cache, usage and bill."""

    sim: PromptCache
    usage: Usage = field(default_factory=Usage)
    billed: float = 0.0


def twin_request(thread: Thread, tool_blocks: list[Block], sys_tokens: int, ttl: Ttl) -> Request:
    """The recorded-style twin of the thread's request: every block as first shown, the
    client's breakpoints (after the system prompt, on the last block) with `ttl`."""
    system = [Block(content_key("system"), sys_tokens, ttl)] if sys_tokens else []
    base = list(thread.baseline)
    if base:
        base[-1] = replace(base[-1], cache_ttl=ttl)
    return Request(tools=tool_blocks, system=system, messages=base)


def kept_request(thread: Thread, built: BuiltRequest) -> Request:
    """`built` with every evicted block as first shown and no re-hydration blocks (the
    request had the policy evicted nothing), its last block keeping the last breakpoint.
    A block sent as first shown that starts a message in both (or in neither) is the
    built request's own block."""
    messages: list[Block] = []
    role = None
    """The role of the last block kept (re-hydration blocks left out)."""
    sent = None
    """The role of the last block of `built`."""
    for tb, block in zip(thread.blocks, built.cache_request.messages, strict=True):
        starts = tb.role != sent
        sent = tb.role
        if tb.kind is BlockKind.REHYDRATION:
            continue
        first = tb.role != role
        role = tb.role
        if tb.evicted and tb.original is not None and tb.kind is not BlockKind.CONSOLIDATED:
            key, tokens = tb.original_key, tb.original_tokens
        elif first == starts:
            messages.append(block)
            continue
        else:
            key, tokens = tb.key, tb.tokens
        messages.append(message_block(key, tb.role, first, tokens, tb.run, block.cache_ttl))
    if messages and messages[-1].cache_ttl is None:
        messages[-1] = replace(messages[-1], cache_ttl=built.breakpoints.thread_ttl)
    request = built.cache_request
    return Request(tools=request.tools, system=request.system, messages=messages)


def _ttl_at(points: Breakpoints, position: int) -> Ttl:
    """The TTL of the breakpoint at a thread position or at the end of system or segment."""
    if position == END_OF_SYSTEM:
        return points.system_ttl
    return points.ttl_at(position) if position >= 0 else points.ttl
