"""Scripts inside markup: a Vue or Svelte component's <script> blocks, outlined by their grammar.

A component holds its code in `<script>` blocks between a template and styles, which have
no definitions. Each top-level block is one `section` of the outline (`sections`), so that
a quote of the template, or of script code outside any definition, or
`read_symbol("Panel.vue::template")`, brings back that block alone; a script's section
holds its definitions but does not qualify their names (outline.py).
tree-sitter parses only the byte ranges it is given (`Parser.included_ranges`) and keeps
the file's own positions, so the outline's lines and byte spans, and so `read_symbol`,
refer to the component file itself. The language is the first script block's `lang`
(`ts`, `typescript`: TypeScript; `tsx`), else JavaScript. A component without a script
that holds anything has nothing to outline (its sections neither: it has no language).

API:
- `COMPONENT_EXTENSIONS`, `is_component(path, language_id)`: which files hold scripts.
- `script_language(source)`: the grammar their scripts take, or None without one.
- `script_ranges(source)`: the byte ranges of the scripts, as tree-sitter takes them.
- `sections(source)`: the top-level `<template>`, `<script>` and `<style>` blocks (`Section`).
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import NamedTuple

import tree_sitter as ts

COMPONENT_EXTENSIONS = frozenset({".vue", ".svelte"})
_COMPONENT_IDS = frozenset({"vue", "svelte"})
_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.DOTALL | re.IGNORECASE)
_LANG = re.compile(rb"""\blang\s*=\s*["']?([\w-]+)""", re.IGNORECASE)
_TYPESCRIPT = frozenset({b"ts", b"typescript"})
_SECTION = re.compile(
    rb"^<(template|script|style)\b[^>]*>.*?^</\1\s*>", re.DOTALL | re.IGNORECASE | re.MULTILINE
)
"""A top-level block: its tags at the start of a line (a template's nested `<template #slot>`
tags are indented, and a closing tag at a line's start ends the block)."""


class Section(NamedTuple):
    """A top-level block of markup: its tag's name, the opening tag, and its bytes."""

    name: str
    opening: str
    start_byte: int
    end_byte: int


def is_component(path: str, language_id: str | None = None) -> bool:
    """Whether the file is a component whose scripts are outlined (by name or languageId)."""
    name = PurePath(path.split("::", 1)[0])  # a symbol address names its file first
    return language_id in _COMPONENT_IDS or name.suffix.lower() in COMPONENT_EXTENSIONS


def script_language(source: bytes) -> str | None:
    """The grammar of the component's scripts: the first block's `lang`; None without a
    script that holds anything (tree-sitter given no range would parse the whole file)."""
    first = next((m for m in _SCRIPT.finditer(source) if m.start(2) < m.end(2)), None)
    if first is None:
        return None
    lang = _LANG.search(first[1])
    value = lang[1].lower() if lang else b""
    if value == b"tsx":
        return "tsx"
    return "typescript" if value in _TYPESCRIPT else "javascript"


def script_ranges(source: bytes) -> list[ts.Range]:
    """The contents of the component's non-empty script blocks, in order."""
    ranges = []
    for match in _SCRIPT.finditer(source):
        start, end = match.span(2)
        if start < end:
            ranges.append(ts.Range(_point(source, start), _point(source, end), start, end))
    return ranges


def _point(source: bytes, byte: int) -> ts.Point:
    """Row and byte column of a byte offset, as tree-sitter counts them."""
    row = source.count(b"\n", 0, byte)
    return ts.Point(row, byte - (source.rfind(b"\n", 0, byte) + 1))


def sections(source: bytes) -> list[Section]:
    """The component's top-level `<template>`, `<script>` and `<style>` blocks, in order."""
    found = []
    for match in _SECTION.finditer(source):
        opening = source[match.start() : source.index(b">", match.start()) + 1]
        name = match[1].decode("ascii").lower()
        found.append(Section(name, opening.decode("utf-8", "replace"), *match.span()))
    return found
