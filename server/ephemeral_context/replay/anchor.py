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

API:
- `anchor_tokens(session)`: scale the added blocks of every recorded step in place; returns
  the steps used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from ephemeral_context.cache_sim import Usage
from ephemeral_context.replay.flow import Call, Message, Session

IMPLAUSIBLE_RATIO = 4
"""A step's growth over its blocks' estimate beyond which, when it is also most of the
request, it measures a lost count, not the blocks: real steps that large stay under 1.7."""


def anchor_tokens(session: Session) -> int:
    """Scale the added blocks of every recorded call-to-call step; returns the steps used."""
    by_thread: dict[str, list[Call]] = {}
    for call in session.calls:
        by_thread.setdefault(call.thread, []).append(call)
    anchored = 0
    for thread_id, calls in by_thread.items():
        thread = session.threads[thread_id]
        ordered = sorted(calls, key=lambda c: (c.n_messages, c.started, c.index))
        for previous, call in pairwise(ordered):
            if previous.usage is None or call.usage is None or previous.model != call.model:
                continue
            if call.n_messages <= previous.n_messages:
                continue
            growth = call.usage.total_input_tokens - previous.usage.total_input_tokens
            added = thread.messages[previous.n_messages : call.n_messages]
            estimate = sum(m.tokens for m in added)
            if growth <= 0 or not estimate or _implausible(growth, estimate, call.usage):
                continue
            thread.messages[previous.n_messages : call.n_messages] = _scaled(added, growth)
            anchored += 1
    return anchored


def _implausible(growth: int, estimate: int, usage: Usage) -> bool:
    """More than half the request, on blocks estimated at under a quarter of the growth: the
    earlier call recorded less than it sent (a usage that lost its cache counts)."""
    return growth > usage.total_input_tokens / 2 and growth > IMPLAUSIBLE_RATIO * estimate


def _scaled(messages: Sequence[Message], total: int) -> list[Message]:
    """The messages with block tokens scaled to sum to `total` (largest remainders)."""
    estimates = [block.tokens for message in messages for block in message.blocks]
    whole = sum(estimates)
    shares = [total * e / whole for e in estimates]
    counts = [int(share) for share in shares]
    order = sorted(range(len(shares)), key=lambda i: shares[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
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
