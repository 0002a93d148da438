"""A file's definitions as data: tags-query matches -> Definitions -> nested, named Symbols.

Only capture-name prefixes are interpreted here (see grammars/README.md):
`@definition.<kind>` is the whole definition, `@name.definition.<kind>` its name,
`@body.definition.<kind>` where its signature ends, `@scope.definition.<kind>` the owner of a
definition written outside it (a Go method's receiver type), `@omit.definition.<kind>` header
text left out of the signature. When several patterns capture
definitions with the same name node, they describe one definition: the widest span wins and
the kind comes from the pattern written last in the file. Definitions with different names
and one span (`int x = 1, y = 2;`) are siblings, each with its own declarator in its signature.

API:
- `outline_text(text, path, ...)`: an `Outline` of `Symbol`s, or why none (never raises);
  `outline_language(text, path, ...)`: the grammar it gets.
- `Symbol`, `SymbolId`, `Definition`, `Limits`: the data.
- `analyse`, `find_definitions`, `nest`, `qualify`, `outline_order`, `encloses`,
  `make_outline`, `new_parser`, `parsed_source`: the steps (incremental.py and table.py reuse them).
- `binary_reason(text)`, `fallback_reason(...)`: why a text gets no tree.
- `tree_source(text)`: the bytes parsed (a lone CR as LF), `count_lines(text)`: the editor's.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple

import tree_sitter as ts

from ephemeral_context.documents import count_breaks, lone_cr_as_lf, split_lines
from ephemeral_context.syntax.binding import (
    Budget,
    BudgetExceeded,
    Match,
    parse_bounded,
    run_matches,
)
from ephemeral_context.syntax.embedded import (
    Section,
    is_component,
    points,
    script_language,
    script_ranges,
    sections,
)
from ephemeral_context.syntax.languages import (
    LanguageSpec,
    detect_language,
    load_language,
    spec_for,
)
from ephemeral_context.syntax.queries import (
    FILE,
    SECTION,
    compiled_query,
    compiled_top_level_query,
    refinements,
)
from ephemeral_context.tokens import estimate_tokens

_SQUASH = re.compile(r"\s+")
# Runs of this many full-line `#` comments or more are parsed as blank lines: a run of 100
# costs the Python scanner about 2 ms, and the cost grows with the square of its length.
_LONG_COMMENT_RUN = 100
_COMMENT_RUN = re.compile(rb"(?:\A|\n)((?:[ \t]*+#[^\n]*+\n)++)")  # tried at line ends only
_NOT_NEWLINE = re.compile(rb"[^\n]")
_OPEN_SPACE = re.compile(r"([(\[]) ")
_CLOSE_SPACE = re.compile(r",? ([)\]])")
_PREFIX_LIMIT = 80
_SIGNATURE_LIMIT = 160
_CONTINUATION_LIMIT = 2000  # bytes searched for the `)` closing a header's last line
_PARENS = re.compile(rb"[()]")
_BINARY_SAMPLE = 8192


Captures = dict[str, list[ts.Node]]


class _Candidate(NamedTuple):
    pattern: int
    kind: str
    node: ts.Node
    name: ts.Node
    captures: Captures
    reach: tuple[int, int]


class _Sharing(NamedTuple):
    """Definitions sharing one node (`int x = 1, y = 2;`): the first name node, and where
    all their names start (sorted, distinct), which bisecting searches in logarithmic time."""

    first: ts.Node
    starts: list[int]


class SymbolId(NamedTuple):
    """What stays the same for a definition across edits: kind, qualified name, overload number."""

    kind: str
    qualname: str
    ordinal: int


class Definition(NamedTuple):
    """One definition as the query found it, before nesting gives it a qualified name.

    `reach_start`..`reach_end` covers every node its matches captured, which can lie outside
    the definition (the `#ifndef` deciding whether a C `#define` is a header guard): an edit
    anywhere in it can change the definition, so an update re-queries it.

    `name_start`..`name_end` is its name node, which is what tells definitions apart: after
    error recovery one node can hold two names (`m.rows(), m.rows()` in a broken C++
    function), which are two definitions with the same span, kind and name.

    NamedTuples (here and for Symbol) rather than dataclasses: a full-file query builds
    thousands of them, and tuples are several times cheaper to create.
    """

    kind: str
    name: str
    scope: str | None
    start_byte: int
    end_byte: int
    start_line: int
    end_line: int
    signature: str
    name_at: int
    reach_start: int
    reach_end: int
    name_start: int
    name_end: int


class Symbol(NamedTuple):
    """A definition with its place in the file: lines are 1-based and inclusive, bytes half-open.

    `signature` is the declaration header (decorators, keywords, name, parameters, return
    type) on one line; `name_at` is where the name starts inside it.
    """

    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    start_byte: int
    end_byte: int
    depth: int
    ordinal: int
    name_at: int

    @property
    def identity(self) -> SymbolId:
        return SymbolId(self.kind, self.qualname, self.ordinal)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "qualname": self.qualname,
            "kind": self.kind,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "signature": self.signature,
        }


@dataclass(frozen=True)
class Outline:
    """What `outline_text` knows about one text: its definitions, or why it has none."""

    path: str
    language: str | None
    lines: int
    tokens: int
    symbols: tuple[Symbol, ...]
    has_errors: bool = False
    fallback: str | None = None
    preview: tuple[str, ...] = ()

    @functools.cached_property
    def twins(self) -> dict[Symbol, tuple[int, int]]:
        """Each symbol's place (1-based) among those with its qualified name, and their count:
        symbols.address reads it for each candidate of a lookup, which may be thousands."""
        counts: dict[str, int] = {}
        places = {}
        for symbol in self.symbols:
            places[symbol] = counts[symbol.qualname] = counts.get(symbol.qualname, 0) + 1
        return {symbol: (place, counts[symbol.qualname]) for symbol, place in places.items()}

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "language": self.language,
            "lines": self.lines,
            "symbols": [symbol.to_json() for symbol in self.symbols],
        }


@dataclass(frozen=True)
class Limits:
    """Bounds that keep one file from stalling the server."""

    max_bytes: int = 4_000_000
    budget: Budget = field(default_factory=Budget)
    preview_lines: int = 10


def count_lines(text: str) -> int:
    """Editor line count (LF, CRLF and a lone CR end a line): a trailing line end does not
    open a new line."""
    if not text:
        return 0
    return count_breaks(text) + (0 if text.endswith(("\n", "\r")) else 1)


def tree_source(text: str) -> bytes:
    """What the parser reads and rows are counted in: the UTF-8 bytes, a lone CR read as
    LF (same offsets), so that a row is a line as the editor shows it."""
    return lone_cr_as_lf(text.encode("utf-8", errors="surrogatepass"))


def binary_reason(text: str) -> str | None:
    """Why `text` looks like binary data rather than source, if it does."""
    sample = text[:_BINARY_SAMPLE]
    if "\x00" in sample:
        return "binary file (contains NUL bytes)"
    if sample and sample.count("\ufffd") > len(sample) // 10:
        return "binary file (not valid UTF-8)"
    return None


def new_parser(language: str) -> ts.Parser:
    return ts.Parser(load_language(language))


def parsed_source(source: bytes, language: str) -> bytes:
    """What the parser reads: the file, with the newline it lacks when the grammar needs its
    last line ended (LanguageSpec.ends_last_line), and long runs of comment lines as spaces
    where the grammar is slow on them (LanguageSpec.slow_comment_runs: they define nothing,
    and a definition's end leaves trailing comments out anyway); the nodes keep the file's
    offsets."""
    spec = spec_for(language)
    if spec.slow_comment_runs:
        source = _blank_comment_runs(source)
    return source + b"\n" if _lacks_last_newline(source, spec) else source


def _lacks_last_newline(source: bytes, spec: LanguageSpec) -> bool:
    return spec.ends_last_line and source != b"" and not source.endswith(b"\n")


def _long_comment_runs(
    source: bytes, start: int = 0, end: int | None = None
) -> list[tuple[int, int]]:
    """Byte spans of the runs of `_LONG_COMMENT_RUN` or more full-line comments in
    source[start:end], where `start` is the file's start or a newline."""
    stop = len(source) if end is None else end
    return [
        run.span(1)
        for run in _COMMENT_RUN.finditer(source, start, stop)
        if source.count(b"\n", *run.span(1)) >= _LONG_COMMENT_RUN
    ]


def _blank_comment_runs(source: bytes) -> bytes:
    """`source` with each long run of comment lines as spaces (its newlines kept)."""
    runs = _long_comment_runs(source)
    if not runs:
        return source
    blanked = bytearray(source)
    for start, end in runs:
        blanked[start:end] = _NOT_NEWLINE.sub(b" ", source[start:end])
    return bytes(blanked)


def parsed_as_is(source: bytes, language: str, edited: Iterable[tuple[int, int]]) -> bool:
    """Whether the parser reads `source` unchanged (parsed_source), knowing that it read the
    text before the edits unchanged and where they left their text (`edited`, byte spans of
    `source`): a long run of comment lines can only be one an edit touched, so the lines
    around each edit are looked at, not the whole file."""
    spec = spec_for(language)
    if _lacks_last_newline(source, spec):
        return False
    if not spec.slow_comment_runs:
        return True
    for start, end in edited:
        low, high = start, end
        for _ in range(_LONG_COMMENT_RUN + 1):  # back to the newline before 100 whole lines
            low = max(source.rfind(b"\n", 0, low), 0)
            high = source.find(b"\n", high) + 1 or len(source)
        if _long_comment_runs(source, low, high):
            return False
    return True


def _squash(raw: bytes) -> str:
    return _SQUASH.sub(" ", raw.decode("utf-8", errors="replace"))


def _tidy(header: str) -> str:
    """Undo the spaces that squashing a multi-line parameter list leaves inside brackets."""
    return _CLOSE_SPACE.sub(r"\1", _OPEN_SPACE.sub(r"\1", header))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _signature(
    source: bytes,
    node: ts.Node,
    name: ts.Node,
    body: ts.Node | None,
    omit: Iterable[tuple[int, int]] = (),
    head_limit: int | None = None,
) -> tuple[str, int]:
    """The header of a definition on one line, and where its name starts in it.

    `omit` are byte spans left out (a Go method's receiver, which the qualified name shows);
    the header ends at `head_limit` at the latest.
    """
    line_start = source.rfind(b"\n", node.start_byte, name.start_byte) + 1
    head_start = max(node.start_byte, line_start)
    head_end = _header_end(source, node, name, body)
    if head_limit is not None:
        head_end = min(head_end, head_limit)
    cuts = sorted(omit)

    def text(start: int, end: int) -> str:
        return _squash(_without(source, start, end, cuts))

    prefix = _clip(text(node.start_byte, head_start).strip(), _PREFIX_LIMIT)
    before = text(head_start, name.start_byte).lstrip()
    after = _tidy(text(name.end_byte, head_end)).rstrip("{:;=, ")
    head = before + _squash(source[name.start_byte : name.end_byte]).strip()
    lead = f"{prefix} " if prefix else ""
    return lead + head + _clip(after, _SIGNATURE_LIMIT), len(lead) + len(before)


def _header_end(source: bytes, node: ts.Node, name: ts.Node, body: ts.Node | None) -> int:
    """Where the header ends: at the body, else at the end of the name's line, or of the line
    that closes a parenthesis opened on it (a prototype's or a tuple's next lines)."""
    if body is not None and body.start_byte >= name.end_byte:
        return body.start_byte
    newline = source.find(b"\n", name.end_byte, node.end_byte)
    if newline == -1:
        return node.end_byte
    depth = source.count(b"(", name.end_byte, newline) - source.count(b")", name.end_byte, newline)
    if depth <= 0:
        return newline
    limit = min(node.end_byte, newline + _CONTINUATION_LIMIT)
    for paren in _PARENS.finditer(source, newline, limit):
        depth += 1 if paren[0] == b"(" else -1
        if depth == 0:
            line_end = source.find(b"\n", paren.end(), node.end_byte)
            return node.end_byte if line_end == -1 else line_end
    return limit


def _without(source: bytes, start: int, end: int, cuts: list[tuple[int, int]]) -> bytes:
    """source[start:end] with the (sorted, disjoint) byte ranges `cuts` taken out."""
    kept, at = [], start
    for cut_start, cut_end in cuts:
        if cut_end <= at or cut_start >= end:
            continue
        kept.append(source[at : max(at, cut_start)])
        at = min(end, cut_end)
    kept.append(source[at:end])
    return b"".join(kept)


def _end(
    source: bytes, node: ts.Node, name: ts.Node, comments: tuple[bytes, ...]
) -> tuple[int, int]:
    """The definition's end: 1-based last line and end byte, without a final newline or the
    trailing comment lines the node swallowed.

    Comments after the last statement introduce whatever follows, so they are not part of
    the definition. Tree-sitter also attaches such trailing comments inconsistently: an
    incremental reparse can put one inside a method that a fresh parse leaves outside, so
    cutting them off is also what makes the outline independent of the edit history.
    """
    end_row, end_column = node.end_point
    end = node.end_byte
    if end_column == 0 and end_row > node.start_point[0]:
        end_row -= 1
        end -= 1
    if not comments:
        return end_row + 1, node.end_byte
    trimmed = False
    while end_row > name.end_point[0]:
        line_start = source.rfind(b"\n", 0, end) + 1
        raw = source[line_start:end]
        line, first = raw.strip(), line_start + len(raw) - len(raw.lstrip())
        if line and not (
            line.startswith(comments)
            and _in_comment(node, first)
            and _in_comment(node, first + len(line) - 1)  # no code after it: `/* a */ b;`
        ):
            break
        end_row, end, trimmed = end_row - 1, line_start - 1, True
    if not trimmed:
        return end_row + 1, node.end_byte
    line_start = source.rfind(b"\n", 0, end) + 1
    return end_row + 1, line_start + len(source[line_start:end].rstrip())


def _in_comment(node: ts.Node, byte: int) -> bool:
    """Whether `byte` (in `node`) is in a comment, not in code that looks like one (`* b;`
    continuing `a`, a string's `# end`): every grammar makes its comments extras."""
    inner: ts.Node | None = node.descendant_for_byte_range(byte, byte + 1)
    while inner is not None and inner != node:
        if inner.is_extra:
            return True
        inner = inner.parent
    return False


def find_definitions(
    tree: ts.Tree,
    source: bytes,
    language: str,
    touching: tuple[int, int] | None = None,
) -> list[Definition]:
    """Definitions the tags query finds, sorted by position (outermost first on ties).

    With `touching=(start, end)`, only definitions whose reach meets that closed range.
    """
    chosen: dict[tuple[int, int], _Candidate] = {}
    query_range = None if touching is None else (max(0, touching[0] - 1), touching[1] + 1)
    for pattern, captures in _matches(tree, language, query_range):
        kind = next((c[11:] for c in captures if c.startswith("definition.")), None)
        names = captures.get(f"name.definition.{kind}")
        if kind is None or not names:
            continue
        captured = [node for nodes in captures.values() for node in nodes]
        reach = min(n.start_byte for n in captured), max(n.end_byte for n in captured)
        found = _Candidate(
            pattern, kind, captures[f"definition.{kind}"][0], names[0], captures, reach
        )
        key = (found.name.start_byte, found.name.end_byte)
        seen = chosen.get(key)
        if seen is not None:
            later = found if found.pattern > seen.pattern else seen
            widest = max(seen.node, found.node, key=lambda n: n.end_byte - n.start_byte)
            reach = min(seen.reach[0], reach[0]), max(seen.reach[1], reach[1])
            found = later._replace(node=widest, reach=reach)
        chosen[key] = found
    comments = tuple(prefix.encode() for prefix in spec_for(language).doc_prefixes)
    candidates = list(chosen.values())
    names_by_node: dict[tuple[int, int], list[ts.Node]] = {}
    for c in candidates:
        names_by_node.setdefault((c.node.start_byte, c.node.end_byte), []).append(c.name)
    sharing = {
        span: _Sharing(
            min(names, key=attrgetter("start_byte")), sorted({n.start_byte for n in names})
        )
        for span, names in names_by_node.items()
        if len(names) > 1
    }
    if touching is not None:
        start, end = touching
        candidates = [c for c in candidates if c.reach[0] <= end and start <= c.reach[1]]
    definitions = [
        _definition(source, c, comments, sharing.get((c.node.start_byte, c.node.end_byte)))
        for c in candidates
    ]
    return sorted(definitions, key=outline_order)


def outline_order(definition: Definition) -> tuple[int, int, int]:
    """Position order, an enclosing definition before what it encloses; definitions with the
    same span by where their names are, so that order never depends on the query."""
    return definition.start_byte, -definition.end_byte, definition.name_start


def encloses(outer_start: int, outer_end: int, start: int, end: int) -> bool:
    """Whether a definition spanning outer_start..outer_end holds one spanning start..end.
    One span is no nesting: `int x = 1, y = 2;` defines two siblings."""
    return outer_start <= start and end <= outer_end and (outer_start, outer_end) != (start, end)


def _matches(tree: ts.Tree, language: str, query_range: tuple[int, int] | None) -> list[Match]:
    """Matches of both query sections; `; top-level:` patterns rank before all others."""
    matches = run_matches(compiled_query(language), tree.root_node, query_range)
    top_level = compiled_top_level_query(language)
    if top_level is not None:
        rank = top_level.pattern_count
        matches += [
            (pattern - rank, captures)
            for pattern, captures in run_matches(top_level, tree.root_node, query_range, 1)
        ]
    return matches


def _own_part(node: ts.Node, name: ts.Node, starts: Sequence[int]) -> ts.Node:
    """The largest node around `name`, below `node`, where no other of the names starting at
    `starts` (sorted, distinct) starts: its declarator in a declaration of several (`y = 2`
    in `int x = 1, y = 2;`)."""
    part, size = name, node.end_byte - node.start_byte
    while (parent := part.parent) is not None and parent.end_byte - parent.start_byte < size:
        if bisect_left(starts, parent.end_byte) - bisect_left(starts, parent.start_byte) > 1:
            break
        part = parent
    return part


def _definition(
    source: bytes, candidate: _Candidate, comments: tuple[bytes, ...], shared: _Sharing | None
) -> Definition:
    """`shared`: the names of every definition sharing this one's node, when several do;
    each then shows the shared header (`static final int`) and its own declarator only."""
    kind, node, name, captures = candidate.kind, candidate.node, candidate.name, candidate.captures
    bodies = captures.get(f"body.definition.{kind}")
    scopes = captures.get(f"scope.definition.{kind}")
    omitted = [(n.start_byte, n.end_byte) for n in captures.get(f"omit.definition.{kind}", ())]
    head_limit = None
    if shared is not None:
        own = _own_part(node, name, shared.starts)
        first = _own_part(node, shared.first, shared.starts)
        omitted.append((first.start_byte, own.start_byte))  # the declarators before its own
        head_limit = own.end_byte
    signature, name_at = _signature(
        source, node, name, bodies[0] if bodies else None, omitted, head_limit
    )
    end_line, end_byte = _end(source, node, name, comments)
    scope = _squash(source[scopes[0].start_byte : scopes[0].end_byte]) if scopes else None
    written = _squash(source[name.start_byte : name.end_byte]).strip()
    scope, own_name = _unscoped(scope, written)
    if own_name != written and signature.startswith(written, name_at):
        # the signature holds the name alone, where the synopsis puts the qualified name
        signature = signature[:name_at] + own_name + signature[name_at + len(written) :]
    return Definition(
        kind=kind,
        name=own_name,
        scope=scope,
        start_byte=node.start_byte,
        end_byte=min(end_byte, len(source)),  # not past a newline parsed_source added
        start_line=node.start_point[0] + 1,
        end_line=end_line,
        signature=signature,
        name_at=name_at,
        reach_start=candidate.reach[0],
        reach_end=candidate.reach[1],
        name_start=name.start_byte,
        name_end=name.end_byte,
    )


def _section_definition(section: Section, start: ts.Point, end: ts.Point) -> Definition:
    """A component's top-level block (from `start` to `end`) as a definition: its name is its
    tag's, its signature the opening tag."""
    name_start = section.start_byte + 1
    return Definition(
        kind=SECTION,
        name=section.name,
        scope=None,
        start_byte=section.start_byte,
        end_byte=section.end_byte,
        start_line=start.row + 1,
        end_line=end.row + 1,
        signature=section.opening,
        name_at=1,
        reach_start=section.start_byte,
        reach_end=section.end_byte,
        name_start=name_start,
        name_end=name_start + len(section.name),
    )


def _unscoped(scope: str | None, name: str) -> tuple[str | None, str]:
    """A name written with its scopes (C++ `ns::S::g`, whose query captures `ns` as the scope
    and `S::g` as the name; Ruby `class A::B`): the last part is the name, the rest joins the
    scope, so the qualified name reads `ns.S.g` as its declaration's inside `ns` and `S` does."""
    if "::" not in name:
        return scope, name
    *outer, last = (part.strip() for part in name.split("::"))
    return ".".join(part for part in (scope, *outer) if part) or None, last


def qualify(owner: str | None, scope: str | None, name: str) -> str:
    """`owner.scope.name`: a definition written outside its type (a Go receiver's, C++
    `Type::name`) is qualified by that type, inside whatever encloses the definition."""
    return ".".join(part for part in (owner, scope, name) if part)


def nest(
    definitions: Iterable[Definition], refine: Mapping[tuple[str, str], str]
) -> tuple[Symbol, ...]:
    """Give each definition its depth, qualified name, overload ordinal (1-based) and its
    kind as refined by its parent's (`refine[(kind, parent_kind)]`, see queries.refinements).
    """
    stack: list[Symbol] = []
    ordinals: dict[tuple[str, str], int] = {}
    symbols = []
    for d in definitions:
        while stack and not encloses(
            stack[-1].start_byte, stack[-1].end_byte, d.start_byte, d.end_byte
        ):
            stack.pop()
        qualname = qualify(stack[-1].qualname if stack else None, d.scope, d.name)
        kind = refine.get((d.kind, stack[-1].kind if stack else FILE), d.kind)
        ordinal = ordinals[(kind, qualname)] = ordinals.get((kind, qualname), 0) + 1
        symbol = Symbol(
            d.name, qualname, kind, d.start_line, d.end_line, d.signature,
            d.start_byte, d.end_byte, len(stack), ordinal, d.name_at,
        )  # fmt: skip
        symbols.append(symbol)
        if d.kind != SECTION:  # a component's script holds definitions, names none
            stack.append(symbol)
    return tuple(symbols)


def make_outline(
    path: str,
    language: str | None,
    text: str,
    symbols: tuple[Symbol, ...] = (),
    *,
    has_errors: bool = False,
    fallback: str | None = None,
    limits: Limits | None = None,
) -> Outline:
    """Assemble an Outline; a fallback keeps the first lines so the reader still sees something."""
    preview: tuple[str, ...] = ()
    if fallback is not None and not fallback.startswith("binary"):
        count = (limits or Limits()).preview_lines
        rows = split_lines(text[:20_000])[:count]
        preview = tuple(_clip(row.rstrip("\r\n"), 200) for row in rows)
    return Outline(
        path=path,
        language=language,
        lines=count_lines(text),
        tokens=estimate_tokens(text),
        symbols=symbols,
        has_errors=has_errors,
        fallback=fallback,
        preview=preview,
    )


def fallback_reason(text: str, source: bytes, language: str | None, limits: Limits) -> str | None:
    """Why this text gets no tree: binary, no grammar, or too large; None when it can be parsed."""
    reason = binary_reason(text)
    if reason is None and language is None:
        reason = "no grammar for this file type"
    if reason is None and len(source) > limits.max_bytes:
        reason = f"file too large to outline ({len(source)} bytes > {limits.max_bytes})"
    return reason


def analyse(
    text: str,
    path: str,
    language: str | None,
    limits: Limits,
    parser: ts.Parser | None = None,
    tree: ts.Tree | None = None,
    component: bool = False,
) -> tuple[ts.Tree | None, list[Definition], Outline]:
    """Parse from scratch (unless `tree` already is `text`'s): the tree (None on fallback),
    its definitions and the outline. `parser` is one for `language`; a `component`'s
    scripts alone are parsed (embedded.py: its ranges, set on the parser each time)."""
    source = tree_source(text)
    reason = fallback_reason(text, source, language, limits)
    definitions: list[Definition] = []
    if reason is not None or language is None:
        tree = None
    else:
        parser = parser or new_parser(language)
        blocks = sections(source) if component else []
        if component:
            parser.included_ranges = script_ranges(source, blocks)
        try:
            tree = tree or parse_bounded(parser, parsed_source(source, language), limits.budget)
            definitions = find_definitions(tree, source, language)
            if blocks:
                at = points(source, [o for b in blocks for o in (b.start_byte, b.end_byte)])
                found = [
                    _section_definition(block, start, end)
                    for block, start, end in zip(blocks, at[::2], at[1::2], strict=True)
                ]
                definitions = sorted(definitions + found, key=outline_order)
        except BudgetExceeded as error:
            tree, reason = None, str(error)
    has_errors = tree is not None and tree.root_node.has_error
    symbols = nest(definitions, refinements(language)) if language else ()
    outline = make_outline(
        path, language, text, symbols, has_errors=has_errors, fallback=reason, limits=limits
    )
    return tree, definitions, outline


def outline_text(
    text: str, path: str, language_id: str | None = None, limits: Limits | None = None
) -> Outline:
    """The outline of one file's text; never raises for bad input, falls back with a reason."""
    component = is_component(path, language_id)
    language = outline_language(text, path, language_id)
    return analyse(text, path, language, limits or Limits(), component=component)[2]


def outline_language(text: str, path: str, language_id: str | None = None) -> str | None:
    """The grammar a text gets: a component's scripts' (embedded.py), else its own by the
    editor's languageId or the file name."""
    if is_component(path, language_id):
        return script_language(text.encode("utf-8", errors="surrogatepass"))
    return detect_language(path, language_id)
