"""The context engine: one object that turns a conversation into cache-aware requests.

The live server (model/, lsp/) and the `ours` replay strategy drive the same engine, so the
benchmark measures the product, not a copy of it.

    engine = ContextEngine(store, EngineConfig(), clock=time.time)
    engine.add_user_text(conv, "Rename App.run")
    kwargs = engine.build_request(conv, model, system, tools)   # -> messages.create(**kwargs)
    engine.add_assistant_content(conv, response.content)        # tool_use blocks included
    shown = engine.add_tool_result(conv, ToolOutput(tool_use_id, text, BlockKind.FILE, uri=...))
    engine.record_usage(conv, response.usage)

What the model sees:
- A Read (kind FILE) of content the model can already see becomes
  `unchanged since [[file:<id>]] (turn N)`; of a changed file, a unified diff against the
  visible version when that is smaller; otherwise the content. The returned string is what
  goes into the tool_result.
- The model's own edits (kind EDIT) add no content: the new version is in its tool_use.
- External changes (`note_document_change`) of files the model has seen become one compact
  note before the next call.
- Before each call the policy may evict consumed content (file reads, tool outputs, large
  Write/Edit inputs, skills whose frontmatter allows it, memories), leaving a placeholder plus
  id, when the cost gate says it pays or the cache is cold anyway. After an idle gap longer than
  the TTL, the file segment is rebuilt from the current versions and superseded copies in the
  thread become references.
- Images and documents (`add_user_block`, or a tool result's `ToolOutput.parts`) go as the
  client sent them and are never evicted: the store holds text, so nothing brings them back.
- Every id shown can be hydrated: `read_session_file(id, offset, limit)` (the model's
  tool also takes one definition of a file's content by name), `hydrate` (a file item's id
  gives its current version) and `definition(uri, text, symbol)`.

Human controls: `pin`, `unpin`, `drop` (the only way to evict a protected skill); `status()` and
`items()` report what the context holds and what it saved against the recorded-style
baseline (every block re-sent as first shown, one breakpoint at the end).

The public API is `ContextEngine`'s methods and the names in `__all__` (`ToolOutput`,
`BlockKind`, `EngineConfig`, `LedgerLimits`, `EngineStatus`, `ItemInfo`, `HydratedText`,
`FileView`, `UnknownItem`, `EvictionEvent`, `Need`, `Fetched`, `RoundTrip`); front ends
(lsp/, model/, replay/, gateway/) call nothing else of the engine's parts (beyond the pure
helpers of blocks.py and skills.py: `label_of`, `uri_of`, `input_strings`, `reference_id`,
`parse_skill`, `HARNESS_HEADER`), and `engine.state` is the parts' business only.
Each method hands over to the module that owns the idea: thread.py (a conversation's
blocks), conversation.py (its file views and what the model sees), intake.py (what enters),
reads.py (file reads, edits, outside changes), policy.py (the forecast and the cost model),
eviction.py, segment.py (the file segment), rehydration.py (with quotes.py), accounting.py
(the bills), status.py, items.py (pin, unpin, drop, items, hydration).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from ephemeral_context.cache_sim import LOOKBACK_POSITIONS, Block, Ttl
from ephemeral_context.context import clipping, eviction, intake, reads, rehydration, status
from ephemeral_context.context import items as item_api
from ephemeral_context.context.blocks import content_key
from ephemeral_context.context.conversation import Conversation, FileView, fork
from ephemeral_context.context.fetching import FetchRoute
from ephemeral_context.context.intake import ToolOutput
from ephemeral_context.context.items import HydratedText, ItemInfo, UnknownItem
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.layout import BuiltRequest, build, place_breakpoints
from ephemeral_context.context.ledger import Ledger, LedgerLimits
from ephemeral_context.context.rehydration import Fetched, Need, RoundTrip
from ephemeral_context.context.state import (
    EngineConfig,
    EngineState,
    EvictionEvent,
    StoreLike,
    TokenCounter,
)
from ephemeral_context.context.status import EngineStatus
from ephemeral_context.context.thread import THINKING
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.prices import priced

__all__ = [
    "BlockKind",
    "ContextEngine",
    "EngineConfig",
    "EngineStatus",
    "EvictionEvent",
    "Fetched",
    "FileView",
    "HydratedText",
    "ItemInfo",
    "LedgerLimits",
    "Need",
    "RoundTrip",
    "StoreLike",
    "TokenCounter",
    "ToolOutput",
    "UnknownItem",
]


class ContextEngine:
    """Ledger + policy + layout for every conversation of one workspace."""

    def __init__(
        self,
        store: StoreLike,
        config: EngineConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        config = config or EngineConfig()
        self.state = EngineState(store, config, Ledger(config.limits))
        self.clock = clock
        self._tool_blocks: tuple[tuple[Mapping[str, Any], ...], list[Block]] = ((), [])

    @property
    def store(self) -> StoreLike:
        return self.state.store

    @property
    def config(self) -> EngineConfig:
        return self.state.config

    @config.setter
    def config(self, config: EngineConfig) -> None:
        self.state.config = config

    @property
    def ledger(self) -> Ledger:
        return self.state.ledger

    @property
    def events(self) -> list[EvictionEvent]:
        """Every eviction (or consolidation) decision so far, oldest first."""
        return self.state.events

    # ------------------------------------------------------------------ conversations

    def conversation(self, conv: str) -> Conversation:
        """The conversation's state, created on first use."""
        return self.state.conversation(conv)

    def _looked_at(self, conv: str) -> Conversation:
        """The conversation's state for a read-only view: an unknown one is empty and stays
        unknown (a status read made the engine non-empty, which keeps a new data directory
        from being taken without a restart)."""
        return self.state.conversations.get(conv) or Conversation(conv)

    def conversations(self) -> list[str]:
        """Ids of every conversation the engine has seen."""
        return list(self.state.conversations)

    def position(self, conv: str) -> int:
        """Where the next block of `conv` goes: a point to fork it at later."""
        return len(self._looked_at(conv).thread)

    def fork(self, source: str, conv: str, at: int) -> None:
        """Start (or restart) `conv` as `source` up to `position` `at`: a request that does
        not extend `source` (a rewind, an edited prompt, a branch) continues from the shared
        prefix as it was sent, never by appending that history again. ValueError, with
        nothing changed, for an unknown `source` or an `at` outside it."""
        known = self.state.conversations.get(source)
        if known is None or not 0 <= at <= len(known.thread):
            size = f"0..{len(known.thread)}" if known is not None else "none: it is unknown"
            raise ValueError(f"cannot fork {source!r} at {at}: its positions are {size}")
        self.state.conversations[conv] = fork(known, conv, at)

    def end(self, conv: str) -> None:
        """Forget `conv` (over, or no longer trusted): what it was shown stays in the store
        under its ids; a later request of it starts a new one."""
        self.state.conversations.pop(conv, None)

    def add_user_text(self, conv: str, text: str, *, tokens: int | None = None) -> None:
        """A user message (typed by the human)."""
        intake.add_user_text(self.state, conv, text, tokens)

    def add_user_block(
        self, conv: str, block: Mapping[str, Any], *, tokens: int | None = None
    ) -> None:
        """A block of a user message as the client sent it: an image or a document (or
        text). Sent unchanged but for its cache_control, sized by `tokens.media_tokens`
        unless `tokens` says, never evicted (nothing could bring it back)."""
        intake.add_user_block(self.state, conv, block, tokens)

    def add_assistant_content(
        self,
        conv: str,
        blocks: Iterable[Mapping[str, Any] | Any],
        *,
        tokens: Sequence[int] | None = None,
        unstored: Collection[int] = (),
    ) -> None:
        """The content of a model response, tool_use blocks included, in order.

        Accepts API dicts or SDK objects (anything with `model_dump`). A Write's content is
        persisted to the store, so the block can later shrink to a placeholder plus id,
        unless its index is in `unstored` (a call that holds a secret, replay/feed.py).
        """
        intake.add_assistant_content(self.state, conv, blocks, tokens, unstored)

    def add_tool_result(self, conv: str, result: ToolOutput) -> str:
        """Record a tool's result and return the text the model actually sees.

        A read (kind FILE) returns the full text, a diff, or a reference; the model's own
        edit (EDIT) adds no content beyond its short confirmation; SKILL, MEMORY and
        TOOL_RESULT are kept as they are, evictable by the policy; one with `parts` (images
        in its content) goes as sent and stays.
        """
        return intake.add_tool_result(self.state, conv, result)

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
        intake.add_user_content(self.state, conv, text, BlockKind(kind), name, tokens)

    def note_document_change(self, change: Any) -> None:
        """An external change (documents.DocumentChange) to a file some conversation has seen.

        One compact note per file goes in before that conversation's next call; the model's
        view is kept, so a later Read shows a diff against what it saw. A file gone from
        disk drops out of the working set with a note (its versions stay hydratable).
        Opening or closing a document in the editor changes nothing.
        """
        reads.note_document_change(self.state, change)

    def rehydrate(
        self, conv: str, needs: Sequence[Need], quoting: Sequence[str] = ()
    ) -> RoundTrip | None:
        """One re-hydration round trip for what the next response uses but cannot see.

        `needs` name strings the response must see (an edit's old strings, what a Read
        returned), `quoting` texts it writes (runs of 3 lines or 200 characters of evicted
        content in them count). What is only in evicted content comes back as the model
        would fetch it: a tool_use per item (read_session_file, read_symbol, hydrate) and
        its tool_result. Build the request before (the round trip) and after (the call).
        None when nothing was needed. Used by the replay to charge eviction honestly.
        """
        return rehydration.rehydrate(self.state, conv, needs, quoting)

    def round_trip(
        self, conv: str, fetched: Sequence[Fetched], *, continues: bool = True
    ) -> RoundTrip:
        """The model's own calls for content by id (`read_session_file`) and their answers,
        appended as `rehydrate` appends its round trips: neither twin carries them, and the
        next request, which goes on with the same call, is billed to the engine alone.
        `continues=False` when the answers go along with the client's own tool results
        (a request an evict-nothing client makes too). Used by the gateway."""
        return rehydration.round_trip(self.state, conv, fetched, continues)

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
        client_ttl: Ttl | None = None,
        head_ttl: Ttl | None = None,
    ) -> dict[str, Any]:
        """The kwargs for `messages.create`/`stream` for the next call of `conv`.

        Applies pending change notes, runs the policy (eviction, consolidation, TTL), lays out
        the request with at most four breakpoints and accounts it in the cache model.
        `system_tokens` overrides the estimate when the system prompt is known only by its
        size (replay). `client_ttl` is the TTL of the client's own breakpoints, as far as
        the calls already sent show it: the recorded-style twin is priced with it, and a
        policy behind its twins falls back to it. None: not known yet, taken as 5 minutes,
        the API's default, until a request gives it (accounting.py prices the twins under
        an hour too and measures the leads against the cheaper bill, a conversation
        behind it falls back to that bill's TTL, and the first TTL given settles which
        bill was theirs).
        `head_ttl` is the TTL of the client's own breakpoints in its tools and system
        prompt when they go upstream as the client marked them (the gateway keeps them:
        gateway/outbound.py `fit_breakpoints`): the system breakpoint takes it, whatever
        the policy would bet there, and after a 5-minute one nothing takes an hour. None:
        the engine places the head's breakpoint itself.
        With a route (`set_route`), `tools` are the client's: the route's tool goes after
        them, or its note into the conversation once something is hidden (fetching.py).
        """
        state, config = self.state, self.config
        c = state.conversation(conv)
        now = self.clock() if now is None else now
        if c.route is not None:
            tools = c.route.tools(tools)
        # 1. What happened since the last call: pins the model does not see as they are
        #    now, then one note per file changed outside the conversation.
        item_api.show_pins(state, c)
        for note in c.pending_notes.values():
            block = {"type": "text", "text": note}
            c.thread.append(c.calls, "user", block, state.count(note, "prose"), text=note)
        c.pending_notes.clear()
        # 2. The head (tool schemas, system prompt): another head leaves nothing cached.
        if system_tokens is None:
            system_tokens = state.count(system, "prose") if system else 0
        tool_blocks = self._tools_blocks(tools)
        head = sum(b.tokens for b in tool_blocks) + system_tokens
        head_key = hash((model, system, tuple(b.key for b in tool_blocks)))
        if head_key != c.prefix_key:
            c.prefix_key = head_key
            c.thread.cache.clear()
        c.thread.cache.expire(now)
        # 3. The policy's outlook from the conversation so far: prices, calls to come, TTLs,
        #    and what it may spend against the recorded-style twins.
        c.accounting.settle(client_ttl)
        twin_ttl: Ttl = client_ttl or "5m"
        fallback = client_ttl or c.accounting.worst_ttl()
        row = priced(model)
        budget = min(config.context_budget, row.context_window)
        outlook = c.policy.outlook(c, now, twin_ttl, config.cache_ttl, budget, head, fallback)
        if head_ttl == "5m":  # the API takes no hour after it: the gateway would demote it
            outlook = replace(outlook, ttl="5m", thread_ttl="5m", hedge=False)
        # 4. The policy: evict what pays, rebuild the file segment when the cache is cold,
        #    cut what no eviction can make room for.
        if config.eviction and c.calls > 0:
            eviction.consolidate(state, c, head, outlook)
        if config.eviction:
            clipping.clip_fresh(state, c, head + sum(e.tokens for e in c.segment), budget)
        if c.route is not None:
            self._tell_route(c)
        # 5. The layout, with at most four breakpoints.
        hedge = self._hedge(c) if outlook.hedge else None
        points = place_breakpoints(
            bool(system),
            bool(c.segment),
            c.thread.last_cacheable + 1,
            c.thread.cache.latest_thread_hit,
            outlook.ttl,
            outlook.thread_ttl,
            hedge,
            head_ttl,
        )
        limit = row.output_limit() if row.known else None  # the API refuses more
        built = build(
            model=model,
            max_tokens=config.max_tokens if limit is None else min(config.max_tokens, limit),
            system_text=system,
            system_tokens=system_tokens,
            segment=c.segment,
            thread=c.thread.blocks,
            tools=tools,
            tool_blocks=tool_blocks,
            points=points,
        )
        built.expected_read = c.thread.cache.warm_end
        # 6. Accounting: both bills in the cache model, the boundaries this request writes.
        c.accounting.account(c.thread, built, model, now, system_tokens, tool_blocks, client_ttl)
        c.policy.sent(c.thread.tokens, now)
        c.calls += 1
        return built.kwargs

    def set_route(self, conv: str, route: FetchRoute) -> None:
        """How the model of `conv` calls for content by id when the tools its requests
        carry are a client's (a gateway's, the replay's): before its content is fed, so
        what the engine writes into it names that call."""
        self.state.conversation(conv).route = route

    def _tell_route(self, c: Conversation) -> None:
        """The route's note, once, when the conversation first hides content (at the end:
        what is cached before it stays)."""
        note = c.untold_note()
        if note is not None and c.hides_content():
            block = {"type": "text", "text": note}
            tokens = self.state.count(note, "prose")
            c.thread.append(c.calls, "user", block, tokens, kind=BlockKind.NOTE, text=note)

    @staticmethod
    def _hedge(c: Conversation) -> int | None:
        """Where the 1-hour breakpoint of a hedged 5-minute bet goes (policy.py,
        `Outlook.hedge`): the first block after the warm prefix that may carry one and
        comes before the last, within the lookback of the last cache hit, whose read it
        then finds in the anchor's stead; None when there is none."""
        thread, last = c.thread, c.thread.last_cacheable
        hit = thread.cache.latest_thread_hit
        first = 0 if hit is None else hit + 1
        reach = last if hit is None else min(last, first + LOOKBACK_POSITIONS - 1)
        return next(
            (p for p in range(first, reach) if thread[p].block.get("type") not in THINKING),
            None,
        )

    def last_request(self, conv: str) -> BuiltRequest | None:
        """The last request built for `conv`, with the cache model's view of it."""
        return self._looked_at(conv).accounting.last_built

    def _tools_blocks(self, tools: Sequence[Mapping[str, Any]]) -> list[Block]:
        """The cache model's blocks for the tool schemas, computed once per tool list.

        The schemas last seen are held (not their `id()`s, which a later list may reuse), so
        the same objects again skip the hashing and an equal new list hashes to the same keys.
        """
        seen, blocks = self._tool_blocks
        if len(seen) != len(tools) or any(a is not b for a, b in zip(seen, tools, strict=True)):
            blocks = [
                Block(content_key(dict(t)), self.state.count(str(dict(t)), "json")) for t in tools
            ]
            self._tool_blocks = (tuple(tools), blocks)
        return blocks

    def record_usage(self, conv: str, usage: Any, now: float | None = None) -> None:
        """Usage the API returned for the last call (SDK object or dict).

        A call that read nothing from the cache tells the engine its boundaries are gone.
        A conversation that has ended (`end`) hears nothing: it is not made again.
        """
        c = self.state.conversations.get(conv)
        if c is not None:
            c.accounting.record_usage(c.thread, usage)

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

        A pin is engine-wide: before its next request every conversation, present or future,
        gets the pinned version appended as one block unless it already sees exactly that
        version; pinning again with newer text moves the pin. It moves into the file segment
        at the next consolidation. Pinned items are exempt from eviction and from the
        limits. An unknown `symbol` raises UnknownItem with the names that come close.
        """
        return item_api.pin(self.state, uri, text, version, symbol, conv)

    def definition(self, uri: str, text: str, symbol: str) -> str:
        """The text of the definition `symbol` names in this text of `uri` (what pinning
        it shows); UnknownItem, with the names that come close, when there is none."""
        return item_api.definition(self.state, uri, text, symbol).text

    def unpin(self, uri: str) -> ItemInfo:
        """Make `uri` evictable again (it stays in the context until the policy says)."""
        return item_api.unpin(self.state, uri)

    def drop(self, target: str) -> list[str]:
        """Human override: remove a URI or an id (protected skills too); ids stay hydratable."""
        return item_api.drop(self.state, target)

    def pinned_files(self) -> list[str]:
        """URIs of the whole files pinned now."""
        return item_api.pinned_files(self.state)

    def holds(self, uri: str) -> bool:
        """Some version of `uri` is in the context (an outside change then makes a note)."""
        return self.state.ledger.current(uri) is not None

    def empty(self) -> bool:
        """Nothing was recorded yet, not even a conversation's text (the store under the
        engine may still be swapped)."""
        return not len(self.state.ledger) and not self.state.conversations

    def file_views(self, conv: str) -> list[FileView]:
        """What `conv` has been shown of each file, with the id it was shown under."""
        return list(self._looked_at(conv).files.values())

    def count_tokens(self, text: str, kind: str) -> int:
        """Tokens of `text` as the engine counts content of `kind` (tokens.KINDS)."""
        return self.state.count(text, kind)

    def items(self) -> list[ItemInfo]:
        """The Context view's rows: one per file (its current version), every other item."""
        return item_api.listed(self.state)

    def status(
        self, conv: str | None = None, pending_pins: Mapping[str, int] | None = None
    ) -> EngineStatus:
        """The status-bar numbers for one conversation or all of them. Savings compare the
        cache model's bill for the requests built with that of the recorded-style baseline
        (every block re-sent as first shown, one breakpoint at the end) at the same times.

        `pending_pins` maps pinned URIs whose text changed since they were pinned to the
        tokens of the new text: counted as the next request will show it, without storing a
        version nobody has been shown yet (the caller pins it again before that request)."""
        convs = [self._looked_at(conv)] if conv else list(self.state.conversations.values())
        return status.status(self.state, convs, pending_pins or {})

    # ------------------------------------------------------------------ hydration

    def read_session_file(
        self, item_id: str, offset: int = 0, limit: int | None = None, conv: str | None = None
    ) -> HydratedText:
        """Any id ever shown, whole or a slice (only those `conv` was shown, when given);
        store errors (unknown, expired) propagate."""
        return item_api.read_session_file(self.state, item_id, offset, limit, conv)

    def hydrate(
        self,
        item_id: str,
        offset: int = 0,
        limit: int | None = None,
        mirror: DocumentMirror | None = None,
    ) -> HydratedText:
        """Like read_session_file, but a file item's id gives the file as it is now (the
        mirror's buffer if given, else the latest version recorded)."""
        return item_api.hydrate(self.state, item_id, offset, limit, mirror)
