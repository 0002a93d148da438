"""Symbol-level hydration: references resolve to exact text, candidates, or close names."""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.syntax import (
    LookupStatus,
    address,
    find_symbol,
    outline_text,
    split_reference,
)

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "syntax" / "samples"


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()))
def test_every_symbol_round_trips_through_its_address(sample: str) -> None:
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    outline = outline_text(text, sample)
    lines = text.split("\n")
    for symbol in outline.symbols:
        lookup = find_symbol(text, outline, address(symbol, outline))
        assert lookup.status is LookupStatus.FOUND, (sample, symbol.qualname, lookup)
        assert lookup.found is not None and lookup.found.symbol == symbol
        found = lookup.found
        assert found.text == "\n".join(lines[found.start_line - 1 : found.end_line])
        assert found.end_line == symbol.end_line and found.start_line <= symbol.start_line
        assert symbol.name in found.text


def test_decorators_and_doc_comments_come_with_the_text() -> None:
    text = (SAMPLES / "router.js").read_text(encoding="utf-8")
    lookup = find_symbol(text, outline_text(text, "router.js"), "segments")
    assert lookup.found is not None
    assert lookup.found.text.startswith("/**\n * Splits a path")
    assert lookup.found.text.rstrip().endswith("}")
    text = (SAMPLES / "inventory.py").read_text(encoding="utf-8")
    lookup = find_symbol(text, outline_text(text, "inventory.py"), "Item.empty")
    assert lookup.found is not None
    assert lookup.found.text.lstrip().startswith("@property")
    assert (lookup.found.start_line, lookup.found.end_line) == (23, 25)


def test_each_name_of_a_declaration_hydrates_the_whole_declaration() -> None:
    """`int X = 1, Y = 2;` defines two constants with one span: neither encloses the other."""
    declaration = "    /** Limits. */\n    static final int X = 1,\n        Y = 2;"
    text = f"class K {{\n{declaration}\n}}\n"
    outline = outline_text(text, "K.java")
    assert [(s.qualname, s.depth) for s in outline.symbols] == [("K", 0), ("K.X", 1), ("K.Y", 1)]
    for name in ("K.X", "K.Y", "Y"):
        lookup = find_symbol(text, outline, name)
        assert lookup.found is not None, lookup
        assert lookup.found.text == declaration


@pytest.mark.parametrize("path", ["c.ts", "c.tsx"])
def test_a_typescript_members_decorators_come_with_it(path: str) -> None:
    """TypeScript's grammar makes a class member's decorators children of the class body,
    outside the member's node; hydrating the member still returns them."""
    member = "  /** Handles clicks. */\n  @HostListener('click', ['$event'])\n  @Memo()\n"
    member += "  onClick(event: Event): void {\n    this.count++;\n  }"
    text = f"class Card {{\n  @Input() count = 0;\n\n{member}\n}}\n"
    outline = outline_text(text, path)
    assert [s.qualname for s in outline.symbols] == ["Card", "Card.onClick"]
    lookup = find_symbol(text, outline, "Card.onClick")
    assert lookup.found is not None, lookup
    assert lookup.found.text == member


def test_overloads_are_ambiguous_until_numbered() -> None:
    text = (SAMPLES / "inventory.py").read_text(encoding="utf-8")
    outline = outline_text(text, "inventory.py")
    lookup = find_symbol(text, outline, "Inventory.get")
    assert lookup.status is LookupStatus.AMBIGUOUS
    assert [c.start_line for c in lookup.candidates] == [34, 36, 38]
    third = find_symbol(text, outline, "Inventory.get#3")
    assert third.found is not None and "default or Item(sku)" in third.found.text
    assert find_symbol(text, outline, "Inventory.get#4").status is LookupStatus.UNKNOWN


def test_short_and_nested_names_resolve() -> None:
    text = (SAMPLES / "inventory.py").read_text(encoding="utf-8")
    outline = outline_text(text, "inventory.py")
    nested = find_symbol(text, outline, "Inventory.reserve.remaining")
    assert nested.found is not None and nested.found.start_line == 47
    short = find_symbol(text, outline, "needs_reorder")
    assert short.found is not None
    assert short.found.symbol.qualname == "Inventory.Policy.needs_reorder"


def test_short_name_defined_twice_lists_candidates() -> None:
    text = (SAMPLES / "shapes.rs").read_text(encoding="utf-8")
    lookup = find_symbol(text, outline_text(text, "shapes.rs"), "area")
    assert lookup.status is LookupStatus.AMBIGUOUS
    assert {c.qualname for c in lookup.candidates} == {"Shape.area", "Circle.area", "Polygon.area"}


def test_unknown_name_suggests_the_closest() -> None:
    text = (SAMPLES / "inventory.py").read_text(encoding="utf-8")
    lookup = find_symbol(text, outline_text(text, "inventory.py"), "Inventory.reserv")
    assert lookup.status is LookupStatus.UNKNOWN
    assert lookup.suggestions[0] == "Inventory.reserve"


def test_split_reference() -> None:
    assert split_reference("src/a.py::Foo.bar") == ("src/a.py", "Foo.bar")
    assert split_reference("src/a.py") == ("src/a.py", None)
    assert split_reference("a.cpp::ns::f") == ("a.cpp", "ns::f")


@pytest.mark.parametrize("ordinal", ["²", "9" * 5000])
def test_an_ordinal_int_refuses_is_no_crash(ordinal: str) -> None:
    """`²` is a digit to str.isdigit but not to int(), which also refuses 4,301 digits."""
    text = "def f():\n    return 1\n\ndef f():\n    return 2\n"
    lookup = find_symbol(text, outline_text(text, "a.py"), f"f#{ordinal}")
    assert lookup.found is None


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("a.md", "# Guide\n\n## C# support\n\n## Issue #12\n\nyes\n\n## Issue #12\n\nno\n"),
        ("a.json", '{"a#b": 1, "c": {"d#1": 2}}\n'),
        ("a.yaml", "a#b: 1\nc#: 2\n"),
    ],
)
def test_a_name_holding_a_hash_round_trips_through_its_address(path: str, text: str) -> None:
    """`#` starts an ordinal (`Name#2`) only after a name that matches nothing as written."""
    outline = outline_text(text, path)
    assert any("#" in symbol.name for symbol in outline.symbols)
    for symbol in outline.symbols:
        lookup = find_symbol(text, outline, address(symbol, outline))
        assert lookup.found is not None and lookup.found.symbol == symbol, lookup


@pytest.mark.parametrize(("path", "doc"), [("a.py", "# Doubles."), ("a.rs", "/// Doubles.")])
def test_a_doc_comment_after_a_byte_order_mark_comes_with_the_text(path: str, doc: str) -> None:
    """str.strip keeps U+FEFF, so the first line's comment read as code, not as a doc."""
    text = f"\ufeff{doc}\n" + ("def f(x): return 2 * x\n" if path == "a.py" else "fn f() {}\n")
    lookup = find_symbol(text, outline_text(text, path), "f")
    assert lookup.found is not None and lookup.found.start_line == 1, lookup
    assert lookup.found.text.startswith(f"\ufeff{doc}\n")


def test_every_candidate_of_thousands_gets_its_ordinal_address() -> None:
    """Each address scanned every symbol: 20,000 same-named definitions took 36 s to list."""
    text = "def f(): pass\n" * 20_000
    outline = outline_text(text, "twins.py")
    lookup = find_symbol(text, outline, "f")
    addresses = [address(candidate, outline) for candidate in lookup.candidates]
    assert addresses[0] == "f#1" and addresses[-1] == "f#20000"


@pytest.mark.parametrize(
    ("path", "text", "name"),
    [
        ("a.js", "const AREA = WIDTH\n  * HEIGHT;", "AREA"),
        ("a.c", "static const int AREA = W\n    /* cm */ * H;", "AREA"),
        ("a.py", 'def usage():\n    return """\n# Usage"""', "usage"),
    ],
)
def test_a_last_line_that_only_looks_like_a_comment_is_kept(
    path: str, text: str, name: str
) -> None:
    """Trailing comment lines are cut off a definition; code that starts like one is not."""
    outline = outline_text(text + "\n", path)
    lookup = find_symbol(text, outline, name)
    assert lookup.found is not None and lookup.found.text == text
