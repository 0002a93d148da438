"""One document's syntax tree and outline, kept current edit by edit.

Each edit goes to the tree (`Tree.edit`), the text is reparsed with the old tree, and only
definitions whose reach (their span and every node their pattern captured, see
`outline.Definition`) touches an edited or structurally changed range are queried again; the
rest are shifted. While the text has syntax errors it is parsed from scratch instead (tree-sitter's
error recovery can build a different tree incrementally than from scratch), and the edited
old tree's `changed_ranges` against that fresh tree still limits the re-query. The result always
equals `outline_text` on the final text (the property tests check that), and every update
says which symbols were added, removed or changed, by `SymbolId`.

API:
- `IncrementalSyntax`: one document's tree and outline; `apply` each didChange's edits.
- `SymbolChanges`: what one update did to the definitions.
- `ByteEditLike`: the edit it takes (documents.ByteEdit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import tree_sitter as ts

from ephemeral_context.syntax.binding import BudgetExceeded, parse_bounded
from ephemeral_context.syntax.embedded import is_component
from ephemeral_context.syntax.outline import (
    Definition,
    Limits,
    Outline,
    SymbolId,
    analyse,
    fallback_reason,
    find_definitions,
    make_outline,
    nest,
    new_parser,
    outline_language,
    outline_order,
    parsed_as_is,
    parsed_source,
    tree_source,
)
from ephemeral_context.syntax.queries import refinements
from ephemeral_context.syntax.table import SymbolTable


class ByteEditLike(Protocol):
    """What documents.ByteEdit carries: tree-sitter's edit, points as (row, byte column)."""

    @property
    def start_byte(self) -> int: ...
    @property
    def old_end_byte(self) -> int: ...
    @property
    def new_end_byte(self) -> int: ...
    @property
    def start_point(self) -> tuple[int, int]: ...
    @property
    def old_end_point(self) -> tuple[int, int]: ...
    @property
    def new_end_point(self) -> tuple[int, int]: ...


@dataclass(frozen=True)
class SymbolChanges:
    """What one update did to the document's definitions (`incremental`: reused the old tree).

    The new outline is `IncrementalSyntax.outline`; it is built when first read, so an update
    that nobody renders costs only what it changed.
    """

    added: tuple[SymbolId, ...] = ()
    removed: tuple[SymbolId, ...] = ()
    changed: tuple[SymbolId, ...] = ()
    incremental: bool = False

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)


Span = tuple[int, int]
# Above this many re-queried definitions one update re-reads the whole tree instead, and above
# this many edits it parses the text anew.
_MAX_PIECEWISE = 256


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _shift_span(span: Span, edit: ByteEditLike) -> Span:
    """Where an already-affected span lies after a later edit (it grows to cover an overlap)."""
    start, end = span
    delta = edit.new_end_byte - edit.old_end_byte
    if start > edit.old_end_byte:
        return start + delta, end + delta
    if end < edit.start_byte:
        return span
    return min(start, edit.start_byte), max(end + delta, edit.new_end_byte)


class IncrementalSyntax:
    """The parse tree and outline of one document; `apply` takes each didChange's edits."""

    def __init__(
        self, text: str, path: str, language_id: str | None = None, limits: Limits | None = None
    ) -> None:
        self._path = path
        self._language_id = language_id
        self._component = is_component(path, language_id)
        self._language = outline_language(text, path, language_id)
        self._limits = limits or Limits()
        self._parser = new_parser(self._language) if self._language else None
        self._tree: ts.Tree | None = None
        self._table = SymbolTable((), (), {})
        self._text, self._source = "", b""
        self._outline: Outline | None = None
        # The parser read the current text as it is (outline.parsed_source), so edits to
        # the text describe how what it reads changed.
        self._as_is = True
        self._rebuild(text)

    @property
    def outline(self) -> Outline:
        """The current outline, equal to `outline_text` of the current text."""
        if self._outline is None:
            self._outline = make_outline(
                self._path, self._language, self._text, self._table.symbols(),
                has_errors=self._tree is not None and self._tree.root_node.has_error,
                limits=self._limits,
            )  # fmt: skip
        return self._outline

    @property
    def language(self) -> str | None:
        return self._language

    @property
    def tree(self) -> ts.Tree | None:
        """The current tree, or None while the text is outlined by a fallback."""
        return self._tree

    def apply(self, edits: Sequence[ByteEditLike], text: str) -> SymbolChanges:
        """Bring tree and outline to `text`, which is the old text with `edits` applied in order."""
        source = tree_source(text)
        if (
            self._tree is None
            or self._parser is None
            or self._component  # its scripts' ranges move with every edit: parsed anew
            or not edits
            or len(edits) > _MAX_PIECEWISE  # a replace-all: each edit moves the spans of all before
            or fallback_reason(text, source, self._language, self._limits) is not None
            or not self._as_is  # its tree is not of the text: parsed anew
        ):
            return self._replace_all(text)
        tree, table = self._tree, self._table
        table.begin()
        keys: set[tuple[str, str]] = set()
        spans: list[Span] = []
        for edit in edits:
            tree.edit(
                edit.start_byte, edit.old_end_byte, edit.new_end_byte,
                edit.start_point, edit.old_end_point, edit.new_end_point,
            )  # fmt: skip
            spans = [_shift_span(span, edit) for span in spans]
            spans.append((edit.start_byte, edit.new_end_byte))
            keys |= table.remove_touching(edit.start_byte, edit.old_end_byte)
            table.shift(
                edit.old_end_byte,
                edit.new_end_byte - edit.old_end_byte,
                edit.new_end_point[0] - edit.old_end_point[0],
            )
        assert self._language is not None
        if not parsed_as_is(source, self._language, spans):  # the edits do not describe that
            return self._replace_all(text)
        try:
            new_tree = parse_bounded(self._parser, source, self._limits.budget, old_tree=tree)
        except BudgetExceeded:
            return self._replace_all(text)
        reused = not new_tree.root_node.has_error
        if not reused:
            # Error recovery may differ between an incremental and a fresh parse; only the
            # fresh one is the reference, so texts with syntax errors are parsed from scratch.
            # The edited old tree still tells which ranges differ from the fresh one.
            try:
                new_tree = parse_bounded(self._parser, source, self._limits.budget)
            except BudgetExceeded:
                return self._replace_all(text)
        structural = ((r.start_byte, r.end_byte) for r in tree.changed_ranges(new_tree))
        spans = _merge([*spans, *structural])
        found: dict[tuple[int, int], Definition] = {}  # by name node, as find_definitions
        for start, end in spans:
            keys |= table.remove_touching(start, end)
            for d in find_definitions(new_tree, source, self._language, touching=(start, end)):
                found[(d.name_start, d.name_end)] = d
        if len(found) > _MAX_PIECEWISE:
            return self._replace_all(text, new_tree, incremental=reused)
        fresh_definitions = sorted(found.values(), key=outline_order)
        keys |= table.remove_replaced(fresh_definitions)
        fresh = nest(fresh_definitions, table.refine)
        table.insert(fresh, fresh_definitions)
        keys |= {(s.kind, s.qualname) for s in fresh}
        keys |= table.adopt_orphans(fresh)
        table.renumber(keys)
        old_source = self._source
        self._tree, self._text, self._source, self._outline = new_tree, text, source, None
        return _compare(table.left, old_source, table.entered(), source, incremental=reused)

    def sexp(self) -> str:
        """The tree as an S-expression (empty without a tree), for comparing two parses."""
        return str(self._tree.root_node) if self._tree is not None else ""

    def _replace_all(
        self, text: str, tree: ts.Tree | None = None, *, incremental: bool = False
    ) -> SymbolChanges:
        """Outline all of `text` (parsed from scratch unless `tree` is its tree) and compare
        every symbol with the previous outline."""
        old_source = self._source
        before = [(s.identity, s.start_byte, s.end_byte) for s in self.outline.symbols]
        self._rebuild(text, tree)
        after = [(s.identity, s.start_byte, s.end_byte) for s in self.outline.symbols]
        return _compare(before, old_source, after, self._source, incremental=incremental)

    def _rebuild(self, text: str, tree: ts.Tree | None = None) -> None:
        """Parse from scratch (or take `tree`); on bad input keep no tree, outline by fallback.
        A component's script language may have changed with its text (`lang`)."""
        if self._component:  # the parser follows its scripts' `lang`
            language = outline_language(text, self._path, self._language_id)
            if language != self._language:
                self._language = language
                self._parser = new_parser(language) if language else None
        self._tree, definitions, self._outline = analyse(
            text, self._path, self._language, self._limits, self._parser, tree,
            component=self._component,
        )  # fmt: skip
        refine = refinements(self._language) if self._language else {}
        self._table = SymbolTable(self._outline.symbols, definitions, refine)
        self._text, self._source = text, tree_source(text)
        self._as_is = self._language is None or (
            parsed_source(self._source, self._language) == self._source
        )


def _compare(
    before: Iterable[tuple[SymbolId, int, int]],
    old_source: bytes,
    after: Iterable[tuple[SymbolId, int, int]],
    new_source: bytes,
    *,
    incremental: bool,
) -> SymbolChanges:
    """Identities that left, entered, or stayed with different text (spans are byte ranges)."""
    old = {identity: (start, end) for identity, start, end in before}
    new = {identity: (start, end) for identity, start, end in after}
    changed = [
        identity
        for identity, (start, end) in new.items()
        if identity in old
        and old_source[old[identity][0] : old[identity][1]] != new_source[start:end]
    ]
    return SymbolChanges(
        added=tuple(identity for identity in new if identity not in old),
        removed=tuple(identity for identity in old if identity not in new),
        changed=tuple(changed),
        incremental=incremental,
    )
