"""Vue and Svelte components: their <script> blocks are outlined in place by their grammar."""

from __future__ import annotations

from ephemeral_context.documents import ByteEdit
from ephemeral_context.syntax import IncrementalSyntax, outline_text
from ephemeral_context.syntax.symbols import LookupStatus, find_symbol

COMPONENT = """<template>
  <p>{{ label }}</p>
</template>

<script>
export function label(count) {
  return `${count} items`;
}
</script>
"""


def test_a_components_script_is_outlined_at_the_files_own_lines() -> None:
    outline = outline_text(COMPONENT, "src/Count.vue")
    assert outline.language == "javascript" and outline.fallback is None
    [symbol] = outline.symbols
    assert (symbol.qualname, symbol.start_line, symbol.end_line) == ("label", 6, 8)
    lookup = find_symbol(COMPONENT, outline, "label")
    assert lookup.status is LookupStatus.FOUND and lookup.found is not None
    assert lookup.found.text == "export function label(count) {\n  return `${count} items`;\n}"


def test_the_script_language_is_its_lang_and_svelte_counts_too() -> None:
    typed = COMPONENT.replace("<script>", '<script lang="ts">').replace("(count)", "(n: number)")
    assert outline_text(typed, "Count.vue").language == "typescript"
    assert outline_text(COMPONENT, "Count.svelte").language == "javascript"
    assert outline_text(COMPONENT, "untitled:1", language_id="vue").symbols[0].name == "label"
    assert outline_text(COMPONENT, "src/Count.vue::label").language == "javascript"


def test_markup_alone_is_no_definition() -> None:
    for empty in ("", "<script></script>\n", '<script setup lang="ts"></script>\n'):
        outline = outline_text(f"<template><p>hi</p></template>\n{empty}", "Empty.vue")
        assert outline.symbols == () and outline.fallback == "no grammar for this file type"
    # The template's own text is never parsed as script.
    markup = "<template>\n  <p>function fake() {}</p>\n</template>\n" + COMPONENT
    assert [s.name for s in outline_text(markup, "Two.vue").symbols] == ["label"]


def test_an_edit_that_changes_the_lang_reparses_with_the_other_grammar() -> None:
    syntax = IncrementalSyntax(COMPONENT, "Count.vue")
    assert syntax.language == "javascript"
    start = COMPONENT.index("<script>") + len("<script")
    new = COMPONENT[:start] + ' lang="ts"' + COMPONENT[start:]
    row = COMPONENT.count("\n", 0, start)
    column = start - (COMPONENT.rfind("\n", 0, start) + 1)
    edit = ByteEdit(start, start, start + 10, (row, column), (row, column), (row, column + 10))
    syntax.apply([edit], new)
    assert syntax.language == "typescript"
    assert syntax.outline == outline_text(new, "Count.vue")
