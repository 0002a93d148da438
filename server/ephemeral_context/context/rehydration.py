"""Re-hydration: evicted content the model is about to use comes back by one round trip.

A model that needs content it can no longer see first asks for it: one more request (the
whole prefix, read from the cache), answered with a tool_use per item (the conversation's
fetch route, fetching.py: the id, and the name of each definition that holds what it
needs when the content is a file), then a tool_result with the content: each evicted
block once, whole as soon as one thing needed from it lies outside every definition.
`rehydrate` appends that pair for everything a `Need` names that is only in evicted
content; the caller builds the request before it (the round trip) and after it (the call
itself). Needs: an edit's old strings (with none, the file it edits, whose current version
comes back when it is hidden), what a Read returned, and runs of evicted lines the
response quotes (quotes.py). A fetch from a file is a use of that file (its idle span
starts again); the quote that follows a fetched output is a use of that output
(reuse.py). The counts go into the status.

`round_trip` is the same append for calls a real model made (the gateway answers its
calls for content by id): one code path, so the gateway's round trips are billed to the
engine and kept out of its twins the way the replay's are (accounting.py).

API:
- `rehydrate(state, conv, needs, quoting)` -> a `RoundTrip` (items, tokens, the tool_use
  output) appended for the `Need`s of the next response and the runs it quotes.
- `round_trip(state, conv, fetched, continues)` -> the `RoundTrip` of `Fetched` calls the
  model made and their answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ephemeral_context.context import reads
from ephemeral_context.context.blocks import (
    block_tokens,
    definition_answer,
    label_of,
    readable,
    reference_id,
    result_block,
    tool_use_payload,
)
from ephemeral_context.context.conversation import (
    Conversation,
    needle_visible,
    view_visible,
)
from ephemeral_context.context.kinds import FILE_COPIES, BlockKind
from ephemeral_context.context.outlines import enclosing_symbol
from ephemeral_context.context.state import EngineState
from ephemeral_context.context.thread import ThreadBlock


@dataclass(frozen=True)
class Need:
    """Content the next response uses: strings it must see, in file `uri` when known."""

    uri: str | None = None
    needles: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoundTrip:
    """What one re-hydration round trip appended: items, their tokens, the tool_use output."""

    items: int
    tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Fetched:
    """A call the model made for content by id (its tool_use block, `read_session_file`)
    and the answer it got."""

    use: Mapping[str, Any]
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class _Fetch:
    """One tool call of the round trip and what it brings back."""

    tool: str
    args: Mapping[str, Any]
    text: str
    kind: BlockKind
    item_id: str | None
    uri: str | None
    whole: bool
    """The whole block or file came back (it joins the file's view), not one definition."""
    current: bool = False
    """The file's current version (it becomes the model's view of the file)."""
    use_id: str | None = None
    """The model's own tool_use id; None: the engine names the call."""
    is_error: bool = False
    tokens: int | None = None
    """What the text costs at the rate its block was billed at when first shown
    (`_billed_count`); None: no block showed it (a file's current version), counted now."""

    @cached_property
    def readable(self) -> str:
        """What it brings back as the model reads it (`blocks.readable`)."""
        return readable(self.text)


def rehydrate(
    state: EngineState, conv: str, needs: Sequence[Need], quoting: Sequence[str] = ()
) -> RoundTrip | None:
    """Append one round trip for what `needs` and the runs `quoting` repeats from evicted
    content name that the model cannot see; None when it sees all of it."""
    c = state.conversation(conv)
    fetches: list[_Fetch] = []
    wanted: dict[int, list[str]] = {}
    """What each evicted block must give back, in the order first needed."""

    def seen(needle: str) -> bool:
        return needle_visible(c, needle) or any(needle in f.readable for f in fetches)

    for need in needs:
        view = c.files.get(need.uri) if need.uri else None
        hidden = view if view is not None and not view_visible(c, view) else None
        for needle in need.needles:
            if not needle or seen(needle):
                continue
            source = _evicted_source(c, needle)
            if source is not None:
                wanted.setdefault(source, []).append(needle)
            elif hidden is not None and needle in hidden.text:
                fetches.extend(_current_fetch(state, c, hidden.uri))  # what it saw, changed since
                hidden = None
        if not need.needles and hidden is not None:
            fetches.extend(_current_fetch(state, c, hidden.uri))
    for quote in c.quotes.quotes(c.thread.blocks, quoting):
        if not seen(quote.text):
            wanted.setdefault(quote.index, []).append(quote.text)
    for index, needles in wanted.items():
        missing = [needle for needle in needles if not seen(needle)]
        if missing:
            fetches.extend(_block_fetches(state, c, c.thread[index], missing))
    if not fetches:
        return None
    return _append(state, c, fetches, continues=True)


def round_trip(
    state: EngineState, conv: str, fetched: Sequence[Fetched], continues: bool
) -> RoundTrip:
    """Append the calls the model made for content by id and their answers, as `rehydrate`
    appends its own. `continues`: the next request goes on with the call that asked (False
    when the answers go with the client's own tool results, a request the client makes)."""
    c = state.conversation(conv)
    return _append(state, c, [_answered(state, c, f) for f in fetched], continues)


def _answered(state: EngineState, c: Conversation, f: Fetched) -> _Fetch:
    """A call the model made as a fetch: the latest evicted block (else the item) its id
    names says what came back; a slice (offset, limit) is not the whole block."""
    args = f.use.get("input")
    args = args if isinstance(args, Mapping) else {}
    use_id, tool = str(f.use.get("id", "")), str(f.use.get("name", ""))
    asked = c.fetch.arguments(args)  # as read_session_file takes them
    item_id = reference_id(str(asked.get("id", "")))
    if f.is_error or not item_id:
        kind = BlockKind.TOOL_RESULT
        return _Fetch(tool, args, f.text, kind, None, None, False, use_id=use_id, is_error=True)
    whole = not {"offset", "limit", "symbol", "first_line", "line_count"} & asked.keys()
    source = next((tb for tb in reversed(c.thread) if tb.evicted and tb.item_id == item_id), None)
    tokens: int | None = None
    if source is not None:
        kind, uri = source.kind, source.uri
        tokens = _billed_count(state, source, f.text)
    else:
        item = state.ledger.get(item_id)
        kind = item.kind if item is not None else BlockKind.TOOL_RESULT
        uri = item.key if item is not None and item.kind is BlockKind.FILE else None
    return _Fetch(tool, args, f.text, kind, item_id, uri, whole, use_id=use_id, tokens=tokens)


def _evicted_source(c: Conversation, needle: str) -> int | None:
    """The index of the latest evicted block that holds `needle`."""
    return next(
        (
            i
            for i in range(len(c.thread) - 1, -1, -1)
            if c.thread[i].evicted and needle in c.thread[i].readable
        ),
        None,
    )


def _block_fetches(
    state: EngineState, c: Conversation, tb: ThreadBlock, needles: Sequence[str]
) -> list[_Fetch]:
    """Evicted content again: when the block is a file, each definition holding one of
    `needles` (by the block's id and the definition's name, once each), unless a needle
    lies outside every definition or the definitions weigh as much as the block; else the
    whole block, once."""
    parts: dict[str, str] = {}
    if tb.uri is not None and tb.kind in FILE_COPIES | {BlockKind.CONSOLIDATED}:
        outline = state.outlines.get(tb.text, label_of(tb.uri))
        for needle in needles:
            part = enclosing_symbol(outline, tb.text, needle)
            if part is None:
                parts.clear()
                break
            parts.setdefault(*part)
    parts = {  # a definition inside another one fetched comes with it
        name: body
        for name, body in parts.items()
        if not any(body in other for n, other in parts.items() if n != name)
    }
    if tb.uri is None or not parts or sum(map(len, parts.values())) >= len(tb.text):
        return [_whole_fetch(state, c, tb)]
    item_id = tb.item_id or "?"
    answers = {name: definition_answer(item_id, name, body) for name, body in parts.items()}
    return [
        _Fetch(
            c.fetch.tool,
            c.fetch.tool_input({"id": item_id, "symbol": name}),
            answer,
            tb.kind,
            tb.item_id,
            tb.uri,
            whole=False,
            tokens=_billed_count(state, tb, answer),
        )
        for name, answer in answers.items()
    ]


def _whole_fetch(state: EngineState, c: Conversation, tb: ThreadBlock) -> _Fetch:
    """A whole evicted block again, by its id."""
    args = c.fetch.tool_input({"id": tb.item_id or "?"})
    return _Fetch(
        c.fetch.tool, args, tb.text, tb.kind, tb.item_id, tb.uri, True,
        tokens=_billed_count(state, tb, tb.text),
    )  # fmt: skip


def _billed_count(state: EngineState, tb: ThreadBlock, text: str) -> int:
    """The tokens `text`, taken from block `tb`, costs at the rate `tb` was billed at when
    first shown: its count if shown as exactly `text` (one text, one count), else that
    count scaled by the estimates of `text` and of the form it was shown in (a Write's
    content, a tool input's JSON, one definition of a Read, a file shown as a diff).

    The replay anchors each block's count to billing; the estimate alone would price the
    same text twice over (a Write's content counted as code came to 8% more than its
    tool_use had been billed, which put the request after the round trip over its
    recorded-style twin)."""
    shown = tb.original if tb.original is not None else tb.block
    form = shown.get("content")
    if form == text:
        return tb.original_tokens
    if shown.get("type") == "tool_use":
        form = tool_use_payload(shown)
    if not isinstance(form, str) or not form:
        return state.count(text, "code")
    return max(1, round(tb.original_tokens * state.count(text, "code") / state.count(form, "code")))


def _current_fetch(state: EngineState, c: Conversation, uri: str) -> list[_Fetch]:
    """The current version of `uri`, if the ledger has one: the client's Read of the file,
    or the engine's tool by that version's id."""
    current = state.ledger.current(uri)
    if current is None:
        return []
    text = state.store.get(current.id).text
    args = c.fetch.current_input(current.id, label_of(uri))
    return [_Fetch(c.fetch.tool, args, text, BlockKind.FILE, current.id, uri, True, current=True)]


def _append(
    state: EngineState, c: Conversation, fetches: Sequence[_Fetch], continues: bool
) -> RoundTrip:
    """The model's tool_use blocks, then their results, none of them in the twins' baseline
    (thread.py), each item fetched counted as re-hydrated; with `continues`, the request
    after them goes on with the same call (neither twin is billed for it)."""
    ids = [
        f.use_id or f"ectx_rehydrate_{c.calls}_{len(c.thread)}_{n}" for n, f in enumerate(fetches)
    ]
    if continues:
        c.accounting.continues = True
    output = 0
    for tool_use_id, fetch in zip(ids, fetches, strict=True):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": tool_use_id,
            "name": fetch.tool,
            "input": dict(fetch.args),
        }
        tokens = block_tokens(state.count, block)
        c.thread.append(
            c.calls, "assistant", block, tokens, kind=BlockKind.REHYDRATION, answers=False
        )
        output += tokens
    appended = 0
    for tool_use_id, fetch in zip(ids, fetches, strict=True):
        tokens = fetch.tokens if fetch.tokens is not None else state.count(fetch.text, "code")
        index = c.thread.append(
            c.calls, "user", result_block(tool_use_id, fetch.text, fetch.is_error), tokens,
            kind=BlockKind.REHYDRATION, item_id=fetch.item_id, uri=fetch.uri, text=fetch.text,
        )  # fmt: skip
        if fetch.is_error:
            continue
        _show(c, fetch, index)
        if fetch.uri is not None:
            reads.touch(state, c, fetch.uri)  # a use of the file, for its re-use estimate
        c.rehydrations += 1
        appended += tokens
    return RoundTrip(sum(not f.is_error for f in fetches), appended, output)


def _show(c: Conversation, fetch: _Fetch, index: int) -> None:
    """What the model now sees of the fetched file: a whole block joins its view; the
    current version becomes its view."""
    if fetch.uri is None or not fetch.whole:
        return
    view = c.files.get(fetch.uri)
    if fetch.current and fetch.item_id is not None:
        if view is None:
            view = c.show_file(fetch.uri, fetch.item_id, fetch.text)
        view.text, view.whole, view.start_line, view.item_id = fetch.text, True, 1, fetch.item_id
    if view is not None:
        view.blocks.append(index)
