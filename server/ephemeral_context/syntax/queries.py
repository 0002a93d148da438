"""Finding, reading and compiling the grammars/<language>-tags.scm query files.

Queries are data: this module only knows where the files live and compiles each one once per
process. What the captures mean is decided in outline.py from capture-name prefixes.

API:
- `compiled_query(language)`, `compiled_top_level_query(language)`: the compiled queries.
- `query_source(language)`, `refinements(language)`, `grammars_dir()`: the files.
- `KINDS`, `FILE`, `QueryFileError`: the capture vocabulary and its violations; `SECTION`,
  the one kind no query captures.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import tree_sitter as ts

from ephemeral_context.syntax.languages import load_language

KINDS = frozenset(
    {
        "class", "interface", "struct", "union", "enum", "trait", "impl", "module",
        "function", "method", "constructor", "macro", "type", "constant",
        "heading", "key", "table",
    }
)  # fmt: skip
ROLES = (
    "definition.",
    "name.definition.",
    "body.definition.",
    "scope.definition.",
    "omit.definition.",
)
# The parent kind a `; refine:` line uses for a definition with no enclosing definition.
FILE = "file"
SECTION = "section"
"""The kind of a component's top-level blocks (embedded.py): found without a query."""
_INHERITS = "; inherits:"
_TOP_LEVEL = "\n; top-level:"
_REFINE = re.compile(r"^; refine: (\w+) in (\w+) -> (\w+)[ \t]*$", re.MULTILINE)
_REPO_GRAMMARS = Path(__file__).resolve().parents[3] / "grammars"


def grammars_dir() -> Traversable:
    """Where the .scm files are: inside the wheel, else the repo's grammars/ (editable install)."""
    packaged = resources.files("ephemeral_context").joinpath("grammars")
    return packaged if packaged.is_dir() else _REPO_GRAMMARS


def _lineage(language: str, purpose: str) -> list[str]:
    """The texts of grammars/<language>-<purpose>.scm and the files it inherits, parents first.

    A first line `; inherits: javascript` puts javascript-<purpose>.scm in front, so a
    grammar that extends another (TypeScript, TSX) shares its patterns instead of copying them.
    """
    text = grammars_dir().joinpath(f"{language}-{purpose}.scm").read_text(encoding="utf-8")
    first_line = text.partition("\n")[0]
    if not first_line.startswith(_INHERITS):
        return [text]
    parents = [name.strip() for name in first_line.removeprefix(_INHERITS).split(",")]
    return [*(t for parent in parents for t in _lineage(parent, purpose)), text]


@functools.cache
def query_source(language: str, purpose: str = "tags") -> str:
    """The whole query text of a language, inherited files first."""
    return "\n".join(_lineage(language, purpose))


def _sections(language: str, purpose: str) -> tuple[str, str]:
    """(patterns matched anywhere, patterns matched only at the root's children).

    In each file, patterns after a `; top-level:` line are the second kind: a module-level
    constant is then matched at the statement itself instead of by a pattern rooted at the
    module, which a query over an edited range would re-match for every statement.
    """
    anywhere, top_level = [], []
    for text in _lineage(language, purpose):
        before, _marker, after = text.partition(_TOP_LEVEL)
        anywhere.append(before)
        top_level.append(after)
    return "\n".join(anywhere), "\n".join(top_level)


@functools.cache
def refinements(language: str, purpose: str = "tags") -> Mapping[tuple[str, str], str]:
    """`; refine: function in class -> method` lines: a kind that depends on the parent's kind.

    Deciding "a function directly in a class is a method" from the outline's nesting, rather
    than with a pattern rooted at the class, keeps each pattern rooted at the definition
    itself, so a query over an edited range does not match every sibling in the class.
    A definition at the top of the file has the parent kind `file` (FILE).
    """
    rules = {(m[1], m[2]): m[3] for m in _REFINE.finditer(query_source(language, purpose))}
    for (kind, parent), result in rules.items():
        if not ({kind, result} <= KINDS and parent in KINDS | {FILE}):
            raise QueryFileError(f"{language}-{purpose}.scm: refine uses a kind not allowed")
    return rules


class QueryFileError(ValueError):
    """A grammars/*.scm file uses a capture name outside the vocabulary in grammars/README.md."""


@functools.cache
def compiled_query(language: str, purpose: str = "tags") -> ts.Query:
    """The patterns matched anywhere, compiled once per process and checked."""
    return _checked(ts.Query(load_language(language), _sections(language, purpose)[0]), language)


@functools.cache
def compiled_top_level_query(language: str, purpose: str = "tags") -> ts.Query | None:
    """The `; top-level:` patterns (matched only at the root's children), if the file has any."""
    query = ts.Query(load_language(language), _sections(language, purpose)[1])
    return _checked(query, language) if query.pattern_count else None


def _checked(query: ts.Query, language: str) -> ts.Query:
    for index in range(query.capture_count):
        name = query.capture_name(index)
        if name.startswith("_"):
            continue
        role = next((role for role in ROLES if name.startswith(role)), None)
        if role is None or name.removeprefix(role) not in KINDS:
            raise QueryFileError(f"{language}: capture @{name} is not allowed")
    return query
