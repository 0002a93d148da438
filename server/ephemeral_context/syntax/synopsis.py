"""The synopsis: an Outline rendered as the few lines the model reads instead of the file.

One header line (path, language, lines, estimated tokens), then one line per definition,
indented by nesting: `  12-40 method Foo.bar(self, x: int) -> str`. The same Outline always
renders to the same text.

API:
- `render_synopsis(outline)`: the synopsis text.
- `symbol_line(symbol)`: one definition's line.
"""

from __future__ import annotations

import re

from ephemeral_context.syntax.outline import Outline, Symbol

# Declaration keywords that only repeat the kind shown in front of the name.
_KIND_KEYWORDS: dict[str, frozenset[str]] = {
    "function": frozenset({"def", "function", "func", "fn", "sub"}),
    "method": frozenset({"def", "function", "func", "fn"}),
    "constructor": frozenset({"def", "function"}),
    "class": frozenset({"class", "record"}),
    "struct": frozenset({"struct"}),
    "union": frozenset({"union"}),
    "enum": frozenset({"enum"}),
    "interface": frozenset({"interface"}),
    "trait": frozenset({"trait"}),
    "type": frozenset({"type"}),
    "module": frozenset({"mod", "module", "namespace"}),
    "impl": frozenset({"impl"}),
    "constant": frozenset({"const", "let", "var"}),
}
# Document outlines (Markdown, JSON, YAML, TOML) show an entry's own name: the indentation
# already shows its path, and a heading path repeated on every line makes them long.
_OWN_NAME_KINDS = frozenset({"heading", "key", "table"})
_QUOTES = ("'", '"')
_WORD = re.compile(r"\w+")
MAX_LINES = 2000


def header(outline: Outline) -> str:
    """`path (language, N lines, ~T tokens[, notes])`."""
    notes = [outline.language or "text", f"{outline.lines} lines", f"~{outline.tokens} tokens"]
    if outline.has_errors:
        notes.append("has syntax errors")
    if outline.fallback:
        notes.append(f"no outline: {outline.fallback}")
    return f"{outline.path} ({', '.join(notes)})"


def _without_keyword(word: str, noise: frozenset[str]) -> str:
    """The word without a leading keyword that only repeats the kind: `function*` -> `*`,
    `impl<T>` -> `<T>`, `def` -> ``."""
    keyword = _WORD.match(word)
    if keyword is None or keyword[0] not in noise:
        return word
    return word[keyword.end() :]


def symbol_line(symbol: Symbol) -> str:
    """`start-end kind Qualified.name(params) -> result`, indented two spaces per level."""
    before = symbol.signature[: symbol.name_at]
    after = symbol.signature[symbol.name_at + len(symbol.name) :]
    if before[-1:] in _QUOTES and after[:1] == before[-1:]:  # a quoted key: "name": value
        before, after = before[:-1], after[1:]
    noise = _KIND_KEYWORDS.get(symbol.kind, frozenset())
    words = [kept for word in before.split() if (kept := _without_keyword(word, noise))]
    joiner = " " if before[-1:].isspace() else ""  # keep `[table]` and `self.name` together
    if words[-1:] == ["*"]:
        joiner = ""  # `function* gen` reads `*gen`, like a generator method
    kept = " ".join(words)
    lines = f"{symbol.start_line}-{symbol.end_line}"
    name = symbol.name if symbol.kind in _OWN_NAME_KINDS else symbol.qualname
    shown = f"{kept}{joiner}{name}" if kept else name
    return f"{'  ' * (symbol.depth + 1)}{lines} {symbol.kind} {shown}{after}"


def render_synopsis(outline: Outline, max_lines: int = MAX_LINES) -> str:
    """The whole synopsis text; very long outlines end with a count of what was left out."""
    lines = [header(outline)]
    lines.extend(symbol_line(symbol) for symbol in outline.symbols[:max_lines])
    if len(outline.symbols) > max_lines:
        lines.append(f"  … {len(outline.symbols) - max_lines} more definitions")
    if outline.preview:
        lines.append(f"  first {len(outline.preview)} lines:")
        lines.extend(f"  {number:>5}| {text}" for number, text in enumerate(outline.preview, 1))
    return "\n".join(lines) + "\n"
