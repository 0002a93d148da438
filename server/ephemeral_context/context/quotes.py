"""Quotes: the runs of lines a response repeats from content it was shown.

A response that quotes at least three lines or 200 characters of evicted content must have
read it again first (re-hydration, rehydration.py). Lines are compared without their
surrounding whitespace (a quote may be re-indented), and lines with no letter or digit
(blank lines, braces, fences) are skipped on both sides: they match anywhere and prove
nothing. A run is counted by its lines and their characters; a partial line at either end
of a quote does not count, and neither does a quote inside a longer line.

The index maps each line of the blocks it holds (by default the evicted ones; reuse.py
indexes every output) to where it occurs; a block is indexed once, when it is first seen
to qualify, so a check costs the lines of the response, not the size of the thread.

API:
- `QuoteIndex`: `refresh(thread, include)` indexes the blocks evicted (or passing
  `include`) since the last call;
  `quotes(text)` -> the `Quote`s (block and exact text) a response repeats.
- `long_enough(text)`, `counted_lines(text)`; `MIN_QUOTE_LINES`, `MIN_QUOTE_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ephemeral_context.context.thread import ThreadBlock

MIN_QUOTE_LINES = 3
MIN_QUOTE_CHARS = 200

_COUNTS = re.compile(r"[^\W_]")
"""A line counts when it has a letter or a digit."""


@dataclass(frozen=True)
class Quote:
    """A run of indexed content a response repeats: the block and the exact text."""

    index: int
    text: str


def counted_lines(text: str) -> list[tuple[str, int, int]]:
    """The lines of `text` that count, stripped, each with its start and end in `text`."""
    out: list[tuple[str, int, int]] = []
    start = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and _COUNTS.search(stripped):
            first = start + len(line) - len(line.lstrip())
            out.append((stripped, first, first + len(stripped)))
        start += len(line)
    return out


def long_enough(text: str) -> bool:
    """Could `text` hold a quote at all (cheap test before any lookup)?"""
    return len(text) >= MIN_QUOTE_CHARS or text.count("\n") >= MIN_QUOTE_LINES - 1


@dataclass
class QuoteIndex:
    """Where each counted line of the indexed blocks of one thread occurs."""

    blocks: dict[int, ThreadBlock] = field(default_factory=dict)
    spans: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    lines: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def refresh(
        self,
        thread: Sequence[ThreadBlock],
        include: Callable[[ThreadBlock], bool] = lambda tb: tb.evicted,
    ) -> None:
        """Index the blocks evicted (or passing `include`) since the last call; start over
        if the thread was rewritten under the index (a fork)."""
        if any(i >= len(thread) or thread[i] is not tb for i, tb in self.blocks.items()):
            self.blocks.clear()
            self.spans.clear()
            self.lines.clear()
        for i, tb in enumerate(thread):
            if i not in self.blocks and include(tb):
                self.blocks[i] = tb
                counted = counted_lines(tb.text)
                self.spans[i] = [(start, end) for _, start, end in counted]
                for position, (line, _, _) in enumerate(counted):
                    self.lines.setdefault(line, []).append((i, position))

    def quotes(self, text: str) -> list[Quote]:
        """Runs of indexed lines `text` repeats: at least MIN_QUOTE_LINES consecutive lines
        of one block, or fewer that make MIN_QUOTE_CHARS characters."""
        found: list[Quote] = []
        runs: dict[tuple[int, int], tuple[int, int, int]] = {}
        """(block, position of the run's last line) -> (first position, lines, characters)"""
        for line, _, _ in counted_lines(text):
            grown: dict[tuple[int, int], tuple[int, int, int]] = {}
            for block, position in self.lines.get(line, ()):
                first, count, chars = runs.pop((block, position - 1), (position, 0, 0))
                grown[(block, position)] = (first, count + 1, chars + len(line))
            self._close(runs, found)
            runs = grown
        self._close(runs, found)
        return found

    def _close(self, runs: dict[tuple[int, int], tuple[int, int, int]], out: list[Quote]) -> None:
        """Keep the ended runs long enough to count as quotes."""
        for (block, last), (first, count, chars) in runs.items():
            if count >= MIN_QUOTE_LINES or chars >= MIN_QUOTE_CHARS:
                spans = self.spans[block]
                text = self.blocks[block].text[spans[first][0] : spans[last][1]]
                out.append(Quote(block, text))
