"""Python outlines agree with the standard library's own parser on real stdlib files.

For every function and class `ast` finds, the outline has a symbol with the same qualified
name and line range (decorators included in the range, as hydration returns them).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from ephemeral_context.syntax import Outline, outline_text

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
CODE_KINDS = {"class", "function", "method", "constructor"}


def _ast_definitions(tree: ast.Module) -> set[tuple[str, int, int]]:
    found: set[tuple[str, int, int]] = set()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = f"{prefix}.{child.name}" if prefix else child.name
                start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                found.add((qualname, start, child.end_lineno or child.lineno))
                visit(child, qualname)
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _outline_definitions(outline: Outline) -> set[tuple[str, int, int]]:
    return {(s.qualname, s.start_line, s.end_line) for s in outline.symbols if s.kind in CODE_KINDS}


def _corpus(limit: int) -> list[Path]:
    files = sorted(STDLIB.glob("*.py")) + sorted(STDLIB.glob("*/*.py"))
    return [p for p in files if "site-packages" not in p.parts][:limit]


def test_every_ast_definition_is_in_the_outline() -> None:
    checked, with_errors, definitions = 0, 0, 0
    missing: list[tuple[str, str, int, int]] = []
    for path in _corpus(400):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # test data with deliberate syntax errors
        outline = outline_text(text, str(path))
        if outline.has_errors:  # tree-sitter grammar gap; counted, not compared
            with_errors += 1
            continue
        wanted = _ast_definitions(tree)
        got = _outline_definitions(outline)
        missing.extend((path.name, *item) for item in sorted(wanted - got))
        checked += 1
        definitions += len(wanted)
    assert checked >= 300 and definitions >= 5000
    assert with_errors <= checked // 100
    assert missing == []


def test_the_outline_invents_no_definitions() -> None:
    for path in _corpus(120):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        outline = outline_text(text, str(path))
        if outline.has_errors:
            continue
        got = _outline_definitions(outline)
        assert got <= _ast_definitions(tree), path.name
