"""The tools the model gets: their JSON schemas and the handlers that answer them.

A thin table: each handler checks its input, then asks the part that knows (the document
mirror, the syntax layer, the context engine, model/search.py, model/memory.py); file
access is checked first (workspace boundary, secret filter: model/secrets.py). A handler
never decides how its answer is shown to the model: it returns a `ToolResult` and the agent
hands it to the context engine, which turns a repeated file read into a reference or a diff.
Bad input from the model is answered with an error result that says how to call the tool
correctly; it never raises.

API:
- `tool_schemas(...)`, `BASE_TOOLS`: the tools for one request.
- `run_tool(env, name, args)`: answer one tool call, as a `ToolResult`.
- `ToolEnv`: what the handlers need; `guarded_path`, `guarded_document`, `readable`, the one
  guarded read.
- `SkillFolder`: the skills folder.
- `READ_DEFAULT_LINES`: the bound on an unbounded read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import regex

from ephemeral_context.context.blocks import definition_answer, reference_id
from ephemeral_context.context.engine import BlockKind, ContextEngine, HydratedText
from ephemeral_context.context.fetching import READ_SESSION_FILE
from ephemeral_context.context.skills import parse_skill
from ephemeral_context.documents import (
    Document,
    DocumentMirror,
    path_to_uri,
    split_lines,
    taken_name,
    uri_path,
    uri_to_path,
)
from ephemeral_context.echo import quoted
from ephemeral_context.model.edits import DiskEditApplier, EditApplier
from ephemeral_context.model.memory import MemoryFolder, MemoryRefused
from ephemeral_context.model.search import SEARCH_MAX_MATCHES, search_workspace
from ephemeral_context.model.secrets import AccessDenied, SecretPolicy, Workspace, find_secret
from ephemeral_context.store import StoreError, check_range, data_dir
from ephemeral_context.syntax.outline import Outline, outline_text
from ephemeral_context.syntax.symbols import LookupStatus, address, find_symbol
from ephemeral_context.syntax.synopsis import render_synopsis

READ_DEFAULT_LINES = 2000
READ_MAX_CHARS = 100_000
"""The most one read shows, whatever its limit (about 25,000 tokens of code, the bound
Claude Code's Read keeps): a file of long lines would otherwise fill a request alone."""
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SkillFolder:
    """Skills as `<root>/<name>/SKILL.md` (or `<root>/<name>.md`), read afresh on each use.

    The frontmatter (context/skills.py parses it) gives the name and description the tool
    lists; the whole file, frontmatter included, is what `invoke_skill` returns, so the
    engine can read its eviction rules.
    """

    root: Path

    def _files(self) -> dict[str, tuple[Path, str]]:
        found: dict[str, tuple[Path, str]] = {}
        if not self.root.is_dir():
            return found
        candidates = sorted(self.root.glob("*/SKILL.md")) + sorted(self.root.glob("*.md"))
        for path in candidates:
            default = path.parent.name if path.name == "SKILL.md" else path.stem
            try:
                meta = parse_skill(path.read_text(encoding="utf-8"), default_name=default)
            except (OSError, UnicodeDecodeError):
                continue
            found.setdefault(meta.name, (path, meta.description))
        return found

    def names(self) -> list[tuple[str, str]]:
        """(name, description) of every skill, sorted by name."""
        return sorted((name, description) for name, (_, description) in self._files().items())

    def source(self, name: str) -> tuple[Path, str]:
        """The skill's file and its whole text, frontmatter included."""
        path = self._files()[name][0]
        return path, path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class ToolResult:
    """A handler's answer before the context engine shapes it for the model.

    For a file read, `document` is the current version and `text` the requested range
    (`whole` when it is all of it); the engine answers a repeat with a reference. For an
    edit, `content` is the whole file afterwards, so the engine knows what the model
    now sees without sending it.
    """

    text: str
    is_error: bool = False
    kind: BlockKind = BlockKind.TOOL_RESULT
    """How the engine keeps it: FILE, EDIT, SKILL, MEMORY, or TOOL_RESULT for the rest."""
    uri: str | None = None
    document: Document | None = None
    first_line: int = 1
    content: str | None = None
    note: str = ""
    """Said to the model after `text` (e.g. that a long file was cut); not file content."""
    base: str | None = None
    """For an edit, the text it was applied to (None: a new file)."""

    @property
    def whole(self) -> bool:
        return self.document is None or self.text == self.document.text


class ToolInputError(ValueError):
    """The model's input does not fit the tool's schema."""


@dataclass
class ToolEnv:
    """Everything the handlers need, built once per session by the server or the CLI."""

    workspace: Workspace
    mirror: DocumentMirror
    secrets: SecretPolicy = field(default_factory=SecretPolicy)
    applier: EditApplier = field(default_factory=DiskEditApplier)
    engine: ContextEngine | None = None
    skills: SkillFolder | None = None
    memory_root: Path | None = None
    conversation: str | None = None
    """The engine conversation whose ids `read_session_file` may fetch (the gateway's, whose
    store other conversations share); None: any id ever shown (the editor's, `ectx ask`)."""

    @classmethod
    def configured(
        cls,
        *,
        mirror: DocumentMirror,
        folders: Sequence[str | Path],
        engine: ContextEngine | None = None,
        secret_patterns: Sequence[str] = (),
        allow_secret_files: Sequence[str] = (),
        allow_base: Path | None = None,
        skills_directory: str | Path | None = None,
        memory_root: Path | None = None,
        applier: EditApplier | None = None,
    ) -> ToolEnv:
        """From plain settings (the server's Options or `ectx ask`'s flags), so both front
        ends check the same way; allowed secret files are globs, or paths relative to
        `allow_base` (a shell's are to its current folder), else to the first folder."""
        workspace = Workspace.of(folders)
        return cls(
            workspace=workspace,
            mirror=mirror,
            secrets=SecretPolicy.configured(
                secret_patterns, allow_secret_files, base=allow_base or workspace.roots[0]
            ),
            applier=applier or DiskEditApplier(),
            engine=engine,
            skills=SkillFolder(Path(skills_directory).expanduser()) if skills_directory else None,
            memory_root=memory_root or data_dir() / "memories",
        )

    def guarded_path(self, raw: str) -> tuple[Path, str]:
        """The resolved path and its short name, after the workspace and secret-name checks."""
        real = self.workspace.resolve(raw)
        display = self.workspace.relative(real)
        self.withhold_name(real, display)
        return real, display

    def withhold_name(self, path: PurePath, display: str) -> None:
        """Raise AccessDenied when the name of `path` marks it secret (a pattern, or .git
        internals) and the user did not allow it."""
        reason = self.secrets.path_reason(path)
        if reason is not None:
            raise AccessDenied(SecretPolicy.withheld_message(display, reason), "secret")

    def named_path(self, written: str) -> tuple[Path, str]:
        """`guarded_path` for a name the model wrote: its `\\xNN` escapes read back to the
        bytes they stand for (the names the tools show: `shown_name`), unless only the name
        as written is a file (the engine's labels are escaped only where a byte is not
        UTF-8: a Windows `build\\x86` is a folder of that name)."""
        decoded = taken_name(written)
        if decoded != written and not self._exists(decoded) and self._exists(written):
            return self.guarded_path(written)
        return self.guarded_path(decoded)

    def _exists(self, written: str) -> bool:
        try:
            return self.workspace.resolve(written).exists()
        except AccessDenied:
            return False

    def guarded_document(self, real: Path, display: str, uri: str | None = None) -> Document:
        """The current text (the editor's buffer if open, by `uri` when the editor named
        it), after the secret-content check: what the model may be shown."""
        got = self.mirror.get(uri) if uri is not None else self.mirror.get_path(real)
        if not isinstance(got, Document):
            message = f"{display}: cannot read ({got.reason.value}: {got.detail})"
            raise AccessDenied(message, got.reason.value)
        self.withhold_secret(real, display, got.text)
        return got

    def withhold_secret(self, real: Path, display: str, text: str) -> None:
        """Raise AccessDenied when `text`, the content of `real`, holds a secret the user
        did not allow: no tool may show it, store it or answer questions about it."""
        reason = self.secrets.content_reason(real, text)
        if reason is not None:
            raise AccessDenied(SecretPolicy.withheld_message(display, reason), "secret")

    def readable(self, uri: str) -> Document:
        """The editor's `uri` through the checks of a model's read (a pin shows it to the
        model); a buffer with no file here (untitled:, a virtual file system's) gets the
        name check on the path its URI names, and the content check."""
        path = uri_to_path(uri)
        if path is None:
            self.withhold_name(uri_path(uri), uri)
            return self.guarded_document(Path(uri), uri, uri)
        real, display = self.guarded_path(str(path))
        return self.guarded_document(real, display, uri)


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH = {"type": "string", "description": "file path, relative to the workspace folder"}

BASE_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "read_file",
        "description": (
            "Read a text file of the workspace. A file you have already seen comes back as "
            "a short reference or a diff against the version you saw. offset is the first "
            f"line (1-based), limit the number of lines (default: up to {READ_DEFAULT_LINES}); one "
            f"read shows at most {READ_MAX_CHARS:,} characters."
        ),
        "input_schema": _schema(
            {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
            },
            ["path"],
        ),
    },
    {
        "name": "read_symbol",
        "description": (
            "Read one definition of a file (function, class, method) by name, e.g. "
            "'App.run'. Cheaper than reading the whole file."
        ),
        "input_schema": _schema(
            {"path": _PATH, "symbol": {"type": "string", "description": "qualified name"}},
            ["path", "symbol"],
        ),
    },
    {
        "name": "outline",
        "description": "List the definitions of a file: kind, name, signature and lines.",
        "input_schema": _schema({"path": _PATH}, ["path"]),
    },
    READ_SESSION_FILE,
    {
        "name": "search",
        "description": (
            f"Search the workspace files with a regular expression (Python syntax). "
            f"path is an optional folder or glob such as 'src' or 'src/**/*.py'. At most "
            f"{SEARCH_MAX_MATCHES} matching lines come back as path:line: text."
        ),
        "input_schema": _schema(
            {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "folder or glob"},
            },
            ["pattern"],
        ),
    },
    {
        "name": "edit_file",
        "description": (
            "Replace old_string with new_string in a file. old_string must occur exactly "
            "once (copy it from the file, whitespace included). An empty old_string creates "
            "a new file."
        ),
        "input_schema": _schema(
            {"path": _PATH, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
            ["path", "old_string", "new_string"],
        ),
    },
)

MEMORY_TOOL: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Your notes that persist across sessions, as files under /memories. commands: view "
        "(path, optional view_range [first, last]), create (path, file_text), str_replace "
        "(path, old_str, new_str), insert (path, insert_line, insert_text), delete (path), "
        "rename (old_path, new_path)."
    ),
    "input_schema": _schema(
        {
            "command": {
                "type": "string",
                "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
            },
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer", "minimum": 0},
            "insert_text": {"type": "string"},
            "old_path": {"type": "string"},
            "new_path": {"type": "string"},
            "view_range": {"type": "array", "items": {"type": "integer"}},
        },
        ["command"],
    ),
}


def tool_schemas(env: ToolEnv) -> list[dict[str, Any]]:
    """The tools for one request, always in the same order (they head the cached prefix)."""
    tools = [dict(tool) for tool in BASE_TOOLS]
    if env.skills is not None:
        listed = env.skills.names()
        if listed:
            catalogue = "\n".join(
                f"- {name}: {description}" if description else f"- {name}"
                for name, description in listed
            )
            tools.append(
                {
                    "name": "invoke_skill",
                    "description": "Load a skill's instructions by name. Skills:\n" + catalogue,
                    "input_schema": _schema({"name": {"type": "string"}}, ["name"]),
                }
            )
    if env.memory_root is not None:
        tools.append(dict(MEMORY_TOOL))
    return tools


# -- input helpers -------------------------------------------------------------------------


def _text(args: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = args.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ToolInputError(f"'{key}' must be a string")
    return value


def _int(args: Mapping[str, Any], key: str, minimum: int) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolInputError(f"'{key}' must be an integer >= {minimum}")
    return value


def _error(text: str) -> ToolResult:
    return ToolResult(text, is_error=True)


# -- file access ---------------------------------------------------------------------------


async def _read_file(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    real, display = env.named_path(_text(args, "path"))
    offset = _int(args, "offset", 1) or 1
    limit = _int(args, "limit", 1)
    doc = env.guarded_document(real, display)
    lines = split_lines(doc.text)
    if offset > max(len(lines), 1):
        return _error(f"offset {offset} is past the end of {display} ({len(lines)} lines)")
    asked = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    end = min(asked, offset - 1 + READ_DEFAULT_LINES) if limit is None else asked
    end = _within_chars(lines, offset - 1, end)
    text = "".join(lines[offset - 1 : end]) if (offset, end) != (1, len(lines)) else doc.text
    note = ""
    if len(text) > READ_MAX_CHARS:  # one line longer than a read shows
        width = len(text.rstrip("\r\n"))
        on = f", offset {offset + 1} reads on" if offset < len(lines) else ""
        note = (
            f"\n[line {offset} of {len(lines)} cut at {READ_MAX_CHARS:,} of {width:,} "
            f"characters; search finds text in it{on}]"
        )
        text = text[:READ_MAX_CHARS]
    elif end < asked:
        note = (
            f"\n[showing lines {offset}-{end} of {len(lines)} (a read shows at most "
            f"{READ_DEFAULT_LINES} lines unless limit says, and {READ_MAX_CHARS:,} characters); "
            "pass offset and limit for the rest, or use outline and read_symbol]"
        )
    return ToolResult(
        text, kind=BlockKind.FILE, uri=doc.uri, document=doc, first_line=offset, note=note
    )


def _within_chars(lines: Sequence[str], start: int, end: int) -> int:
    """Where a read of `lines[start:end]` stops to show at most READ_MAX_CHARS characters:
    at a line end, past the first line whatever its length."""
    shown = 0
    for at in range(start, end):
        shown += len(lines[at])
        if shown > READ_MAX_CHARS:
            return max(at, start + 1)
    return end


def _outline_of(doc: Document, display: str) -> Outline:
    return outline_text(doc.text, display, doc.language_id)


async def _read_symbol(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    real, display = env.named_path(_text(args, "path"))
    symbol = _text(args, "symbol")
    doc = env.guarded_document(real, display)
    outline = _outline_of(doc, display)
    lookup = find_symbol(doc.text, outline, symbol)
    if lookup.found is not None:
        found = lookup.found
        header = f"{display}::{symbol} (lines {found.start_line}-{found.end_line})\n"
        lines = split_lines(found.text)
        end = _within_chars(lines, 0, len(lines))
        shown = "".join(lines[:end])[:READ_MAX_CHARS]
        if len(shown) == len(found.text):
            return ToolResult(header + found.text + "\n", uri=doc.uri)
        on = found.start_line + (end if shown.endswith("\n") else 1)  # a data table, say
        note = (
            f"\n[cut at {len(shown):,} of {len(found.text):,} characters (a read shows at most "
            f"{READ_MAX_CHARS:,}); read_file with offset {on} reads on]\n"
        )
        return ToolResult(header + shown + note, uri=doc.uri)
    if lookup.status is LookupStatus.AMBIGUOUS:
        names = ", ".join(f"{address(s, outline)} (line {s.start_line})" for s in lookup.candidates)
        return _error(f"{quoted(symbol)} is ambiguous in {display}: {names}")
    hint = f"; did you mean {', '.join(lookup.suggestions)}?" if lookup.suggestions else ""
    why = f" ({outline.fallback})" if outline.fallback else ""
    return _error(f"no symbol {quoted(symbol)} in {display}{why}{hint}; try outline")


async def _outline(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    real, display = env.named_path(_text(args, "path"))
    doc = env.guarded_document(real, display)
    return ToolResult(render_synopsis(_outline_of(doc, display)), uri=doc.uri)


async def _read_session_file(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    item_id = reference_id(_text(args, "id"))
    offset = _int(args, "offset", 0) or 0
    limit = _int(args, "limit", 1)
    symbol = _text(args, "symbol", required=False)
    first_line = _int(args, "first_line", 1)  # a Read's offset and limit (fetching.py)
    line_count = _int(args, "line_count", 1)
    lines = first_line is not None or line_count is not None
    if env.engine is None:
        return _error("read_session_file is not available in this session")
    if sum((bool(symbol), bool(offset or limit is not None), lines)) > 1:
        raise ToolInputError("pass one of symbol, offset and limit, or lines, not several")
    # Read whole, checked whole: a slice beside a key's header would carry its body.
    whole = env.engine.read_session_file(item_id, conv=env.conversation)
    check_range(item_id, offset, limit, whole.total_length)
    if (reason := _withheld_version(env, whole)) is not None:
        return _error(SecretPolicy.withheld_message(item_id, reason))
    if symbol:
        if whole.uri is None:
            return _error(f"{item_id} is not a file's content: read it without symbol")
        source = env.engine.definition(whole.uri, whole.text, symbol)
        return ToolResult(definition_answer(item_id, symbol, source))
    if lines:
        return _line_range(item_id, whole.text, first_line or 1, line_count)
    text = whole.text[offset : offset + min(READ_MAX_CHARS, limit or READ_MAX_CHARS)]
    end = offset + len(text)
    if offset == 0 and end >= whole.total_length:
        return ToolResult(text)
    capped = end < whole.total_length and (limit is None or limit > READ_MAX_CHARS)
    on = f"; offset {end} reads on" if capped else ""
    note = f"[{item_id}: characters {offset}-{end} of {whole.total_length}{on}]\n"
    return ToolResult(note + text)


def _withheld_version(env: ToolEnv, whole: HydratedText) -> str | None:
    """Why stored content may not be sent now, judged as a read of its file would be today:
    by name too, so a version stored under an opt-in since withdrawn (or another
    workspace's) stays where it is."""
    path = uri_to_path(whole.uri) if whole.uri else None
    if path is None:
        finding = find_secret(whole.text)
        return None if finding is None else f"it contains what looks like {finding.kind}"
    real = path.resolve()
    return env.secrets.path_reason(real) or env.secrets.content_reason(real, whole.text)


def _line_range(item_id: str, text: str, first: int, count: int | None) -> ToolResult:
    """Lines `first` (1-based) on, `count` of them (all when None), of stored content."""
    lines = split_lines(text)
    if first > max(len(lines), 1):
        return _error(f"{item_id} has {len(lines)} lines; first_line {first} is past its end")
    part = lines[first - 1 : None if count is None else first - 1 + count]
    if first == 1 and len(part) == len(lines):
        return ToolResult(text)
    note = f"[{item_id}: lines {first}-{first + len(part) - 1} of {len(lines)}]\n"
    return ToolResult(note + "".join(part))


async def _edit_file(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    real, display = env.named_path(_text(args, "path"))
    old, new = _text(args, "old_string"), _text(args, "new_string")
    if real.exists() and not real.is_file():
        return _error(f"{display} is not a regular file")
    # What the model may not read, it may not edit: a match would tell of a secret (and a
    # huge file is read whole). A buffer open in the editor is edited there, saved or not.
    uri, base = path_to_uri(real), None  # the file's key, whatever link the editor used
    if real.exists() or env.mirror.is_open(uri):
        doc = env.guarded_document(real, display)  # the buffer's, opened by a link too
        uri, base = doc.uri, doc.text
    outcome = await env.applier.apply(real, old, new)
    return ToolResult(
        f"{display}: {outcome.message}",
        is_error=not outcome.applied,
        kind=BlockKind.EDIT,
        uri=uri,
        content=outcome.new_text,
        base=base,
    )


# -- skills, memory and search -----------------------------------------------------------------


async def _invoke_skill(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    name = _text(args, "name").strip()
    if env.skills is None:
        return _error("no skills are configured")
    known = [skill for skill, _ in env.skills.names()]
    if name not in known:
        return _error(f"unknown skill {quoted(name)}; known skills: {', '.join(known) or 'none'}")
    path, text = env.skills.source(name)
    env.withhold_secret(path, f"skill {name}", text)  # a token pasted into it, say
    return ToolResult(text, kind=BlockKind.SKILL, uri=f"skill:{name}")


async def _memory(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    if env.memory_root is None:
        return _error("memory is not configured in this session")
    folder = MemoryFolder(env.memory_root, env.secrets)
    command = _text(args, "command")
    try:
        if command == "rename":
            reply = folder.rename(_text(args, "old_path"), _text(args, "new_path"))
        elif command == "view":
            reply = folder.view(_text(args, "path"), _view_range(args.get("view_range")))
        elif command == "create":
            reply = folder.create(_text(args, "path"), _text(args, "file_text"))
        elif command == "delete":
            reply = folder.delete(_text(args, "path"))
        elif command == "str_replace":
            old, new = _text(args, "old_str"), _text(args, "new_str", required=False)
            reply = await folder.str_replace(_text(args, "path"), old, new)
        elif command == "insert":
            line = _int(args, "insert_line", 0) or 0
            reply = folder.insert(_text(args, "path"), line, _text(args, "insert_text"))
        else:
            return _error(f"unknown memory command {quoted(command)}")
    except MemoryRefused as exc:
        return _error(str(exc))
    return ToolResult(reply.text, is_error=reply.failed, kind=BlockKind.MEMORY, uri=reply.uri)


def _view_range(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ToolInputError("'view_range' must be [first_line, last_line]")
    return value[0], value[1]


async def _search(env: ToolEnv, args: Mapping[str, Any]) -> ToolResult:
    pattern = _text(args, "pattern")
    glob = _text(args, "path", required=False).strip().removeprefix("./")
    try:  # a worker thread: a big workspace must not stall the server's event loop
        text = await asyncio.to_thread(
            search_workspace, env.workspace, env.mirror, env.secrets, pattern, glob
        )
    except regex.error as exc:
        return _error(f"invalid regular expression {quoted(pattern)}: {exc}")
    return ToolResult(text)


# -- dispatch ------------------------------------------------------------------------------

Handler = Callable[[ToolEnv, Mapping[str, Any]], Awaitable[ToolResult]]

HANDLERS: dict[str, Handler] = {
    "read_file": _read_file,
    "read_symbol": _read_symbol,
    "outline": _outline,
    "read_session_file": _read_session_file,
    "search": _search,
    "edit_file": _edit_file,
    "invoke_skill": _invoke_skill,
    "memory": _memory,
}


async def run_tool(env: ToolEnv, name: str, args: object) -> ToolResult:
    """Answer one tool call; every refusal or mistake becomes an error result, never a raise."""
    handler = HANDLERS.get(name)
    if handler is None:
        offered = ", ".join(tool["name"] for tool in tool_schemas(env))
        return _error(f"unknown tool {quoted(name)}; available: {offered}")
    if not isinstance(args, Mapping):
        return _error(f"{name}: the input must be a JSON object")
    try:
        return await handler(env, args)
    except AccessDenied as exc:
        return _error(str(exc))
    except ToolInputError as exc:
        return _error(f"{name}: {exc}")
    except StoreError as exc:
        return _error(f"{name}: {exc}")
    except (LookupError, ValueError) as exc:
        return _error(f"{name}: {exc}")
    except OSError as exc:
        return _error(f"{name}: {exc.strerror or exc}")
    except Exception as exc:  # a bug must cost one tool call, not the whole ask
        log.exception("tool %s failed", name)
        return _error(f"{name} failed unexpectedly ({exc.__class__.__name__}: {exc})")
