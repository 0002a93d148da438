"""Vue and Svelte components: their <script> blocks are outlined in place by their grammar."""

from __future__ import annotations

from ephemeral_context.documents import ByteEdit
from ephemeral_context.syntax import IncrementalSyntax, outline_text
from ephemeral_context.syntax.symbols import LookupStatus, find_symbol
from ephemeral_context.syntax.synopsis import render_synopsis

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
    [_, _, symbol] = outline.symbols
    assert (symbol.qualname, symbol.start_line, symbol.end_line) == ("label", 6, 8)
    lookup = find_symbol(COMPONENT, outline, "label")
    assert lookup.status is LookupStatus.FOUND and lookup.found is not None
    assert lookup.found.text == "export function label(count) {\n  return `${count} items`;\n}"


def test_the_script_language_is_its_lang_and_svelte_counts_too() -> None:
    typed = COMPONENT.replace("<script>", '<script lang="ts">').replace("(count)", "(n: number)")
    assert outline_text(typed, "Count.vue").language == "typescript"
    assert outline_text(COMPONENT, "Count.svelte").language == "javascript"
    assert outline_text(COMPONENT, "untitled:1", language_id="vue").symbols[2].name == "label"
    assert outline_text(COMPONENT, "src/Count.vue::label").language == "javascript"


def test_markup_alone_is_no_definition() -> None:
    for empty in ("", "<script></script>\n", '<script setup lang="ts"></script>\n'):
        outline = outline_text(f"<template><p>hi</p></template>\n{empty}", "Empty.vue")
        assert outline.symbols == () and outline.fallback == "no grammar for this file type"
    # The template's own text is never parsed as script.
    markup = "<template>\n  <p>function fake() {}</p>\n</template>\n" + COMPONENT
    names = [s.name for s in outline_text(markup, "Two.vue").symbols]
    assert names == ["template", "template", "script", "label"]


SLOTTED = """<template>
  <Dialog>
    <template #content>
      <p>{{ label(2) }}</p>
    </template>
  </Dialog>
</template>

<script setup>
function label(count) {
  return `${count} items`;
}
</script>

<style lang="less" scoped>
p { color: red; }
</style>
"""


def test_a_components_blocks_are_sections_of_its_outline() -> None:
    """Markup has no definitions, but a quote of the template, of script code outside any
    definition, or a question about the styles, should bring back that block alone: each
    top-level block is one section, its nested slot templates inside it; a script's
    section holds its definitions without qualifying their names."""
    outline = outline_text(SLOTTED, "Dialog.vue")
    shown = [(s.kind, s.qualname, s.start_line, s.end_line, s.depth) for s in outline.symbols]
    assert shown == [
        ("section", "template", 1, 7, 0),
        ("section", "script", 9, 13, 0),
        ("function", "label", 10, 12, 0),
        ("section", "style", 15, 17, 0),
    ]
    lookup = find_symbol(SLOTTED, outline, "template")
    assert lookup.found is not None and lookup.found.text == SLOTTED[: SLOTTED.index("\n\n")]
    style = find_symbol(SLOTTED, outline, "style").found
    assert style is not None and style.text.startswith('<style lang="less" scoped>')
    assert render_synopsis(outline).splitlines()[1:] == [
        "  1-7 section <template>",
        "  9-13 section <script setup>",
        "  10-12 function label(count)",
        '  15-17 section <style lang="less" scoped>',
    ]


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


def test_blocks_end_where_their_own_closing_tag_is() -> None:
    """A one-line script ends at its own closing tag; an unindented slot template nests in
    the template; a multi-line opening tag is one line of the synopsis; a block in a
    comment is none."""
    source = (
        '<script setup>import X from "./x";</script>\n'
        '<template>\n<div>\n<template v-if="a">\n<X />\n</template>\n'
        "<p>b</p>\n</div>\n</template>\n"
        "<script>\nfunction go() {}\n</script>\n"
        '<style\n  scoped\n  lang="less">\np {}\n</style>\n'
        "<!-- <template>old</template> -->\n"
    )
    outline = outline_text(source, "X.vue")
    shown = [(s.qualname, s.start_line, s.end_line, s.signature) for s in outline.symbols]
    assert shown == [
        ("script", 1, 1, "<script setup>"),
        ("template", 2, 9, "<template>"),
        ("script", 10, 12, "<script>"),
        ("go", 11, 11, "function go()"),
        ("style", 13, 17, '<style scoped lang="less">'),
    ]


def test_a_quoted_attribute_may_hold_angle_brackets() -> None:
    """Vue's generic components: the script began inside `generic="..."`, after its `>`."""
    text = (
        '<script setup lang="ts" generic="T extends Record<string, number>">\n'
        "function pick(item: T): T {\n  return item;\n}\n</script>\n\n"
        '<template v-if="a > b">\n  <template #row="{ n }"><i v-if="n > 1" /></template>\n'
        "</template>\n"
    )
    outline = outline_text(text, "List.vue")
    assert not outline.has_errors
    assert [(s.qualname, s.start_line, s.end_line, s.signature) for s in outline.symbols] == [
        ("script", 1, 5, '<script setup lang="ts" generic="T extends Record<string, number>">'),
        ("pick", 2, 4, "function pick(item: T): T"),
        ("template", 7, 9, '<template v-if="a > b">'),
    ]


def test_thousands_of_tags_left_open_define_nothing() -> None:
    """An unclosed tag was searched for its `>` to the end of the file from each `<template`
    or `<script` after it: 20,000 of them took a minute."""
    for text in ["<template>" + "<template " * 20_000, "<script " * 20_000]:
        assert outline_text(text, "Junk.vue").symbols == ()


def test_thousands_of_blocks_get_their_own_lines() -> None:
    """Each block's line was counted from the start of the file: 20,000 scripts took 9 s
    (the bench's hard inputs time it). 5,000 here: tree-sitter's own parse over thousands of
    included ranges grows with their square, and 20,000 under a loaded machine's parallel
    tests went past the 2 s parse budget, which leaves no symbols."""
    text = "<script>\nvar a;\n</script>\n" * 5_000
    outline = outline_text(text, "Junk.vue")
    assert outline.fallback is None
    assert (outline.symbols[-1].start_line, outline.symbols[-1].end_line) == (14_998, 15_000)
