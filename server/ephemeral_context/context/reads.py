"""Files in a conversation: reads shown once, then as references or diffs; edits; outside changes.

A Read of content the model can already see becomes `unchanged since [[file:<id>]] (turn N)`;
of a changed file, a unified diff against the visible version when that is smaller
(policy.read_form decides); otherwise the content. Binary and over-size files become a
reference with the reason. The model's own edits add no content (the new version is in its
tool_use) but move its view of the file. External changes of files a conversation has seen
become one compact note before its next call. Every version is a ledger item, so any id
shown can be hydrated.

API:
- `add_read(...)`: a read in; a reference, a diff or the content out.
- `record_edit(...)`: the model's own change of a file.
- `record_file_version(state, c, uri, item_id, text, version)`: make a version current in the
  ledger.
- `note_document_change(state, change)`: an outside change, noted for the next call.
- `touch(state, c, uri)`: the conversation used this file now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ephemeral_context.context import policy
from ephemeral_context.context.blocks import label_of, result_block, splice, text_hash
from ephemeral_context.context.conversation import Conversation, visible_text
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.ledger import ItemState, LedgerItem, unfit_reason
from ephemeral_context.context.state import EngineState
from ephemeral_context.documents import utf8

if TYPE_CHECKING:
    from ephemeral_context.context.intake import ToolOutput


def touch(state: EngineState, c: Conversation, uri: str) -> None:
    """The conversation used `uri` in this call (for reuse estimates and LRU limits)."""
    c.policy.touch(uri, c.calls)
    current = state.ledger.current(uri)
    if current is not None:
        state.ledger.touch(current.id, c.calls)


def record_file_version(
    state: EngineState,
    c: Conversation,
    uri: str,
    item_id: str,
    text: str,
    version: int | None = None,
) -> LedgerItem:
    """Make `text` the current ledger version of `uri`, then enforce the ledger limits."""
    size = len(utf8(text))
    reason = unfit_reason(text, size, state.config.limits)
    state.over_limits.discard(uri)
    item = state.ledger.record(
        LedgerItem(
            id=item_id,
            kind=BlockKind.FILE,
            key=uri,
            tokens=state.count(text, "code"),
            size_bytes=size,
            content_hash=item_id,
            version=version,
            state=ItemState.REFERENCE if reason else ItemState.FULL,
            last_use=c.calls,
            changed_at=c.calls,
            reason=reason or "",
            label=label_of(uri),
        )
    )
    for demotion in state.ledger.enforce_limits():
        state.over_limits.add(demotion.key)
    return item


def add_read(
    state: EngineState,
    c: Conversation,
    result: ToolOutput,
    uri: str,
    content: str,
    given: int,
    base_key: int,
) -> str:
    """A read of `uri` (`content`, from `result.start_line`); returns what the model sees."""
    tool_use_id, text, version = result.tool_use_id, result.text, result.version
    start_line, whole = result.start_line, result.whole
    reason = unfit_reason(content, len(utf8(content)), state.config.limits)
    entry = state.store.put(content, uri=uri, version=version, tokens=state.count(content, "code"))
    if whole:
        record_file_version(state, c, uri, entry.id, content, version)
    else:
        state.ledger.record(
            LedgerItem(
                id=entry.id,
                kind=BlockKind.SYMBOL,
                key=f"{uri}#L{start_line}",
                tokens=given,
                size_bytes=len(utf8(content)),
                content_hash=entry.id,
                version=version,
                state=ItemState.PARTIAL,
                last_use=c.calls,
                changed_at=c.calls,
                label=f"{label_of(uri)}:{start_line}",
            )
        )
    touch(state, c, uri)
    if reason:
        shown = (
            f"[[file:{entry.id}]] {label_of(uri)} not shown: {reason}. "
            f"{c.fetch.call_text(entry.id, part=True)} reads a part."
        )
        return _answer(state, c, tool_use_id, shown, base_key, given)
    visible = visible_text(c, uri, start_line, whole, content)
    view = c.files.get(uri)
    seen = tuple(view.blocks) if view is not None else ()
    since = view.call if view is not None else 0
    form, body = policy.read_form(
        visible,
        content,
        label_of(uri),
        lambda s: state.count(s, "code"),
        given,  # the answer as the client sent it: the diff must be smaller than that
        lambda diff: (
            f"[[file:{entry.id}]] {label_of(uri)} changed since turn {since}; "
            f"diff against what you saw:\n{diff}"
        ),
    )
    if form == "reference" and view is not None:
        shown = f"unchanged since [[file:{view.item_id}]] (turn {view.call})"
        return _answer(state, c, tool_use_id, shown, base_key, given, uri, seen)
    if form == "diff" and view is not None:
        shown = body
        tokens = state.count(shown, "code")
    else:
        shown, tokens = text, given
    index = c.thread.append(
        c.calls,
        "user",
        result_block(tool_use_id, shown, False),
        tokens,
        kind=BlockKind.FILE,
        item_id=entry.id,
        uri=uri,
        text=content,
        baseline=(base_key, given),
        relies_on=seen if form == "diff" else (),
    )
    if form == "diff" and view is not None:
        view.blocks.append(index)
        view.item_id, view.call = entry.id, c.calls
        view.text = content if whole or not view.whole else splice(view.text, start_line, content)
    else:
        c.show_file(
            uri,
            entry.id,
            content,
            [index],
            start_line=start_line,
            whole=whole,
            keep_segment=not whole,
        )
    c.pending_notes.pop(uri, None)
    return shown


def _answer(
    state: EngineState,
    c: Conversation,
    tool_use_id: str,
    shown: str,
    base_key: int,
    given: int,
    uri: str | None = None,
    relies_on: tuple[int, ...] = (),
) -> str:
    """A read answered by a one-line message instead of the content (the baseline still
    carries the content as the recorded transcript showed it); `relies_on`: the blocks
    that show what it refers to."""
    c.thread.append(
        c.calls,
        "user",
        result_block(tool_use_id, shown, False),
        state.count(shown, "prose"),
        baseline=(base_key, given),
        text=shown,
        uri=uri,
        relies_on=relies_on,
    )
    return shown


def record_edit(
    state: EngineState, c: Conversation, uri: str, version: int | None, content: str | None
) -> None:
    """The model's own change of `uri`; `content` is the whole file afterwards, if known."""
    if content is not None:
        entry = state.store.put(
            content, uri=uri, version=version, tokens=state.count(content, "code")
        )
        record_file_version(state, c, uri, entry.id, content, version)
        view = c.files.get(uri)
        if view is not None and view.whole:  # a range it read stays what the model saw
            view.item_id, view.text, view.call = entry.id, content, c.calls
        if uri in c.pending_notes and c.note_hashes.get(uri) == text_hash(content):
            del c.pending_notes[uri]  # the editor's echo of this very edit
    touch(state, c, uri)


def note_document_change(state: EngineState, change: Any) -> None:
    """An external change (documents.DocumentChange) to a file some conversation has seen.

    One compact note per file goes in before that conversation's next call; the model's
    view is kept, so a later Read shows a diff against what it saw. A file gone from
    disk drops out of the working set with a note (its versions stay hydratable).
    Opening or closing a document in the editor changes nothing.
    """
    uri = str(getattr(change, "uri", ""))
    reason = getattr(change, "reason", "edit")
    old_hash, new_hash = getattr(change, "old_hash", None), getattr(change, "new_hash", None)
    deleted = reason == "disk" and new_hash is None
    if reason in ("open", "close") or (not deleted and old_hash == new_hash):
        return
    rows = {  # where each edit starts and where what it wrote ends (points: (row, column))
        int(point[0]) + 1
        for e in getattr(change, "byte_edits", ()) or ()
        for point in (e.start_point, e.new_end_point)
    }
    where = f", lines {min(rows)}-{max(rows)}" if rows else ""
    old_version = getattr(change, "old_version", None)
    new_version = getattr(change, "new_version", None)
    what = (
        "was deleted (or is no longer readable) and left the context"
        if deleted
        else f"changed outside this conversation (v{old_version} -> v{new_version}{where})"
    )
    for c in state.conversations.values():
        view = c.files.get(uri)
        if view is None and not (deleted and _shown_pinned_definition(c, uri)):
            continue
        if not deleted and view is not None and view.whole and text_hash(view.text) == new_hash:
            continue  # the version the model already sees (the echo of its own edit)
        c.pending_notes[uri] = f"Note: {label_of(uri)} {what}; read it again if you need it."
        c.note_hashes[uri] = new_hash
        if deleted:
            c.files.pop(uri, None)
    if deleted:  # seen or only pinned: a file that is gone leaves items and totals
        state.ledger.remove_key(uri)


def _shown_pinned_definition(c: Conversation, uri: str) -> bool:
    """`c` was shown a pinned definition of `uri` (which gives it no file view): it must
    hear that the file is gone as well."""
    return any(tb.kind is BlockKind.PINNED and tb.uri == uri and not tb.evicted for tb in c.thread)
