"""The request shape: tools | system (BP1) | file segment (BP2) | thread (BP3 anchor) ... (BP4).

Pure functions over the engine's parts. The file segment follows the system prompt as
system text blocks, least-recently-changed first, so a change invalidates the shortest
suffix. The thread is the conversation, blocks merged into alternating messages. At most
four `cache_control` breakpoints: end of system, end of segment, a mid-thread anchor that
keeps the last cache hit inside the 20-block lookback, and the last block. The system and
segment breakpoints share one TTL and the thread breakpoints another, never 1 hour after
5 minutes (the API's rule).

Each call returns both the Messages API kwargs and the cache model's view of the same request
(`cache_sim.Request`), built from per-block content keys computed once and the cache-model
block each thread block keeps (thread.py `message_block`), so the engine can account for a
request without serialising it or making a block per thread block.

API:
- `build(...)`: the parts laid out as one request; a `BuiltRequest` (API kwargs and
  `cache_sim.Request`).
- `place_breakpoints(...)`, `choose_anchor(...)`: where the four breakpoints go.
- `SegmentEntry`: one file version in the segment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ephemeral_context.cache_sim import LOOKBACK_POSITIONS, MAX_BREAKPOINTS, Block, Request, Ttl
from ephemeral_context.context.blocks import content_key
from ephemeral_context.context.thread import ThreadBlock, message_block


@dataclass(frozen=True)
class SegmentEntry:
    """One file version in the segment (full text, or synopsis plus id)."""

    item_id: str
    uri: str
    text: str
    tokens: int
    changed_at: int
    key: int = 0

    def block(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True)
class Breakpoints:
    """Where the breakpoints go; thread positions are indices into the thread."""

    system: bool
    segment: bool
    anchor: int | None
    last: int | None
    ttl: Ttl
    """TTL of the system and segment breakpoints."""
    thread_ttl: Ttl = "5m"
    """TTL of the thread breakpoints (never 1h after a 5m one, as the API requires)."""
    anchor_ttl: Ttl | None = None
    """TTL of the anchor when it differs from the thread's: a hedge, a 1-hour breakpoint
    before a 5-minute last one (the prefix then takes an hour too)."""
    head_ttl: Ttl | None = None
    """TTL of the system breakpoint when the client's own breakpoints there are kept as
    the client marked them (the gateway's case, `gateway/outbound.py`); None: `ttl`."""

    @property
    def system_ttl(self) -> Ttl:
        """The TTL of the system breakpoint."""
        return self.head_ttl or self.ttl

    def ttl_at(self, position: int) -> Ttl:
        """The TTL of the thread breakpoint at `position`."""
        if position == self.anchor and self.anchor_ttl is not None:
            return self.anchor_ttl
        return self.thread_ttl

    @property
    def count(self) -> int:
        return (
            int(self.system)
            + int(self.segment)
            + int(self.anchor is not None)
            + int(self.last is not None)
        )


def choose_anchor(last: int, hit: int | None) -> int | None:
    """A mid-thread breakpoint at the last cache hit when the lookback cannot reach it."""
    if hit is None or hit < 0 or hit >= last:
        return None
    return hit if last - hit >= LOOKBACK_POSITIONS else None


def place_breakpoints(
    has_system: bool,
    has_segment: bool,
    thread_len: int,
    hit: int | None,
    ttl: Ttl,
    thread_ttl: Ttl | None = None,
    hedge: int | None = None,
    head_ttl: Ttl | None = None,
) -> Breakpoints:
    """Breakpoints for this request (never more than four); `thread_len` counts up to the
    last block that may carry one (not a thinking block). `hedge`: a thread position for
    a 1-hour anchor before a 5-minute last breakpoint (within the lookback of `hit`, which
    it then reaches in the anchor's stead), with an hour on the prefix. `head_ttl`: the
    system breakpoint's TTL when the client's own is kept (after a 5-minute one the caller
    asks 5 minutes throughout, as the gateway would send it: engine.py's outlook)."""
    last = thread_len - 1 if thread_len else None
    anchor = choose_anchor(last, hit) if last is not None else None
    inner: Ttl = ttl if thread_ttl is None or ttl == "5m" else thread_ttl
    if hedge is not None and last is not None and hedge < last and ttl == "1h" and inner == "5m":
        points = Breakpoints(has_system, has_segment, hedge, last, ttl, inner, "1h", head_ttl)
        assert points.count <= MAX_BREAKPOINTS
        return points
    points = Breakpoints(has_system, has_segment, anchor, last, ttl, inner, None, head_ttl)
    assert points.count <= MAX_BREAKPOINTS
    return points


@dataclass
class BuiltRequest:
    """The Messages API kwargs and the cache model's view of the same request."""

    kwargs: dict[str, Any]
    cache_request: Request
    breakpoints: Breakpoints
    prefix_tokens: int
    total_tokens: int = 0
    expected_read: int = 0
    """Tokens the engine expects the cache to serve (its own view of the warm prefix)."""
    head_tokens: int = 0
    """Tokens of the tool schemas and the system prompt (the part before the file segment)."""


def _control(ttl: Ttl) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def build(
    *,
    model: str,
    max_tokens: int,
    system_text: str,
    system_tokens: int,
    segment: Sequence[SegmentEntry],
    thread: Sequence[ThreadBlock],
    tools: Sequence[Mapping[str, Any]],
    tool_blocks: Sequence[Block],
    points: Breakpoints,
) -> BuiltRequest:
    """Lay the parts out as one request with the chosen breakpoints."""
    control = _control(points.ttl)
    system: list[dict[str, Any]] = []
    cache_system: list[Block] = []
    if system_text:
        block: dict[str, Any] = {"type": "text", "text": system_text}
        if points.system:
            block["cache_control"] = _control(points.system_ttl)
        system.append(block)
        cache_system.append(
            Block(
                content_key(system_text),
                system_tokens,
                points.system_ttl if points.system else None,
            )
        )
    for i, entry in enumerate(segment):
        block = entry.block()
        is_last = i == len(segment) - 1
        if is_last and points.segment:
            block["cache_control"] = control
        system.append(block)
        cache_system.append(
            Block(
                entry.key or content_key(entry.text),
                entry.tokens,
                points.ttl if is_last and points.segment else None,
            )
        )
    messages: list[dict[str, Any]] = []
    cache_messages: list[Block] = []
    marked = {p for p in (points.anchor, points.last) if p is not None}
    role: str | None = None
    content: list[dict[str, Any]] = []
    for index, tb in enumerate(thread):
        first = tb.role != role
        if first:
            content = []
            messages.append({"role": tb.role, "content": content})
            role = tb.role
        if index in marked:
            block_ttl = points.ttl_at(index)
            content.append({**tb.block, "cache_control": _control(block_ttl)})
            cache_messages.append(
                message_block(tb.key, tb.role, first, tb.tokens, tb.run, block_ttl)
            )
        elif first == tb.first:
            content.append(tb.block)
            cache_messages.append(tb.sent)
        else:
            content.append(tb.block)
            cache_messages.append(message_block(tb.key, tb.role, first, tb.tokens, tb.run))
    kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = list(tools)
    request = Request(tools=tool_blocks, system=cache_system, messages=cache_messages)
    prefix = sum(b.tokens for b in tool_blocks) + sum(b.tokens for b in cache_system)
    return BuiltRequest(
        kwargs=kwargs,
        cache_request=request,
        breakpoints=points,
        prefix_tokens=prefix,
        total_tokens=prefix + sum(b.tokens for b in cache_messages),
        head_tokens=sum(b.tokens for b in tool_blocks) + (system_tokens if system_text else 0),
    )
