"""One conversation as the engine holds it: its thread, what the model sees of each file,
its file segment, loaded skills, policy and accounting.

The visibility checks say what the model can still see: a file view is visible while one of
its blocks is not evicted or it is in the file segment. `fork` starts another conversation
from a prefix of one (a rewind, a branch): what was sent for that prefix is sent again as it
was, so the cache serves it, and the rest of the original is not carried over.

API:
- `Conversation`: everything the engine holds for one conversation.
- `FileView`: what the model of one conversation can see of one file;
  `Conversation.show_file` records a new one.
- `SkillState`: a loaded skill and where it was loaded.
- `view_visible(c, view)`, `visible_text(...)`, `needle_visible(c, needle)`: what the model
  still sees.
- `fork(c, conv, at)`: a new conversation from the first `at` blocks of `c`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ephemeral_context.cache_sim import Usage
from ephemeral_context.context.accounting import Accounting
from ephemeral_context.context.cacheview import END_OF_SYSTEM
from ephemeral_context.context.fetching import OWN_TOOL, FetchRoute
from ephemeral_context.context.kinds import FILE_COPIES, BlockKind
from ephemeral_context.context.layout import SegmentEntry
from ephemeral_context.context.policy import Policy
from ephemeral_context.context.quotes import QuoteIndex
from ephemeral_context.context.reuse import ReuseLog
from ephemeral_context.context.skills import SkillMeta
from ephemeral_context.context.thread import Thread
from ephemeral_context.documents import split_lines


@dataclass
class FileView:
    """What the model of one conversation can see of one file."""

    uri: str
    item_id: str
    text: str
    start_line: int
    whole: bool
    call: int
    blocks: list[int] = field(default_factory=list)
    in_segment: bool = False
    demoted: bool = False
    """Shown as synopsis plus id in the segment (the text itself is not visible)."""


@dataclass
class SkillState:
    """A loaded skill and where it was loaded (its frontmatter trigger counts from there)."""

    meta: SkillMeta
    loaded_call: int
    tokens_at_load: int


@dataclass
class Conversation:
    """Everything the engine holds for one conversation."""

    id: str
    thread: Thread = field(default_factory=Thread)
    calls: int = 0
    files: dict[str, FileView] = field(default_factory=dict)
    tool_uses: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    pending_notes: dict[str, str] = field(default_factory=dict)
    note_hashes: dict[str, str | None] = field(default_factory=dict)
    """The content hash each pending note's change led to (to drop the echo of an edit)."""
    segment: list[SegmentEntry] = field(default_factory=list)
    skills: dict[int, SkillState] = field(default_factory=dict)
    prefix_key: int = 0
    policy: Policy = field(default_factory=Policy)
    accounting: Accounting = field(default_factory=Accounting)
    rehydrations: int = 0
    """Items fetched back by re-hydration round trips (the status counts them)."""
    quotes: QuoteIndex = field(default_factory=QuoteIndex)
    """The lines a response may quote, of evicted blocks (rehydration.py) and of outputs
    (reuse.py): one index for both."""
    reuse: ReuseLog = field(default_factory=ReuseLog)
    """Which outputs the responses used again (the cost gate's re-use estimate)."""
    evicted_tokens: dict[tuple[int, str], int] = field(default_factory=dict)
    """(block content key, placeholder text) -> tokens of that evicted form (eviction.py
    weighs every candidate before every call; the count is the same each time)."""
    route: FetchRoute | None = None
    """How its model calls for content by id when its tools are a client's (the client's
    Read, or the engine's tool after them: `ContextEngine.set_route`); None: the caller's
    tools hold the engine's own."""

    @property
    def fetch(self) -> FetchRoute:
        """The call its model makes for content by id."""
        return self.route or OWN_TOOL

    def untold_note(self) -> str | None:
        """The route's note while this conversation has not carried it (None: told, or the
        route has none). The engine appends it once something is out of sight."""
        note = self.fetch.note
        if note is None or any(tb.kind is BlockKind.NOTE and tb.text == note for tb in self.thread):
            return None
        return note

    def answered(self, index: int) -> bool:
        """The model has seen thread block `index` in a request and answered after it:
        what may leave the thread or move into the segment. Parallel tool calls written one
        by one (use, result, use, result) make a result look answered (`Thread.consumed`)
        before any request has carried it."""
        return self.thread.consumed(index) and self.thread[index].call < self.calls

    def hides_content(self) -> bool:
        """Something shown is out of sight now: a placeholder where it was, or a file
        demoted to its synopsis in the segment."""
        return any(v.demoted for v in self.files.values()) or any(
            tb.evicted and tb.kind is not BlockKind.CONSOLIDATED for tb in self.thread
        )

    def names(self, item_id: str) -> bool:
        """Whether this conversation showed its model `item_id`: a block's, a file view's or
        a segment entry's id, or a reference (`[[kind:id]]`) in a block as sent. What its
        hydration calls may fetch where the store is shared with other conversations."""
        if any(v.item_id == item_id for v in self.files.values()) or any(
            e.item_id == item_id for e in self.segment
        ):
            return True
        reference = f":{item_id}]]"
        return any(
            tb.item_id == item_id or reference in json.dumps(tb.block, ensure_ascii=False)
            for tb in self.thread
        )

    def show_file(
        self,
        uri: str,
        item_id: str,
        text: str,
        blocks: Sequence[int] = (),
        *,
        start_line: int = 1,
        whole: bool = True,
        keep_segment: bool = False,
    ) -> FileView:
        """The model now sees `text` of `uri` (from `start_line`; the whole file unless
        `whole` is false) in `blocks` of this call. `keep_segment`: the file segment still
        shows the file where an earlier view had it there."""
        earlier = self.files.get(uri)
        in_segment = keep_segment and earlier is not None and earlier.in_segment
        view = FileView(uri, item_id, text, start_line, whole, self.calls, list(blocks), in_segment)
        self.files[uri] = view
        return view


def view_visible(c: Conversation, view: FileView) -> bool:
    """The model still sees this file view (in the segment, or a block not evicted)."""
    return view.in_segment or any(not c.thread[i].evicted for i in view.blocks)


def visible_text(
    c: Conversation, uri: str, start_line: int, whole: bool, content: str
) -> str | None:
    """The text the model sees for this part of the file, if any is still visible."""
    view = c.files.get(uri)
    if view is None or not view_visible(c, view):
        return None
    if whole:
        return view.text if view.whole else None
    if view.whole:
        lines = split_lines(view.text)
        n = max(1, len(split_lines(content)))
        part = "".join(lines[start_line - 1 : start_line - 1 + n])
        # A Read of a range ends at its last line's end, without the line break the whole
        # file has there: the same lines, not a change (a diff of one line break had gone out
        # where the range was unchanged).
        return part if content.endswith("\n") else part.removesuffix("\n")
    return view.text if view.start_line == start_line else None


def needle_visible(c: Conversation, needle: str) -> bool:
    """`needle` occurs in something the model can see now."""
    return any(needle in e.text for e in c.segment) or c.thread.shows(needle)


def fork(c: Conversation, conv: str, at: int) -> Conversation:
    """Conversation `conv`: `c`'s first `at` thread blocks as sent now, and what the engine
    learned on the way there (gaps, reuse, cache state, file segment); a file view goes
    along only when all its blocks are in the prefix (a later one may show another version,
    so a Read on the new branch shows the content again). The segment keeps only the file
    versions the prefix showed: one that `c` read after it is no part of the branch, nor
    the whole copy of a file the prefix showed a range of (carried along, it
    made the branch's first request larger than its twin, and an Edit of it a round trip
    for content the branch never saw); a file the prefix only edited, its content never
    shown, is not one it showed. Its bills start at zero."""
    thread = c.thread.fork(at)
    memo = {id(c.thread): thread, id(c.accounting.last_built): None}
    new = copy.deepcopy(c, memo)
    new.id = conv
    copies = FILE_COPIES | {BlockKind.CONSOLIDATED}  # not an Edit's result, which names it
    shown = {tb.item_id for tb in thread.blocks if tb.item_id and tb.kind in copies}
    new.files = {
        uri: view
        for uri, view in new.files.items()
        if all(i < at for i in view.blocks)
        and (view.blocks or ((view.in_segment or view.demoted) and view.item_id in shown))
    }
    segment = [e for e in new.segment if e.item_id in shown]
    if len(segment) < len(new.segment):
        new.segment = segment
        thread.cache.keep_only((END_OF_SYSTEM,))  # what followed the segment is gone
    new.skills = {i: skill for i, skill in new.skills.items() if i < at}
    new.accounting.ours = new.accounting.baseline = new.accounting.recorded = Usage()
    new.accounting.last_usage = None
    return new
