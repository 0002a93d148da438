"""Eviction: which consumed blocks leave the thread, and what stays in their place.

Before each call (after the first) `consolidate` runs the policy over the thread: the cost
gate (policy.plan_eviction) picks candidates whose removal pays for the rewrite it causes,
or that a cold cache makes free; files the ledger limits pushed out leave; if the
request would still exceed the context budget, or be larger than its recorded-style twin
(every block as first shown: placeholders and re-hydration round trips can add up to
more), further candidates go, newest first, the shortest rewrite (policy.fit_budget), what
was fetched back for the last call only when nothing else suffices. A cold cache also
rebuilds the file segment (segment.py).

An evicted block keeps its place as a placeholder saying what it was, its size and how to
get it back (read_session_file / read_symbol with its id); a tool_use keeps its short
fields. Only consumed content is a candidate: nothing no request has carried yet (the
model has not seen it), nothing from the latest model response on, nothing pinned or
protected, and a skill only once its frontmatter trigger has fired. Re-hydrated content is
a candidate again once the model has answered after it.

API:
- `consolidate(state, c, prefix, outlook)`: before a call, evict what the policy allows; rebuild a
  cold segment.
- `evict_all(state, c, indices, reason, ...)`: the one evict, reflow, report sequence (also
  `items.drop`'s).
- `candidates(state, c, thread_start)`: the blocks that may leave, with what each frees.
- `evicted_form(state, c, index)`, `placeholder_text(tb)`: what stays in an evicted block's
  place.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ephemeral_context.context import policy, segment
from ephemeral_context.context.blocks import clip_tokens, label_of, stand_in
from ephemeral_context.context.cacheview import END_OF_SEGMENT
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.context.kinds import EVICTABLE, FILE_COPIES, BlockKind
from ephemeral_context.context.ledger import ItemState
from ephemeral_context.context.skills import trigger_fired
from ephemeral_context.context.state import EngineState, EvictionEvent
from ephemeral_context.context.thread import ThreadBlock

log = logging.getLogger(__name__)


def consolidate(state: EngineState, c: Conversation, prefix: int, outlook: policy.Outlook) -> None:
    """Evict what the cost gate allows; rebuild the segment when the cache is cold."""
    # Anything after the system prompt still cached? (a thread prefix includes the segment)
    segment_warm = c.thread.cache.thread_warm or c.thread.cache.has(END_OF_SEGMENT)
    thread_start = prefix + sum(e.tokens for e in c.segment)
    warm_end = c.thread.cache.warm_end
    chosen = candidates(state, c, thread_start, outlook) if outlook.evicts else []
    untold = c.untold_note()
    note = state.count(untold, "prose") if untold is not None else 0
    """What the route's note adds once the conversation first hides something."""
    boundaries = [policy.Boundary(0, thread_start)] + [
        policy.Boundary(p + 1, end) for p, end in c.thread.cache.thread_entries()
    ]
    plan = policy.plan_eviction(
        chosen,
        boundaries,
        warm_end,
        outlook.remaining,
        outlook.rates,
        outlook.thread_ttl,
        outlook.max_rewrite,
        0 if c.hides_content() else note,
    )
    cold = not c.thread.cache.thread_warm
    if plan.evict:
        reason = "cost gate" if not cold else "cold cache"
        freed, reprocessed = plan.tokens_freed, plan.tokens_reprocessed
        evict_all(state, c, plan.evict, reason, freed, reprocessed, cold)
    twin = prefix + sum(b.tokens for b in c.thread.baseline)
    limit = min(outlook.budget, twin)
    if not segment_warm:
        # What the twin's bound below may cut to make room: outputs, not the file copies
        # the rebuild itself turns into references.
        freeable = sum(
            k.freed
            for k in candidates(state, c, thread_start, outlook, gated=False)
            if c.thread[k.index].uri is None
        )
        segment.rebuild(state, c, outlook, limit - thread_start - c.thread.tokens, freeable)
        thread_start = prefix + sum(e.tokens for e in c.segment)  # the rebuilt segment's size
    limited = [
        i
        for i, tb in enumerate(c.thread)
        if not tb.evicted and tb.uri in state.over_limits and tb.kind in EVICTABLE
    ]
    if limited:
        evict_all(state, c, limited, "over the ledger limits", 0, 0, cold)
    for uri in state.over_limits:
        c.files.pop(uri, None)
    total = thread_start + c.thread.tokens
    if c.hides_content() or total > limit:  # a cut below hides something too
        total += note
    if total > limit:
        evicted = set(plan.evict)
        rest = [
            k
            for k in candidates(state, c, thread_start, outlook, gated=False)
            if k.index not in evicted
        ]
        budget = total > outlook.budget
        # Content fetched back for the last call is what its response used: the twin's
        # bound (not a failure, as the budget is) takes it only when nothing else suffices.
        fetched = frozenset(
            k.index
            for k in rest
            if not budget
            and c.thread[k.index].kind is BlockKind.REHYDRATION
            and c.thread[k.index].call >= c.calls - 1
        )
        over = policy.fit_budget(rest, total, limit, last=fetched)
        if over:
            chosen_over = set(over)
            freed = sum(k.freed for k in rest if k.index in chosen_over)
            reason = "over the context budget" if budget else "larger than its recorded twin"
            evict_all(state, c, sorted(over), reason, freed, 0, cold)


def evict_all(
    state: EngineState,
    c: Conversation,
    indices: Sequence[int],
    reason: str,
    freed: int = 0,
    reprocessed: int = 0,
    cold: bool = False,
    reported: tuple[str, ...] | None = None,
) -> None:
    """Evict these blocks (at least one), reflow once from the first, and report the
    decision, naming `reported` (default: the evicted blocks' item ids)."""
    ids = [_evict_block(state, c, i, reason) for i in indices]
    c.thread.reflow(min(indices))
    if reported is None:
        reported = tuple(i for i in ids if i)
    _report(state, c, reported, freed, reprocessed, cold, reason)


def candidates(
    state: EngineState,
    c: Conversation,
    thread_start: int,
    outlook: policy.Outlook,
    gated: bool = True,
) -> list[policy.Candidate]:
    """Consumed, unpinned, evictable blocks; `gated=False` also takes skills whose
    frontmatter trigger has not fired (never protected ones)."""
    out: list[policy.Candidate] = []
    new = c.thread.blocks[max(0, c.thread.response_start) :]
    relied_on = {i for tb in new for i in tb.relies_on} if gated else set()
    for index, tb in enumerate(c.thread):
        if (tb.evicted and not tb.clipped) or tb.kind not in EVICTABLE or not c.answered(index):
            continue
        if index in relied_on:  # the call's Read said "unchanged since" it, or diffed it
            continue
        item = state.ledger.get(tb.item_id) if tb.item_id else None
        if item is not None and (item.pinned or not item.evictable):
            continue
        if tb.kind is BlockKind.SKILL and gated:
            skill = c.skills.get(index)
            if skill is None or not trigger_fired(
                skill.meta,
                True,
                c.calls - skill.loaded_call,
                c.thread.tokens - skill.tokens_at_load,
            ):
                continue
        freed = tb.tokens - _evicted_tokens(state, c, index)
        if freed <= 0:
            continue
        if tb.uri is not None:
            reuse, wait = outlook.file_reuse(tb.uri, tb.call)
        else:
            reuse, wait = c.reuse.estimate(tb, c.calls)
        out.append(
            policy.Candidate(index, thread_start + c.thread.offsets[index], freed, reuse, wait)
        )
    return out


def placeholder_text(tb: ThreadBlock) -> str:
    """What stays where evicted content was: what it was, its size and its id, which
    read_session_file takes (its description says so: the placeholder need not)."""
    item = tb.item_id or "?"
    if tb.kind is BlockKind.SKILL:
        return f"[[skill:{item}]] skill used; body evicted"
    if tb.kind is BlockKind.TOOL_INPUT:
        return f"[[input:{item}]] {tb.original_tokens} tokens"
    if tb.uri is not None and tb.kind in FILE_COPIES:
        return f"[[file:{item}]] {label_of(tb.uri)} evicted ({tb.original_tokens} tokens)"
    return f"[[{tb.kind}:{item}]] output evicted ({tb.original_tokens} tokens)"


def evicted_form(state: EngineState, c: Conversation, index: int) -> tuple[dict[str, Any], int]:
    """The block that replaces thread block `index` on eviction, and its tokens."""
    return stand_in(state.count, c.thread[index].block, _evicted_text(c, index))


def _evicted_text(c: Conversation, index: int) -> str:
    """The placeholder text of thread block `index`'s evicted form."""
    tb = c.thread[index]
    if tb.kind is BlockKind.SKILL and index in c.skills:
        meta = c.skills[index].meta
        return clip_tokens(
            f"[[skill:{tb.item_id}]] skill {meta.name} was used; body evicted "
            f"({c.fetch.call_text(tb.item_id or '?')} reloads it). {meta.description}",
            meta.placeholder_budget,
        )
    return placeholder_text(tb)


def _evicted_tokens(state: EngineState, c: Conversation, index: int) -> int:
    """The tokens of `evicted_form`, counted once per block content and placeholder."""
    tb = c.thread[index]
    text = _evicted_text(c, index)
    tokens = c.evicted_tokens.get((tb.key, text))
    if tokens is None:
        tokens = c.evicted_tokens[(tb.key, text)] = stand_in(state.count, tb.block, text)[1]
    return tokens


def _evict_block(state: EngineState, c: Conversation, index: int, reason: str) -> str:
    """Replace thread block `index` by its evicted form; returns its item id ('' if none).
    The caller reflows the thread from the first block it evicted."""
    tb = c.thread[index]
    c.thread.replace(index, *evicted_form(state, c, index))
    tb.clipped = False
    item = state.ledger.get(tb.item_id) if tb.item_id else None
    if item is not None and item.kind is not BlockKind.FILE:
        item.state = ItemState.EVICTED
        item.never_resurrect = True
        item.reason = reason
    return tb.item_id or ""


def _report(
    state: EngineState,
    c: Conversation,
    ids: tuple[str, ...],
    freed: int,
    reprocessed: int,
    cold: bool,
    reason: str,
) -> None:
    """Tell the user (engine.events, the log) what one decision evicted and what it cost."""
    state.events.append(EvictionEvent(c.calls, ids, freed, reprocessed, cold, reason))
    log.info(
        "evicted %d items: %d tokens freed, %d reprocessed (%s)",
        len(ids),
        freed,
        reprocessed,
        reason,
    )
