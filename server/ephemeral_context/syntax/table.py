"""One document's symbols as columns, so an edit costs what it changed, not the file's size.

Positions are numpy arrays: moving every symbol after an edit is one vectorised add. Rows
stay in outline order (start ascending, end descending, name). An update removes the rows an
edit touched, inserts the freshly queried ones and then repairs exactly the identities that
can have moved: children whose parent was replaced ("orphans", re-qualified with their
subtrees) and same-named rows whose overload ordinal shifted. Every identity that leaves or
enters is recorded, with its old byte span, so the caller can diff texts without a full scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ephemeral_context.syntax.outline import Definition, Symbol, SymbolId

_Ints = npt.NDArray[np.int64]
_Bools = npt.NDArray[np.bool_]
_Objects = npt.NDArray[np.object_]
OldIdentity = tuple[SymbolId, int, int]  # identity, start and end byte in the old text


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
        self.start = np.array([s.start_byte for s in symbols], dtype=np.int64)
        self.end = np.array([s.end_byte for s in symbols], dtype=np.int64)
        self.start_line = np.array([s.start_line for s in symbols], dtype=np.int64)
        self.end_line = np.array([s.end_line for s in symbols], dtype=np.int64)
        self.depth = np.array([s.depth for s in symbols], dtype=np.int64)
        self.ordinal = np.array([s.ordinal for s in symbols], dtype=np.int64)
        self.name_at = np.array([s.name_at for s in symbols], dtype=np.int64)
        self.kind = _objects(s.kind for s in symbols)
        self.name = _objects(s.name for s in symbols)
        self.qualname = _objects(s.qualname for s in symbols)
        self.signature = _objects(s.signature for s in symbols)
        self.scope = _objects(d.scope for d in definitions)
        self.base_kind = _objects(d.kind for d in definitions)
        self.old_start = self.start.copy()
        self.old_end = self.end.copy()
        self.dirty = np.zeros(len(symbols), dtype=np.bool_)
        self.orphan = np.zeros(len(symbols), dtype=np.bool_)
        self.orphan_of = _objects([None] * len(symbols))
        self.orphan_kind = _objects([None] * len(symbols))
        self.left: list[OldIdentity] = []

    def __len__(self) -> int:
        return len(self.start)

    def begin(self) -> None:
        """Start an update: positions now are the old text's; nothing has changed yet."""
        self.old_start = self.start.copy()
        self.old_end = self.end.copy()
        self.dirty[:] = False
        self.orphan[:] = False
        self.left = []

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
        """Drop rows whose span meets [start, end]; their kept children become orphans."""
        touched = np.flatnonzero((self.start <= end) & (self.end >= start))
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
            self.orphan_of[children] = self.qualname[row]
            self.orphan_kind[children] = self.kind[row]
            if not self.dirty[row]:
                self.left.append(
                    (self.identity(row), int(self.old_start[row]), int(self.old_end[row]))
                )
            keys.add((self.kind[row], self.qualname[row]))
        self._delete(touched)
        return keys

    def shift(self, after: int, bytes_by: int, lines_by: int) -> None:
        """Rows starting after byte `after` move with an edit (rows touching it are gone)."""
        first = int(np.searchsorted(self.start, after, side="right"))
        self.start[first:] += bytes_by
        self.end[first:] += bytes_by
        self.start_line[first:] += lines_by
        self.end_line[first:] += lines_by

    def insert(self, fresh: Sequence[Symbol], definitions: Sequence[Definition]) -> None:
        """Add freshly queried symbols (qualified among themselves) at their places."""
        rows = [self._position(symbol) for symbol in fresh]
        count = len(fresh)
        values: dict[str, npt.NDArray[Any]] = {
            "start": np.array([s.start_byte for s in fresh], dtype=np.int64),
            "end": np.array([s.end_byte for s in fresh], dtype=np.int64),
            "start_line": np.array([s.start_line for s in fresh], dtype=np.int64),
            "end_line": np.array([s.end_line for s in fresh], dtype=np.int64),
            "depth": np.array([s.depth for s in fresh], dtype=np.int64),
            "ordinal": np.zeros(count, dtype=np.int64),
            "name_at": np.array([s.name_at for s in fresh], dtype=np.int64),
            "kind": _objects(s.kind for s in fresh),
            "name": _objects(s.name for s in fresh),
            "qualname": _objects(s.qualname for s in fresh),
            "signature": _objects(s.signature for s in fresh),
            "scope": _objects(d.scope for d in definitions),
            "base_kind": _objects(d.kind for d in definitions),
            "old_start": np.full(count, -1, dtype=np.int64),
            "old_end": np.full(count, -1, dtype=np.int64),
            "dirty": np.ones(count, dtype=np.bool_),
            "orphan": np.zeros(count, dtype=np.bool_),
            "orphan_of": _objects([None] * count),
            "orphan_kind": _objects([None] * count),
        }
        for column in _COLUMNS:
            setattr(self, column, np.insert(getattr(self, column), rows, values[column]))

    def adopt_orphans(self, fresh: Sequence[Symbol]) -> set[tuple[str, str]]:
        """Re-qualify kept rows whose parent was replaced, and their subtrees."""
        for symbol in fresh:  # top-level rows a fresh definition now encloses
            row = self._row_of(symbol)
            below = int(np.searchsorted(self.start, symbol.end_byte, side="left"))
            inside = np.arange(row + 1, below)
            self.orphan[inside[(self.depth[inside] == 0) & ~self.dirty[inside]]] = True
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
        stack: list[tuple[int, str, str, int]] = []  # end, qualname, kind, depth
        for member in range(row, below):
            while stack and self.end[member] > stack[-1][0]:
                stack.pop()
            if stack:
                _end, owner, owner_kind, depth = stack[-1]
                depth += 1
            elif parent is not None:
                owner, owner_kind, depth = parent.qualname, parent.kind, parent.depth + 1
            else:
                owner, owner_kind, depth = self.scope[member], None, 0
            name, base = self.name[member], self.base_kind[member]
            qualname = f"{owner}.{name}" if owner else name
            kind = self.refine.get((base, owner_kind), base) if owner_kind else base
            if (qualname, kind, depth) != (
                self.qualname[member],
                self.kind[member],
                self.depth[member],
            ):
                keys.add((self.kind[member], self.qualname[member]))
                self._mark(member)
                self.qualname[member], self.kind[member], self.depth[member] = qualname, kind, depth
                keys.add((kind, qualname))
            elif member == row:
                return keys  # the subtree root is unchanged, so is everything below it
            stack.append((int(self.end[member]), qualname, kind, depth))
        return keys

    def _keep_unmoved_orphans(self, fresh: Sequence[Symbol]) -> None:
        """Children whose replaced parent came back with the same name and depth stay as they are.

        This is the common case (an edit inside a class body re-queries the class), and it
        is settled per parent with array operations instead of per child.
        """
        orphans = np.flatnonzero(self.orphan)
        parents = self.orphan_of[orphans]
        for parent in set(parents.tolist()):
            group = orphans[parents == parent]
            starts, ends = self.start[group], self.end[group]
            holders = [s for s in fresh if ((s.start_byte <= starts) & (ends <= s.end_byte)).any()]
            if not holders:
                continue
            innermost = max(holders, key=lambda s: s.depth)
            deepest = [s for s in holders if s.depth >= innermost.depth]
            if (
                len(deepest) == 1
                and innermost.qualname == parent
                and bool((self.orphan_kind[group] == innermost.kind).all())
                and innermost.depth == self.depth[group[0]] - 1
                and bool(((innermost.start_byte <= starts) & (ends <= innermost.end_byte)).all())
            ):
                self.orphan[group] = False

    def renumber(self, keys: Iterable[tuple[str, str]]) -> None:
        """Overload ordinals for every (kind, qualname) an update touched."""
        for kind, qualname in keys:
            rows = np.flatnonzero((self.qualname == qualname) & (self.kind == kind))
            for ordinal, row in enumerate(rows.tolist(), start=1):
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

    def _position(self, symbol: Symbol) -> int:
        row = int(np.searchsorted(self.start, symbol.start_byte, side="left"))
        key = (-symbol.end_byte, symbol.name)
        while (
            row < len(self)
            and self.start[row] == symbol.start_byte
            and (-int(self.end[row]), self.name[row]) < key
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

    def _delete(self, rows: npt.NDArray[np.intp]) -> None:
        for column in _COLUMNS:
            setattr(self, column, np.delete(getattr(self, column), rows))


_COLUMNS = (
    "start", "end", "start_line", "end_line", "depth", "ordinal", "name_at", "kind", "name",
    "qualname", "signature", "scope", "base_kind", "old_start", "old_end", "dirty", "orphan",
    "orphan_of", "orphan_kind",
)  # fmt: skip


def _objects(values: Iterable[object]) -> _Objects:
    items = list(values)
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _innermost(symbols: Sequence[Symbol], start: int, end: int) -> Symbol | None:
    enclosing = [s for s in symbols if s.start_byte <= start and end <= s.end_byte]
    return max(enclosing, key=lambda s: s.depth, default=None)
