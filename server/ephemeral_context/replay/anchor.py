"""Token counts anchored to what was billed.

Between two calls of one thread on one model, both with recorded usage, the input total
grows by exactly the tokens of what the later request added: the earlier response, the new
tool results and prompts, and whatever Claude Code attached without writing it down. So
where usage is recorded, the estimates of the added blocks are scaled to that growth (in
proportion to their estimates, rounded so they sum to it exactly), and every strategy
prices the same real token counts. Recorded usage sizes blocks here; it never tells the
cache model what was read or written (that is what the model must get right on its own).

The calls of a thread follow their place in the chain (how many messages they carry), not
the clock, which can go backwards in exported or merged transcripts. A step whose growth is
most of the request and several times what its blocks are estimated at is skipped: the
earlier call's usage lost its cache counts (an export, a gateway), and the growth from it
would put most of the request on the few blocks added next. No step of the corpus or the
traces is one (their largest such steps are at most 1.7 times the estimate).

What follows Claude Code's breakpoint (`flow.mark_position`: results the API renders after
the marked one, a role "system" message 2.1.154 to 2.1.211 leave unmarked) is billed as
plain input: where the cache took the request, the call's recorded `input_tokens` are
exactly those blocks' tokens, and they are sized first (before the thread's prefix is, from
its first call), then kept as they are when the step's growth is spread.

A thread forked off another (`Thread.origin`) starts with messages that thread sent and
its prefix: its first call's step is from them, which carry the counts they were given
there, to what the call recorded.

API:
- `anchor_unmarked(session)`: size every recorded call's blocks after the breakpoint in place;
  returns the calls used.
- `anchor_tokens(session)`: scale the added blocks of every recorded step in place, a forked
  thread's first call from what it shares with its origin; returns the steps used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from ephemeral_context.cache_sim import Usage
from ephemeral_context.replay.flow import Call, Message, Session, mark_position, shared_messages

IMPLAUSIBLE_RATIO = 4
"""A step's growth over its blocks' estimate beyond which, when it is also most of the
request, it measures a lost count, not the blocks: real steps that large stay under 1.7."""


def anchor_unmarked(session: Session) -> int:
    """Size the blocks after Claude Code's breakpoint to each call's recorded plain input."""
    anchored = 0
    for call in session.calls:
        found = _unmarked(session, call)
        if found is None or call.usage is None:
            continue
        at, first = found
        messages = session.threads[call.thread].messages
        tail = messages[at : call.n_messages]
        messages[at : call.n_messages] = _scaled(tail, call.usage.input_tokens, slice(first, None))
        anchored += 1
    return anchored


def _unmarked(session: Session, call: Call) -> tuple[int, int] | None:
    """The blocks after Claude Code's breakpoint that the call's plain input sizes: the index
    of the message the breakpoint is in, and of its first block after the breakpoint. None
    when the breakpoint is on the last block, or the cache did not take the request (below
    the minimum cacheable length everything is plain input)."""
    usage = call.usage
    if usage is None or not usage.input_tokens:
        return None
    if not usage.cache_read_input_tokens + usage.cache_creation_input_tokens:
        return None
    messages = session.request(call)
    found = mark_position(messages)
    if found is None:
        return None
    at, block = found
    estimate = _tokens(messages[at:], slice(block + 1, None))
    if not estimate or _implausible(usage.input_tokens, estimate, usage):
        return None  # a gateway that counts cached tokens as input too
    return at, block + 1


def anchor_tokens(session: Session) -> int:
    """Scale the added blocks of every recorded call-to-call step; returns the steps used."""
    by_thread: dict[str, list[Call]] = {}
    for call in session.calls:
        by_thread.setdefault(call.thread, []).append(call)
    anchored = 0
    forked: list[tuple[Call, str]] = []
    for thread_id, calls in by_thread.items():
        ordered = sorted(calls, key=lambda c: (c.n_messages, c.started, c.index))
        origin = session.threads[thread_id].origin
        if origin is not None:
            forked.append((ordered[0], origin))
        for previous, call in pairwise(ordered):
            if previous.usage is None or call.usage is None or previous.model != call.model:
                continue
            growth = call.usage.total_input_tokens - previous.usage.total_input_tokens
            anchored += _anchor_step(session, call, previous.n_messages, growth)
    done: dict[str, list[str]] = {}
    for call, origin in forked:  # after the steps of the threads they fork off, in order
        thread = session.threads[call.thread]
        family = done.setdefault(origin, [origin])
        request = session.request(call)
        shared, source = max(
            (shared_messages(session.threads[other].messages, request), other) for other in family
        )
        family.append(call.thread)
        thread.messages[:shared] = session.threads[source].messages[:shared]
        if call.usage is not None:
            sent = thread.prefix_tokens + thread.hidden_tokens
            sent += sum(message.tokens for message in thread.messages[:shared])
            anchored += _anchor_step(session, call, shared, call.usage.total_input_tokens - sent)
    return anchored


def _anchor_step(session: Session, call: Call, start: int, growth: int) -> bool:
    """Scale the blocks a call added after its thread's first `start` messages to `growth`,
    those after the breakpoint kept at the size the call's plain input gave them; False
    where the step says nothing (no growth, no estimate, an implausible one)."""
    assert call.usage is not None
    thread = session.threads[call.thread]
    added = thread.messages[start : call.n_messages]
    estimate = sum(m.tokens for m in added)
    if growth <= 0 or not estimate or _implausible(growth, estimate, call.usage):
        return False
    scaled, total = slice(None), growth
    found = _unmarked(session, call)
    if found is not None and found[0] >= start:
        at, first = found
        unmarked = first + sum(len(m.blocks) for m in added[: at - start])
        kept = _tokens(added, slice(unmarked, None))
        if _tokens(added, slice(0, unmarked)) and growth > kept:
            scaled, total = slice(0, unmarked), growth - kept
    thread.messages[start : call.n_messages] = _scaled(added, total, scaled)
    return True


def _implausible(growth: int, estimate: int, usage: Usage) -> bool:
    """More than half the request, on blocks estimated at under a quarter of the growth: the
    earlier call recorded less than it sent (a usage that lost its cache counts), or the
    plain input counts more than the blocks after the breakpoint."""
    return growth > usage.total_input_tokens / 2 and growth > IMPLAUSIBLE_RATIO * estimate


def _tokens(messages: Sequence[Message], blocks: slice) -> int:
    """The tokens of `blocks`, positions counted over the messages' blocks in order."""
    return sum([block.tokens for message in messages for block in message.blocks][blocks])


def _scaled(messages: Sequence[Message], total: int, which: slice = slice(None)) -> list[Message]:
    """The messages with the tokens of the blocks `which` picks (positions counted over all
    their blocks) scaled to sum to `total` (largest remainders); other blocks as they are."""
    estimates = [block.tokens for message in messages for block in message.blocks]
    scaled = range(len(estimates))[which]
    whole = sum(estimates[i] for i in scaled)
    shares = {i: total * estimates[i] / whole for i in scaled}
    counts = list(estimates)
    for i, share in shares.items():
        counts[i] = int(share)
    order = sorted(shares, key=lambda i: shares[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts[i] for i in scaled)]:
        counts[i] += 1
    out: list[Message] = []
    position = 0
    for message in messages:
        blocks = tuple(
            replace(block, tokens=counts[position + i]) for i, block in enumerate(message.blocks)
        )
        position += len(blocks)
        out.append(replace(message, blocks=blocks))
    return out
