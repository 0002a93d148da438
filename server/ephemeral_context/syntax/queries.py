"""Finding, reading and compiling the grammars/<language>-tags.scm query files.

Queries are data: this module only knows where the files live and compiles each one once per
process. What the captures mean is decided in outline.py from capture-name prefixes.
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
ROLES = ("definition.", "name.definition.", "body.definition.", "scope.definition.")
_INHERITS = "; inherits:"
_REFINE = re.compile(r"^; refine: (\w+) in (\w+) -> (\w+)[ \t]*$", re.MULTILINE)
_REPO_GRAMMARS = Path(__file__).resolve().parents[3] / "grammars"


def grammars_dir() -> Traversable:
    """Where the .scm files are: inside the wheel, else the repo's grammars/ (editable install)."""
    packaged = resources.files("ephemeral_context").joinpath("grammars")
    return packaged if packaged.is_dir() else _REPO_GRAMMARS


@functools.cache
def query_source(language: str, purpose: str = "tags") -> str:
    """The text of grammars/<language>-<purpose>.scm, after the files it inherits.

    A first line `; inherits: javascript` puts javascript-<purpose>.scm in front, so a
    grammar that extends another (TypeScript, TSX) shares its patterns instead of copying them.
    """
    text = grammars_dir().joinpath(f"{language}-{purpose}.scm").read_text(encoding="utf-8")
    first_line = text.partition("\n")[0]
    if not first_line.startswith(_INHERITS):
        return text
    parents = [name.strip() for name in first_line.removeprefix(_INHERITS).split(",")]
    return "\n".join([*(query_source(parent, purpose) for parent in parents), text])


@functools.cache
def refinements(language: str, purpose: str = "tags") -> Mapping[tuple[str, str], str]:
    """`; refine: function in class -> method` lines: a kind that depends on the parent's kind.

    Deciding "a function directly in a class is a method" from the outline's nesting, rather
    than with a pattern rooted at the class, keeps each pattern rooted at the definition
    itself, so a query over an edited range does not match every sibling in the class.
    """
    rules = {(m[1], m[2]): m[3] for m in _REFINE.finditer(query_source(language, purpose))}
    for (kind, parent), result in rules.items():
        if not {kind, parent, result} <= KINDS:
            raise QueryFileError(f"{language}-{purpose}.scm: refine uses a kind not allowed")
    return rules


class QueryFileError(ValueError):
    """A grammars/*.scm file uses a capture name outside the vocabulary in grammars/README.md."""


@functools.cache
def compiled_query(language: str, purpose: str = "tags") -> ts.Query:
    """The query compiled against its grammar, checked and cached for the life of the process."""
    query = ts.Query(load_language(language), query_source(language, purpose))
    for index in range(query.capture_count):
        name = query.capture_name(index)
        if name.startswith("_"):
            continue
        role = next((role for role in ROLES if name.startswith(role)), None)
        if role is None or name.removeprefix(role) not in KINDS:
            raise QueryFileError(f"{language}-{purpose}.scm: capture @{name} is not allowed")
    return query
