"""Symbol-level hydration: `path::Qualified.name` -> that definition's text and line range.

A reference resolves to exactly one symbol, to the candidates when it is ambiguous
(overloads, or a short name defined in several places), or to the closest known names when
nothing matches. `Name#2` picks the second of several same-named definitions.

API:
- `find_symbol(text, outline, name)`: a `SymbolLookup` (`LookupStatus`, `SymbolText`).
- `address(symbol, outline)`: the shortest reference to a symbol.
- `split_reference(reference)`: `path::Symbol` apart.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum

from ephemeral_context.documents import split_lines
from ephemeral_context.syntax.languages import spec_for
from ephemeral_context.syntax.outline import Outline, Symbol

_SEPARATOR = "::"
_ORDINAL = "#"


class LookupStatus(StrEnum):
    FOUND = "found"
    AMBIGUOUS = "ambiguous"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SymbolText:
    """One definition's source: whole lines (no final newline), doc comment first if it has one."""

    symbol: Symbol
    text: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class SymbolLookup:
    """The answer to one reference: the text, or the names the caller could have meant."""

    status: LookupStatus
    query: str
    found: SymbolText | None = None
    candidates: tuple[Symbol, ...] = ()
    suggestions: tuple[str, ...] = ()


def split_reference(reference: str) -> tuple[str, str | None]:
    """`src/a.py::Foo.bar` -> (`src/a.py`, `Foo.bar`); a bare path has no symbol."""
    path, separator, symbol = reference.partition(_SEPARATOR)
    return path, (symbol if separator else None)


def address(symbol: Symbol, outline: Outline) -> str:
    """The shortest reference that picks exactly `symbol` out of `outline`."""
    place, count = outline.twins[symbol]
    return symbol.qualname if count == 1 else f"{symbol.qualname}{_ORDINAL}{place}"


def find_symbol(text: str, outline: Outline, name: str) -> SymbolLookup:
    """Resolve `name` (qualified, a trailing part of a qualified name, or `Name#N`) in `outline`.

    A name may hold `#` itself (a heading `C# support`, a key `a#b`): the last `#` starts
    an ordinal only when the whole name matches nothing (`Issue #12#2`).
    """
    wanted, ordinal = name.strip(), ""
    matches = _named(outline, wanted)
    if not matches and _ORDINAL in wanted:
        wanted, _, ordinal = wanted.rpartition(_ORDINAL)
        matches = _named(outline, wanted)
    if ordinal.isascii() and ordinal.isdigit() and len({s.qualname for s in matches}) == 1:
        digits = ordinal.lstrip("0")  # int() refuses `²`, a digit, and 4,301 digits
        index = int(digits) - 1 if 0 < len(digits) <= 18 else -1
        matches = matches[index : index + 1] if 0 <= index < len(matches) else []
    if len(matches) == 1:
        return SymbolLookup(LookupStatus.FOUND, name, found=symbol_text(text, outline, matches[0]))
    if matches:
        return SymbolLookup(LookupStatus.AMBIGUOUS, name, candidates=tuple(matches))
    known = sorted({s.qualname for s in outline.symbols} | {s.name for s in outline.symbols})
    close = difflib.get_close_matches(wanted, known, n=5, cutoff=0.5)
    return SymbolLookup(LookupStatus.UNKNOWN, name, suggestions=tuple(close))


def _named(outline: Outline, wanted: str) -> list[Symbol]:
    """The symbols named `wanted` in full, else those whose qualified name it ends."""
    matches = [s for s in outline.symbols if s.qualname == wanted]
    if not matches:
        suffix = f".{wanted}"
        matches = [s for s in outline.symbols if s.qualname.endswith(suffix)]
    return matches


def symbol_text(text: str, outline: Outline, symbol: Symbol) -> SymbolText:
    """The symbol's whole lines, extended upwards over the comment lines that document it."""
    lines = split_lines(text)  # rows as tree-sitter counts them (outline.tree_source)
    start = symbol.start_line
    prefixes = spec_for(outline.language).doc_prefixes if outline.language else ()
    while prefixes and start > 1:
        above = lines[start - 2].lstrip("\ufeff").strip()  # a BOM is no text
        if not above or not above.startswith(prefixes):
            break
        start -= 1
    body = "".join(lines[start - 1 : symbol.end_line])
    body = body.removesuffix("\n") if body.endswith("\n") else body.removesuffix("\r")
    return SymbolText(symbol, body, start, symbol.end_line)
