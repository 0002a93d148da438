"""Quotes: the runs of lines a response repeats from content it was shown.

A response that quotes at least three lines or 200 characters of evicted content must have
read it again first (re-hydration, rehydration.py); a response that quotes an output, visible
or evicted, used it again (re-use, reuse.py). Lines are compared without their surrounding
whitespace (a quote may be re-indented), and lines with no letter or digit (blank lines,
braces, fences) are skipped on both sides: they match anywhere and prove nothing. A
block's lines are those of its `readable` text (a one-line JSON answer's strings too). A run is
counted by its lines and their characters; a partial line at either end of a quote does not
count, and neither does a quote inside a longer line.

One index per conversation serves every check: each line of the blocks it holds maps to
where it occurs, and a block's lines are indexed once, whichever check first takes it in.
A check names its selection (a predicate over thread blocks: `evicted`, reuse.py's tracked
outputs); a block joins a selection when a check first finds it passing, and the quotes come
in the order the blocks joined, as a separate index per selection would give them. So a
check costs the lines of the response, not the size of the thread, and a response's texts
are split once however many checks read them (re-hydration before the call, re-use when the
response enters).

API:
- `QuoteIndex`: `quotes(thread, texts, among)` -> the `Quote`s (block and exact text) the
  texts repeat from the blocks of `thread` in selection `among` (default `evicted`).
- `evicted(tb)`, `long_enough(text)`, `counted_lines(text)`; `MIN_QUOTE_LINES`,
  `MIN_QUOTE_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ephemeral_context.context.thread import ThreadBlock

MIN_QUOTE_LINES = 3
MIN_QUOTE_CHARS = 200
WRITTEN_KEPT = 64
"""Texts whose counted lines the index keeps (a response is checked before the call and
again when it enters the thread)."""

_COUNTS = re.compile(r"[^\W_]")
"""A line counts when it has a letter or a digit."""

Selection = Callable[[ThreadBlock], bool]
Line = tuple[str, int, int]
Run = tuple[int, int, int]
"""(first position, lines, characters) of a run of one block's lines."""


@dataclass(frozen=True)
class Quote:
    """A run of indexed content a response repeats: the block and the exact text."""

    index: int
    text: str


def evicted(tb: ThreadBlock) -> bool:
    """Re-hydration's selection: content the model can no longer see."""
    return tb.evicted


def counted_lines(text: str) -> list[Line]:
    """The lines of `text` that count, stripped, each with its start and end in `text`."""
    out: list[Line] = []
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
    """Each counted line -> (block, position of the line in the block), as indexed."""
    joined: dict[Selection, dict[int, int]] = field(default_factory=dict)
    """Per selection, its blocks and the order they joined it in."""
    written: dict[str, list[Line]] = field(default_factory=dict)
    """The counted lines of the texts checked last (at most WRITTEN_KEPT), latest last."""

    def quotes(
        self, thread: Sequence[ThreadBlock], texts: Sequence[str], among: Selection = evicted
    ) -> list[Quote]:
        """Runs the `texts` repeat from the blocks of `thread` in `among`: at least
        MIN_QUOTE_LINES consecutive lines of one block, or fewer that make MIN_QUOTE_CHARS
        characters; text by text, each text's in the order its runs end."""
        candidates = [t for t in texts if long_enough(t)]
        if not candidates:
            return []
        joined = self._refresh(thread, among)
        return [q for t in candidates for q in self._runs(self._counted(t), joined)]

    def _refresh(self, thread: Sequence[ThreadBlock], among: Selection) -> dict[int, int]:
        """Take in the blocks passing `among` since its last check; start over if the
        thread was rewritten under the index (a fork)."""
        if any(i >= len(thread) or thread[i] is not tb for i, tb in self.blocks.items()):
            self.blocks.clear()
            self.spans.clear()
            self.lines.clear()
            self.joined.clear()
        joined = self.joined.setdefault(among, {})
        for i, tb in enumerate(thread):
            if i not in joined and among(tb):
                joined[i] = len(joined)
                if i not in self.blocks:
                    self._index(i, tb)
        return joined

    def _index(self, i: int, tb: ThreadBlock) -> None:
        self.blocks[i] = tb
        counted = counted_lines(tb.readable)
        self.spans[i] = [(start, end) for _, start, end in counted]
        for position, (line, _, _) in enumerate(counted):
            self.lines.setdefault(line, []).append((i, position))

    def _counted(self, text: str) -> list[Line]:
        """`counted_lines(text)`, split once while the text is among the latest checked."""
        lines = self.written.pop(text, None)
        if lines is None:
            lines = counted_lines(text)
            if len(self.written) >= WRITTEN_KEPT:
                del self.written[next(iter(self.written))]
        self.written[text] = lines
        return lines

    def _runs(self, lines: Sequence[Line], joined: dict[int, int]) -> list[Quote]:
        """The quotes in `lines` of the `joined` blocks, each step's ended runs in the
        order their blocks joined (then by position)."""
        found: list[tuple[tuple[int, int, int], Quote]] = []
        runs: dict[tuple[int, int], Run] = {}
        """(block, position of the run's last line) -> the run"""
        for step, (line, _, _) in enumerate(lines):
            grown: dict[tuple[int, int], Run] = {}
            for block, position in self.lines.get(line, ()):
                if block in joined:
                    first, count, chars = runs.pop((block, position - 1), (position, 0, 0))
                    grown[(block, position)] = (first, count + 1, chars + len(line))
            self._close(runs, step, joined, found)
            runs = grown
        self._close(runs, len(lines), joined, found)
        found.sort(key=lambda entry: entry[0])
        return [quote for _, quote in found]

    def _close(
        self,
        runs: dict[tuple[int, int], Run],
        step: int,
        joined: dict[int, int],
        out: list[tuple[tuple[int, int, int], Quote]],
    ) -> None:
        """Keep the runs ended at `step` long enough to count as quotes."""
        for (block, last), (first, count, chars) in runs.items():
            if count >= MIN_QUOTE_LINES or chars >= MIN_QUOTE_CHARS:
                spans = self.spans[block]
                text = self.blocks[block].readable[spans[first][0] : spans[last][1]]
                out.append(((step, joined[block], last), Quote(block, text)))
