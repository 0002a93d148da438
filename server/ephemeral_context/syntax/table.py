"""One document's symbols as columns, so an edit costs what it changed, not the file's size.

Positions are numpy arrays: moving every symbol after an edit is one vectorised add. Rows
stay in outline order (start ascending, end descending, then where the name is). An update
removes the rows an edit touched, inserts the freshly queried ones and then repairs exactly
the identities that can have moved: children whose parent was replaced ("orphans",
re-qualified with their subtrees) and same-named rows whose overload ordinal shifted. Every
identity that leaves or enters is recorded, with its old byte span, so the caller can diff
texts without a full scan.

API:
- `SymbolTable`: the rows and what the current update changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ephemeral_context.syntax.outline import Definition, Symbol, SymbolId, encloses, qualify
from ephemeral_context.syntax.queries import FILE

_Ints = npt.NDArray[np.int64]
_Bools = npt.NDArray[np.bool_]
_Objects = npt.NDArray[np.object_]
OldIdentity = tuple[SymbolId, int, int]  # identity, start and end byte in the old text


def _column(block: str, index: int) -> Any:
    """A column of one of the table's blocks, as a writable view."""
    return property(lambda table: getattr(table, block)[:, index])


class SymbolTable:
    """The rows behind an Outline's symbols, plus what the current update has changed."""

    def __init__(
        self,
        symbols: Sequence[Symbol],
        definitions: Sequence[Definition],
        refine: Mapping[tuple[str, str], str],
    ) -> None:
        """`definitions[i]` is what `symbols[i]` was nested from; `refine` as in outline.nest."""
        self.refine = refine
        self._ints, self._objects, self._flags = _rows(symbols, definitions, dirty=False)
        self.left: list[OldIdentity] = []
        self.parents: list[tuple[str, str]] = []  # (qualname, kind) of rows removed this update

    def __len__(self) -> int:
        return len(self.start)

    def begin(self) -> None:
        """Start an update: positions now are the old text's; nothing has changed yet."""
        self.old_start[:] = self.start
        self.old_end[:] = self.end
        self.dirty[:] = False
        self.orphan[:] = False
        self.left = []
        self.parents = []

    def symbols(self) -> tuple[Symbol, ...]:
        columns = (
            self.name.tolist(), self.qualname.tolist(), self.kind.tolist(),
            self.start_line.tolist(), self.end_line.tolist(), self.signature.tolist(),
            self.start.tolist(), self.end.tolist(), self.depth.tolist(),
            self.ordinal.tolist(), self.name_at.tolist(),
        )  # fmt: skip
        return tuple(Symbol._make(row) for row in zip(*columns, strict=True))

    def identity(self, row: int) -> SymbolId:
        return SymbolId(self.kind[row], self.qualname[row], int(self.ordinal[row]))

    def remove_touching(self, start: int, end: int) -> set[tuple[str, str]]:
        """Drop rows whose reach (Definition.reach_start..reach_end) meets [start, end];
        their kept children become orphans."""
        return self._remove(np.flatnonzero((self.reach_start <= end) & (self.reach_end >= start)))

    def remove_replaced(self, fresh: Sequence[Definition]) -> set[tuple[str, str]]:
        """Drop kept rows that a fresh definition replaces: those with its name node, which
        is what identifies a definition (outline.Definition).

        A definition's span stops before trailing comment lines, but its tree node may not:
        an edit there re-queries the definition without touching the row.
        """
        names = np.array([d.name_start for d in fresh], dtype=np.int64)
        return self._remove(np.flatnonzero(np.isin(self.name_start, names)))

    def _remove(self, touched: npt.NDArray[np.intp]) -> set[tuple[str, str]]:
        if len(touched) == 0:
            return set()
        doomed = np.zeros(len(self), dtype=np.bool_)
        doomed[touched] = True
        keys = set()
        for row in touched.tolist():
            below = int(np.searchsorted(self.start, self.end[row], side="left"))
            children = np.arange(row + 1, below)
            children = children[(self.depth[children] == self.depth[row] + 1) & ~doomed[children]]
            self.orphan[children] = True
            self.orphan_of[children] = len(self.parents)
            self.parents.append((self.qualname[row], self.kind[row]))
            self._mark(row)
            keys.add((self.kind[row], self.qualname[row]))
        self._delete(touched)
        return keys

    def shift(self, after: int, bytes_by: int, lines_by: int) -> None:
        """Rows starting after byte `after` move with an edit (rows touching it are gone, and
        a reach starting before `after` would have touched it)."""
        first = int(np.searchsorted(self.start, after, side="right"))
        self.start[first:] += bytes_by
        self.end[first:] += bytes_by
        self.reach_start[first:] += bytes_by
        self.reach_end[first:] += bytes_by
        self.name_start[first:] += bytes_by
        self.start_line[first:] += lines_by
        self.end_line[first:] += lines_by

    def insert(self, fresh: Sequence[Symbol], definitions: Sequence[Definition]) -> None:
        """Add freshly queried symbols (qualified among themselves) at their places."""
        rows = [self._position(definition) for definition in definitions]
        ints, objects, flags = _rows(fresh, definitions, dirty=True)
        self._ints = np.insert(self._ints, rows, ints, axis=0)
        self._objects = np.insert(self._objects, rows, objects, axis=0)
        self._flags = np.insert(self._flags, rows, flags, axis=0)

    def adopt_orphans(self, fresh: Sequence[Symbol]) -> set[tuple[str, str]]:
        """Re-qualify kept rows whose parent was replaced, and their subtrees."""
        for symbol in fresh:  # top-level rows a fresh definition now encloses
            row = self._row_of(symbol)
            below = int(np.searchsorted(self.start, symbol.end_byte, side="left"))
            inside = np.arange(row + 1, below)
            inside = inside[~self._same_span(inside, symbol.start_byte, symbol.end_byte)]
            enclosed = inside[(self.depth[inside] == 0) & ~self.dirty[inside]]
            self.orphan[enclosed] = True
            self.orphan_of[enclosed] = -1  # they had no parent, so none can come back
        self._keep_unmoved_orphans(fresh)
        keys: set[tuple[str, str]] = set()
        for row in np.flatnonzero(self.orphan).tolist():
            parent = _innermost(fresh, int(self.start[row]), int(self.end[row]))
            below = int(np.searchsorted(self.start, self.end[row], side="left"))
            keys |= self._renest(row, below, parent)
        self.orphan[:] = False
        return keys

    def _renest(self, row: int, below: int, parent: Symbol | None) -> set[tuple[str, str]]:
        """Name, kind and depth again for rows row..below-1 (a subtree) under a new parent."""
        keys: set[tuple[str, str]] = set()
        stack: list[tuple[int, int, str, str, int]] = []  # start, end, qualname, kind, depth
        for member in range(row, below):
            start, end = int(self.start[member]), int(self.end[member])
            while stack and not encloses(stack[-1][0], stack[-1][1], start, end):
                stack.pop()
            if stack:
                _start, _end, owner, owner_kind, depth = stack[-1]
                depth += 1
            elif parent is not None:
                owner, owner_kind, depth = parent.qualname, parent.kind, parent.depth + 1
            else:
                owner, owner_kind, depth = None, FILE, 0
            name, base = self.name[member], self.base_kind[member]
            qualname = qualify(owner, self.scope[member], name)
            kind = self.refine.get((base, owner_kind), base)
            if (qualname, kind, depth) != (
                self.qualname[member],
                self.kind[member],
                self.depth[member],
            ):
                keys.add((self.kind[member], self.qualname[member]))
                self._mark(member)
                self.qualname[member], self.kind[member], self.depth[member] = qualname, kind, depth
                self.key_hash[member] = hash((kind, qualname))
                keys.add((kind, qualname))
            elif member == row:
                return keys  # the subtree root is unchanged, so is everything below it
            stack.append((start, end, qualname, kind, depth))
        return keys

    def _keep_unmoved_orphans(self, fresh: Sequence[Symbol]) -> None:
        """Children whose replaced parent came back with the same name and depth stay as they are.

        This is the common case (an edit inside a class body re-queries the class), and it
        is settled per parent with array operations instead of per child.
        """
        orphans = np.flatnonzero(self.orphan)
        parents = self.orphan_of[orphans]
        for parent in set(parents.tolist()) - {-1}:
            group = orphans[parents == parent]
            qualname, kind = self.parents[parent]
            holders = [s for s in fresh if self._enclosed(group, s).any()]
            if not holders:
                continue
            innermost = max(holders, key=lambda s: s.depth)
            deepest = [s for s in holders if s.depth >= innermost.depth]
            if (
                len(deepest) == 1
                and innermost.qualname == qualname
                and innermost.kind == kind
                and innermost.depth == self.depth[group[0]] - 1
                and bool(self._enclosed(group, innermost).all())
            ):
                self.orphan[group] = False

    def renumber(self, keys: Iterable[tuple[str, str]]) -> None:
        """Overload ordinals for every (kind, qualname) an update touched."""
        for kind, qualname in keys:
            same_hash = np.flatnonzero(self.key_hash == hash((kind, qualname))).tolist()
            rows = [r for r in same_hash if self.qualname[r] == qualname and self.kind[r] == kind]
            for ordinal, row in enumerate(rows, start=1):
                if self.ordinal[row] != ordinal:
                    self._mark(row)
                    self.ordinal[row] = ordinal

    def entered(self) -> list[tuple[SymbolId, int, int]]:
        """Identities the update created or re-identified, with their new byte spans."""
        return [
            (self.identity(row), int(self.start[row]), int(self.end[row]))
            for row in np.flatnonzero(self.dirty).tolist()
        ]

    def _mark(self, row: int) -> None:
        """Remember a kept row's old identity before it changes."""
        if not self.dirty[row]:
            self.left.append((self.identity(row), int(self.old_start[row]), int(self.old_end[row])))
            self.dirty[row] = True

    def _position(self, definition: Definition) -> int:
        """The row a definition goes in, in outline order (outline.outline_order)."""
        row = int(np.searchsorted(self.start, definition.start_byte, side="left"))
        key = (-definition.end_byte, definition.name_start)
        while (
            row < len(self)
            and self.start[row] == definition.start_byte
            and (-int(self.end[row]), int(self.name_start[row])) < key
        ):
            row += 1
        return row

    def _row_of(self, symbol: Symbol) -> int:
        row = int(np.searchsorted(self.start, symbol.start_byte, side="left"))
        while not (
            self.end[row] == symbol.end_byte and self.name[row] == symbol.name and self.dirty[row]
        ):
            row += 1
        return row

    def _enclosed(self, rows: npt.NDArray[np.intp], symbol: Symbol) -> _Bools:
        """Which of `rows` `symbol` encloses (outline.encloses, for many rows at once)."""
        starts, ends = self.start[rows], self.end[rows]
        inside: _Bools = (symbol.start_byte <= starts) & (ends <= symbol.end_byte)
        return inside & ~self._same_span(rows, symbol.start_byte, symbol.end_byte)

    def _same_span(self, rows: npt.NDArray[np.intp], start: int, end: int) -> _Bools:
        same: _Bools = (self.start[rows] == start) & (self.end[rows] == end)
        return same

    def _delete(self, rows: npt.NDArray[np.intp]) -> None:
        self._ints = np.delete(self._ints, rows, axis=0)
        self._objects = np.delete(self._objects, rows, axis=0)
        self._flags = np.delete(self._flags, rows, axis=0)

    # Columns are views into three row-major blocks, so inserting or deleting rows is three
    # array operations whatever the number of columns.
    start: _Ints = _column("_ints", 0)
    end: _Ints = _column("_ints", 1)
    start_line: _Ints = _column("_ints", 2)
    end_line: _Ints = _column("_ints", 3)
    depth: _Ints = _column("_ints", 4)
    ordinal: _Ints = _column("_ints", 5)
    name_at: _Ints = _column("_ints", 6)
    old_start: _Ints = _column("_ints", 7)  # span in the text before this update (-1: new)
    old_end: _Ints = _column("_ints", 8)
    key_hash: _Ints = _column("_ints", 9)  # hash((kind, qualname)): finds same-named rows fast
    orphan_of: _Ints = _column("_ints", 10)  # index into `parents` of the replaced parent
    reach_start: _Ints = _column("_ints", 11)  # bytes whose edit re-queries the row
    reach_end: _Ints = _column("_ints", 12)
    name_start: _Ints = _column("_ints", 13)  # where the name node starts: the identity
    kind: _Objects = _column("_objects", 0)
    name: _Objects = _column("_objects", 1)
    qualname: _Objects = _column("_objects", 2)
    signature: _Objects = _column("_objects", 3)
    scope: _Objects = _column("_objects", 4)
    base_kind: _Objects = _column("_objects", 5)  # the query's kind, before `refine`
    dirty: _Bools = _column("_flags", 0)  # identity entered or changed in this update
    orphan: _Bools = _column("_flags", 1)


def _rows(
    symbols: Sequence[Symbol], definitions: Sequence[Definition], *, dirty: bool
) -> tuple[_Ints, _Objects, _Bools]:
    """The three blocks for `symbols`; rows created by an update are dirty and have no old span."""
    count = len(symbols)
    ints = np.empty((count, 14), dtype=np.int64)
    objects = np.empty((count, 6), dtype=object)
    for row, (s, d) in enumerate(zip(symbols, definitions, strict=True)):
        old_start, old_end = (-1, -1) if dirty else (s.start_byte, s.end_byte)
        ints[row] = (
            s.start_byte, s.end_byte, s.start_line, s.end_line, s.depth,
            0 if dirty else s.ordinal, s.name_at, old_start, old_end,
            hash((s.kind, s.qualname)), -1, d.reach_start, d.reach_end, d.name_start,
        )  # fmt: skip
        objects[row] = (s.kind, s.name, s.qualname, s.signature, d.scope, d.kind)
    flags = np.zeros((count, 2), dtype=np.bool_)
    flags[:, 0] = dirty
    return ints, objects, flags


def _innermost(symbols: Sequence[Symbol], start: int, end: int) -> Symbol | None:
    """The deepest of `symbols` (in outline order) enclosing start..end; of several with one
    span (`enum { A, B }` after error recovery), the last, as outline.nest picks."""
    enclosing = [s for s in symbols if encloses(s.start_byte, s.end_byte, start, end)]
    return max(reversed(enclosing), key=lambda s: s.depth, default=None)
