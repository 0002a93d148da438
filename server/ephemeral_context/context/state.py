"""What every part of the context engine shares, and what it needs from outside.

`EngineState` holds the store, the configuration, the ledger, every conversation, the
outline cache and the eviction events; the engine's parts (intake, reads, eviction,
segment, rehydration, items) are functions over it. `StoreLike` is the slice
of store.Store the engine uses (persist once, get by id).

API:
- `EngineState`: the shared state; `conversation(id)`, `count(text, kind)`.
- `EngineConfig`: limits and switches (defaults in docs/cost-model.md).
- `EvictionEvent`: one eviction decision, as reported to the user.
- `StoreLike`, `TokenCounter`: what the engine needs from outside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ephemeral_context.context.blocks import uri_of
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.context.ledger import Ledger, LedgerLimits
from ephemeral_context.context.outlines import OutlineCache
from ephemeral_context.tokens import estimate_block_tokens

TokenCounter = Callable[[str, str], int]


class StoredEntryLike(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def uri(self) -> str | None: ...


class StoredTextLike(Protocol):
    @property
    def id(self) -> str: ...

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

    def info(self, id: str) -> StoredEntryLike: ...


def as_written(path: str) -> str:
    """A tool's path as the file it names (the default of `EngineConfig.follow_path`)."""
    return path


@dataclass(frozen=True)
class EngineConfig:
    """Limits and switches; every default is documented in docs/cost-model.md."""

    limits: LedgerLimits = field(default_factory=LedgerLimits)
    context_budget: int = 150_000
    max_tokens: int = 8192
    cache_ttl: Literal["auto", "5m", "1h"] = "auto"
    eviction: bool = True
    count: TokenCounter = estimate_block_tokens
    follow_path: Callable[[str], str] = as_written
    """The path a tool's path (a Read's `file_path`) leads to: as written by default (a
    transcript's paths name files elsewhere); a gateway whose files are here follows links
    (documents.followed_path), so a file has the key its editor's documents and pins use,
    and a link is checked as the file it leads to (replay/feed.py `holds_secret`)."""

    def file_uri(self, path: str) -> str:
        """The URI a tool's path keys its file by."""
        return uri_of(self.follow_path(path))


@dataclass(frozen=True)
class EvictionEvent:
    """One eviction (or consolidation) decision, as reported to the user."""

    call: int
    item_ids: tuple[str, ...]
    tokens_freed: int
    tokens_reprocessed: int
    cold: bool
    reason: str


@dataclass
class EngineState:
    """The engine's state across conversations (one per workspace)."""

    store: StoreLike
    config: EngineConfig
    ledger: Ledger
    events: list[EvictionEvent] = field(default_factory=list)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    outlines: OutlineCache = field(default_factory=OutlineCache)
    over_limits: set[str] = field(default_factory=set)
    """Files the ledger limits pushed out; their copies leave at the next request."""

    def conversation(self, conv: str) -> Conversation:
        """The conversation's state, created on first use."""
        state = self.conversations.get(conv)
        if state is None:
            state = self.conversations[conv] = Conversation(conv)
        return state

    def count(self, text: str, kind: str) -> int:
        """Tokens of `text` as content of `kind` (the configured counter)."""
        return self.config.count(text, kind)
