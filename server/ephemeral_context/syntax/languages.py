"""Which grammar a file gets: detection by LSP languageId or file name, and grammar loading.

Every supported language is one `LanguageSpec` row in `LANGUAGES`; detection tables are built
from those rows, so adding a language means adding one row and one grammars/<name>-tags.scm.

API:
- `detect_language(path, language_id)`, `spec_for(language)`, `LANGUAGES`: which grammar;
  `LANGUAGE_IDS`: the LSP language ids that name one.
- `load_language(language)`: the grammar, loaded once.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter as ts


@dataclass(frozen=True)
class LanguageSpec:
    """One language: its grammar wheel entry point and how files announce themselves."""

    name: str
    module: str
    function: str
    extensions: tuple[str, ...]
    language_ids: tuple[str, ...]
    filenames: tuple[str, ...] = ()
    # Line prefixes of comments that document the definition below them, and of attributes
    # or decorators the grammar puts outside its node (hydration keeps them): Rust's `#[`,
    # C#'s `[`, the decorators of a TypeScript class member (the class body's children).
    doc_prefixes: tuple[str, ...] = ()
    # The grammar reads the last line only once it ends: Markdown's block grammar makes a
    # file `# Title` without its final newline an error, with no heading.
    ends_last_line: bool = False
    # The grammar's scanner takes time quadratic in a run of full-line `#` comments
    # (tree-sitter-python: 2,000 lines 0.7 s, 4,000 past the 2 s budget): long runs are
    # parsed as blank lines (outline.parsed_source).
    slow_comment_runs: bool = False


_C_DOCS = ("//", "/*", "*", "*/")

LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", "tree_sitter_python", "language", (".py", ".pyi", ".pyw"),
                 ("python",), doc_prefixes=("#",), slow_comment_runs=True),
    LanguageSpec("javascript", "tree_sitter_javascript", "language",
                 (".js", ".mjs", ".cjs", ".jsx"), ("javascript", "javascriptreact"),
                 doc_prefixes=_C_DOCS),
    LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript",
                 (".ts", ".mts", ".cts"), ("typescript",), doc_prefixes=(*_C_DOCS, "@")),
    LanguageSpec("tsx", "tree_sitter_typescript", "language_tsx", (".tsx",),
                 ("typescriptreact",), doc_prefixes=(*_C_DOCS, "@")),
    LanguageSpec("go", "tree_sitter_go", "language", (".go",), ("go",), doc_prefixes=("//",)),
    LanguageSpec("rust", "tree_sitter_rust", "language", (".rs",), ("rust",),
                 doc_prefixes=(*_C_DOCS, "#[")),
    LanguageSpec("java", "tree_sitter_java", "language", (".java",), ("java",),
                 doc_prefixes=_C_DOCS),
    LanguageSpec("c", "tree_sitter_c", "language", (".c", ".h"), ("c",), doc_prefixes=_C_DOCS),
    LanguageSpec("cpp", "tree_sitter_cpp", "language",
                 (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp"),
                 ("cpp", "cuda-cpp"), doc_prefixes=_C_DOCS),
    LanguageSpec("csharp", "tree_sitter_c_sharp", "language", (".cs",), ("csharp",),
                 doc_prefixes=(*_C_DOCS, "[")),
    LanguageSpec("ruby", "tree_sitter_ruby", "language", (".rb", ".rake", ".gemspec"),
                 ("ruby",), ("Rakefile", "Gemfile"), doc_prefixes=("#",)),
    LanguageSpec("php", "tree_sitter_php", "language_php", (".php", ".phtml"), ("php",),
                 doc_prefixes=(*_C_DOCS, "#")),
    LanguageSpec("bash", "tree_sitter_bash", "language", (".sh", ".bash"),
                 ("shellscript", "bash", "sh"), (".bashrc", ".bash_profile", ".profile"),
                 doc_prefixes=("#",)),
    LanguageSpec("markdown", "tree_sitter_markdown", "language", (".md", ".markdown"),
                 ("markdown",), ends_last_line=True),
    LanguageSpec("json", "tree_sitter_json", "language", (".json", ".jsonc"), ("json", "jsonc")),
    LanguageSpec("yaml", "tree_sitter_yaml", "language", (".yaml", ".yml"), ("yaml",)),
    LanguageSpec("toml", "tree_sitter_toml", "language", (".toml",), ("toml",)),
)  # fmt: skip

_BY_NAME = {spec.name: spec for spec in LANGUAGES}
_BY_LANGUAGE_ID = {lid: spec.name for spec in LANGUAGES for lid in spec.language_ids}
LANGUAGE_IDS = frozenset(_BY_LANGUAGE_ID)
_BY_EXTENSION = {ext: spec.name for spec in LANGUAGES for ext in spec.extensions}
_BY_FILENAME = {fname: spec.name for spec in LANGUAGES for fname in spec.filenames}


def detect_language(path: str, language_id: str | None = None) -> str | None:
    """Our language name for a file: the editor's languageId wins, then the file name."""
    if language_id and language_id in _BY_LANGUAGE_ID:
        return _BY_LANGUAGE_ID[language_id]
    name = PurePath(path.split("::", 1)[0]).name
    if name in _BY_FILENAME:
        return _BY_FILENAME[name]
    return _BY_EXTENSION.get(PurePath(name).suffix.lower())


def spec_for(language: str) -> LanguageSpec:
    """The row for a language name returned by `detect_language`."""
    return _BY_NAME[language]


@functools.cache
def load_language(language: str) -> ts.Language:
    """The compiled grammar from its official wheel, loaded once per process."""
    spec = _BY_NAME[language]
    module = importlib.import_module(spec.module)
    return ts.Language(getattr(module, spec.function)())
