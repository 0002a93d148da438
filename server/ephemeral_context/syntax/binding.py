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


# An error node with this many children or more is refused: queries take time quadratic in
# its width (4,000 children: about 10 ms a query; 20,000: 0.3 s; 40,000: 1.2 s; a 1 MB line
# of `(`, extrapolated: most of an hour), see run_matches.
_MAX_ERROR_WIDTH = 4_000


class BudgetExceeded(Exception):
    """Parsing or querying ran, or would run, past its time budget; the caller falls back
    with a reason."""


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
            tree = parser.parse(read, progress_callback=over_budget)
        else:
            tree = parser.parse(read, old_tree, progress_callback=over_budget)
    except ValueError as error:  # the binding reports a cancelled parse this way
        parser.reset()
        raise BudgetExceeded(f"parsing took longer than {budget.seconds:g} s") from error
    width = _widest_error(tree.root_node)
    if width >= _MAX_ERROR_WIDTH:
        raise BudgetExceeded(
            f"the syntax tree has an error node of {width:,} parts, too many to query in time"
        )
    return tree


def _widest_error(root: ts.Node) -> int:
    """The most children an ERROR node has, looking only under nodes that hold an error (a
    tree without errors costs one check)."""
    widest, pending = 0, [root] if root.has_error else []
    while pending:
        node = pending.pop()
        if node.is_error:
            widest = max(widest, node.child_count)
        pending.extend(child for child in node.children if child.has_error)
    return widest


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
    error node whose every child costs time in proportion to its place (20,000 of them in a
    Python file took 1.5 s to outline, 40,000 about 6 s, with the GIL held). The cursor's
    own progress callback cannot bound that (with py-tree-sitter 0.26.1 passing one to
    `QueryCursor.matches` crashes the interpreter: segmentation fault), so `parse_bounded`
    refuses such trees before any query runs.
    """
    cursor = ts.QueryCursor(query)
    if byte_range is not None:
        cursor.set_byte_range(*byte_range)
    if max_start_depth is not None:
        cursor.set_max_start_depth(max_start_depth)
    return cursor.matches(node)
