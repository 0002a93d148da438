"""One document's syntax tree and outline, kept current edit by edit.

Each edit goes to the tree (`Tree.edit`), the text is reparsed with the old tree, and only
definitions touching an edited or structurally changed range are queried again; the rest are
shifted. While the text has syntax errors it is parsed from scratch instead: tree-sitter's
error recovery can build a different tree incrementally than from scratch. The result always
equals `outline_text` on the final text (the property tests check that), and every update
says which symbols were added, removed or changed, by `SymbolId`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import tree_sitter as ts

from ephemeral_context.syntax.binding import BudgetExceeded, parse_bounded
from ephemeral_context.syntax.languages import detect_language
from ephemeral_context.syntax.outline import (
    Definition,
    Limits,
    Outline,
    Symbol,
    SymbolId,
    analyse,
    fallback_reason,
    find_definitions,
    make_outline,
    new_parser,
)


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
    """What one update did to the document's definitions (`incremental`: reused the old tree)."""

    outline: Outline
    incremental: bool = False
    added: tuple[SymbolId, ...] = ()
    removed: tuple[SymbolId, ...] = ()
    changed: tuple[SymbolId, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)


Span = tuple[int, int]


def _touches(definition: Definition, spans: Sequence[Span]) -> bool:
    """Closed-interval overlap: an edit right at a definition's edge may extend it."""
    return any(
        definition.start_byte <= end and definition.end_byte >= start for start, end in spans
    )


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
        self._language = detect_language(path, language_id)
        self._limits = limits or Limits()
        self._parser = new_parser(self._language) if self._language else None
        self._tree: ts.Tree | None = None
        self._definitions: list[Definition] = []
        self._source = b""
        self._outline = self._rebuild(text)

    @property
    def outline(self) -> Outline:
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
        old_outline, old_source = self._outline, self._source
        if self._tree is None or self._parser is None or not edits:
            self._outline = self._rebuild(text)
            return _diff(old_outline, old_source, self._outline, self._source)
        source = text.encode("utf-8", errors="surrogatepass")
        if fallback_reason(text, source, self._language, self._limits) is not None:
            self._outline = self._rebuild(text)
            return _diff(old_outline, old_source, self._outline, self._source)
        tree, definitions = self._tree, self._definitions
        spans: list[Span] = []
        for edit in edits:
            tree.edit(
                edit.start_byte, edit.old_end_byte, edit.new_end_byte,
                edit.start_point, edit.old_end_point, edit.new_end_point,
            )  # fmt: skip
            spans = [_shift_span(span, edit) for span in spans]
            spans.append((edit.start_byte, edit.new_end_byte))
            definitions = _shift_definitions(definitions, edit)
        try:
            new_tree = parse_bounded(self._parser, source, self._limits.budget, old_tree=tree)
        except BudgetExceeded:
            new_tree = None
        if new_tree is None or new_tree.root_node.has_error:
            # Error recovery may differ between an incremental and a fresh parse; only the
            # fresh one is the reference, so texts with syntax errors are parsed from scratch.
            self._outline = self._rebuild(text)
            return _diff(old_outline, old_source, self._outline, self._source)
        spans = _merge(
            [*spans, *((r.start_byte, r.end_byte) for r in tree.changed_ranges(new_tree))]
        )
        kept = [d for d in definitions if not _touches(d, spans)]
        fresh: dict[tuple[int, int, str, str], Definition] = {}
        assert self._language is not None
        for start, end in spans:
            query_range = (max(0, start - 1), end + 1)
            for d in find_definitions(new_tree, source, self._language, query_range):
                if _touches(d, spans):
                    fresh[(d.start_byte, d.end_byte, d.kind, d.name)] = d
        self._definitions = sorted(
            [*kept, *fresh.values()], key=lambda d: (d.start_byte, -d.end_byte, d.name)
        )
        self._tree, self._source = new_tree, source
        self._outline = make_outline(
            self._path, self._language, text, self._definitions,
            has_errors=new_tree.root_node.has_error, limits=self._limits,
        )  # fmt: skip
        recomputed = {(d.start_byte, d.end_byte) for d in fresh.values()}
        changes = _diff(old_outline, old_source, self._outline, source, recomputed)
        return replace(changes, incremental=True)

    def sexp(self) -> str:
        """The tree as an S-expression (empty without a tree), for comparing two parses."""
        return str(self._tree.root_node) if self._tree is not None else ""

    def _rebuild(self, text: str) -> Outline:
        """Parse from scratch; on bad input keep no tree and outline by fallback."""
        self._tree, self._definitions, outline = analyse(
            text, self._path, self._language, self._limits, self._parser
        )
        self._source = text.encode("utf-8", errors="surrogatepass")
        return outline


def _shift_definitions(definitions: list[Definition], edit: ByteEditLike) -> list[Definition]:
    """Definitions after `edit` move with it; those before stay; those it touches are dropped."""
    starts = [d.start_byte for d in definitions]
    first_after = bisect.bisect_right(starts, edit.old_end_byte)
    bytes_by = edit.new_end_byte - edit.old_end_byte
    lines_by = edit.new_end_point[0] - edit.old_end_point[0]
    spans = [(edit.start_byte, edit.old_end_byte)]
    before = [d for d in definitions[:first_after] if not _touches(d, spans)]
    if bytes_by == 0 and lines_by == 0:
        return [*before, *definitions[first_after:]]
    return [*before, *(d.shifted(bytes_by, lines_by) for d in definitions[first_after:])]


def _diff(
    old: Outline,
    old_source: bytes,
    new: Outline,
    new_source: bytes,
    recomputed: set[tuple[int, int]] | None = None,
) -> SymbolChanges:
    """Compare two outlines by identity; text is compared only where it may have changed."""
    before = {s.identity: s for s in old.symbols}
    after = {s.identity: s for s in new.symbols}
    changed = [
        identity
        for identity, symbol in after.items()
        if identity in before
        and (recomputed is None or (symbol.start_byte, symbol.end_byte) in recomputed)
        and _text(old_source, before[identity]) != _text(new_source, symbol)
    ]
    return SymbolChanges(
        outline=new,
        added=tuple(identity for identity in after if identity not in before),
        removed=tuple(identity for identity in before if identity not in after),
        changed=tuple(changed),
    )


def _text(source: bytes, symbol: Symbol) -> bytes:
    return source[symbol.start_byte : symbol.end_byte]
