"""Bad input never hangs or crashes: partial outlines, or a fallback that says why."""

from __future__ import annotations

from ephemeral_context.syntax import IncrementalSyntax, Limits, outline_text, render_synopsis
from ephemeral_context.syntax.binding import Budget


def test_syntax_error_keeps_the_valid_parts() -> None:
    text = (
        "def good(a):\n    return a\n\n"
        "def broken(:\n    pass\n\n"
        "class Fine:\n    def method(self) -> int:\n        return 1\n"
    )
    outline = outline_text(text, "broken.py")
    assert outline.has_errors
    names = {s.qualname for s in outline.symbols}
    assert {"good", "Fine", "Fine.method"} <= names
    assert "has syntax errors" in render_synopsis(outline).splitlines()[0]


def test_minified_single_line_javascript() -> None:
    body = ";".join(f"function f{i}(a,b){{return a+b*{i}}}" for i in range(3000))
    text = f"var A=1;{body};class K{{m(){{return 1}}}}"
    outline = outline_text(text, "bundle.min.js")
    assert outline.lines == 1 and outline.fallback is None
    assert len(outline.symbols) == 3002
    assert outline.symbols[0].start_line == outline.symbols[-1].end_line == 1
    synopsis = render_synopsis(outline)
    assert "more definitions" in synopsis
    assert len(synopsis.splitlines()) <= 2002


def test_ten_megabyte_file_falls_back_quickly() -> None:
    text = "x = 1\n" * (10 * 1024 * 1024 // 6)
    outline = outline_text(text, "huge.py")
    assert outline.fallback is not None and "too large" in outline.fallback
    assert outline.symbols == ()
    assert outline.preview[:2] == ("x = 1", "x = 1")
    assert outline.lines == text.count("\n")


def test_parse_budget_gives_a_reason_instead_of_hanging() -> None:
    text = "def f(x):\n    return [" + "(" * 200 + "x" + ")" * 200 + "]\n"
    text *= 2000
    outline = outline_text(text, "slow.py", limits=Limits(budget=Budget(seconds=0.0)))
    assert outline.fallback is not None and "parsing took longer" in outline.fallback


def test_a_wide_error_node_falls_back_with_its_reason() -> None:
    """A run of unmatched brackets leaves one error node whose queries take quadratic time
    (a 1 MB line of `(` took most of an hour with the GIL held): refused before querying."""
    text = "def f():\n    pass\n" + "(\n" * 20_000
    outline = outline_text(text, "brackets.py")
    assert outline.fallback == (
        "the syntax tree has an error node of 20,001 parts, too many to query in time"
    )
    assert outline.symbols == () and outline.preview[:2] == ("def f():", "    pass")


def test_a_few_unmatched_brackets_still_outline_by_the_tree() -> None:
    text = "def f():\n    pass\n" + "(\n" * 1_000
    outline = outline_text(text, "brackets.py")
    assert outline.fallback is None and outline.has_errors
    assert [s.qualname for s in outline.symbols] == ["f"]


def test_an_edited_document_falls_back_on_a_wide_error_node_and_recovers() -> None:
    syntax = IncrementalSyntax("def f():\n    pass\n", "a.py")
    syntax.apply([], "def f():\n    pass\n" + "{\n" * 20_000)
    assert syntax.tree is None and syntax.outline.fallback is not None
    assert "error node" in syntax.outline.fallback
    syntax.apply([], "def g():\n    pass\n")
    assert [s.qualname for s in syntax.outline.symbols] == ["g"] and syntax.tree is not None


def test_a_long_run_of_comment_lines_is_outlined_by_the_tree() -> None:
    """tree-sitter-python's scanner is quadratic in a run of `#` lines: 8,000 took 12 s and
    the outline fell back; such runs are parsed as blank lines."""
    text = "def f():\n    pass\n" + "# commented out\n" * 8_000 + "class G:\n    pass\n"
    outline = outline_text(text, "commented.py")
    assert outline.fallback is None and not outline.has_errors
    assert [(s.qualname, s.start_line, s.end_line) for s in outline.symbols] == [
        ("f", 1, 2),
        ("G", 8_003, 8_004),
    ]


def test_a_definition_ends_before_trailing_comments_however_many() -> None:
    for run in (3, 150):
        body = "    # one\n" * run + "# two\n" * run
        outline = outline_text("def f():\n    pass\n" + body + "X = 1\n", "trailing.py")
        assert [(s.qualname, s.end_line) for s in outline.symbols] == [("f", 2), ("X", 3 + 2 * run)]


def test_deep_nesting() -> None:
    depth = 3000
    text = "x = " + "[" * depth + "]" * depth + "\n"
    text += "".join("    " * i + f"def f{i}():\n" for i in range(60)) + "    " * 60 + "pass\n"
    outline = outline_text(text, "deep.py")
    assert len(outline.symbols) == 60
    assert outline.symbols[-1].depth == 59
    assert outline.symbols[-1].qualname.count(".") == 59
    render_synopsis(outline)


def test_binary_file() -> None:
    text = "\x7fELF\x02\x01\x01\x00\x00\x00" + "\x00" * 100
    outline = outline_text(text, "a.out.py")
    assert outline.fallback == "binary file (contains NUL bytes)"
    assert outline.preview == ()
    assert "binary file" in render_synopsis(outline)


def test_invalid_utf8_decoded_with_replacements_counts_as_binary() -> None:
    raw = bytes(range(128, 256)) * 20
    outline = outline_text(raw.decode("utf-8", errors="replace"), "image.py")
    assert outline.fallback == "binary file (not valid UTF-8)"


def test_unknown_file_type_gets_first_lines() -> None:
    text = "".join(f"line {i}\n" for i in range(50))
    outline = outline_text(text, "notes.unknownext")
    assert outline.language is None and outline.fallback == "no grammar for this file type"
    assert outline.preview == tuple(f"line {i}" for i in range(10))


def test_empty_file() -> None:
    outline = outline_text("", "empty.py")
    assert outline.lines == 0 and outline.symbols == () and outline.fallback is None


def test_incremental_document_survives_turning_binary_and_back() -> None:
    syntax = IncrementalSyntax("def f():\n    pass\n", "a.py")
    changes = syntax.apply([], "\x00\x01binary")
    assert changes.removed and syntax.tree is None
    assert syntax.outline.fallback is not None
    changes = syntax.apply([], "def g():\n    pass\n")
    assert [s.qualname for s in syntax.outline.symbols] == ["g"]
    assert syntax.tree is not None


def test_a_markdown_file_without_its_last_newline_keeps_its_headings() -> None:
    """Markdown's block grammar reads a heading only with its line ended: `# Title` alone
    parsed as an error with no heading, and a last heading made the file 'has syntax errors'."""
    for text, headings in [
        ("# Title", ["Title"]),
        ("Title\n===", ["Title"]),
        ("# A\n\nx\n## B", ["A", "A.B"]),
    ]:
        outline = outline_text(text, "README.md")
        assert [s.qualname for s in outline.symbols] == headings
        assert not outline.has_errors
        assert outline.symbols[-1].end_byte == len(text)


def test_the_first_lines_are_numbered_as_the_file_counts_them() -> None:
    """str.splitlines also breaks at a form feed, U+2028 or U+001C: the preview said line 8
    of a 5-line file."""
    text = "one\x0cpage two\r\ntwo\nthree \u2028 still three\nfour\x1cfs\nfive\n"
    outline = outline_text(text, "notes.txt")
    assert outline.lines == 5
    assert outline.preview == (
        "one\x0cpage two",
        "two",
        "three \u2028 still three",
        "four\x1cfs",
        "five",
    )


def test_thousands_of_names_in_one_declaration_are_each_a_definition() -> None:
    """Each name's declarator was found by checking every other name: 4,000 took 12 s."""
    names = ", ".join(f"A{i} = {i}" for i in range(4000))
    outline = outline_text(f"class K {{ static final int {names}; }}\n", "K.java")
    assert len(outline.symbols) == 4001
    assert outline.symbols[-1].signature == "static final int A3999 = 3999"
