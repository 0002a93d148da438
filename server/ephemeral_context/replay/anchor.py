"""Token counts anchored to what was billed.

Between two calls of one thread on one model, both with recorded usage, the input total
grows by exactly the tokens of what the later request added: the earlier response, the new
tool results and prompts, and whatever Claude Code attached without writing it down. So
where usage is recorded, the estimates of the added blocks are scaled to that growth (in
proportion to their estimates, rounded so they sum to it exactly), and every strategy
prices the same real token counts. Recorded usage sizes blocks here; it never tells the
cache model what was read or written (that is what the model must get right on its own).

The calls of a thread follow their place in the chain (how many messages they carry), not
the clock, which can go backwards in exported or merged transcripts. A call whose recorded
input is less than half of what its own messages hold (a usage that lost its cache counts in
an export or a gateway) is no baseline: the growth from it would be most of the request,
put on the few blocks added next. No real transcript has one.

API:
- `anchor_tokens(session)`: scale the added blocks of every recorded step in place; returns
  the steps used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from ephemeral_context.replay.flow import Call, Message, Session


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
            held = sum(m.tokens for m in thread.messages[: previous.n_messages])
            if previous.usage.total_input_tokens < held / 2:
                continue  # no baseline: it records less than its messages hold (a lost field)
            growth = call.usage.total_input_tokens - previous.usage.total_input_tokens
            added = thread.messages[previous.n_messages : call.n_messages]
            if growth <= 0 or not any(m.tokens for m in added):
                continue
            thread.messages[previous.n_messages : call.n_messages] = _scaled(added, growth)
            anchored += 1
    return anchored


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
