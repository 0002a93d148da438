"""The human's view and controls: items, pin, unpin, drop, and hydration of any id shown.

A pinned file (or one definition of it) is appended once and then kept: exempt from
eviction and from the ledger limits, it moves into the file segment at the next
consolidation. `drop` is the human override (the only way to evict a protected skill); what
is dropped stays hydratable by id. `hydrate` gives a file item's current version: the
editor's buffer when there is one.

API:
- `pin`, `unpin`, `pinned_files`, `unseen_pins`, `show_pins`, `pin_block`, `definition`: pins.
- `drop(state, target)`: the human's override; ids stay hydratable.
- `listed(state)`, `item_info(item)`, `ItemInfo`: the Context view's rows.
- `read_session_file(state, item_id, offset, limit)`, `hydrate(...)`, `HydratedText`: text
  behind an id.
- `UnknownItem`: an id, URI or symbol that cannot be resolved.
"""

from __future__ import annotations

from dataclasses import dataclass

from ephemeral_context.context import eviction, reads
from ephemeral_context.context.blocks import label_of
from ephemeral_context.context.conversation import Conversation, view_visible
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.ledger import ItemState, LedgerItem, unfit_reason
from ephemeral_context.context.state import EngineState
from ephemeral_context.documents import Document, DocumentMirror, utf8
from ephemeral_context.echo import quoted
from ephemeral_context.store import UnknownId, check_range
from ephemeral_context.syntax import SymbolText, address, find_symbol


class UnknownItem(LookupError):
    """An item id, URI or symbol the engine cannot resolve; the message says what to do."""


@dataclass(frozen=True)
class ItemInfo:
    """One ledger item as the Context view shows it."""

    id: str
    kind: str
    state: str
    tokens: int
    uri: str | None
    label: str
    version: int | None
    pinned: bool


@dataclass(frozen=True)
class HydratedText:
    """Text behind an id (whole or a slice), with where it came from."""

    id: str
    text: str
    total_length: int
    offset: int
    uri: str | None
    version: int | None


def item_info(item: LedgerItem) -> ItemInfo:
    """A ledger item as the Context view shows it (content tokens only while held)."""
    return ItemInfo(
        id=item.id,
        kind=item.kind.value,
        state=item.state.value,
        tokens=item.tokens if item.holds_content else 0,
        uri=item.key if item.kind is BlockKind.FILE else None,
        label=item.label or item.key,
        version=item.version,
        pinned=item.pinned,
    )


def pin(
    state: EngineState,
    uri: str,
    text: str,
    version: int | None,
    symbol: str | None,
    conv: str | None,
) -> ItemInfo:
    """Make `text` the pinned current version of `uri`: an engine-wide pin every
    conversation, present or future, shows before its next request (`show_pins`).

    Pinning again with newer text moves the pin to that version. A pinned definition
    (`symbol`) is appended at once to `conv`, or to every conversation there is.
    """
    label = label_of(uri)
    found = definition(state, uri, text, symbol) if symbol is not None else None
    entry = state.store.put(text, uri=uri, version=version, tokens=state.count(text, "code"))
    shown = ""
    if found is not None:
        shown = (
            f"[pinned {label}::{symbol} (lines {found.start_line}-{found.end_line}) "
            f"of [[file:{entry.id}]]]\n{found.text}"
        )
    targets = [state.conversation(conv)] if conv else list(state.conversations.values())
    # Before any conversation exists the version is recorded at call 0.
    for c in targets or [Conversation("")]:
        item = reads.record_file_version(state, c, uri, entry.id, text, version)
    if item.state is ItemState.REFERENCE and (
        unfit_reason(text, len(utf8(text)), state.config.limits) is None
    ):
        item.state, item.reason = ItemState.FULL, ""  # an earlier version is current again (undo)
    if symbol is not None:
        for c in targets:
            c.thread.append(
                c.calls, "user", {"type": "text", "text": shown}, state.count(shown, "code"),
                kind=BlockKind.PINNED, item_id=entry.id, uri=uri, text=shown,
            )  # fmt: skip
        item.state = ItemState.PARTIAL
    item.pinned = True
    item.whole_pin = item.whole_pin or symbol is None
    return item_info(item)


def definition(state: EngineState, uri: str, text: str, symbol: str) -> SymbolText:
    """The definition `symbol` names in this text of `uri`; UnknownItem, with the names
    that come close, when it has none (a pinned definition renamed or removed)."""
    label = label_of(uri)
    outline = state.outlines.get(text, label)
    lookup = find_symbol(text, outline, symbol)
    if lookup.found is None:
        names = [address(s, outline) for s in lookup.candidates] or list(lookup.suggestions)
        hint = f"; did you mean {', '.join(names)}?" if names else ""
        raise UnknownItem(f"no symbol {quoted(symbol)} in {label}{hint}")
    return lookup.found


def pinned_files(state: EngineState) -> list[str]:
    """URIs of the whole files pinned now."""
    return [item.key for item in state.ledger.current_items() if _whole_pin(item)]


def _whole_pin(item: LedgerItem) -> bool:
    """A pin of the whole file (a newer version the model reads of a file pinned by a
    definition is pinned too, but only that definition is the user's pin)."""
    return (
        item.pinned
        and item.whole_pin
        and item.kind is BlockKind.FILE
        and item.state is ItemState.FULL
    )


def unseen_pins(state: EngineState, c: Conversation | None) -> list[LedgerItem]:
    """Whole-file pins `c` (or a new conversation) does not see at their current version."""
    unseen = []
    for item in state.ledger.current_items():
        if not _whole_pin(item):
            continue
        view = c.files.get(item.key) if c is not None else None
        if (
            c is None
            or view is None
            or not (view.whole and view.item_id == item.id and view_visible(c, view))
        ):
            unseen.append(item)
    return unseen


def pin_block(item: LedgerItem, text: str) -> str:
    """How a pinned file is shown to the model."""
    return f"[pinned [[file:{item.id}]] {label_of(item.key)}]\n{text}"


def show_pins(state: EngineState, c: Conversation) -> None:
    """Before a request: append every pinned file `c` does not see as it is now (a pin is
    the user's, not one conversation's); its change note, if any, is then redundant."""
    for item in unseen_pins(state, c):
        text = state.store.get(item.id).text
        shown = pin_block(item, text)
        index = c.thread.append(
            c.calls, "user", {"type": "text", "text": shown}, state.count(shown, "code"),
            kind=BlockKind.PINNED, item_id=item.id, uri=item.key, text=text,
        )  # fmt: skip
        c.show_file(item.key, item.id, text, [index])
        c.pending_notes.pop(item.key, None)


def unpin(state: EngineState, uri: str) -> ItemInfo:
    """Make `uri` evictable again (it stays in the context until the policy says)."""
    item = state.ledger.current(uri)
    if item is None:
        raise UnknownItem(f"{uri} is not in the context; pin it first")
    item.pinned = item.whole_pin = False
    for c in state.conversations.values():
        for tb in c.thread:
            if tb.kind is BlockKind.PINNED and tb.uri == uri:
                tb.kind = BlockKind.FILE
    return item_info(item)


def drop(state: EngineState, target: str) -> list[str]:
    """Remove a URI or an id from every conversation (protected skills too) and from the
    ledger; the store keeps the text, so every id already shown stays hydratable."""
    item = state.ledger.get(target)
    key = item.key if item is not None else target
    ids = set(state.ledger.remove_key(key))
    if item is not None:
        ids.add(item.id)
        item.state, item.never_resurrect = ItemState.EVICTED, True
    for c in state.conversations.values():
        hits = [
            i
            for i, tb in enumerate(c.thread)
            if not tb.evicted
            and (tb.uri == target or (tb.item_id is not None and tb.item_id in ids))
        ]
        if hits:
            eviction.evict_all(state, c, hits, "dropped by the user", reported=tuple(sorted(ids)))
        c.files.pop(key, None)
        if any(e.uri == key for e in c.segment):
            c.segment = [e for e in c.segment if e.uri != key]
            c.thread.cache.clear()
    state.ledger.forget(ids)
    return sorted(ids)


def listed(state: EngineState) -> list[ItemInfo]:
    """The Context view's rows: one per file (its current version, the best view the model
    has of it), then every other item; dropped items are gone."""
    return [
        item_info(i)
        for i in state.ledger
        if i.kind is not BlockKind.FILE or state.ledger.current(i.key) is i
    ]


def read_session_file(
    state: EngineState, item_id: str, offset: int, limit: int | None, conv: str | None = None
) -> HydratedText:
    """Any id ever shown, whole or a slice, or only those conversation `conv` was shown
    (`Conversation.names`: an id another one was shown is unknown there); store errors
    (unknown, expired) propagate."""
    if conv is not None:  # asked before reading: nothing of it is told, nor refreshed
        shown = state.conversations.get(conv)  # an ended one is not made again by asking
        if shown is None or not shown.names(state.store.info(item_id).id):
            raise UnknownId(item_id)
    stored = state.store.get(item_id, offset, limit)
    item = state.ledger.get(stored.id)
    entry = state.store.info(stored.id)  # a range read's file, which no FILE item names
    return HydratedText(
        item_id,
        stored.text,
        stored.total_length,
        offset,
        item.key if item is not None and item.kind is BlockKind.FILE else entry.uri,
        item.version if item is not None else None,
    )


def hydrate(
    state: EngineState,
    item_id: str,
    offset: int,
    limit: int | None,
    mirror: DocumentMirror | None = None,
) -> HydratedText:
    """Like read_session_file, but a file item's id gives the file as it is now: the
    mirror's text (the editor's buffer, which may be newer than any version recorded), else
    the latest version recorded. The store's range rule holds for both."""
    item = state.ledger.get(item_id)
    if item is not None and item.kind is BlockKind.FILE:
        document = mirror.get(item.key) if mirror is not None else None
        if isinstance(document, Document):
            text = document.text
            check_range(item_id, offset, limit, len(text))
            end = None if limit is None else offset + limit
            return HydratedText(
                item_id, text[offset:end], len(text), offset, document.uri, document.version
            )
        current = state.ledger.current(item.key)
        if current is not None:
            return read_session_file(state, current.id, offset, limit)
    return read_session_file(state, item_id, offset, limit)
