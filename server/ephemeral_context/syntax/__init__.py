"""tree-sitter for the context: language detection, outlines, synopses, symbol lookup.

The names here are the contract other modules call; the submodules
are one idea each: languages, queries (grammars/*.scm), binding (the tree-sitter shim),
outline (definitions -> symbols), synopsis (rendering), symbols (hydration), incremental.

API:
- `detect_language`, `LANGUAGES`: which grammar a file gets.
- `outline_text`, `Outline`, `Symbol`, `SymbolId`, `Limits`: a file's definitions.
- `render_synopsis`: the synopsis text.
- `find_symbol`, `address`, `split_reference`, `SymbolLookup`, `SymbolText`, `LookupStatus`: one
  symbol's text.
- `IncrementalSyntax`, `SymbolChanges`, `ByteEditLike`: a document's tree kept current edit by
  edit.
"""

from ephemeral_context.syntax.incremental import ByteEditLike, IncrementalSyntax, SymbolChanges
from ephemeral_context.syntax.languages import LANGUAGES, detect_language
from ephemeral_context.syntax.outline import Limits, Outline, Symbol, SymbolId, outline_text
from ephemeral_context.syntax.symbols import (
    LookupStatus,
    SymbolLookup,
    SymbolText,
    address,
    find_symbol,
    split_reference,
)
from ephemeral_context.syntax.synopsis import render_synopsis

__all__ = [
    "LANGUAGES",
    "ByteEditLike",
    "IncrementalSyntax",
    "Limits",
    "LookupStatus",
    "Outline",
    "Symbol",
    "SymbolChanges",
    "SymbolId",
    "SymbolLookup",
    "SymbolText",
    "address",
    "detect_language",
    "find_symbol",
    "outline_text",
    "render_synopsis",
    "split_reference",
]
