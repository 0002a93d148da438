"""What the engine believes the prompt cache holds for one conversation.

The policy needs to know where the cache would hit (to measure `X`, the tokens a change
makes the next call write again) without asking the API. Each entry is a prefix the last
requests wrote at a breakpoint: keyed by position (a thread block index, or END_OF_SEGMENT /
END_OF_SYSTEM), with its expiry and the token offset where it ends. The rules are
cache_sim's: a breakpoint reads the latest entry at most 20 positions back, a read
refreshes only the entry it hit, a change at a block invalidates every entry that includes
it. tests/unit/context/test_layout.py checks this view against cache_sim call by call.

API:
- `CacheView`: the entries by position; `thread_warm`, `warm_end`, `has`, `thread_entries`,
  `invalidate_from`, `keep_only`, `clear`.
- `END_OF_SYSTEM`, `END_OF_SEGMENT`: the positions of the two prefix breakpoints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ephemeral_context.cache_sim import LOOKBACK_POSITIONS

END_OF_SEGMENT = -1
END_OF_SYSTEM = -2


@dataclass
class CacheView:
    """Entries by position -> (expiry, end offset in tokens, TTL in seconds)."""

    entries: dict[int, tuple[float, int, float]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def clear(self) -> None:
        self.entries = {}

    def expire(self, now: float) -> None:
        """Drop entries whose TTL ran out before `now`."""
        self.entries = {p: v for p, v in self.entries.items() if v[0] > now}

    def invalidate_from(self, first: int) -> None:
        """A change at thread block `first`: every thread entry that includes it is gone."""
        self.entries = {p: v for p, v in self.entries.items() if p < first}

    def keep_only(self, positions: Iterable[int | None]) -> None:
        """The API reported no read at all: only what the last request wrote survives."""
        keep = set(positions)
        self.entries = {p: v for p, v in self.entries.items() if p in keep}

    def has(self, position: int) -> bool:
        return position in self.entries

    @property
    def thread_warm(self) -> bool:
        """Some thread prefix is cached."""
        return any(p >= 0 for p in self.entries)

    @property
    def latest_thread_hit(self) -> int | None:
        """The last thread block a cached prefix ends on."""
        return max((p for p in self.entries if p >= 0), default=None)

    @property
    def warm_end(self) -> int:
        """Tokens the cache would serve if nothing changed (the longest cached prefix)."""
        return max((end for _, end, _ in self.entries.values()), default=0)

    def thread_entries(self) -> list[tuple[int, int]]:
        """(thread block index, end offset) of every cached thread prefix."""
        return [(p, end) for p, (_, end, _) in self.entries.items() if p >= 0]

    def hits(self, breakpoints: Iterable[int]) -> set[int]:
        """The entries these breakpoints read: for each, the latest entry at or up to 19
        positions before it (the API's lookback)."""
        found: set[int] = set()
        for bp in breakpoints:
            reach = [p for p in self.entries if p <= bp and (bp < 0 or bp - p < LOOKBACK_POSITIONS)]
            if reach:
                found.add(max(reach))
        return found

    def record_call(self, written: dict[int, int], now: float, ttls: dict[int, float]) -> None:
        """After a request: the entries it read are refreshed, the ones it wrote exist.

        `written` maps each breakpoint position to its end offset, `ttls` each to its TTL
        (seconds). A read refreshes an entry for its own TTL (a 1-hour entry read by a
        5-minute breakpoint stays an hour), as cache_sim does; a breakpoint that found its
        entry leaves it as it is.
        """
        hits = self.hits(written)
        for p in hits:
            _, end, ttl = self.entries[p]
            self.entries[p] = (now + ttl, end, ttl)
        for p, end in written.items():
            if p not in hits:
                self.entries[p] = (now + ttls[p], end, ttls[p])
