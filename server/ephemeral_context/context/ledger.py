"""The ledger: every piece of content the context has ever carried, one item per version.

An item is a file version, a symbol, a skill body, a memory or a tool result. Each has the
stable id the store gave it (so any reference shown to the model can be hydrated), its
version and content hash, its token count, its state (full, partial = synopsis plus hydrated
symbols, synopsis only, reference, evicted), whether it is pinned, when it was last used
(a model-call index), and whether the policy may evict it at all.

Limits (files, total bytes, bytes per file) are enforced least-recently-used first; pinned
items are exempt. A binary or over-size file never enters as content: it becomes a
reference with the reason. The ledger only records state; deciding *when* to change it is
the policy's job (policy.py), and shaping requests is the layout's (layout.py).

API:
- `Ledger`: items by id and the current item per key; limits enforced LRU first.
- `LedgerItem`, `ItemState`: one version of one piece of content, and its state.
- `LedgerLimits`: the limits (files, bytes, bytes per file).
- `unfit_reason(text, size_bytes, limits)`: why content cannot enter as text, None when it can.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.syntax.outline import binary_reason


class ItemState(StrEnum):
    FULL = "full"
    PARTIAL = "partial"
    SYNOPSIS = "synopsis"
    REFERENCE = "reference"
    EVICTED = "evicted"


@dataclass(frozen=True)
class LedgerLimits:
    """Defaults from the seed proposal; every one is configurable."""

    max_files: int = 50
    max_total_bytes: int = 5_000_000
    max_file_bytes: int = 1_000_000


@dataclass
class LedgerItem:
    """One version of one piece of content, addressable by its store id."""

    id: str
    kind: BlockKind
    key: str
    tokens: int
    size_bytes: int
    content_hash: str
    version: int | None = None
    state: ItemState = ItemState.FULL
    pinned: bool = False
    whole_pin: bool = False
    """Pinned as a whole file, not only by a definition: every conversation is shown it."""
    last_use: int = 0
    changed_at: int = 0
    evictable: bool = True
    reason: str = ""
    label: str = ""
    never_resurrect: bool = False

    @property
    def holds_content(self) -> bool:
        """Whether the item's text currently counts against the limits."""
        return self.state in (ItemState.FULL, ItemState.PARTIAL)


@dataclass(frozen=True)
class Demotion:
    """An item the limits pushed out of the working set, and why."""

    item_id: str
    key: str
    reason: str


def unfit_reason(text: str, size_bytes: int, limits: LedgerLimits) -> str | None:
    """Why content cannot enter the ledger as text (None when it can)."""
    if size_bytes > limits.max_file_bytes:
        return f"over the per-file limit ({size_bytes:,} > {limits.max_file_bytes:,} bytes)"
    return "binary content" if binary_reason(text) is not None else None


@dataclass
class Ledger:
    """Items by id, plus the current item per key (a file's latest version)."""

    limits: LedgerLimits = field(default_factory=LedgerLimits)
    _items: dict[str, LedgerItem] = field(default_factory=dict)
    _current: dict[str, str] = field(default_factory=dict)

    def __iter__(self) -> Iterator[LedgerItem]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, item_id: str) -> LedgerItem | None:
        return self._items.get(item_id)

    def current(self, key: str) -> LedgerItem | None:
        """The latest item recorded for `key` (a file URI, a skill name, ...)."""
        item_id = self._current.get(key)
        return self._items.get(item_id) if item_id else None

    def current_items(self) -> list[LedgerItem]:
        return [self._items[i] for i in self._current.values() if i in self._items]

    def record(self, item: LedgerItem) -> LedgerItem:
        """Add a version (or refresh an identical one) and make it the key's current item.

        An earlier version of the same key becomes a reference: it is superseded, its id
        stays hydratable through the store.
        """
        previous = self.current(item.key)
        existing = self._items.get(item.id)
        if existing is not None:
            existing.last_use = max(existing.last_use, item.last_use)
            if existing.state is ItemState.EVICTED and not item.never_resurrect:
                existing.state = item.state
            item = existing
        else:
            self._items[item.id] = item
        if previous is not None and previous.id != item.id:
            item.pinned = item.pinned or previous.pinned
            item.whole_pin = item.whole_pin or previous.whole_pin
            if previous.state is not ItemState.EVICTED:
                previous.state = ItemState.REFERENCE
                previous.reason = previous.reason or "superseded by a newer version"
        self._current[item.key] = item.id
        return item

    def touch(self, item_id: str, call: int) -> None:
        item = self._items.get(item_id)
        if item is not None:
            item.last_use = max(item.last_use, call)

    def remove_key(self, key: str) -> list[str]:
        """Forget a key's working-set entry (its stored versions stay hydratable)."""
        ids = [i.id for i in self._items.values() if i.key == key]
        for item_id in ids:
            item = self._items[item_id]
            item.state = ItemState.EVICTED
            item.never_resurrect = True
            item.reason = item.reason or "dropped"
        self._current.pop(key, None)
        return ids

    def forget(self, item_ids: Iterable[str]) -> None:
        """Remove items altogether (the human dropped them); the store keeps their text."""
        for item_id in item_ids:
            item = self._items.pop(item_id, None)
            if item is not None and self._current.get(item.key) == item_id:
                del self._current[item.key]

    def enforce_limits(self) -> list[Demotion]:
        """Demote least-recently-used unpinned files until the limits hold."""
        files = [i for i in self.current_items() if i.kind is BlockKind.FILE and i.holds_content]
        total = sum(i.size_bytes for i in files)
        count = len(files)
        demoted: list[Demotion] = []
        for item in sorted((i for i in files if not i.pinned), key=lambda i: i.last_use):
            if count <= self.limits.max_files and total <= self.limits.max_total_bytes:
                break
            item.state = ItemState.REFERENCE
            item.reason = (
                f"least recently used beyond the limits ({self.limits.max_files} files, "
                f"{self.limits.max_total_bytes:,} bytes)"
            )
            total -= item.size_bytes
            count -= 1
            demoted.append(Demotion(item.id, item.key, item.reason))
        return demoted
