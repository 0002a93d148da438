"""The context engine: one object that turns a conversation into cache-aware requests.

The live server (model/, lsp/) and the `ours` replay strategy drive the same engine, so the
benchmark measures the product, not a copy of it.

    engine = ContextEngine(store, EngineConfig(), clock=time.time)
    engine.add_user_text(conv, "Rename App.run")
    kwargs = engine.build_request(conv, model, system, tools)   # -> messages.create(**kwargs)
    engine.add_assistant_content(conv, response.content)        # tool_use blocks included
    shown = engine.add_tool_result(conv, tool_use_id, text, kind="file", uri=..., content=...)
    engine.record_usage(conv, response.usage)

What the model sees:
- A Read (`kind="file"`) of content the model can already see becomes
  `unchanged since [[file:<id>]] (turn N)`; of a changed file, a unified diff against the
  visible version when that is smaller; otherwise the content. The returned string is what
  goes into the tool_result.
- The model's own edits (`kind="edit"`) add no content: the new version is in its tool_use.
- External changes (`note_document_change`) of files the model has seen become one compact
  note before the next call.
- Before each call the policy may evict consumed content (file reads, tool outputs, large
  Write/Edit inputs, skills whose frontmatter allows it, memories), leaving a placeholder plus
  id, when the cost gate says it pays or the cache is cold anyway. After an idle gap longer than
  the TTL, the file segment is rebuilt from the current versions and superseded copies in the
  thread become references.
- Every id shown can be hydrated: `read_session_file(id, offset, limit)`, `hydrate`
  (a file item's id gives its current version) and `read_symbol(path, symbol)`.

Human controls: `pin`, `unpin`, `drop` (the only way to evict a protected skill); `status()` and
`items()` report what the context holds and what it saved against the recorded-style
baseline (every block re-sent as first shown, one breakpoint at the end).
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from ephemeral_context.cache_sim import (
    TTL_SECONDS,
    Block,
    PromptCache,
    Request,
    Ttl,
    UnknownModelError,
    Usage,
    cost_usd,
    usage_from_dict,
)
from ephemeral_context.context import policy
from ephemeral_context.context.cacheview import END_OF_SEGMENT, END_OF_SYSTEM, CacheView
from ephemeral_context.context.layout import (
    BuiltRequest,
    SegmentEntry,
    ThreadBlock,
    build,
    content_key,
    place_breakpoints,
)
from ephemeral_context.context.ledger import (
    ItemKind,
    ItemState,
    Ledger,
    LedgerItem,
    LedgerLimits,
    binary_reason,
)
from ephemeral_context.context.skills import SkillMeta, parse_skill, trigger_fired
from ephemeral_context.documents import content_hash
from ephemeral_context.syntax import (
    Outline,
    Symbol,
    address,
    find_symbol,
    outline_text,
    render_synopsis,
)
from ephemeral_context.tokens import BLOCK_OVERHEAD_TOKENS, estimate_block_tokens

log = logging.getLogger(__name__)

TokenCounter = Callable[[str, str], int]
ResultKind = Literal["file", "edit", "tool_result", "skill", "memory"]
EVICTABLE_KINDS = frozenset({"file", "tool_result", "write_input", "tool_input", "skill", "memory"})
INPUT_EVICTION_MIN_TOKENS = 2 * BLOCK_OVERHEAD_TOKENS
"""A tool_use input smaller than this cannot shrink below its placeholder plus framing."""

SHRINK_KEEP_CHARS = 120
"""Input fields up to this long (paths, short commands) stay; longer ones become the reference."""

OUTLINE_CACHE_SIZE = 256
"""Outlines kept per engine (one per file version in use; cleared when full)."""
WRITE_TOOLS = frozenset({"Write", "write_file"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "edit_file"})


class StoredEntryLike(Protocol):
    @property
    def id(self) -> str: ...


class StoredTextLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def total_length(self) -> int: ...


class StoreLike(Protocol):
    """What the engine needs from store.Store (persist once, get by id)."""

    def put(
        self,
        text: str,
        *,
        uri: str | None = ...,
        version: int | None = ...,
        tokens: int | None = ...,
        synopsis: str | None = ...,
    ) -> StoredEntryLike: ...

    def get(self, id: str, offset: int = ..., limit: int | None = ...) -> StoredTextLike: ...


class UnknownConversation(KeyError):
    """A conversation id the engine has never seen."""


class UnknownItem(LookupError):
    """An item id, URI or symbol the engine cannot resolve; the message says what to do."""


@dataclass(frozen=True)
class EngineConfig:
    """Limits and switches; every default is documented in docs/cost-model.md."""

    limits: LedgerLimits = field(default_factory=LedgerLimits)
    context_budget: int = 150_000
    max_tokens: int = 8192
    cache_ttl: Literal["auto", "5m", "1h"] = "auto"
    eviction: bool = True
    count: TokenCounter = estimate_block_tokens


@dataclass(frozen=True)
class EvictionEvent:
    """One eviction (or consolidation) decision, as reported to the user."""

    call: int
    item_ids: tuple[str, ...]
    tokens_freed: int
    tokens_reprocessed: int
    cold: bool
    reason: str


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
class EngineStatus:
    """The numbers a status bar needs (docs/protocol.md, ephemeralContext/status)."""

    context_tokens: int
    budget: int
    items: int
    cache_hit_rate: float
    saved_tokens: float
    saved_usd: float
    breakdown: dict[str, int]
    last_call: Usage | None
    evictions: int
    rehydrations: int


@dataclass(frozen=True)
class HydratedText:
    """Text behind an id (whole or a slice), with where it came from."""

    id: str
    text: str
    total_length: int
    offset: int
    uri: str | None
    version: int | None


@dataclass
class _FileView:
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
class _SkillState:
    meta: SkillMeta
    loaded_call: int
    tokens_at_load: int


@dataclass
class _Conversation:
    id: str
    thread: list[ThreadBlock] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    thread_tokens: int = 0
    calls: int = 0
    last_call_time: float | None = None
    gaps: list[float] = field(default_factory=list)
    files: dict[str, _FileView] = field(default_factory=dict)
    tool_uses: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    pending_notes: dict[str, str] = field(default_factory=dict)
    note_hashes: dict[str, str | None] = field(default_factory=dict)
    """The content hash each pending note's change led to (to drop the echo of an edit)."""
    segment: list[SegmentEntry] = field(default_factory=list)
    cache: CacheView = field(default_factory=CacheView)
    skills: dict[int, _SkillState] = field(default_factory=dict)
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
    rehydrated: dict[str, int] = field(default_factory=dict)
    rehydrated_tokens: int = 0
    evicted_by_kind: dict[str, int] = field(default_factory=dict)


class ContextEngine:
    """Ledger + policy + layout for every conversation of one workspace."""

    def __init__(
        self,
        store: StoreLike,
        config: EngineConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config or EngineConfig()
        self.clock = clock
        self.ledger = Ledger(self.config.limits)
        self.events: list[EvictionEvent] = []
        self._conversations: dict[str, _Conversation] = {}
        self._tool_blocks: tuple[tuple[int, ...], list[Block]] = ((), [])
        self._outlines: dict[tuple[str, str], Outline] = {}
        self._over_limits: set[str] = set()
        """Files the ledger limits pushed out; their copies leave at the next request."""

    # ------------------------------------------------------------------ conversations

    def conversation(self, conv: str) -> _Conversation:
        """The conversation's state, created on first use."""
        state = self._conversations.get(conv)
        if state is None:
            state = self._conversations[conv] = _Conversation(conv)
        return state

    def conversations(self) -> list[str]:
        """Ids of every conversation the engine has seen."""
        return list(self._conversations)

    def _count(self, text: str, kind: str) -> int:
        return self.config.count(text, kind)

    def _append(
        self,
        c: _Conversation,
        role: Literal["user", "assistant"],
        block: dict[str, Any],
        tokens: int,
        *,
        kind: str = "text",
        item_id: str | None = None,
        uri: str | None = None,
        text: str = "",
        baseline: tuple[int, int] | None = None,
    ) -> int:
        """Add a block to the thread (and its recorded-style twin to the baseline)."""
        index = len(c.thread)
        tb = ThreadBlock(
            role, block, tokens, c.calls, kind=kind, item_id=item_id, uri=uri, text=text
        )
        c.thread.append(tb)
        c.offsets.append(c.thread_tokens)
        c.thread_tokens += tokens
        c.added_tokens += tokens
        if baseline is not None:
            key, base_tokens = baseline
            c.baseline.append(Block(hash((key, role)), base_tokens))
        elif kind != "rehydration":
            c.baseline.append(Block(hash((tb.key, role)), tokens))
        if role == "assistant" and (index == 0 or c.thread[index - 1].role != "assistant"):
            c.last_response_start = index
        if block.get("type") not in ("thinking", "redacted_thinking"):
            c.last_cacheable = index
        return index

    def add_user_text(self, conv: str, text: str, *, tokens: int | None = None) -> None:
        """A user message (typed by the human)."""
        c = self.conversation(conv)
        self._append(
            c,
            "user",
            {"type": "text", "text": text},
            tokens if tokens is not None else self._count(text, "prose"),
            text=text,
        )

    def add_assistant_content(
        self,
        conv: str,
        blocks: Iterable[Mapping[str, Any] | Any],
        *,
        tokens: Sequence[int] | None = None,
    ) -> None:
        """The content of a model response, tool_use blocks included, in order.

        Accepts API dicts or SDK objects (anything with `model_dump`). A Write's content is
        persisted to the store, so the block can later shrink to a placeholder plus id.
        """
        c = self.conversation(conv)
        for n, raw in enumerate(blocks):
            block = _as_dict(raw)
            kind = str(block.get("type", ""))
            if kind == "text" and not block.get("text"):
                continue
            count = (
                tokens[n] if tokens is not None and n < len(tokens) else self._block_tokens(block)
            )
            if kind != "tool_use":
                self._append(c, "assistant", block, count, text=str(block.get("text", "")))
                continue
            name = str(block.get("name", ""))
            tool_input = block.get("input") or {}
            c.tool_uses[str(block.get("id", ""))] = (name, tool_input)
            content = tool_input.get("content") if name in WRITE_TOOLS else None
            path = tool_input.get("file_path") or tool_input.get("path")
            if isinstance(content, str) and isinstance(path, str):
                uri = _uri(path)
                entry = self.store.put(content, uri=uri, tokens=self._count(content, "code"))
                self._record_file_version(c, uri, entry.id, content)
                index = self._append(
                    c,
                    "assistant",
                    block,
                    count,
                    kind="write_input",
                    item_id=entry.id,
                    uri=uri,
                    text=content,
                )
                view = c.files.get(uri)
                c.files[uri] = _FileView(uri, entry.id, content, 1, True, c.calls, [index])
                if view is not None and view.in_segment:
                    c.files[uri].in_segment = True
                self._touch(c, uri)
            else:
                input_uri = _uri(path) if isinstance(path, str) else None
                item_id = None
                if count > INPUT_EVICTION_MIN_TOKENS:
                    stored = json.dumps(tool_input, ensure_ascii=False, indent=1)
                    entry = self.store.put(stored, tokens=count)
                    item_id = entry.id
                    self.ledger.record(
                        LedgerItem(
                            id=entry.id, kind=ItemKind.TOOL_RESULT, key=f"{conv}:input:{entry.id}",
                            tokens=count, size_bytes=len(stored.encode()), content_hash=entry.id,
                            last_use=c.calls, changed_at=c.calls, label=f"{name} input",
                        )
                    )  # fmt: skip
                self._append(
                    c, "assistant", block, count, kind="tool_input" if item_id else "text",
                    item_id=item_id, text=_input_text(tool_input), uri=input_uri,
                )  # fmt: skip
                if isinstance(path, str):
                    self._touch(c, _uri(path))

    def add_tool_result(
        self,
        conv: str,
        tool_use_id: str,
        text: str,
        *,
        kind: ResultKind = "tool_result",
        uri: str | None = None,
        version: int | None = None,
        content: str | None = None,
        start_line: int = 1,
        whole: bool = True,
        is_error: bool = False,
        tokens: int | None = None,
        name: str | None = None,
    ) -> str:
        """Record a tool's result and return the text the model actually sees.

        kind="file": a read of `uri`; `content` is the raw text read (default `text`),
        `start_line`/`whole` say which part. Returns the full `text`, a diff, or a reference.
        kind="edit": the model's own change; `content` is the whole file afterwards (if
        known). Adds no content beyond `text` (the short confirmation).
        kind="skill" / "memory" / "tool_result": kept as is, evictable by policy.
        """
        c = self.conversation(conv)
        tool = name or c.tool_uses.get(tool_use_id, ("", {}))[0]
        given = tokens if tokens is not None else self._count(text, "tool_output")
        base_key = content_key({"tool_result": tool_use_id, "text": text})
        if kind == "file" and uri is not None and not is_error:
            return self._add_read(
                c,
                tool_use_id,
                text,
                uri,
                version,
                content if content is not None else text,
                start_line,
                whole,
                given,
                base_key,
            )
        if kind == "edit" and uri is not None:
            if content is not None:
                entry = self.store.put(
                    content, uri=uri, version=version, tokens=self._count(content, "code")
                )
                self._record_file_version(c, uri, entry.id, content, version)
                view = c.files.get(uri)
                if view is not None:
                    view.item_id, view.text, view.start_line, view.whole = (
                        entry.id,
                        content,
                        1,
                        True,
                    )
                    view.call = c.calls
                if uri in c.pending_notes and c.note_hashes.get(uri) == _hash(content):
                    del c.pending_notes[uri]  # the editor's echo of this very edit
            self._touch(c, uri)
        item_id: str | None = None
        if not is_error and given > INPUT_EVICTION_MIN_TOKENS:
            entry = self.store.put(text, tokens=given)
            item_id = entry.id
            item_kind = (
                ItemKind.SKILL
                if kind == "skill"
                else ItemKind.MEMORY
                if kind == "memory"
                else ItemKind.TOOL_RESULT
            )
            meta = parse_skill(text, default_name=tool or "skill") if kind == "skill" else None
            protected = meta is not None and (meta.protected or not meta.ephemeral)
            if meta is not None and meta.problems:
                log.warning(
                    "skill %s: %s (treated as not ephemeral)", meta.name, "; ".join(meta.problems)
                )
            self.ledger.record(
                LedgerItem(
                    id=entry.id,
                    kind=item_kind,
                    key=f"{conv}:{tool_use_id}",
                    tokens=given,
                    size_bytes=len(text.encode()),
                    content_hash=entry.id,
                    last_use=c.calls,
                    changed_at=c.calls,
                    evictable=not protected,
                    label=meta.name if meta else tool,
                )
            )
        index = self._append(
            c,
            "user",
            _result_block(tool_use_id, text, is_error),
            given,
            kind=("tool_result" if kind == "edit" else kind) if item_id else "text",
            item_id=item_id,
            text=text,
            uri=uri if kind == "edit" else None,
        )
        if kind == "skill" and item_id:
            c.skills[index] = _SkillState(
                parse_skill(text, default_name=tool or "skill"), c.calls, c.thread_tokens
            )
        return text

    def add_user_content(
        self,
        conv: str,
        text: str,
        *,
        kind: Literal["skill", "memory"],
        name: str = "",
        tokens: int | None = None,
    ) -> None:
        """Skill bodies or memories the harness puts in a user message (not a tool result)."""
        c = self.conversation(conv)
        count = tokens if tokens is not None else self._count(text, "prose")
        entry = self.store.put(text, tokens=count)
        meta = parse_skill(text, default_name=name or "skill") if kind == "skill" else None
        protected = meta is not None and (meta.protected or not meta.ephemeral)
        self.ledger.record(
            LedgerItem(
                id=entry.id,
                kind=ItemKind(kind),
                key=f"{conv}:{kind}:{entry.id}",
                tokens=count,
                size_bytes=len(text.encode()),
                content_hash=entry.id,
                last_use=c.calls,
                changed_at=c.calls,
                evictable=not protected,
                label=meta.name if meta else name or kind,
            )
        )
        index = self._append(
            c, "user", {"type": "text", "text": text}, count, kind=kind, item_id=entry.id, text=text
        )
        if meta is not None:
            c.skills[index] = _SkillState(meta, c.calls, c.thread_tokens)

    # ------------------------------------------------------------------ files

    def _touch(self, c: _Conversation, uri: str) -> None:
        c.touches.setdefault(uri, []).append(c.calls)
        current = self.ledger.current(uri)
        if current is not None:
            self.ledger.touch(current.id, c.calls)

    def _record_file_version(
        self, c: _Conversation, uri: str, item_id: str, text: str, version: int | None = None
    ) -> LedgerItem:
        size = len(text.encode())
        reason = binary_reason(text, size, self.config.limits)
        self._over_limits.discard(uri)
        item = self.ledger.record(
            LedgerItem(
                id=item_id,
                kind=ItemKind.FILE,
                key=uri,
                tokens=self._count(text, "code"),
                size_bytes=size,
                content_hash=item_id,
                version=version,
                state=ItemState.REFERENCE if reason else ItemState.FULL,
                last_use=c.calls,
                changed_at=c.calls,
                reason=reason,
                label=_label(uri),
            )
        )
        for demotion in self.ledger.enforce_limits():
            self._over_limits.add(demotion.key)
        return item

    def _visible_text(
        self, c: _Conversation, uri: str, start_line: int, whole: bool, content: str
    ) -> str | None:
        """The text the model sees for this part of the file, if any is still visible."""
        view = c.files.get(uri)
        if view is None or not self._view_visible(c, view):
            return None
        if whole:
            return view.text if view.whole else None
        if view.whole:
            lines = view.text.splitlines(keepends=True)
            n = max(1, len(content.splitlines()))
            return "".join(lines[start_line - 1 : start_line - 1 + n])
        return view.text if view.start_line == start_line else None

    @staticmethod
    def _view_visible(c: _Conversation, view: _FileView) -> bool:
        return view.in_segment or any(not c.thread[i].evicted for i in view.blocks)

    def _add_read(
        self,
        c: _Conversation,
        tool_use_id: str,
        text: str,
        uri: str,
        version: int | None,
        content: str,
        start_line: int,
        whole: bool,
        given: int,
        base_key: int,
    ) -> str:
        reason = binary_reason(content, len(content.encode()), self.config.limits)
        entry = self.store.put(
            content, uri=uri, version=version, tokens=self._count(content, "code")
        )
        if whole:
            self._record_file_version(c, uri, entry.id, content, version)
        else:
            self.ledger.record(
                LedgerItem(
                    id=entry.id,
                    kind=ItemKind.SYMBOL,
                    key=f"{uri}#L{start_line}",
                    tokens=given,
                    size_bytes=len(content.encode()),
                    content_hash=entry.id,
                    version=version,
                    state=ItemState.PARTIAL,
                    last_use=c.calls,
                    changed_at=c.calls,
                    label=f"{_label(uri)}:{start_line}",
                )
            )
        self._touch(c, uri)
        if reason:
            shown = (
                f"[[file:{entry.id}]] {_label(uri)} not shown: {reason}. "
                f"read_session_file('{entry.id}', offset, limit) reads a part."
            )
            self._append(
                c,
                "user",
                _result_block(tool_use_id, shown, False),
                self._count(shown, "prose"),
                baseline=(base_key, given),
                text=shown,
            )
            return shown
        visible = self._visible_text(c, uri, start_line, whole, content)
        form, body = policy.read_form(
            visible, content, _label(uri), lambda s: self._count(s, "code")
        )
        view = c.files.get(uri)
        if form == "reference" and view is not None:
            shown = f"unchanged since [[file:{view.item_id}]] (turn {view.call})"
            self._append(
                c,
                "user",
                _result_block(tool_use_id, shown, False),
                self._count(shown, "prose"),
                baseline=(base_key, given),
                text=shown,
                uri=uri,
            )
            return shown
        if form == "diff" and view is not None:
            shown = (
                f"[[file:{entry.id}]] {_label(uri)} changed since turn {view.call}; "
                f"diff against what you saw:\n{body}"
            )
            tokens = self._count(shown, "code")
        else:
            shown, tokens = text, given
        index = self._append(
            c,
            "user",
            _result_block(tool_use_id, shown, False),
            tokens,
            kind="file",
            item_id=entry.id,
            uri=uri,
            text=content,
            baseline=(base_key, given),
        )
        if form == "diff" and view is not None:
            view.blocks.append(index)
            view.item_id, view.call = entry.id, c.calls
            view.text = (
                content if whole or not view.whole else _splice(view.text, start_line, content)
            )
        else:
            in_segment = view.in_segment if view is not None and not whole else False
            c.files[uri] = _FileView(
                uri, entry.id, content, start_line, whole, c.calls, [index], in_segment
            )
        c.pending_notes.pop(uri, None)
        return shown

    def note_document_change(self, change: Any) -> None:
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
        rows = {
            int(getattr(getattr(e, "start_point", None), "row", -1)) + 1
            for e in getattr(change, "byte_edits", ()) or ()
        } - {0}
        where = f", lines {min(rows)}-{max(rows)}" if rows else ""
        old_version = getattr(change, "old_version", None)
        new_version = getattr(change, "new_version", None)
        what = (
            "was deleted (or is no longer readable) and left the context"
            if deleted
            else f"changed outside this conversation (v{old_version} -> v{new_version}{where})"
        )
        seen = False
        for c in self._conversations.values():
            view = c.files.get(uri)
            if view is None:
                continue
            seen = True
            if not deleted and view.whole and _hash(view.text) == new_hash:
                continue  # the version the model already sees (the echo of its own edit)
            c.pending_notes[uri] = f"Note: {_label(uri)} {what}; read it again if you need it."
            c.note_hashes[uri] = new_hash
            if deleted:
                c.files.pop(uri)
        if deleted and seen:
            self.ledger.remove_key(uri)

    def ensure_visible(self, conv: str, uri: str | None = None, needles: Sequence[str] = ()) -> int:
        """Make content the model is about to use visible again; returns tokens appended.

        For an edit of `uri` whose `needles` (old strings) the model cannot see, the evicted
        block that held them (or the file's current version) is appended again, as a real
        read_session_file call would. Used by the replay to charge re-hydration honestly.
        """
        c = self.conversation(conv)
        view = c.files.get(uri) if uri else None
        file_hidden = view is not None and not self._view_visible(c, view)
        appended = 0
        for needle in needles:
            if not needle or self._needle_visible(c, needle):
                continue
            source = next(
                (tb for tb in reversed(c.thread) if tb.evicted and needle in tb.text), None
            )
            if source is not None:
                appended += self._rehydrate(c, source, needle)
            elif file_hidden and uri is not None:
                appended += self._rehydrate_current(c, uri)
                file_hidden = False
        if not needles and file_hidden and uri is not None:
            appended += self._rehydrate_current(c, uri)
        return appended

    def _rehydrate_current(self, c: _Conversation, uri: str) -> int:
        current = self.ledger.current(uri)
        return self._rehydrate_file(c, uri, current.id) if current is not None else 0

    def _needle_visible(self, c: _Conversation, needle: str) -> bool:
        if any(needle in e.text for e in c.segment):
            return True
        return any(not tb.evicted and needle in tb.text for tb in c.thread)

    def _rehydrate(self, c: _Conversation, tb: ThreadBlock, needle: str = "") -> int:
        """Append evicted content again: the one definition holding `needle` when the
        block is a file and a definition holds it (read_symbol), else the whole block."""
        item = tb.item_id or "?"
        part = (
            _enclosing_symbol(self._outline(tb.text, _label(tb.uri)), tb.text, needle)
            if tb.uri and needle
            else None
        )
        if part is not None and tb.kind in ("file", "write_input", "consolidated", "rehydration"):
            qualname, body = part
            text = f"[read_symbol('{_label(tb.uri or '')}', '{qualname}')]\n{body}"
            shown = body
        else:
            text, shown = f"[read_session_file('{item}')]\n{tb.text}", tb.text
        tokens = self._count(text, "code")
        index = self._append(
            c, "user", {"type": "text", "text": text}, tokens, kind="rehydration",
            item_id=tb.item_id, uri=tb.uri, text=shown,
        )  # fmt: skip
        view = c.files.get(tb.uri) if tb.uri else None
        if view is not None and shown is tb.text:
            view.blocks.append(index)
        c.rehydrated[tb.kind] = c.rehydrated.get(tb.kind, 0) + 1
        c.rehydrated_tokens += tokens
        return tokens

    def _rehydrate_file(self, c: _Conversation, uri: str, item_id: str) -> int:
        text = self.store.get(item_id).text
        shown = f"[read_session_file('{item_id}')] {_label(uri)}\n{text}"
        tokens = self._count(shown, "code")
        index = self._append(
            c,
            "user",
            {"type": "text", "text": shown},
            tokens,
            kind="rehydration",
            item_id=item_id,
            uri=uri,
            text=text,
        )
        view = c.files.get(uri)
        if view is None:
            c.files[uri] = _FileView(uri, item_id, text, 1, True, c.calls, [index])
        else:
            view.blocks.append(index)
            view.text, view.whole, view.start_line, view.item_id = text, True, 1, item_id
        c.rehydrated["file"] = c.rehydrated.get("file", 0) + 1
        c.rehydrated_tokens += tokens
        return tokens

    # ------------------------------------------------------------------ requests

    def build_request(
        self,
        conv: str,
        model: str,
        system: str,
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        now: float | None = None,
        system_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The kwargs for `messages.create`/`stream` for the next call of `conv`.

        Applies pending change notes, runs the policy (eviction, consolidation, TTL), lays out
        the request with at most four breakpoints and accounts it in the cache model.
        `system_tokens` overrides the estimate when the system prompt is known only by its
        size (replay).
        """
        c = self.conversation(conv)
        now = self.clock() if now is None else now
        for note in c.pending_notes.values():
            self._append(
                c, "user", {"type": "text", "text": note}, self._count(note, "prose"), text=note
            )
        c.pending_notes.clear()
        if c.last_call_time is not None:
            c.gaps.append(max(0.0, now - c.last_call_time))
        ttl, thread_ttl = self._ttls(c)
        sys_tokens = (
            system_tokens
            if system_tokens is not None
            else (self._count(system, "prose") if system else 0)
        )
        tool_blocks = self._tools_blocks(tools)
        prefix = sum(b.tokens for b in tool_blocks) + sys_tokens
        prefix_key = hash((model, system, tuple(b.key for b in tool_blocks)))
        if prefix_key != c.prefix_key:  # another model, system prompt or tool set: all cold
            c.prefix_key = prefix_key
            c.cache.clear()
        c.cache.expire(now)
        if self.config.eviction and c.calls > 0:
            self._consolidate(c, prefix, thread_ttl)
        hit = c.cache.latest_thread_hit
        points = place_breakpoints(
            bool(system), bool(c.segment), c.last_cacheable + 1, hit, ttl, thread_ttl
        )
        built = build(
            model=model,
            max_tokens=self.config.max_tokens,
            system_text=system,
            system_tokens=sys_tokens,
            segment=c.segment,
            thread=c.thread,
            tools=tools,
            tool_blocks=tool_blocks,
            points=points,
        )
        built.expected_read = c.cache.warm_end
        self._account(c, built, model, now, sys_tokens, tool_blocks)
        c.context_token_calls += c.thread_tokens
        c.calls += 1
        c.last_call_time = now
        c.last_built = built
        return built.kwargs

    def last_request(self, conv: str) -> BuiltRequest | None:
        """The last request built for `conv`, with the cache model's view of it."""
        return self.conversation(conv).last_built

    def _block_tokens(self, block: Mapping[str, Any]) -> int:
        """Tokens of an assistant block: prose for text, JSON for a tool_use."""
        if block.get("type") == "text":
            return self._count(str(block.get("text", "")), "prose")
        payload = json.dumps({"name": block.get("name"), "input": block.get("input")})
        return self._count(payload, "json")

    def _tools_blocks(self, tools: Sequence[Mapping[str, Any]]) -> list[Block]:
        ident = tuple(id(t) for t in tools)
        if self._tool_blocks[0] != ident or len(self._tool_blocks[1]) != len(tools):
            blocks = [Block(content_key(dict(t)), self._count(str(dict(t)), "json")) for t in tools]
            self._tool_blocks = (ident, blocks)
        return self._tool_blocks[1]

    def _ttls(self, c: _Conversation) -> tuple[Ttl, Ttl]:
        """TTLs for the prefix (system, segment) and for the thread breakpoints.

        Prefix content stays for the rest of the session; thread content stays, on
        average, as long as Little's law says from this conversation so far.
        """
        if self.config.cache_ttl != "auto":
            return self.config.cache_ttl, self.config.cache_ttl
        horizon = self._horizon(c)
        prefix = policy.choose_ttl(c.gaps, c.calls, horizon=horizon)
        lifetime = policy.mean_lifetime(c.context_token_calls, c.added_tokens)
        thread = policy.choose_ttl(c.gaps, c.calls, horizon=horizon, lifetime=lifetime)
        return prefix, thread

    def _horizon(self, c: _Conversation) -> float:
        """Calls until this conversation's context would fill its budget, at the growth so
        far of what it was shown (before any eviction)."""
        shown = sum(b.tokens for b in c.baseline)
        current = c.last_built.total_tokens if c.last_built else shown
        return policy.calls_until_full(self.config.context_budget, current, shown / max(1, c.calls))

    def _account(
        self,
        c: _Conversation,
        built: BuiltRequest,
        model: str,
        now: float,
        sys_tokens: int,
        tool_blocks: list[Block],
    ) -> None:
        """Simulate this request and its recorded-style twin; remember the new boundaries."""
        if c.sim is None or c.model != model:
            c.model = model
            c.sim = PromptCache(model)
            c.baseline_sim = PromptCache(model)
        assert c.baseline_sim is not None
        c.ours_usage = c.ours_usage + c.sim.call(built.cache_request, now)
        system = [Block(content_key("system"), sys_tokens, "5m")] if sys_tokens else []
        base = list(c.baseline)
        if base:
            base[-1] = replace(base[-1], cache_ttl="5m")
        c.baseline_usage = c.baseline_usage + c.baseline_sim.call(
            Request(tools=tool_blocks, system=system, messages=base), now
        )
        points = built.breakpoints
        written: dict[int, int] = {}
        for p in (points.anchor, points.last):
            if p is not None:
                written[p] = built.prefix_tokens + c.offsets[p] + c.thread[p].tokens
        if points.segment:
            written[END_OF_SEGMENT] = built.prefix_tokens
        if points.system:
            written[END_OF_SYSTEM] = sum(b.tokens for b in tool_blocks) + sys_tokens
        c.cache.record_call(written, now, TTL_SECONDS[points.ttl], TTL_SECONDS[points.thread_ttl])

    def record_usage(self, conv: str, usage: Any, now: float | None = None) -> None:
        """Usage the API returned for the last call (SDK object or dict).

        A call that read nothing from the cache tells the engine its boundaries are gone.
        """
        c = self.conversation(conv)
        u = usage_from_dict(usage)
        c.recorded = c.recorded + u
        c.last_usage = u
        built = c.last_built
        if u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens > 0 and built:
            points = built.breakpoints
            c.cache.keep_only(
                (points.anchor, points.last, END_OF_SEGMENT if points.segment else None,
                 END_OF_SYSTEM)
            )  # fmt: skip

    # ------------------------------------------------------------------ policy

    def _consolidate(self, c: _Conversation, prefix: int, ttl: Ttl) -> None:
        """Evict what the cost gate allows; rebuild the segment when the cache is cold."""
        # Anything after the system prompt still cached? (a thread prefix includes the segment)
        segment_warm = c.cache.thread_warm or c.cache.has(END_OF_SEGMENT)
        thread_start = prefix + sum(e.tokens for e in c.segment)
        warm_end = c.cache.warm_end
        m = policy.remaining_calls(c.calls, self._horizon(c))
        candidates = self._candidates(c, thread_start)
        boundaries = [policy.Boundary(0, thread_start)] + [
            policy.Boundary(p + 1, end) for p, end in c.cache.thread_entries()
        ]
        plan = policy.plan_eviction(candidates, boundaries, warm_end, m, ttl=ttl)
        cold = not c.cache.thread_warm
        if plan.evict:
            labels = [self._evict_block(c, i) for i in plan.evict]
            self._after_change(c, min(plan.evict))
            self._report(
                c,
                tuple(label for label in labels if label),
                plan.tokens_freed,
                plan.tokens_reprocessed,
                cold,
                "cost gate" if not cold else "cold cache",
            )
        if not segment_warm:
            self._rebuild_segment(c, ttl)
        limited = [
            i
            for i, tb in enumerate(c.thread)
            if not tb.evicted and tb.uri in self._over_limits and tb.kind in EVICTABLE_KINDS
        ]
        if limited:
            ids = tuple(self._evict_block(c, i, "over the ledger limits") for i in limited)
            self._after_change(c, min(limited))
            self._report(c, ids, 0, 0, cold, "over the ledger limits")
        for uri in self._over_limits:
            c.files.pop(uri, None)
        total = thread_start + c.thread_tokens
        if total > self.config.context_budget:
            chosen = set(plan.evict)
            rest = [
                k for k in self._candidates(c, thread_start, gated=False) if k.index not in chosen
            ]
            over = policy.fit_budget(rest, total, self.config.context_budget)
            if over:
                ids = tuple(self._evict_block(c, i, "over the context budget") for i in over)
                self._after_change(c, min(over))
                freed = sum(k.freed for k in rest if k.index in set(over))
                self._report(c, ids, freed, 0, cold, "over the context budget")

    def _candidates(
        self, c: _Conversation, thread_start: int, gated: bool = True
    ) -> list[policy.Candidate]:
        """Consumed, unpinned, evictable blocks; `gated=False` also takes skills whose
        frontmatter trigger has not fired (never protected ones)."""
        out: list[policy.Candidate] = []
        gaps, open_idles = self._file_gaps(c)
        for index, tb in enumerate(c.thread):
            if tb.evicted or tb.kind not in EVICTABLE_KINDS or index >= c.last_response_start:
                continue
            item = self.ledger.get(tb.item_id) if tb.item_id else None
            if item is not None and (item.pinned or not item.evictable):
                continue
            if tb.kind == "skill" and gated:
                state = c.skills.get(index)
                if state is None or not trigger_fired(
                    state.meta,
                    True,
                    c.calls - state.loaded_call,
                    c.thread_tokens - state.tokens_at_load,
                ):
                    continue
            freed = tb.tokens - self._evicted_form(c, index)[1]
            if freed <= 0:
                continue
            if tb.uri is not None:
                reuse, wait = self._file_reuse(c, tb.uri, tb.call, gaps, open_idles)
            else:
                reuse = policy.reuse_probability(
                    c.rehydrated.get(tb.kind, 0), c.evicted_by_kind.get(tb.kind, 0)
                )
                wait = None
            out.append(policy.Candidate(index, thread_start + c.offsets[index], freed, reuse, wait))
        return out

    @staticmethod
    def _file_gaps(c: _Conversation) -> tuple[list[int], dict[str, int]]:
        """Gaps between uses of a file so far, and each file's current idle span."""
        gaps: list[int] = []
        open_idles: dict[str, int] = {}
        for uri, uses in c.touches.items():
            calls = sorted(set(uses))
            gaps.extend(b - a for a, b in itertools.pairwise(calls))
            open_idles[uri] = c.calls - calls[-1]
        return gaps, open_idles

    @staticmethod
    def _file_reuse(
        c: _Conversation, uri: str, since: int, gaps: list[int], open_idles: dict[str, int]
    ) -> tuple[float, float | None]:
        """Chance the file is used again and the expected wait, from the other files' history
        (the file's own open span is what is being predicted, so it is not evidence)."""
        uses = c.touches.get(uri, [])
        idle = c.calls - (uses[-1] if uses else since)
        others = [g for other, g in open_idles.items() if other != uri]
        return (
            policy.idle_reuse_probability(idle, gaps, others),
            policy.expected_wait(idle, gaps),
        )

    @staticmethod
    def _placeholder_text(c: _Conversation, tb: ThreadBlock) -> str:
        """What stays where evicted content was: what it was, its size, how to get it back."""
        item = tb.item_id or "?"
        if tb.kind == "skill":
            return f"[[skill:{item}]] skill used; body evicted. read_session_file('{item}')."
        if tb.kind == "tool_input":
            return f"[[input:{item}]] {tb.original_tokens} tokens; read_session_file('{item}')"
        if tb.uri is not None and tb.kind in ("file", "write_input", "rehydration"):
            return (
                f"[[file:{item}]] {_label(tb.uri)} ({tb.original_tokens} tokens) evicted; "
                f"read_session_file('{item}') or read_symbol shows it again."
            )
        return (
            f"[[{tb.kind}:{item}]] output ({tb.original_tokens} tokens) evicted; "
            f"read_session_file('{item}') restores it."
        )

    def _evicted_form(self, c: _Conversation, index: int) -> tuple[dict[str, Any], int]:
        """The block that replaces thread block `index` on eviction, and its tokens."""
        tb = c.thread[index]
        text = self._placeholder_text(c, tb)
        if tb.kind == "skill" and index in c.skills:
            meta = c.skills[index].meta
            text = _clip_tokens(
                f"[[skill:{tb.item_id}]] skill {meta.name} was used; body evicted "
                f"(read_session_file('{tb.item_id}') reloads it). {meta.description}",
                meta.placeholder_budget,
            )
        block = dict(tb.block)
        if block.get("type") == "tool_result":
            block["content"] = text
            return block, self._count(text, "tool_output")
        if block.get("type") == "tool_use":
            block["input"] = _shrink_input(block.get("input") or {}, text)
            return block, self._block_tokens(block)
        return {"type": "text", "text": text}, self._count(text, "prose")

    def _evict_block(self, c: _Conversation, index: int, reason: str = "") -> str:
        tb = c.thread[index]
        block, tokens = self._evicted_form(c, index)
        tb.original = tb.block
        tb.block = block
        tb.key = content_key(block)
        tb.tokens = tokens
        tb.evicted = True
        c.evicted_by_kind[tb.kind] = c.evicted_by_kind.get(tb.kind, 0) + 1
        item = self.ledger.get(tb.item_id) if tb.item_id else None
        if item is not None and item.kind is not ItemKind.FILE:
            item.state = ItemState.EVICTED
            item.never_resurrect = True
            item.reason = reason or "evicted by the cost gate"
        return tb.item_id or ""

    def _after_change(self, c: _Conversation, first: int) -> None:
        """Recompute offsets from `first` and forget boundaries the change invalidated."""
        total = c.offsets[first]
        for i in range(first, len(c.thread)):
            c.offsets[i] = total
            total += c.thread[i].tokens
        c.thread_tokens = total
        c.cache.invalidate_from(first)

    def _report(
        self,
        c: _Conversation,
        ids: tuple[str, ...],
        freed: int,
        reprocessed: int,
        cold: bool,
        reason: str,
    ) -> None:
        event = EvictionEvent(c.calls, ids, freed, reprocessed, cold, reason)
        self.events.append(event)
        log.info(
            "evicted %d items: %d tokens freed, %d reprocessed (%s)",
            len(ids),
            freed,
            reprocessed,
            reason,
        )

    def _rebuild_segment(self, c: _Conversation, ttl: Ttl) -> None:
        """Cold cache: rebuild the segment from the current version of every whole file the
        model sees, at no extra cost (everything after the system prompt is written anyway).

        Thread copies of those files become one-line references. A file the cost gate says
        is not worth keeping whole (long untouched, likely not needed again) is demoted to
        its synopsis plus id, with the definitions this conversation edited (partial).
        """
        entries: list[SegmentEntry] = []
        moved: list[tuple[int, str]] = []
        m = policy.remaining_calls(c.calls, self._horizon(c))
        gaps, open_idles = self._file_gaps(c)
        for uri, view in c.files.items():
            visible = self._view_visible(c, view)
            if not view.whole or not (visible or view.demoted):
                continue
            if any(i >= c.last_response_start for i in view.blocks):
                # Not consumed yet (the model has not answered after it): it stays in the
                # thread, and the segment no longer holds the file.
                view.in_segment = view.demoted = False
                continue
            item = self.ledger.current(uri)
            if item is None or (item.state is ItemState.REFERENCE and item.reason):
                continue
            label = _label(uri)
            text = f'<file path="{label}" id="{view.item_id}">\n{view.text}\n</file>'
            tokens = self._count(text, "code")
            synopsis = "" if item.pinned else render_synopsis(self._outline(view.text, label))
            if not visible and not synopsis:
                continue
            used = self._used_symbols(c, uri, view.text) if synopsis else []
            parts = "".join(f"[{name}]\n{body}\n" for name, body in used)
            shown_as = "synopsis+symbols" if used else "synopsis"
            short = (
                f'<file path="{label}" id="{view.item_id}" shown="{shown_as}">\n'
                f"{synopsis}{parts}</file>"
            )
            reuse, wait = self._file_reuse(c, uri, view.call, gaps, open_idles)
            freed = tokens - self._count(short, "code")
            keep = policy.Candidate(0, 0, freed, reuse, wait)
            demote = bool(synopsis) and (
                not visible
                or (keep.freed > 0 and policy.candidate_value(keep, m, policy.RATES, ttl) > 0)
            )
            if demote:
                text, tokens = short, self._count(short, "code")
            entries.append(
                SegmentEntry(view.item_id, uri, text, tokens, item.changed_at, content_key(text))
            )
            note = "synopsis in the file segment" if demote else "now in the file segment"
            moved.extend((i, note) for i in view.blocks if not c.thread[i].evicted)
            view.in_segment, view.demoted = not demote, demote
            view.blocks = []
            item.state = (
                ItemState.FULL if not demote else ItemState.PARTIAL if used else ItemState.SYNOPSIS
            )
        entries.sort(key=lambda e: (e.changed_at, e.uri))
        if [e.key for e in entries] == [e.key for e in c.segment] and not moved:
            return
        for i, note in moved:
            tb = c.thread[i]
            ref = f"[[file:{tb.item_id}]] {_label(tb.uri or '')}: {note}."
            tb.original = tb.block
            block = dict(tb.block)
            if block.get("type") == "tool_result":
                block["content"] = ref
            elif block.get("type") == "tool_use":
                block["input"] = _shrink_input(block.get("input") or {}, ref)
            else:
                block = {"type": "text", "text": ref}
            tb.block, tb.key, tb.evicted, tb.kind = block, content_key(block), True, "consolidated"
            tb.tokens = (
                self._block_tokens(block)
                if block.get("type") == "tool_use"
                else (self._count(ref, "prose"))
            )
        c.segment = entries
        if c.thread:
            self._after_change(c, 0)
        c.cache.clear()

    def _outline(self, text: str, path: str) -> Outline:
        """A file version's outline, parsed once per engine (consolidations, re-hydrations
        and pins ask for the same versions again)."""
        key = (path, text)
        outline = self._outlines.get(key)
        if outline is None:
            if len(self._outlines) >= OUTLINE_CACHE_SIZE:
                self._outlines.clear()
            outline = self._outlines[key] = outline_text(text, path)
        return outline

    def _used_symbols(self, c: _Conversation, uri: str, text: str) -> list[tuple[str, str]]:
        """The definitions of `text` that this conversation's edits of `uri` wrote into."""
        label = _label(uri)
        found: dict[str, str] = {}
        for _, tool_input in c.tool_uses.values():
            path = tool_input.get("file_path") or tool_input.get("path")
            if not isinstance(path, str) or _uri(path) != uri:
                continue
            written = [tool_input.get("new_string"), tool_input.get("new")]
            written += [
                e.get("new_string") for e in tool_input.get("edits") or () if isinstance(e, Mapping)
            ]
            for needle in written:
                if isinstance(needle, str) and needle.strip():
                    part = _enclosing_symbol(self._outline(text, label), text, needle)
                    if part is not None:
                        found.setdefault(*part)
        return list(found.items())

    # ------------------------------------------------------------------ human controls and views

    def pin(
        self,
        uri: str,
        text: str,
        *,
        version: int | None = None,
        symbol: str | None = None,
        conv: str | None = None,
    ) -> ItemInfo:
        """Keep `uri` (its current `text`), or one definition of it, in the context.

        The pinned text is appended as one block (nothing before it is rewritten) unless the
        model already sees exactly this text; it moves into the file segment at the next
        consolidation. Pinned items are exempt from eviction and from the limits. An unknown
        `symbol` raises UnknownItem with the names that come close.
        """
        label = _label(uri)
        entry = self.store.put(text, uri=uri, version=version, tokens=self._count(text, "code"))
        shown = f"[pinned [[file:{entry.id}]] {label}]\n{text}"
        if symbol is not None:
            outline = self._outline(text, label)
            lookup = find_symbol(text, outline, symbol)
            if lookup.found is None:
                names = [address(c, outline) for c in lookup.candidates] or list(lookup.suggestions)
                hint = f"; did you mean {', '.join(names)}?" if names else ""
                raise UnknownItem(f"no symbol {symbol!r} in {label}{hint}")
            found = lookup.found
            shown = (
                f"[pinned {label}::{symbol} (lines {found.start_line}-{found.end_line}) "
                f"of [[file:{entry.id}]]]\n{found.text}"
            )
        targets = [self.conversation(conv)] if conv else list(self._conversations.values())
        item: LedgerItem | None = None
        for c in targets or [self.conversation("default")]:
            item = self._record_file_version(c, uri, entry.id, text, version)
            view = c.files.get(uri)
            seen = view is not None and view.whole and view.text == text
            if symbol is None and seen and view is not None and self._view_visible(c, view):
                continue
            index = self._append(
                c, "user", {"type": "text", "text": shown}, self._count(shown, "code"),
                kind="pinned", item_id=entry.id, uri=uri, text=text if symbol is None else shown,
            )  # fmt: skip
            if symbol is None:
                c.files[uri] = _FileView(uri, entry.id, text, 1, True, c.calls, [index])
        assert item is not None
        item.pinned = True
        if symbol is not None:
            item.state = ItemState.PARTIAL
        return _info(item)

    def unpin(self, uri: str) -> ItemInfo:
        """Make `uri` evictable again (it stays in the context until the policy says)."""
        item = self.ledger.current(uri)
        if item is None:
            raise UnknownItem(f"{uri} is not in the context; pin it first")
        item.pinned = False
        for c in self._conversations.values():
            for tb in c.thread:
                if tb.kind == "pinned" and tb.uri == uri:
                    tb.kind = "file"
        return _info(item)

    def drop(self, target: str) -> list[str]:
        """Human override: remove a URI or an id (protected skills too); ids stay hydratable."""
        item = self.ledger.get(target)
        key = item.key if item is not None else target
        ids = set(self.ledger.remove_key(key))
        if item is not None:
            ids.add(item.id)
            item.state, item.never_resurrect = ItemState.EVICTED, True
        for c in self._conversations.values():
            hits = [
                i
                for i, tb in enumerate(c.thread)
                if not tb.evicted
                and (tb.uri == target or (tb.item_id is not None and tb.item_id in ids))
            ]
            for i in hits:
                self._evict_block(c, i, reason="dropped by the user")
            if hits:
                self._after_change(c, min(hits))
                self._report(c, tuple(sorted(ids)), 0, 0, False, "dropped by the user")
            c.files.pop(key, None)
            if any(e.uri == key for e in c.segment):
                c.segment = [e for e in c.segment if e.uri != key]
                c.cache.clear()
        return sorted(ids)

    def items(self) -> list[ItemInfo]:
        """Every ledger item (each version, tool result, skill) for the Context view."""
        return [_info(i) for i in self.ledger]

    def status(self, conv: str | None = None) -> EngineStatus:
        """The status-bar numbers for one conversation or all of them. Savings compare the
        cache model's bill for the requests built with that of the recorded-style baseline
        (every block re-sent as first shown, one breakpoint at the end) at the same times."""
        convs = [self.conversation(conv)] if conv else list(self._conversations.values())
        ours = sum((c.ours_usage for c in convs), Usage())
        base = sum((c.baseline_usage for c in convs), Usage())
        recorded = sum((c.recorded for c in convs), Usage())
        rate_source = recorded if recorded.total_input_tokens else ours
        hit_rate = (
            rate_source.cache_read_input_tokens / rate_source.total_input_tokens
            if rate_source.total_input_tokens
            else 0.0
        )
        saved = base.billed_input - ours.billed_input
        model = next((c.model for c in convs if c.model), "")
        try:
            saved_usd = cost_usd(base, 0, model) - cost_usd(ours, 0, model) if model else 0.0
        except UnknownModelError:
            saved_usd = 0.0
        breakdown = {s.value: 0 for s in ItemState}
        for item in self.ledger:
            breakdown[item.state.value] += item.tokens
        context = max((c.last_built.total_tokens for c in convs if c.last_built), default=0)
        last = next((c.last_usage for c in reversed(convs) if c.last_usage), None)
        return EngineStatus(
            context_tokens=context,
            budget=self.config.context_budget,
            items=len(self.ledger),
            cache_hit_rate=hit_rate,
            saved_tokens=saved,
            saved_usd=saved_usd,
            breakdown=breakdown,
            last_call=last,
            evictions=sum(len(e.item_ids) for e in self.events),
            rehydrations=sum(sum(c.rehydrated.values()) for c in convs),
        )

    # ------------------------------------------------------------------ hydration

    def read_session_file(
        self, item_id: str, offset: int = 0, limit: int | None = None
    ) -> HydratedText:
        """Any id ever shown, whole or a slice; store errors (unknown, expired) propagate."""
        item = self.ledger.get(item_id)
        stored = self.store.get(item_id, offset, limit)
        return HydratedText(
            item_id,
            stored.text,
            stored.total_length,
            offset,
            item.key if item is not None and item.kind is ItemKind.FILE else None,
            item.version if item is not None else None,
        )

    def hydrate(self, item_id: str, offset: int = 0, limit: int | None = None) -> HydratedText:
        """Like read_session_file, but a file item's id gives the file's current version."""
        item = self.ledger.get(item_id)
        if item is not None and item.kind is ItemKind.FILE:
            current = self.ledger.current(item.key)
            if current is not None:
                return self.read_session_file(current.id, offset, limit)
        return self.read_session_file(item_id, offset, limit)


# ---------------------------------------------------------------------------------- helpers


def _as_dict(raw: Mapping[str, Any] | Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        result = dump(exclude_none=True)
        if isinstance(result, dict):
            return result
    raise TypeError(f"not a content block: {raw!r}")


def _hash(text: str) -> str:
    """The mirror's content hash of a text (documents.content_hash of its UTF-8 bytes)."""
    return content_hash(text.encode("utf-8", "surrogatepass"))


def _splice(text: str, start_line: int, part: str) -> str:
    """`text` with the lines a range read showed replaced by what it shows now."""
    lines = text.splitlines(keepends=True)
    new = part.splitlines(keepends=True)
    if new and not new[-1].endswith("\n") and start_line - 1 + len(new) < len(lines):
        new[-1] += "\n"
    return "".join(lines[: start_line - 1] + new + lines[start_line - 1 + len(new) :])


def _result_block(tool_use_id: str, text: str, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if is_error:
        block["is_error"] = True
    return block


def _input_text(tool_input: Mapping[str, Any]) -> str:
    """Every string a tool_use input carries (what the model can quote from it later)."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(tool_input)
    return "\n".join(parts)


def _shrink_input(tool_input: Mapping[str, Any], reference: str) -> dict[str, Any]:
    """A tool_use input with its long fields replaced by one reference to the stored input."""
    out: dict[str, Any] = {}
    replaced = False
    for key, value in tool_input.items():
        size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
        if size <= SHRINK_KEEP_CHARS:
            out[key] = value
        elif not replaced:
            out[key] = reference
            replaced = True
    return out


def _enclosing_symbol(outline: Outline, text: str, needle: str) -> tuple[str, str] | None:
    """The innermost definition of `text` that contains all of `needle`: (name, source)."""
    start = text.find(needle)
    if start < 0:
        return None
    first = text.count("\n", 0, start) + 1
    last = first + needle.count("\n")
    best: Symbol | None = None
    for symbol in outline.symbols:
        if (
            symbol.start_line <= first
            and last <= symbol.end_line
            and (
                best is None
                or symbol.end_line - symbol.start_line < best.end_line - best.start_line
            )
        ):
            best = symbol
    if best is None:
        return None
    found = find_symbol(text, outline, address(best, outline))
    return (address(best, outline), found.found.text) if found.found is not None else None


def _uri(path: str) -> str:
    return path if "://" in path else f"file://{path}"


def _label(uri: str) -> str:
    return uri.removeprefix("file://")


def _clip_tokens(text: str, budget: int) -> str:
    limit = max(16, budget * 3)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _info(item: LedgerItem) -> ItemInfo:
    return ItemInfo(
        id=item.id,
        kind=item.kind.value,
        state=item.state.value,
        tokens=item.tokens if item.holds_content else 0,
        uri=item.key if item.kind is ItemKind.FILE else None,
        label=item.label or item.key,
        version=item.version,
        pinned=item.pinned,
    )
