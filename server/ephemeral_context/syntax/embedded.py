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
- `COMPONENT_EXTENSIONS`, `COMPONENT_IDS`, `is_component(path, language_id)`: which files
  hold scripts.
- `script_language(source)`: the grammar their scripts take, or None without one.
- `script_ranges(source, blocks)`: the byte ranges of the scripts among a component's
  `blocks`, as tree-sitter takes them.
- `points(source, offsets)`: rows and columns of many byte offsets.
- `sections(source)`: the top-level `<template>`, `<script>` and `<style>` blocks (`Section`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import NamedTuple

import tree_sitter as ts

COMPONENT_EXTENSIONS = frozenset({".vue", ".svelte"})
COMPONENT_IDS = frozenset({"vue", "svelte"})
_LANG = re.compile(rb"""\blang\s*=\s*["']?([\w-]+)""", re.IGNORECASE)
_TYPESCRIPT = frozenset({b"ts", b"typescript"})
_ATTRIBUTES = rb"""(?:[^<>"']|"[^"]*"|'[^']*')*"""
"""A tag's attributes: a quoted value may hold `>` (`generic="T extends Map<K, V>"`); an
unquoted `<` ends the tag, so a tag left open is not searched to the end of the file from
every later `<` (quadratic time)."""
_OPENING = re.compile(rb"<!--|<(template|script|style)\b" + _ATTRIBUTES + rb">", re.IGNORECASE)
"""Where a top-level block opens (or a comment that may hide one starts)."""
_TEMPLATE_TAG = re.compile(rb"<(/?)template\b" + _ATTRIBUTES + rb"?(/?)>", re.IGNORECASE)
_CLOSING = {
    name: re.compile(rb"</" + name + rb"\s*>", re.IGNORECASE) for name in (b"script", b"style")
}


class Section(NamedTuple):
    """A top-level block of markup: its tag's name, its opening tag (whitespace squashed),
    its bytes, and the bytes of its content (between the tags)."""

    name: str
    opening: str
    start_byte: int
    end_byte: int
    content_start: int
    content_end: int


def is_component(path: str, language_id: str | None = None) -> bool:
    """Whether the file is a component whose scripts are outlined (by name or languageId)."""
    name = PurePath(path.split("::", 1)[0])  # a symbol address names its file first
    return language_id in COMPONENT_IDS or name.suffix.lower() in COMPONENT_EXTENSIONS


def script_language(source: bytes) -> str | None:
    """The grammar of the component's scripts: the first block's `lang`; None without a
    script that holds anything (tree-sitter given no range would parse the whole file)."""
    first = next(iter(_scripts(sections(source))), None)
    if first is None:
        return None
    lang = _LANG.search(first.opening.encode("utf-8"))
    value = lang[1].lower() if lang else b""
    if value == b"tsx":
        return "tsx"
    return "typescript" if value in _TYPESCRIPT else "javascript"


def script_ranges(source: bytes, blocks: Sequence[Section]) -> list[ts.Range]:
    """The contents of the non-empty script blocks among `blocks` (`sections(source)`,
    which the caller also outlines), in order."""
    scripts = _scripts(blocks)
    at = points(source, [offset for s in scripts for offset in (s.content_start, s.content_end)])
    return [
        ts.Range(start, end, s.content_start, s.content_end)
        for s, start, end in zip(scripts, at[::2], at[1::2], strict=True)
    ]


def _scripts(blocks: Sequence[Section]) -> list[Section]:
    """The script blocks that hold anything."""
    return [s for s in blocks if s.name == "script" and s.content_start < s.content_end]


def points(source: bytes, offsets: Iterable[int]) -> list[ts.Point]:
    """Row and byte column of each of the ascending byte `offsets`, as tree-sitter counts
    them, in one pass (counting from the start for each took quadratic time)."""
    found, row, at, line_start = [], 0, 0, 0
    for byte in offsets:
        if (newlines := source.count(b"\n", at, byte)) > 0:
            row += newlines
            line_start = source.rfind(b"\n", at, byte) + 1
        found.append(ts.Point(row, byte - line_start))
        at = byte
    return found


def sections(source: bytes) -> list[Section]:
    """The component's top-level `<template>`, `<script>` and `<style>` blocks, in order: a
    block opens after the last one closed (outside comments); a script or a style ends at
    its first closing tag, a template at the one that closes it (slots nest templates)."""
    found = []
    at = 0
    while (opening := _OPENING.search(source, at)) is not None:
        if opening[1] is None:  # a comment: what it holds is no block
            comment_end = source.find(b"-->", opening.end())
            at = len(source) if comment_end < 0 else comment_end + 3
            continue
        name = opening[1].decode("ascii").lower()
        closing = _closing(source, name, opening.end())
        if closing is None:  # never closed: no block, and nothing after it either
            break
        content_end, end = closing
        tag = source[opening.start() : opening.end()].decode("utf-8", "replace")
        found.append(
            Section(name, " ".join(tag.split()), opening.start(), end, opening.end(), content_end)
        )
        at = end
    return found


def _closing(source: bytes, name: str, start: int) -> tuple[int, int] | None:
    """Where the block `name` whose content starts at `start` closes: (the closing tag's
    first byte, its end); None if it never does."""
    if name != "template":
        close = _CLOSING[name.encode()].search(source, start)
        return close.span() if close else None
    depth = 1
    for tag in _TEMPLATE_TAG.finditer(source, start):
        if tag[1]:
            depth -= 1
            if depth == 0:
                return tag.span()
        elif not tag[2]:  # `<template ... />` opens nothing
            depth += 1
    return None
