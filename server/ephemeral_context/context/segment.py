"""The file segment: one copy of each file the model works with, right after the system prompt.

When the cache is cold anyway (everything after the system prompt is written again), the
segment is rebuilt from the current version of every whole file the model sees, at no
extra cost; the thread copies of those files become one-line references. A file the cost
gate says is not worth keeping whole (long untouched, likely not needed again) is demoted
to its synopsis plus id, with the definitions this conversation edited (partial). A file
whose move would put the request over its recorded twin stays in the thread: the twin's
bound would cut warm content for it at the next call. Entries are ordered
least-recently-changed first, so a change invalidates the shortest suffix.

API:
- `rebuild(state, c, outlook, room, freeable)`: the cold-cache rebuild.
- `used_symbols(state, c, uri, text)`: the definitions this conversation's edits wrote into.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ephemeral_context.context import policy
from ephemeral_context.context.blocks import content_key, label_of, stand_in, tool_file
from ephemeral_context.context.cacheview import END_OF_SYSTEM
from ephemeral_context.context.conversation import Conversation, view_visible
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.layout import SegmentEntry
from ephemeral_context.context.ledger import ItemState
from ephemeral_context.context.outlines import enclosing_symbol
from ephemeral_context.context.state import EngineState
from ephemeral_context.syntax import render_synopsis


def rebuild(
    state: EngineState, c: Conversation, outlook: policy.Outlook, room: int, freeable: int
) -> None:
    """Cold cache: rebuild the segment, demote what does not pay, reference thread copies.

    A file moves in only while the request stays within `room` tokens of growth (what is
    left below its recorded twin's size): a move past it is written at no extra cost now
    but forces the twin's bound to cut warm content at the next call. A file the segment
    already holds keeps its current version while the growth fits in `room` plus what the
    twin's bound may cut now (`freeable`, consumed outputs: cut on a cold cache, they cost
    nothing more); past that, its synopsis, or it leaves."""
    entries: list[SegmentEntry] = []
    moved: list[tuple[int, tuple[dict[str, Any], int]]] = []
    shown = {e.uri: e.tokens for e in c.segment}
    untold = c.untold_note() if not c.hides_content() else None
    note = state.count(untold, "prose") if untold is not None else 0
    """What the route's note adds when a demotion first hides something (a synopsis)."""
    for uri, view in c.files.items():
        visible = view_visible(c, view)
        if not view.whole or not (visible or view.demoted):
            continue
        if not all(c.answered(i) for i in view.blocks):
            # Not answered yet (no request carried it, or the model has not answered
            # after it): it stays in the thread, and the segment no longer holds the file.
            view.in_segment = view.demoted = False
            continue
        item = state.ledger.current(uri)
        if item is None or (item.state is ItemState.REFERENCE and item.reason):
            continue
        label = label_of(uri)
        text = f'<file path="{label}" id="{view.item_id}">\n{view.text}\n</file>'
        tokens = state.count(text, "code")
        synopsis = "" if item.pinned else render_synopsis(state.outlines.get(view.text, label))
        if not visible and not synopsis:
            continue
        used = used_symbols(state, c, uri, view.text) if synopsis else []
        parts = "".join(f"[{name}]\n{body}\n" for name, body in used)
        shown_as = "synopsis+symbols" if used else "synopsis"
        short = (
            f'<file path="{label}" id="{view.item_id}" shown="{shown_as}">\n'
            f"{synopsis}{parts}</file>"
        )
        short_tokens = state.count(short, "code")
        reuse, wait = outlook.file_reuse(uri, view.call)
        freed = tokens - short_tokens
        keep = policy.Candidate(0, 0, freed, reuse, wait)
        rates, ttl, m = outlook.rates, outlook.thread_ttl, outlook.remaining
        demote = bool(synopsis) and (
            not visible
            or (
                keep.freed > 0
                and policy.candidate_value(keep, m, rates, ttl)
                > policy.appended_cost(note, m, rates, ttl)
            )
        )
        if not demote and uri not in shown and grows(state, c, view.blocks, view.text):
            continue
        if demote:
            text, tokens = short, short_tokens
        refs, growth = _references(state, c, view.blocks, demote, tokens - shown.get(uri, 0))
        growth += note if demote else 0
        if growth > room and uri not in shown and not demote:
            continue
        if growth > room + freeable and uri in shown and not item.pinned:
            # A file the segment holds grew past the room (a change the thread never
            # showed): its current version would put the request over its twin. Its
            # synopsis if that fits, else it leaves the segment; the whole text stays one
            # fetch away by its id.
            refs, growth = _references(state, c, view.blocks, True, short_tokens - shown[uri])
            growth += note
            if not synopsis or growth > room + freeable:
                moved.extend(_leave_segment(state, c, uri))
                view.in_segment = view.demoted = False
                item.state = ItemState.FULL if view_visible(c, view) else ItemState.EVICTED
                continue
            demote, text, tokens = True, short, short_tokens
        room -= growth
        note = 0 if demote else note  # said once
        entries.append(
            SegmentEntry(view.item_id, uri, text, tokens, item.changed_at, content_key(text))
        )
        moved.extend(refs)
        view.in_segment, view.demoted = not demote, demote
        view.blocks = []
        item.state = (
            ItemState.FULL if not demote else ItemState.PARTIAL if used else ItemState.SYNOPSIS
        )
    entries.sort(key=lambda e: (e.changed_at, e.uri))
    if [e.key for e in entries] == [e.key for e in c.segment] and not moved:
        return
    for i, (block, ref_tokens) in moved:
        c.thread.replace(i, block, ref_tokens, BlockKind.CONSOLIDATED)
    c.segment = entries
    if c.thread:
        c.thread.reflow(0)
    c.thread.cache.keep_only((END_OF_SYSTEM,))  # the tools and system prompt did not change


def _references(
    state: EngineState, c: Conversation, blocks: list[int], demote: bool, entry_growth: int
) -> tuple[list[tuple[int, tuple[dict[str, Any], int]]], int]:
    """The references that replace a file's visible thread copies `blocks` when it moves
    into the segment (whole, or as its synopsis when `demote`), and how much the request
    grows: the entry's own growth plus what the references add over the copies."""
    note = "synopsis in the file segment" if demote else "now in the file segment"
    refs = [(i, _reference(state, c, i, note)) for i in blocks if not c.thread[i].evicted]
    return refs, entry_growth + sum(n - c.thread[i].tokens for i, (_, n) in refs)


def _leave_segment(
    state: EngineState, c: Conversation, uri: str
) -> list[tuple[int, tuple[dict[str, Any], int]]]:
    """The thread's references to `uri` in the segment, rewritten to say it left (the
    cache is cold: rewriting them costs nothing extra)."""
    return [
        (i, _reference(state, c, i, "evicted from the file segment"))
        for i, tb in enumerate(c.thread)
        if tb.uri == uri and tb.kind is BlockKind.CONSOLIDATED
    ]


def _reference(
    state: EngineState, c: Conversation, index: int, note: str
) -> tuple[dict[str, Any], int]:
    """The one-line reference that replaces thread copy `index` of a file moved (or
    demoted) into the segment, and its tokens."""
    tb = c.thread[index]
    return stand_in(
        state.count, tb.block, f"[[file:{tb.item_id}]] {label_of(tb.uri or '')}: {note}."
    )


def grows(state: EngineState, c: Conversation, blocks: list[int], text: str) -> bool:
    """Moving a file known only from a Write's input into the segment would make the
    request larger: the input counts as JSON, the same text as a file counts more."""
    copies = [c.thread[i] for i in blocks if not c.thread[i].evicted]
    inputs = all(tb.kind is BlockKind.WRITE_INPUT for tb in copies)
    return bool(copies) and inputs and state.count(text, "code") > sum(tb.tokens for tb in copies)


def used_symbols(state: EngineState, c: Conversation, uri: str, text: str) -> list[tuple[str, str]]:
    """The definitions of `text` that this conversation's edits of `uri` wrote into."""
    label = label_of(uri)
    found: dict[str, str] = {}
    for _, tool_input in c.tool_uses.values():
        path = tool_file(tool_input)
        if path is None or state.config.file_uri(path) != uri:
            continue
        written = [tool_input.get("new_string"), tool_input.get("new")]
        written += [
            e.get("new_string") for e in tool_input.get("edits") or () if isinstance(e, Mapping)
        ]
        for needle in written:
            if isinstance(needle, str) and needle.strip():
                part = enclosing_symbol(state.outlines.get(text, label), text, needle)
                if part is not None:
                    found.setdefault(*part)
    return list(found.items())
