"""The one place that touches the tree-sitter binding's call shapes.

py-tree-sitter keeps changing these shapes: 0.23 moved `Query.matches` onto `QueryCursor`,
0.25 replaced `Parser.timeout_micros` with a progress callback that only the read-callback
form of `parse` accepts, and a cancelled parse surfaces as a bare ValueError. The rest of
syntax/ calls `parse_bounded` and `run_matches` and never depends on those details, so a
future binding change is fixed here alone.

API:
- `parse_bounded(...)`, `Budget`, `BudgetExceeded`: a parse within a time budget.
- `run_matches(...)`, `Match`: query matches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import tree_sitter as ts

Captures = dict[str, list[ts.Node]]
Match = tuple[int, Captures]

# Small reads: an incremental reparse reads at many scattered offsets, and copying 64 KiB
# slices there doubled its cost (11k-line file). Returning memoryview slices instead crashes
# py-tree-sitter 0.26.1 when a query with text predicates later runs on the tree.
_READ_CHUNK = 512


class BudgetExceeded(Exception):
    """Parsing or querying ran past its time budget; the caller falls back with a reason."""


@dataclass(frozen=True)
class Budget:
    """How much work one parse or query may do before it gives up."""

    seconds: float = 2.0

    def deadline(self) -> float:
        return time.monotonic() + self.seconds


def parse_bounded(
    parser: ts.Parser, source: bytes, budget: Budget, old_tree: ts.Tree | None = None
) -> ts.Tree:
    """Parse `source` (reusing `old_tree` when given), raising BudgetExceeded past the budget."""
    deadline = budget.deadline()

    def read(byte: int, _point: ts.Point) -> bytes:
        return source[byte : byte + _READ_CHUNK]

    def over_budget(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        if old_tree is None:
            return parser.parse(read, progress_callback=over_budget)
        return parser.parse(read, old_tree, progress_callback=over_budget)
    except ValueError as error:  # the binding reports a cancelled parse this way
        parser.reset()
        raise BudgetExceeded(f"parsing took longer than {budget.seconds:g} s") from error


def run_matches(
    query: ts.Query,
    node: ts.Node,
    byte_range: tuple[int, int] | None = None,
    max_start_depth: int | None = None,
) -> list[Match]:
    """All matches of `query` under `node`, or only those touching `byte_range`, or only
    those whose pattern starts at most `max_start_depth` levels below `node`.

    Query time is linear in the tree for code as people write it, which the byte limit and
    parse budget bound; not for every tree: a long run of unmatched `{` (or `(`) leaves one
    node whose every child costs time in proportion to its place: 20,000 of them in a Python
    file take about 1.5 s to outline, 40,000 about 6 s, with the GIL held. Nothing here
    bounds that: the cursor's own progress callback is not used, since with py-tree-sitter
    0.26.1 passing one to `QueryCursor.matches` crashes the interpreter (segmentation fault).
    """
    cursor = ts.QueryCursor(query)
    if byte_range is not None:
        cursor.set_byte_range(*byte_range)
    if max_start_depth is not None:
        cursor.set_max_start_depth(max_start_depth)
    return cursor.matches(node)
