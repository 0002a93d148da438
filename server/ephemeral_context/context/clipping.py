"""Clipping: content too large for any request goes in cut, the rest by its id.

Eviction takes consumed content only: what the model has seen. A tool result, memory or
skill that alone puts the next request past its budget (the configured one, or the model's
window where that is smaller) has not been seen, so no eviction can make room for it, and
sent whole the request is one the API refuses, as is every later one that carries it. Such
content is already stored under its id; it goes in cut at a line, with a note that says
how much was shown and how to read the rest, largest first, until the request fits. A cut
block stays a candidate for eviction once the model has answered after it.

What has no id (typed text, images, a result kept out of the store because it holds a
secret) is never cut: nothing could bring it back. A request still past the budget after
the cut is logged with its figures; the API's refusal says the rest.

API:
- `clip_fresh(state, c, thread_start, budget)`: cut fresh stored content until the request
  fits `budget`.
"""

from __future__ import annotations

import logging

from ephemeral_context.context.blocks import stand_in
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.state import EngineState, EvictionEvent
from ephemeral_context.context.thread import ThreadBlock

log = logging.getLogger(__name__)

CLIPPABLE = frozenset({BlockKind.TOOL_RESULT, BlockKind.MEMORY, BlockKind.SKILL})
"""The kinds whose block shows its stored text as it is, so a character offset into the
shown text is one into the stored item."""
REASON = "too large for the request"
"""The reason reported for a cut (`EngineState.events`)."""


def clip_fresh(state: EngineState, c: Conversation, thread_start: int, budget: int) -> None:
    """Cut fresh stored blocks, largest first, until the thread after `thread_start` tokens
    of head and segment fits `budget` (with the route's note, which a first cut adds)."""
    excess = thread_start + c.thread.tokens - budget
    if excess <= 0:
        return
    untold = c.untold_note()
    if untold is not None and not c.hides_content():
        excess += state.count(untold, "prose")
    fresh = sorted(
        (i for i, tb in enumerate(c.thread) if _clippable(c, i, tb)),
        key=lambda i: -c.thread[i].tokens,
    )
    cut: list[int] = []
    freed = 0
    for index in fresh:
        if freed >= excess:
            break
        tb = c.thread[index]
        block, tokens = _clipped(state, c, tb, tb.tokens - (excess - freed))
        if tokens < tb.tokens:
            freed += tb.tokens - tokens
            c.thread.replace(index, block, tokens)
            tb.clipped = True
            cut.append(index)
    if cut:
        c.thread.reflow(min(cut))
        ids = tuple(c.thread[i].item_id or "" for i in cut)
        state.events.append(EvictionEvent(c.calls, ids, freed, 0, False, REASON))
        log.info("cut %d items too large for the request: %d tokens left out", len(cut), freed)
    if freed < excess:
        log.warning(
            "request of %d tokens is past its budget of %d: nothing left to cut",
            budget + excess - freed,
            budget,
        )


def _clippable(c: Conversation, index: int, tb: ThreadBlock) -> bool:
    """Not yet seen by the model, stored under an id and shown as stored. What comes before
    the latest model response was seen, in a request this engine may not have built (the
    history a gateway is first sent, which the cache may hold as the client sent it)."""
    return (
        not tb.evicted
        and tb.item_id is not None
        and tb.kind in CLIPPABLE
        and not c.thread.consumed(index)
    )


def _clipped(
    state: EngineState, c: Conversation, tb: ThreadBlock, target: int
) -> tuple[dict[str, object], int]:
    """The block cut at a line so that it, with its note, takes about `target` tokens (the
    head may be empty), and its tokens. The estimate of a head is proportional to its
    length; a head still over is cut again by the ratio it missed by."""
    text, item = tb.text, tb.item_id or "?"
    lines = text.count("\n") + (not text.endswith("\n"))
    keep = len(text) * max(0, target) // max(1, tb.tokens)
    while True:
        head = text[: text.rfind("\n", 0, keep + 1) + 1] if keep < len(text) else text
        shown = head.count("\n")
        note = (
            f"[[{tb.kind}:{item}]] cut here: lines 1-{shown} of {lines} shown "
            f"({len(head)} of {len(text)} characters); the rest: "
            f"{c.fetch.call_text(item, part=True)} from character {len(head)} "
            f"(line {shown + 1})"
        )
        block, tokens = stand_in(state.count, tb.block, head + note)
        if tokens <= target or not head:
            return block, tokens
        keep = len(head) * max(0, target) // tokens
