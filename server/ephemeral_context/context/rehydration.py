"""Re-hydration: evicted content the model is about to use is appended to the thread again.

For an edit whose old strings the model cannot see, the evicted block that held them is
appended again, as a real read_session_file call would (or only the one definition holding
the string, as read_symbol would, when the block is a file); failing that, the file's
current version. The replay uses this to charge eviction honestly: the call pays for what it
brings back, and the counts feed the policy's reuse estimate for each kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from ephemeral_context.context.blocks import label_of
from ephemeral_context.context.conversation import (
    Conversation,
    FileView,
    needle_visible,
    view_visible,
)
from ephemeral_context.context.kinds import FILE_COPIES, BlockKind
from ephemeral_context.context.outlines import enclosing_symbol
from ephemeral_context.context.state import EngineState
from ephemeral_context.context.thread import ThreadBlock


def ensure_visible(state: EngineState, conv: str, uri: str | None, needles: Sequence[str]) -> int:
    """Make content the model is about to use visible again; returns tokens appended."""
    c = state.conversation(conv)
    view = c.files.get(uri) if uri else None
    file_hidden = view is not None and not view_visible(c, view)
    appended = 0
    for needle in needles:
        if not needle or needle_visible(c, needle):
            continue
        source = next((tb for tb in reversed(c.thread) if tb.evicted and needle in tb.text), None)
        if source is not None:
            appended += rehydrate_block(state, c, source, needle)
        elif file_hidden and uri is not None:
            appended += rehydrate_current(state, c, uri)
            file_hidden = False
    if not needles and file_hidden and uri is not None:
        appended += rehydrate_current(state, c, uri)
    return appended


def rehydrate_current(state: EngineState, c: Conversation, uri: str) -> int:
    """Append the current version of `uri`, if the ledger has one."""
    current = state.ledger.current(uri)
    return rehydrate_file(state, c, uri, current.id) if current is not None else 0


def rehydrate_block(state: EngineState, c: Conversation, tb: ThreadBlock, needle: str = "") -> int:
    """Append evicted content again: the one definition holding `needle` when the
    block is a file and a definition holds it (read_symbol), else the whole block."""
    item = tb.item_id or "?"
    part = (
        enclosing_symbol(state.outlines.get(tb.text, label_of(tb.uri)), tb.text, needle)
        if tb.uri and needle
        else None
    )
    if part is not None and tb.kind in FILE_COPIES | {BlockKind.CONSOLIDATED}:
        qualname, body = part
        text = f"[read_symbol('{label_of(tb.uri or '')}', '{qualname}')]\n{body}"
        shown = body
    else:
        text, shown = f"[read_session_file('{item}')]\n{tb.text}", tb.text
    tokens = state.count(text, "code")
    index = c.thread.append(
        c.calls, "user", {"type": "text", "text": text}, tokens, kind=BlockKind.REHYDRATION,
        item_id=tb.item_id, uri=tb.uri, text=shown,
    )  # fmt: skip
    view = c.files.get(tb.uri) if tb.uri else None
    if view is not None and shown is tb.text:
        view.blocks.append(index)
    c.rehydrated[tb.kind] = c.rehydrated.get(tb.kind, 0) + 1
    c.rehydrated_tokens += tokens
    return tokens


def rehydrate_file(state: EngineState, c: Conversation, uri: str, item_id: str) -> int:
    """Append the stored version `item_id` of `uri`; it becomes the model's view of the file."""
    text = state.store.get(item_id).text
    shown = f"[read_session_file('{item_id}')] {label_of(uri)}\n{text}"
    tokens = state.count(shown, "code")
    index = c.thread.append(
        c.calls,
        "user",
        {"type": "text", "text": shown},
        tokens,
        kind=BlockKind.REHYDRATION,
        item_id=item_id,
        uri=uri,
        text=text,
    )
    view = c.files.get(uri)
    if view is None:
        c.files[uri] = FileView(uri, item_id, text, 1, True, c.calls, [index])
    else:
        view.blocks.append(index)
        view.text, view.whole, view.start_line, view.item_id = text, True, 1, item_id
    c.rehydrated[BlockKind.FILE] = c.rehydrated.get(BlockKind.FILE, 0) + 1
    c.rehydrated_tokens += tokens
    return tokens
