"""The query files: every language loads, compiles, and keeps to the documented captures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ephemeral_context.syntax import LANGUAGES, detect_language, outline_text
from ephemeral_context.syntax.queries import KINDS, QueryFileError, compiled_query, grammars_dir
from ephemeral_context.syntax.synopsis import symbol_line

README = Path(__file__).resolve().parents[3] / "grammars" / "README.md"


@pytest.mark.parametrize("language", [spec.name for spec in LANGUAGES])
def test_query_compiles_and_captures_definitions(language: str) -> None:
    query = compiled_query(language)
    names = {query.capture_name(i) for i in range(query.capture_count)}
    assert any(name.startswith("definition.") for name in names)
    assert any(name.startswith("name.definition.") for name in names)


def test_readme_lists_exactly_the_allowed_kinds() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("Allowed kinds:", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z]+)`", section)) == KINDS


def test_every_scm_file_belongs_to_a_language() -> None:
    files = {p.name for p in grammars_dir().iterdir() if p.name.endswith(".scm")}
    assert files == {f"{spec.name}-tags.scm" for spec in LANGUAGES}


def test_unknown_capture_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ephemeral_context.syntax import queries

    (tmp_path / "python-tags.scm").write_text(
        "(function_definition name: (identifier) @name.definition.gadget) @definition.gadget\n"
    )
    monkeypatch.setattr(queries, "grammars_dir", lambda: tmp_path)
    queries.query_source.cache_clear()
    queries.compiled_query.cache_clear()
    try:
        with pytest.raises(QueryFileError, match="gadget"):
            compiled_query("python")
    finally:
        queries.query_source.cache_clear()
        queries.compiled_query.cache_clear()


@pytest.mark.parametrize(
    ("path", "language_id", "expected"),
    [
        ("src/app.py", None, "python"),
        ("web/App.tsx", None, "tsx"),
        ("lib/x.ts", None, "typescript"),
        ("main.go", None, "go"),
        ("Gemfile", None, "ruby"),
        ("include/ring.H", None, "c"),
        ("script", "shellscript", "bash"),
        ("notes.txt", "python", "python"),
        ("notes.txt", None, None),
        ("a.py::Foo.bar", None, "python"),
        ("weird.xyz", "unknown-language", None),
    ],
)
def test_detect_language(path: str, language_id: str | None, expected: str | None) -> None:
    assert detect_language(path, language_id) == expected


def test_refine_rules_are_read_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ephemeral_context.syntax import queries

    assert queries.refinements("python") == {
        ("function", "class"): "method",
        ("constructor", "file"): "function",
        ("constructor", "function"): "function",
        ("constructor", "method"): "function",
        ("constructor", "constructor"): "function",
    }
    (tmp_path / "python-tags.scm").write_text("; refine: function in class -> gizmo\n")
    monkeypatch.setattr(queries, "grammars_dir", lambda: tmp_path)
    queries.query_source.cache_clear()
    queries.refinements.cache_clear()
    try:
        with pytest.raises(QueryFileError, match="refine"):
            queries.refinements("python")
    finally:
        queries.query_source.cache_clear()
        queries.refinements.cache_clear()


def test_top_level_patterns_match_only_at_the_root() -> None:
    from ephemeral_context.syntax import outline_text

    text = "X = 1\ndef f():\n    Y = 2\nclass C:\n    Z = 3\nif True:\n    W = 4\nV: int = 5\n"
    constants = [s.qualname for s in outline_text(text, "m.py").symbols if s.kind == "constant"]
    assert constants == ["X", "V"]


def test_a_json_key_with_escapes_is_one_definition() -> None:
    """The grammar splits a key's text around each escape: `"caf\\u00e9"` was a key `caf` and
    `"a\\"q"` two keys, `a` (a twin of the real `a`) and `q`."""
    text = '{"a": 1, "a\\"q": 2, "caf\\u00e9": 3}\n'
    outline = outline_text(text, "strings.json")
    assert [s.qualname for s in outline.symbols] == ["a", '"a\\"q"', '"caf\\u00e9"']
    assert [symbol_line(s).strip() for s in outline.symbols][1] == '1-1 key "a\\"q": 2'
