"""File outlines for the engine: parsed once per file version, and the definition holding a text.

Consolidations, re-hydrations and pins ask for the outlines of the same file versions again
and again; `OutlineCache` parses each once (bounded, cleared when full).
`enclosing_symbol` finds the innermost definition holding a piece of text, so that
re-hydration can append one definition (as read_symbol would) instead of a whole file.

API:
- `OutlineCache`: `get(text, path)` parses each file version once.
- `enclosing_symbol(outline, text, needle)`: the innermost definition holding `needle`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ephemeral_context.documents import count_breaks
from ephemeral_context.syntax import Outline, Symbol, address, find_symbol, outline_text

OUTLINE_CACHE_SIZE = 256
"""Outlines kept per engine (one per file version in use; cleared when full)."""


@dataclass
class OutlineCache:
    """Outlines by (path, text)."""

    size: int = OUTLINE_CACHE_SIZE
    _outlines: dict[tuple[str, str], Outline] = field(default_factory=dict)

    def get(self, text: str, path: str) -> Outline:
        """The outline of this file version, parsed on first use."""
        key = (path, text)
        outline = self._outlines.get(key)
        if outline is None:
            if len(self._outlines) >= self.size:
                self._outlines.clear()
            outline = self._outlines[key] = outline_text(text, path)
        return outline


def enclosing_symbol(outline: Outline, text: str, needle: str) -> tuple[str, str] | None:
    """The innermost definition of `text` that contains all of `needle`: (name, source)."""
    start = text.find(needle)
    if start < 0:
        return None
    first = count_breaks(text[:start]) + 1
    last = first + count_breaks(needle)
    best: Symbol | None = None
    for symbol in outline.symbols:
        if (
            symbol.start_line <= first
            and last <= symbol.end_line
            and (
                best is None
                or symbol.end_line - symbol.start_line < best.end_line - best.start_line
            )
        ):
            best = symbol
    if best is None:
        return None
    found = find_symbol(text, outline, address(best, outline))
    return (address(best, outline), found.found.text) if found.found is not None else None
