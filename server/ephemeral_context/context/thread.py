"""A conversation as the engine holds it: the thread of blocks and what the model sees of files.

`Conversation` is the per-conversation state every other part of the engine reads and
changes. The functions here are the thread's own invariants: `append` keeps offsets, the
recorded-style baseline and the consumed/cacheable marks in step with each new block;
`reflow` recomputes offsets after blocks shrank and forgets the cache entries that change
invalidated; the visibility checks say what the model can still see (a block not evicted,
or the file segment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ephemeral_context.cache_sim import Block, PromptCache, Usage
from ephemeral_context.context.cacheview import CacheView
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.layout import BuiltRequest, SegmentEntry, ThreadBlock
from ephemeral_context.context.skills import SkillMeta


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
    """Everything the engine holds for one conversation: its thread, file views, cache view
    and accounting."""

    id: str
    thread: list[ThreadBlock] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    thread_tokens: int = 0
    calls: int = 0
    last_call_time: float | None = None
    gaps: list[float] = field(default_factory=list)
    files: dict[str, FileView] = field(default_factory=dict)
    tool_uses: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    pending_notes: dict[str, str] = field(default_factory=dict)
    note_hashes: dict[str, str | None] = field(default_factory=dict)
    """The content hash each pending note's change led to (to drop the echo of an edit)."""
    segment: list[SegmentEntry] = field(default_factory=list)
    cache: CacheView = field(default_factory=CacheView)
    skills: dict[int, SkillState] = field(default_factory=dict)
    last_response_start: int = -1
    """Index of the first block of the latest model response: what precedes it is consumed
    (the model has answered after it); the response itself is not yet."""
    last_cacheable: int = -1
    prefix_key: int = 0
    added_tokens: int = 0
    """Tokens ever appended to the thread (for the mean lifetime of thread content)."""
    context_token_calls: int = 0
    """The thread's size summed over every request built (Little's law numerator)."""
    touches: dict[str, list[int]] = field(default_factory=dict)
    baseline: list[Block] = field(default_factory=list)
    sim: PromptCache | None = None
    baseline_sim: PromptCache | None = None
    model: str = ""
    ours_usage: Usage = field(default_factory=Usage)
    baseline_usage: Usage = field(default_factory=Usage)
    recorded: Usage = field(default_factory=Usage)
    last_usage: Usage | None = None
    last_built: BuiltRequest | None = None
    rehydrated: dict[BlockKind, int] = field(default_factory=dict)
    rehydrated_tokens: int = 0
    evicted_by_kind: dict[BlockKind, int] = field(default_factory=dict)


def append(
    c: Conversation,
    role: Literal["user", "assistant"],
    block: dict[str, Any],
    tokens: int,
    *,
    kind: BlockKind = BlockKind.TEXT,
    item_id: str | None = None,
    uri: str | None = None,
    text: str = "",
    baseline: tuple[int, int] | None = None,
) -> int:
    """Add a block to the thread (and its recorded-style twin to the baseline)."""
    index = len(c.thread)
    tb = ThreadBlock(role, block, tokens, c.calls, kind=kind, item_id=item_id, uri=uri, text=text)
    c.thread.append(tb)
    c.offsets.append(c.thread_tokens)
    c.thread_tokens += tokens
    c.added_tokens += tokens
    if baseline is not None:
        key, base_tokens = baseline
        c.baseline.append(Block(hash((key, role)), base_tokens))
    elif kind is not BlockKind.REHYDRATION:
        c.baseline.append(Block(hash((tb.key, role)), tokens))
    if role == "assistant" and (index == 0 or c.thread[index - 1].role != "assistant"):
        c.last_response_start = index
    if block.get("type") not in ("thinking", "redacted_thinking"):
        c.last_cacheable = index
    return index


def reflow(c: Conversation, first: int) -> None:
    """Recompute offsets from `first` and forget boundaries the change invalidated."""
    total = c.offsets[first]
    for i in range(first, len(c.thread)):
        c.offsets[i] = total
        total += c.thread[i].tokens
    c.thread_tokens = total
    c.cache.invalidate_from(first)


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
        lines = view.text.splitlines(keepends=True)
        n = max(1, len(content.splitlines()))
        return "".join(lines[start_line - 1 : start_line - 1 + n])
    return view.text if view.start_line == start_line else None


def needle_visible(c: Conversation, needle: str) -> bool:
    """`needle` occurs in something the model can see now."""
    if any(needle in e.text for e in c.segment):
        return True
    return any(not tb.evicted and needle in tb.text for tb in c.thread)
