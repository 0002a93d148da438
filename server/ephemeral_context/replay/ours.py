"""The `ours` strategy: the context engine itself, driven by a transcript's information flow.

No second copy of the policy: each call's new messages go into a `ContextEngine` (one
conversation per thread) through replay/feed.py, the mapping `ectx gateway` uses for live
requests too, and the request the engine builds is what the cache model prices.

Honesty about eviction: after the engine builds a call's request, what the call uses is
checked against what the engine left visible: the old strings its response's edits replace
(for a Serena edit that does not quote them, what it replaces of the file as the model saw
it), what its request's Reads returned, and runs of 3 lines or 200 characters its response
quotes (assistant text, tool input strings). Whatever is only in evicted content costs what
a real model pays for it: the request just built becomes an extra round trip (the prefix
read from the cache, the model answering with a read_session_file tool_use),
the engine appends the tool_use and its result, and the request is built again for the
call itself. docs/cost-model.md ("The re-hydration rule") states the rule.

A request the person interrupted before its answer (`Session.unanswered`) is built too, as
the gateway would see it: it warms the cache as it does for every other strategy, and the
rest of its cut last message goes in with the next call.

A thread that shares its first messages with a thread already replayed (a rewind, an edited
prompt: the reader's `#n` threads) forks that conversation after them (`engine.fork`)
instead of feeding the shared history again.

API:
- `ours_layout(session)`, `lossless_layout(session)` -> an `OursLayout` (`prompt(call)`,
  `unanswered(request)`, `rehydrations()`, `rehydrated_tokens()`, `lost_tokens()`,
  `close()`); `OURS_STRATEGIES`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ephemeral_context.cache_sim import Block as CacheBlock
from ephemeral_context.cache_sim import Ttl
from ephemeral_context.context.blocks import input_strings, uri_of
from ephemeral_context.context.engine import ContextEngine, EngineConfig, Need, UnknownItem
from ephemeral_context.context.fetching import CLIENT_READ
from ephemeral_context.prices import priced
from ephemeral_context.replay.feed import feed_message
from ephemeral_context.replay.flow import (
    Call,
    FileChange,
    Message,
    PrefixState,
    Session,
    Thread,
    Unanswered,
    prefix,
    shared_messages,
)
from ephemeral_context.replay.simulate import LayoutStrategy, Prompt
from ephemeral_context.replay.tools import replaced_strings, serena_change
from ephemeral_context.store import Store


def _scratch_dir() -> str | None:
    """A memory-backed folder for the replay's throwaway store when the system has one
    (the store fsyncs every new blob, which on a busy disk dominates a replay)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


class OursLayout:
    """One engine per session; each thread is one conversation."""

    def __init__(self, session: Session, eviction: bool = True) -> None:
        self.session = session
        self._dir = tempfile.TemporaryDirectory(prefix="ectx-replay-", dir=_scratch_dir())
        self.store = Store(self._dir.name)
        self.engine = ContextEngine(self.store, EngineConfig(eviction=eviction), clock=lambda: 0.0)
        self._fed: dict[str, int] = {}
        self._rehydrations = 0
        self._rehydrated_tokens = 0
        self._ends: dict[str, list[int]] = {}
        """Per thread, the engine's position after each message fed (where a fork starts)."""
        self._cut: dict[str, int] = {}
        """Per thread, the blocks fed of a message an interrupted request cut short."""
        self._pending: dict[str, list[Need]] = {}
        """Per thread, what interrupted requests' Reads returned: the next call reads it."""
        self._client_ttl: Ttl | None = None
        """The TTL of the client's breakpoints: its request carried it, its usage shows it
        (a call that wrote nothing keeps the last one shown)."""

    @property
    def lost_tokens(self) -> int:
        """Nothing shown is lost: every evicted block stays in the store under its id."""
        return 0

    def close(self) -> None:
        """Release the temporary store (simulate() calls this after the last call)."""
        self.store.close()
        self._dir.cleanup()

    @property
    def rehydrations(self) -> int:
        """Evicted items brought back because a call used them (one round trip may bring
        several)."""
        return self._rehydrations

    @property
    def rehydrated_tokens(self) -> int:
        """Tokens appended again because a call used evicted content."""
        return self._rehydrated_tokens

    def prompt(self, call: Call) -> Prompt:
        new = self._feed(call)
        edits = _edit_needs(call, self.engine)
        needs = [*self._pending.pop(call.thread, []), *_read_needs(new), *edits]
        quoting = _quoting(call)
        prompt = self._build(call)
        trips: list[Prompt] = []
        for _ in range(MAX_ROUND_TRIPS):
            trip = self.engine.rehydrate(call.thread, needs, quoting)
            if trip is None:
                break
            trips.append(replace(prompt, output_tokens=trip.output_tokens))
            self._rehydrations += trip.items
            self._rehydrated_tokens += trip.tokens
            prompt = self._build(call)
        return replace(prompt, steps_before=tuple(trips))

    def unanswered(self, request: Unanswered) -> Prompt:
        """A request interrupted before its answer: sent, so it warms the cache as it does
        for every other strategy (a model switch there leaves the next call a warm cache).
        The engine builds it as the gateway would; what its Reads returned is needed by the
        next call of the thread, which sees the rest of its cut last message."""
        self._pending.setdefault(request.thread, []).extend(_read_needs(self._feed(request)))
        return self._build(request)

    def _feed(self, request: Call | Unanswered) -> list[Message]:
        """Feed the engine what it has not seen of the request's messages (the rest of a
        message an interrupted request cut, then the new ones); returns what was fed."""
        thread_id = request.thread
        messages = self.session.request(request)
        if thread_id not in self._fed:
            self._branch(thread_id, len(messages))
            self.engine.set_route(thread_id, CLIENT_READ)  # Claude Code's Read fetches by id
        fed, done = self._fed.get(thread_id, 0), self._cut.pop(thread_id, 0)
        ends = self._ends.setdefault(thread_id, [])
        whole = self.session.threads[thread_id].messages
        new = []
        for i, message in enumerate(messages[fed:], fed):
            part = replace(message, blocks=message.blocks[done if i == fed else 0 :])
            feed_message(self.engine, thread_id, part)
            new.append(part)
            if len(message.blocks) < len(whole[i].blocks):
                self._cut[thread_id] = len(message.blocks)  # the rest comes with a later call
                break
            ends.append(self.engine.position(thread_id))
            self._fed[thread_id] = i + 1
        self._fed.setdefault(thread_id, fed)
        return new

    def _branch(self, thread_id: str, n_messages: int) -> None:
        """Fork the conversation of the thread this one shares most messages with (within
        the `n_messages` of its first request)."""
        thread = self.session.threads[thread_id].messages[:n_messages]
        prefix_key = self.session.threads[thread_id].prefix_key
        source, shared = None, 0
        for other_id, fed in self._fed.items():
            other = self.session.threads[other_id]
            if other.prefix_key == prefix_key:
                n = shared_messages(other.messages[:fed], thread)
                if n > shared:
                    source, shared = other_id, n
        if source is not None:
            self.engine.fork(source, thread_id, self._ends[source][shared - 1])
            self._fed[thread_id] = shared
            self._ends[thread_id] = self._ends[source][:shared]

    def _build(self, call: Call | Unanswered) -> Prompt:
        """The engine's request for `call` as it stands (the policy runs each time)."""
        thread = self.session.threads[call.thread]
        if isinstance(call, Call) and call.usage is not None and call.usage.ttl is not None:
            self._client_ttl = call.usage.ttl  # the gateway reads it from the request
        self.engine.build_request(
            call.thread,
            priced(call.model).id,  # an unknown model is laid out as the reference one
            # the client's prefix as it stands: a new one leaves nothing cached, nor does
            # another model (the replay keeps a cache per model id, an unknown one too)
            f"prefix:{thread.prefix_key}:{call.prefix.skills}:{call.prefix.cwd}:{call.model}",
            now=call.started,
            system_tokens=max(1, thread.prefix_tokens + thread.hidden_tokens),
            client_ttl=self._client_ttl,
            # Claude Code marks its system prompt with its TTL and the gateway keeps those
            # breakpoints as marked (gateway/outbound.py): the head is written at it
            head_ttl=self._client_ttl,
        )
        built = self.engine.last_request(call.thread)
        assert built is not None
        request = built.cache_request
        system = tuple(request.system)
        if thread.hidden_tokens:
            system = (*_as_cached(thread, call.prefix, system[0]), *system[1:])
        return Prompt(system, tuple(request.messages))


def _as_cached(thread: Thread, state: PrefixState, head: CacheBlock) -> tuple[CacheBlock, ...]:
    """The engine's system block as the cache sees it: the client's prefix, which a cache
    outside the transcript may hold (the replay warms it before the thread's first call),
    then the context Claude Code added unrecorded, as `recorded` lays them out. One block
    would let the warm entry cover the unrecorded context too, read where `recorded` writes
    it (4% of `ours`'s bill on the corpus, unbilled until 2026-12-06). The breakpoint is the
    client's, on its prefix, at the head's TTL (the client's: the gateway keeps Claude
    Code's system breakpoints as marked); the unrecorded context after it is message
    content in a real request, held by the engine's thread breakpoints."""
    parts = prefix(thread, None, state)
    return (replace(parts[0], cache_ttl=head.cache_ttl), *parts[1:])


MAX_ROUND_TRIPS = 3
"""Content fetched stays visible until the model has answered after it, so one round trip
suffices unless the policy evicts more at the rebuild; this bounds that case."""


def _edit_needs(call: Call, engine: ContextEngine) -> list[Need]:
    """The old strings of the response's edits, in the files they edit (an Edit's, a
    literal Serena `replace_content`'s); for Serena's edits that replace text they do not
    quote, that text as the model saw it (`_unquoted`)."""
    needs = []
    for block in call.response.blocks:
        if block.type != "tool_use":
            continue
        uri, tool_input = uri_of(block.path or ""), block.tool_input or {}
        replaced = replaced_strings(block.tool or "", tool_input)
        if replaced:
            needs.append(Need(uri, tuple(r.old for r in replaced if r.old)))
        elif change := serena_change(block.tool or "", tool_input, block.path or ""):
            needs.extend(_unquoted(change, uri, engine, call.thread))
    return needs


def _unquoted(change: FileChange, uri: str, engine: ContextEngine, conv: str) -> list[Need]:
    """What a Serena edit replaces without quoting it, in the text the model last saw of
    the file: a pattern's matches, the lines a line edit removes, the definition whose body
    it replaces (none where that text does not show it: the model had not seen it either,
    as for an Edit); for an insertion at a line number, the file itself (its current
    version, when the model cannot see it). A name is all the others need."""
    if change.lines is not None and not change.lines.removed:
        return [Need(uri)]
    view = next((v for v in engine.file_views(conv) if v.uri == uri), None)
    if view is None:
        return []
    if change.pattern is not None:
        needles = change.pattern.matched(view.text)
    elif change.lines is not None:
        needles = [change.lines.old(view.text, view.start_line) or ""]
    elif change.symbol is not None:
        name = change.symbol.strip("/").replace("/", ".")  # Serena's name path, ours
        try:
            needles = [engine.definition(uri, view.text, name)]
        except UnknownItem:
            needles = []
    else:
        return []
    found = tuple(needle for needle in needles if needle)
    return [Need(uri, found)] if found else []


def _read_needs(messages: Sequence[Message]) -> list[Need]:
    """What the request's new Reads returned: the model reads it now, whatever form the
    engine answered the Read in (a reference to an evicted copy must be fetched)."""
    return [
        Need(None, (block.file_view.content,))
        for message in messages
        for block in message.blocks
        if block.type == "tool_result" and block.file_view is not None and not block.is_error
    ]


def _quoting(call: Call) -> list[str]:
    """The texts the response writes: its text blocks and every string of its tool inputs."""
    texts: list[str] = []
    for block in call.response.blocks:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            texts.extend(input_strings(block.tool_input or {}))
    return texts


def ours_layout(session: Session) -> OursLayout:
    return OursLayout(session)


def lossless_layout(session: Session) -> OursLayout:
    """`ours` with eviction off: references, diffs and consolidation only."""
    return OursLayout(session, eviction=False)


OURS_STRATEGIES = (
    LayoutStrategy("ours", ours_layout, "the context engine (eviction on)"),
    LayoutStrategy("ours-lossless", lossless_layout, "the context engine, eviction off"),
)
"""Registered in replay/strategies.py STRATEGIES."""
