"""Read a Claude Code transcript into the information flow that every strategy replays.

Two forms are read: the session JSONL Claude Code writes under ~/.claude/projects (main
sessions and sub-agent `agent-*.jsonl` files) and `claude -p --output-format stream-json`.
Claude Code writes one line per content block, so the lines of one response share a
message.id (and repeat its usage: it is counted once). A request's messages are the chain of
`parentUuid` links back to a root: the first line, each sub-agent's first prompt, or the
boundary a compaction leaves. Each root starts a thread; a chain that forks off an existing
thread (a message edited and re-sent) starts another. A forked session (`/fork`, `/branch`,
`--fork-session`) starts with copies of its parent's lines: their responses are the parent's
calls, history the fork starts from (`Session.inherited`), not calls of its own. Tool
results a microcompaction cleared are sent cleared from then on: those its boundary record
names, and for releases that write none, those its rule cleared (microcompact.py).
stream-json has no links: its threads are the main one and one per Task
(`parent_tool_use_id`), in file order.

Bad input never stops the reading: a line that is not JSON, a record of an unknown type or
an unknown tool is reported as a `Problem` with file and line, and skipped (an unknown tool's
result is still counted, as plain tool output); unknown record types and unknown tools get
one note per file each, with their counts, however many lines a newer release writes.

API:
- `read_session(path)` -> a flow.Session (raises `TranscriptError` for what cannot be read
  at all; everything else becomes a Problem).
- `api_content_block(item, calls)`: one Messages API block read as a transcript's
  (for the gateway); `attachment_text(attachment)`, `takes_system_messages(model, version)`.
"""

from __future__ import annotations

import bisect
import gzip
import heapq
import itertools
import json
import math
import os
import re
import stat
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

from ephemeral_context.cache_sim import rendered_order, tool_result_text, usage_from_dict
from ephemeral_context.claude_tools import (
    BRIDGE_FAILURES,
    BRIDGE_TOOLS,
    KNOWN_TOOLS,
    SERENA_FAILURES,
    TASK_TOOLS,
    builtin_tool,
    serena_tool,
    stands_in,
    tool_file_path,
)
from ephemeral_context.prices import REFERENCE_MODEL, Geo, Speed, parse_model, priced, rows
from ephemeral_context.replay.anchor import anchor_tokens, anchor_unmarked
from ephemeral_context.replay.flow import (
    Block,
    Call,
    FileChange,
    FileView,
    Message,
    PrefixState,
    Problem,
    RecordedUsage,
    Role,
    Session,
    Thread,
    Unanswered,
    block_key,
    same_message,
)
from ephemeral_context.replay.microcompact import SILENT_BEFORE, silently_cleared
from ephemeral_context.replay.tools import (
    ToolCalls,
    activated_root,
    replaced_strings,
    serena_change,
    text_field,
    whole_number,
)
from ephemeral_context.tokens import MEDIA_TYPES, estimate_block_tokens, media_tokens

KNOWN_RECORD_TYPES = frozenset(
    {
        "user",
        "assistant",
        "attachment",
        "progress",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "last-prompt",
        "ai-title",
        "custom-title",
        "agent-name",
        "pr-link",
        "permission-mode",
        "mode",
        "result",
        "stream_event",
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "atis-latch",
        "tools-used",
        "cost-state",
    }
)
"""Record types Claude Code writes; user, assistant and attachment records reach the model,
the others are bookkeeping (queue operations, titles, links; in 2.1.332 also a log of the
requests, `api-request` with its `api-request-shape` and `api-request-blob` records, and
running totals) and are passed over quietly: the request log restates what the messages and
attachments already say (tests/e2e/test_claude_code.py checks the reconstruction instead)."""

SYNTHETIC_MODEL = "<synthetic>"
"""The model Claude Code names on messages it makes itself, without an API call."""

MALFORMED = (ValueError, TypeError, AttributeError, KeyError, OverflowError)
"""What a record with fields of the wrong shape raises while it is read (OverflowError: a
count such as 1e400, which JSON reads as an infinite float, taken as an integer)."""

GZIP_MAGIC = b"\x1f\x8b"

_CAT_N_LINE = re.compile(r"^ *(\d+)(?:\u2192|\t)(.*)$")
"""A numbered line of a Read result: an arrow up to 2.0, a tab in 2.1.x."""
_SYSTEM_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)
_BRIDGE_READ_END = re.compile(
    r"\n?\n\n<system-reminder>(?:(?!<system-reminder>).)*</system-reminder>$", re.DOTALL
)
"""The reminder a bridge Read appends to what it read (after a blank line): it ends every
successful bridge Read, and the file's own last newline before it goes too."""


@dataclass
class _Entry:
    """One sent line, normalised across the two file forms."""

    line: int
    uuid: str
    parent: str | None
    role: Role
    timestamp: float
    content: Any
    message_id: str | None = None
    model: str | None = None
    usage: RecordedUsage | None = None
    tool_use_result: Any = None
    sidechain: bool = False
    version: str | None = None
    """The Claude Code version that wrote the line."""
    cwd: str | None = None
    """The working directory when the line was written."""
    attachment: bool = False
    """An attachment record: `content` is the tuple of texts Claude Code makes of it."""
    rendered_role: Role | None = None
    """The role of the message an attachment is sent in where the model takes system
    messages, when the record says (`renderedRole`, 2.1.332, which records its texts as sent
    too): `content` then holds those texts, in their system-reminder tags."""
    beside_result: bool = False
    """Sent as a block of its own after a tool result (`renderedBesideToolResult`, or what a
    tool's PreToolUse hooks added: `_with_tool_hooks`), not appended to the result's text, as
    2.1.332 sends other reminders that follow a result to a model that takes no system
    messages."""
    tool_use_id: str | None = None
    """For an attachment, the tool use it names (`toolUseID`): for what a tool's PreToolUse
    and PostToolUse hooks add, that tool's; other hooks name ids of their own."""
    meta: bool = False
    """A user line Claude Code wrote itself (`isMeta`: a tool's added message, say), not a
    prompt a person wrote."""
    synthetic: bool = False
    """An assistant line Claude Code wrote itself ("No response requested.", flagged as no API
    error): sent with later requests, never a call."""
    copied: bool = False
    """A line copied from the session this one was forked from: its response is a call of
    that session, billed there."""

    @classmethod
    def of(
        cls,
        line: int,
        uuid: str,
        parent: str | None,
        message: Mapping[str, Any],
        *,
        assistant: bool,
        timestamp: float,
        tool_use_result: Any,
        sidechain: bool,
        usage: RecordedUsage | None = None,
        version: str | None = None,
        cwd: str | None = None,
        meta: bool = False,
        synthetic: bool = False,
        copied: bool = False,
    ) -> _Entry:
        """A sent line; a response's id and model are read from its message."""
        return cls(
            line=line,
            uuid=uuid,
            parent=parent,
            role="assistant" if assistant else "user",
            timestamp=timestamp,
            content=message.get("content"),
            message_id=_string(message.get("id")) if assistant else None,
            model=_string(message.get("model")) if assistant else None,
            usage=usage,
            tool_use_result=tool_use_result,
            sidechain=sidechain,
            version=version,
            cwd=cwd,
            meta=meta,
            synthetic=synthetic,
            copied=copied,
        )


@dataclass
class ToolIds:
    """One tool use id as responses used it: the first one's id, and the ids the tool uses
    of later ones that reused it were given, in file order."""

    first: str | None
    later: list[str] = field(default_factory=list)


@dataclass
class _Reading:
    """State of one file's reading: entries by uuid, tool uses by id, the problems met."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    json_lines: int = 0
    not_json: int = 0
    """Lines that were JSON, and lines that were not (the truncated last one aside): none of
    the first and some of the second, and the file is no transcript."""
    entries: list[_Entry] = field(default_factory=list)
    links: dict[str, str | None] = field(default_factory=dict)
    previous: dict[str, str] = field(default_factory=dict)
    last_uuid: dict[bool, str] = field(default_factory=dict)
    sent: dict[str, _Entry] = field(default_factory=dict)
    calls: ToolCalls = field(default_factory=ToolCalls)
    blocks: dict[str, tuple[Block, ...]] = field(default_factory=dict)
    """The blocks of each sent line, by its uuid (`_blocks`)."""
    read: dict[str, _Read] = field(default_factory=dict)
    """What reading the latest calls' requests made, by their responses' first lines
    (`_Read`, at most READ_KEPT of them)."""
    preserved: dict[str, list[str]] = field(default_factory=dict)
    """Per compaction summary (its uuid), the messages kept after it."""
    cleared: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per microcompaction boundary (its uuid), the tool results Claude Code cleared there."""
    children: dict[str, list[_Entry]] = field(default_factory=dict)
    """Sent lines by the line they link to."""
    unknown_tools: dict[str, list[int]] = field(default_factory=dict)
    """Tool names the reader does not know, with the lines that used them."""
    tallies: dict[tuple[str, str, str], dict[str, list[int]]] = field(default_factory=dict)
    """Per kind of line skipped (`tallied`), what each was (a record type, a JSON error)
    with its lines."""
    tally_notes: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """Where the one note on each kind stands in `problems` (at its first line)."""
    queued_at: float | None = None
    """When the run that wrote the file's first lines queued its prompt (its first queue
    operation), while no line of the session's own has been read: lines stamped earlier
    were copied from the session it forks (`--fork-session` marks them no other way)."""
    own: bool = False
    """A sent line of the session's own has been read: no later line is a copy."""
    rendered: bool = False
    """Some attachment record holds the text it was sent as (`rendered`, 2.1.332): in such a
    file an attachment without it was not sent (a prompt snapshot, a session context)."""
    tool_ids: dict[str, ToolIds] = field(default_factory=dict)
    """Per tool use id, the response that used it first and what later ones were given
    instead (`_unique_tool_ids`)."""
    renamed: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per assistant line, the tool use ids it reused and the ids they were given."""
    process_ends: list[int] = field(default_factory=list)
    """The lines of `last-prompt` records, in order: Claude Code writes one when a process
    ends (and after a compaction), so a line after one was written by a process that rebuilt
    the conversation from the file (`--continue`, `--resume`)."""

    def copied(self, record: Mapping[str, Any], timestamp: float) -> bool:
        """Whether a sent line is a copy of the parent session's (see `_Entry.copied`).

        `/fork` (2.1.x) and `/branch` mark each copy with `forkedFrom`; `--fork-session`
        copies the parent's lines unchanged but for their session id, after the queue
        operation of its own prompt, so they are the leading lines stamped before it.
        """
        if isinstance(record.get("forkedFrom"), Mapping):
            return True
        if self.own or self.queued_at is None or timestamp >= self.queued_at:
            self.own = True
            return False
        return True

    def problem(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.path, line, message))

    def note_unknown_tools(self) -> None:
        """One note for the whole session (at the first use), however often they were used."""
        if not self.unknown_tools:
            return
        uses = {repr(name): lines for name, lines in self.unknown_tools.items()}
        first = min(lines[0] for lines in uses.values())
        what = "unknown tool" if len(uses) == 1 else "unknown tools"
        self.problem(first, f"{what} {_tally(uses, 'use')}: results counted as plain tool output")

    def tallied(self, line: int, skipped: tuple[str, str, str], what: Any) -> None:
        """One note for the whole file per kind of line skipped or guessed at (`skipped`:
        its name, said of one kind of `what` and of several, and what became of those lines),
        however many lines it covers: a record type a newer Claude Code writes, a log mixed
        into the file. It says how many, per `what`."""
        found = self.tallies.setdefault(skipped, {})
        found.setdefault(repr(what), []).append(line)
        if skipped not in self.tally_notes:
            self.tally_notes[skipped] = len(self.problems)
            self.problems.append(Problem(self.path, line, ""))
        at = self.tally_notes[skipped]
        name = skipped[0] if len(found) == 1 else skipped[1]
        message = f"{name} {_tally(found, 'line')}; {skipped[2]}"
        self.problems[at] = Problem(self.path, self.problems[at].line, message)

    def keep(self, entry: _Entry) -> None:
        """Keep a line that was sent to the model."""
        self.entries.append(entry)
        self.sent[entry.uuid] = entry
        parent = self.sent_parent(entry.parent)
        if parent is not None:
            self.children.setdefault(parent, []).append(entry)

    def sent_parent(self, parent: str | None) -> str | None:
        """The nearest line at or above `parent` on its chain that was sent to the model."""
        passed: set[str] = set()
        while parent is not None and parent not in self.sent and parent not in passed:
            passed.add(parent)  # a record not sent (progress, a hook's note): look past it
            parent = self.links.get(parent)
        return parent


NOT_JSON = ("not JSON", "not JSON", "skipped")
NOT_AN_OBJECT = ("not a JSON object but", "not a JSON object but", "skipped")
UNKNOWN_RECORD = ("unknown record type", "unknown record types", "skipped")
UNKNOWN_BLOCK = ("unknown content block type", "unknown content block types", "skipped")
NO_CONTENT = (
    "record without message content, of type",
    "records without message content, of types",
    "skipped",
)
NOT_A_TIME = (
    "timestamp not ISO 8601 but",
    "timestamps not ISO 8601 but",
    "each taken as the line before's, so the cache's idle gaps there are a guess",
)
NOT_UTF8 = ("bytes not UTF-8:", "bytes not UTF-8:", "each read as U+FFFD")
UNREADABLE_USAGE = ("unreadable usage", "unreadable usage", "those calls replay as unrecorded")
REPEATED_UUID = (
    "the uuid of an earlier line again, on lines of type",
    "the uuid of an earlier line again, on lines of types",
    "skipped: each uuid is read from its first line",
)
"""The kinds of line the reader skips or guesses at, each with one note per file
(`_Reading.tallied`)."""


def _tally(found: Mapping[str, Sequence[int]], noun: str) -> str:
    """`'a' (2 uses), 'b' (1 use)`: each name and how often it occurred."""
    return ", ".join(f"{name} ({_plural(len(lines), noun)})" for name, lines in found.items())


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


NO_CALLS = "no API calls in this transcript"
"""The problem of a transcript that holds nothing to replay (empty, blank, no response)."""


class TranscriptError(OSError):
    """A transcript file that cannot be opened or decoded at all."""


def read_session(path: str | Path) -> Session:
    """The information flow of one transcript file; bad lines become `Session.problems`.

    The file is read line by line, so memory follows the session, not the file. Raises
    TranscriptError when the file cannot be read at all, at once for what is not a regular
    file (a device, a FIFO, a folder), which could never end or would never answer.
    """
    file = Path(path)
    reading = _Reading(str(file))
    with _open_transcript(file) as stream:
        records = _parse_lines(stream, reading)
        try:
            head = _head(records)
            stream_json = any(_stream_init(record) for _, record in head)
            for line, record in itertools.chain(head, records):
                try:
                    _collect(line, record, reading, stream_json)
                except MALFORMED as error:
                    kind = record.get("type")
                    reading.problem(line, f"malformed {kind} record ({error!r}); skipped")
        except OSError as error:
            raise TranscriptError(f"{file}: cannot read: {error.strerror or error}") from error
        except (EOFError, zlib.error) as error:  # a gzip'd file cut short or damaged
            raise TranscriptError(f"{file}: cannot read: {error}") from error
    if reading.not_json and not reading.json_lines:  # a binary, a markdown export, ...
        raise TranscriptError(f"{file}: not a transcript: no line of it is JSON")
    if not stream_json:
        _chain_unlinked(reading)
    session = _build_session(reading)
    session.parent = _parent_session(file)
    return session


UNLINKED = "no line links to the one before it (parentUuid): the lines are taken in file order"


def _chain_unlinked(reading: _Reading) -> None:
    """Link each sent line to the one written before it (per side of the sidechain flag) in a
    file where no line names its parent, as an export that drops `parentUuid` writes it: its
    responses would have followed nothing, and it gave no calls."""
    if len(reading.entries) < 2 or any(entry.parent for entry in reading.entries):
        return
    reading.problem(reading.entries[1].line, UNLINKED)
    reading.children.clear()
    last: dict[bool, str] = {}
    for entry in reading.entries:
        entry.parent = last.get(entry.sidechain)
        reading.links[entry.uuid] = entry.parent
        last[entry.sidechain] = entry.uuid
        if entry.parent is not None:
            reading.children.setdefault(entry.parent, []).append(entry)


def _head(records: Iterator[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """The records up to the first one that is a message, or stream-json's init record:
    the events of the SessionStart hooks come before init, two a hook."""
    head = []
    for line, record in records:
        head.append((line, record))
        if _stream_init(record) or record["type"] in ("user", "assistant", "attachment"):
            break
    return head


def _stream_init(record: Mapping[str, Any]) -> bool:
    """The first record of `claude -p --output-format stream-json` (after hook events)."""
    return record["type"] == "system" and record.get("subtype") == "init" and "session_id" in record


def _open_transcript(file: Path) -> BinaryIO:
    """The file opened for reading, once it is known to be a regular file (gzip'd or not)."""
    try:
        mode = file.stat().st_mode
        if stat.S_ISDIR(mode):  # one that cannot be listed (found locked in a search) says why
            os.scandir(file).close()
        if not stat.S_ISREG(mode):
            raise TranscriptError(f"{file}: cannot read: not a regular file ({_file_kind(mode)})")
        stream = file.open("rb")
        if stream.peek(2)[:2] != GZIP_MAGIC:
            return stream
        stream.close()  # an archived transcript, read as it was written
        return cast(BinaryIO, gzip.open(file, "rb"))
    except TranscriptError:
        raise
    except OSError as error:
        raise TranscriptError(f"{file}: cannot read: {error.strerror or error}") from error


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def _parent_session(file: Path) -> str | None:
    """For `<session>/subagents/agent-*.jsonl`, the parent session's file, when it is there."""
    if file.parent.name != "subagents" or not file.name.startswith("agent-"):
        return None
    parent = file.parent.parent.with_suffix(".jsonl")
    return str(parent) if parent.is_file() else None


MAX_LINE_BYTES = 64 << 20
"""The longest line taken: twice the Messages API's 32 MB limit on a request, so longer is
no record of one (a file of NULs, a disk image); it is read through in pieces, never held."""
_PIECE_BYTES = 1 << 20


def _lines(stream: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """Each line with its number, but None for one longer than `MAX_LINE_BYTES`: read a
    piece at a time, so memory follows the longest line taken, not the file."""
    for number in itertools.count(1):
        pieces: list[bytes] = []
        size = 0
        piece = b""
        while size <= MAX_LINE_BYTES and (piece := stream.readline(_PIECE_BYTES)):
            pieces.append(piece)
            size += len(piece)
            if piece.endswith(b"\n"):
                break
        if not pieces:
            return
        if size <= MAX_LINE_BYTES:
            yield number, b"".join(pieces)
            continue
        pieces.clear()  # what was read of it, before reading through to its end
        while piece and not piece.endswith(b"\n"):
            piece = stream.readline(_PIECE_BYTES)
        yield number, None


def _decoded(raw: bytes, number: int, reading: _Reading) -> str:
    """A line's text; bytes that are no UTF-8 are read as U+FFFD, and a note says so."""
    encoding = "utf-8-sig" if number == 1 else "utf-8"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        reading.tallied(number, NOT_UTF8, error.reason)
        return raw.decode(encoding, "replace")


def _parse_lines(stream: BinaryIO, reading: _Reading) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON object of each line, in file order; a line that fails is reported.

    A line that is not JSON is only known to be the truncated last line once nothing but
    blank lines follows it, so its report waits for the next line.
    """
    failed: tuple[int, str, bool] | None = None
    for number, raw in _lines(stream):
        line = "" if raw is None else _decoded(raw, number, reading)
        if raw is not None and not line.strip():
            continue
        if failed is not None:
            reading.tallied(failed[0], NOT_JSON, failed[1])
            reading.not_json += 1
            failed = None
        if raw is None:
            limit = f"longer than {MAX_LINE_BYTES >> 20} MiB"
            reading.problem(number, f"{limit}, more than any request holds; skipped")
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            failed = (number, error.msg, not raw.endswith(b"\n"))
            continue
        except RecursionError:  # valid JSON, nested deeper than the parser goes
            reading.problem(number, "nested too deeply to parse; skipped")
            continue
        reading.json_lines += 1
        if not isinstance(record, dict):
            reading.tallied(number, NOT_AN_OBJECT, type(record).__name__)
            continue
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in KNOWN_RECORD_TYPES:
            reading.tallied(number, UNKNOWN_RECORD, kind)
            continue
        yield number, record
    if failed is not None and failed[2]:  # cut off with no newline: a writer stopped there
        reading.problem(failed[0], f"truncated last line ({failed[1]}); skipped")
    elif failed is not None:
        reading.tallied(failed[0], NOT_JSON, failed[1])
        reading.not_json += 1


def parse_timestamp(value: Any, fallback: float) -> float:
    """A record's ISO-8601 `timestamp` in seconds; `fallback` if missing or unreadable."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return fallback
    return fallback


def _sent_at(line: int, value: Any, reading: _Reading) -> float:
    """A sent line's time; the line before's when it has none, and also, with a note, when
    it has one that cannot be read (the gaps between calls decide when the cache is cold)."""
    previous = reading.entries[-1].timestamp if reading.entries else 0.0
    timestamp = parse_timestamp(value, math.nan)
    if not math.isnan(timestamp):
        return timestamp
    if value is not None:
        reading.tallied(line, NOT_A_TIME, type(value).__name__)
    return previous


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


CACHE_COUNTS = ("cache_read_input_tokens", "cache_creation_input_tokens")
"""The keys of every usage Anthropic returns; one without them lost its cache counts."""


def _usage(raw: Any) -> RecordedUsage | None:
    """A response's recorded usage (None when it has none); raises ValueError or TypeError
    for counts that are not counts, or more input than any request can carry."""
    if not isinstance(raw, Mapping) or "input_tokens" not in raw:
        return None
    inputs = usage_from_dict(raw)
    window = max(row.context_window for row in rows())
    if inputs.total_input_tokens > window:
        raise ValueError(
            f"{inputs.total_input_tokens} input tokens, more than any model's context window"
        )
    counts = {f.name: getattr(inputs, f.name) for f in fields(inputs)}  # asdict deep-copies
    return RecordedUsage(
        **counts,
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_counted=all(key in raw for key in CACHE_COUNTS),
        speed=Speed.FAST if raw.get("speed") == Speed.FAST else Speed.STANDARD,
        inference_geo=Geo.US if raw.get("inference_geo") == Geo.US else Geo.GLOBAL,
    )


def _collect(line: int, record: dict[str, Any], reading: _Reading, stream_json: bool) -> None:
    """Note the chain link of every line and keep the lines sent to the model."""
    if stream_json:
        _collect_stream_json(line, record, reading)
        return
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid in reading.links:
        # A line written twice (a file merged with a copy of itself): read once, or each
        # response would carry its blocks twice.
        reading.tallied(line, REPEATED_UUID, record["type"])
        return
    if isinstance(uuid, str):
        parent = record.get("parentUuid")
        reading.links[uuid] = parent if isinstance(parent, str) else None
        side = bool(record.get("isSidechain"))
        if side in reading.last_uuid:
            reading.previous[uuid] = reading.last_uuid[side]
        reading.last_uuid[side] = uuid
    if not isinstance(uuid, str):
        if record["type"] == "queue-operation" and reading.queued_at is None:
            reading.queued_at = parse_timestamp(record.get("timestamp"), float("-inf"))
        if record["type"] == "last-prompt":
            reading.process_ends.append(line)
        return
    if record["type"] == "system" and record.get("subtype") == "compact_boundary":
        _note_preserved(record, reading)
    if record["type"] == "system" and record.get("subtype") == "microcompact_boundary":
        _note_cleared(uuid, record, reading)
    if record.get("isVisibleInTranscriptOnly") and not record.get("isCompactSummary"):
        return  # shown to the user only; the compaction summary is sent although so marked
    timestamp = _sent_at(line, record.get("timestamp"), reading)
    if record["type"] == "attachment":
        role, texts = _rendered_attachment(record, reading)
        attachment = record.get("attachment")
        if texts:
            reading.keep(
                _Entry(
                    line,
                    uuid,
                    reading.links[uuid],
                    "user",
                    timestamp,
                    texts,
                    sidechain=bool(record.get("isSidechain")),
                    attachment=True,
                    rendered_role=role,
                    beside_result=record.get("renderedBesideToolResult") is True,
                    tool_use_id=_use_id(
                        _string(attachment.get("toolUseID")), reading.links[uuid], reading
                    )
                    if isinstance(attachment, Mapping)
                    else None,
                    copied=reading.copied(record, timestamp),
                )
            )
        return
    message = _sent_message(line, record, reading)
    if message is None:
        return
    assistant = record["type"] == "assistant"
    synthetic = assistant and message.get("model") == SYNTHETIC_MODEL
    if synthetic and record.get("isApiErrorMessage") is not False:
        return  # an error notice (unflagged before 2.1): shown, neither a call nor sent
    _unique_tool_ids(uuid, message, assistant, reading)
    reading.keep(
        _Entry.of(
            line,
            uuid,
            reading.links[uuid],
            message,
            assistant=assistant,
            timestamp=timestamp,
            tool_use_result=record.get("toolUseResult"),
            sidechain=bool(record.get("isSidechain")),
            usage=_recorded_usage(line, message, reading) if assistant else None,
            version=_string(record.get("version")),
            cwd=_string(record.get("cwd")),
            meta=record.get("isMeta") is True,
            synthetic=synthetic,
            copied=reading.copied(record, timestamp),
        )
    )


def _unique_tool_ids(
    uuid: str, message: Mapping[str, Any], assistant: bool, reading: _Reading
) -> None:
    """Give each response's tool uses ids no earlier response used, and each result the id
    of the use it answers, in place. The API takes only unique ids, but a model behind a
    gateway may number its tool calls anew in each response (call_0, call_1...): every
    result, cleared result and hook of one call would be taken for all the others'."""
    content = message.get("content")
    if not isinstance(content, list):
        return
    for item in content:
        if not isinstance(item, dict):
            continue
        if assistant and item.get("type") == "tool_use" and isinstance(item.get("id"), str):
            known = reading.tool_ids.setdefault(item["id"], ToolIds(_string(message.get("id"))))
            if known.first != _string(message.get("id")):
                unique = f"{item['id']}~{len(known.later) + 1}"
                known.later.append(unique)
                reading.renamed.setdefault(uuid, {})[item["id"]] = unique
                item["id"] = unique
        elif not assistant and item.get("type") == "tool_result":
            item["tool_use_id"] = _use_id(item.get("tool_use_id"), reading.links[uuid], reading)


def _use_id(answered: Any, parent: str | None, reading: _Reading) -> Any:
    """The id of the tool use that an id in a result (or a hook's record) names: the one on
    its chain when responses reused the id, else the last given it."""
    known = reading.tool_ids.get(answered) if isinstance(answered, str) else None
    if known is None or not known.later:
        return answered
    seen: set[str] = set()
    while parent is not None and parent not in seen:
        seen.add(parent)
        unique = reading.renamed.get(parent, {}).get(answered)
        if unique is not None:
            return unique
        entry = reading.sent.get(parent)
        if entry is not None and answered in _use_ids(entry):
            return answered
        parent = reading.links.get(parent)
    return known.later[-1]


def _note_preserved(record: Mapping[str, Any], reading: _Reading) -> None:
    """The messages a compaction kept: Claude Code sends them again right after the summary."""
    metadata = record.get("compactMetadata")
    kept = metadata.get("preservedMessages") if isinstance(metadata, Mapping) else None
    if not isinstance(kept, Mapping) or not isinstance(kept.get("anchorUuid"), str):
        return
    uuids = [u for u in kept.get("uuids") or [] if isinstance(u, str)]
    reading.preserved[kept["anchorUuid"]] = uuids


def _note_cleared(uuid: str, record: Mapping[str, Any], reading: _Reading) -> None:
    """The tool results a microcompaction cleared: every later request sends them as a stub."""
    metadata = record.get("microcompactMetadata")
    ids = metadata.get("compactedToolIds") if isinstance(metadata, Mapping) else None
    if isinstance(ids, list):
        reading.cleared[uuid] = frozenset(i for i in ids if isinstance(i, str))


def _collect_stream_json(line: int, record: dict[str, Any], reading: _Reading) -> None:
    """stream-json lines carry no links or times: file order within a thread is the chain."""
    message = _sent_message(line, record, reading)
    if message is None:
        return
    thread = record.get("parent_tool_use_id")
    thread_key = f"task:{thread}" if isinstance(thread, str) else "main"
    assistant = record["type"] == "assistant"
    last = reading.sent.get(reading.links.get(f"last:{thread_key}") or "")
    answered = last is not None and last.role == "assistant"
    if assistant and (last is None or (answered and last.message_id != message.get("id"))):
        _unechoed_prompt(line, thread_key, reading)  # a new response after no prompt
    uuid = f"{thread_key}@{line}"
    parent = _link_stream_json(thread_key, uuid, reading)
    reading.keep(
        _Entry.of(
            line,
            uuid,
            parent,
            message,
            assistant=assistant,
            timestamp=float(line),  # no times: calls one second apart keep the cache warm
            tool_use_result=record.get("tool_use_result"),
            sidechain=thread_key != "main",
            usage=_recorded_usage(line, message, reading) if assistant else None,
        )
    )


def _link_stream_json(thread_key: str, uuid: str, reading: _Reading) -> str | None:
    """Link `uuid` to the last line of its thread and make it the last; returns its parent."""
    parent = reading.links.get(f"last:{thread_key}")
    reading.links[uuid] = parent
    reading.links[f"last:{thread_key}"] = uuid
    return parent


UNECHOED_PROMPT = "(a prompt stream-json output does not hold)"
"""What stands for a prompt that stream-json output leaves out: it echoes the person's
prompts only with `--replay-user-messages`, so a response may follow nothing, or the
response of the turn before. A short text, so that the call is one; where usage is
recorded, the prompt's real size is in what the call read or wrote all the same."""
NO_PROMPT = (
    "stream-json responses with no prompt before them, in thread",
    "stream-json responses with no prompt before them, in threads",
    f"each sent after {UNECHOED_PROMPT!r} (the output holds prompts only with "
    "--replay-user-messages)",
)


def _unechoed_prompt(line: int, thread_key: str, reading: _Reading) -> None:
    """Keep a stand-in for the prompt the stream-json response of `line` followed."""
    reading.tallied(line, NO_PROMPT, thread_key.split(":")[0])
    uuid = f"{thread_key}@{line}:prompt"
    parent = _link_stream_json(thread_key, uuid, reading)
    prompt = {"content": UNECHOED_PROMPT}
    reading.keep(
        _Entry.of(
            line,
            uuid,
            parent,
            prompt,
            assistant=False,
            timestamp=float(line),
            tool_use_result=None,
            sidechain=thread_key != "main",
        )
    )


def _sent_message(
    line: int, record: Mapping[str, Any], reading: _Reading
) -> Mapping[str, Any] | None:
    """A user or assistant line's message (None for other lines, or one with no content)."""
    kind = record.get("type")
    if kind not in ("user", "assistant"):
        return None
    message = record.get("message")
    if not isinstance(message, Mapping) or "content" not in message:
        reading.tallied(line, NO_CONTENT, kind)
        return None
    return message


def _recorded_usage(
    line: int, message: Mapping[str, Any], reading: _Reading
) -> RecordedUsage | None:
    """A response's usage; one that cannot be read is noted, and the call replays unrecorded."""
    try:
        return _usage(message.get("usage"))
    except MALFORMED as error:
        reading.tallied(line, UNREADABLE_USAGE, str(error))
        return None


# ---------------------------------------------------------------------------------------------
# Attachments


AGENT_LISTING = "Available agent types for the Agent tool:\n"
CONCURRENCY_NOTE = (
    "When you launch multiple agents for independent work, send them in a single message "
    "with multiple tool uses so they run concurrently."
)
SKILL_LISTING = "The following skills are available for use with the Skill tool:\n\n"
SYSTEM_MESSAGES_FROM = (4, 8)
"""Models from this version on (Opus 4.8) get attachments as role "system" messages..."""
SYSTEM_MESSAGES_SINCE = (2, 1, 154)
"""...from this Claude Code release on (found by running releases against tests/fakes)."""
SYSTEM_MARKED_SINCE = (2, 1, 212)
"""From this release on a role "system" message that ends a request carries the breakpoint;
2.1.154 to 2.1.211 leave it on the message before (found the same way, release by release)."""
TOOL_ATTACHMENTS_KEPT_SINCE = (2, 1, 332)
"""The first release read whose query loop keeps what a tool's hooks add as the attachment
it is (2.1.332's sources); 2.1.197's make API messages of it on its own (see `_made_alone`)."""


def _rendered_attachment(
    record: Mapping[str, Any], reading: _Reading
) -> tuple[Role | None, tuple[str, ...]]:
    """An attachment's role and texts as sent, where the record holds them (2.1.332 writes
    `rendered`, a list of texts in system-reminder tags, and `renderedRole`). Otherwise no
    role, and the text the reader makes of the attachment (none in a file that records
    `rendered`: what it writes without is not sent).
    """
    rendered, role = record.get("rendered"), record.get("renderedRole")
    if "rendered" in record:
        reading.rendered = True
    if isinstance(rendered, list) and role in ("user", "system"):
        texts = tuple(
            item["content"]
            for item in rendered
            if isinstance(item, Mapping) and isinstance(item.get("content"), str)
        )
        texts = tuple(text for text in texts if text)
        return cast(Role, role), texts
    text = "" if reading.rendered else attachment_text(record.get("attachment"))
    return None, (text,) if text else ()


def _untagged(text: str) -> str:
    """A reminder's text without its system-reminder tags (as a system message sends it)."""
    opening, closing = "<system-reminder>\n", "\n</system-reminder>"
    if text.startswith(opening) and text.endswith(closing):
        return text[len(opening) : -len(closing)]
    return text


def attachment_text(attachment: Any) -> str:
    """The text Claude Code sends for an attachment record ("" when it sends nothing).

    Agent and skill listings, re-attached files and nested CLAUDE.md files are rendered as
    Claude Code renders them (tests/e2e checks it against what the CLI sent); other types by
    their text fields, which is what they add.
    """
    if not isinstance(attachment, Mapping):
        return ""
    kind = attachment.get("type")
    if kind == "agent_listing_delta":
        lines = [str(line) for line in attachment.get("addedLines") or []]
        if not lines:
            return ""
        note = "\n\n" + CONCURRENCY_NOTE if attachment.get("showConcurrencyNote") else ""
        return AGENT_LISTING + "\n".join(lines) + note
    if kind == "skill_listing":
        content = attachment.get("content")
        return SKILL_LISTING + content if isinstance(content, str) and content else ""
    if kind == "file":
        return _file_attachment_text(attachment)
    if isinstance(kind, str) and (kind.startswith("hook_") or kind in UNSENT_ATTACHMENTS):
        return _hook_text(attachment)
    memory = attachment.get("content")
    if kind == "nested_memory" and isinstance(memory, Mapping):
        path, text = memory.get("path") or attachment.get("path"), memory.get("content")
        return f"Contents of {path}:\n\n{text}" if isinstance(text, str) and text else ""
    return "\n".join(_strings({k: v for k, v in attachment.items() if k != "type"}))


UNSENT_ATTACHMENTS = frozenset(
    {"already_read_file", "command_permissions", "edited_image_file", "structured_output",
     "context_efficiency"}
)  # fmt: skip
"""Attachment types Claude Code records and does not send (2.1.22 and 2.1.97 sources: the
function that makes messages of attachments returns none for them), as every hook record
but the four `_hook_text` renders."""

HOOK_SUCCESS_SENT = ("SessionStart", "UserPromptSubmit")
"""The events whose hooks' plain output Claude Code sends; a PostToolUse formatter's stdout
is recorded and not sent."""


def _hook_text(attachment: Mapping[str, Any]) -> str:
    """A hook's record as Claude Code sends it (2.1.22 to 2.1.197, their sources and runs
    against tests/fakes), "" for what it does not send."""
    kind, name = attachment.get("type"), attachment.get("hookName")
    if kind == "hook_success" and attachment.get("hookEvent") in HOOK_SUCCESS_SENT:
        content = attachment.get("content")
        return f"{name} hook success: {content}" if isinstance(content, str) and content else ""
    if kind == "hook_additional_context":
        lines = attachment.get("content")
        if isinstance(lines, list) and lines:
            return f"{name} hook additional context: " + "\n".join(map(str, lines))
    if kind == "hook_blocking_error":
        error = attachment.get("blockingError")
        if isinstance(error, Mapping):
            command, reason = error.get("command"), error.get("blockingError")
            return f'{name} hook blocking error from command: "{command}": {reason}'
    if kind == "hook_stopped_continuation":
        return f"{name} hook stopped continuation: {attachment.get('message')}"
    return ""


def _file_attachment_text(attachment: Mapping[str, Any]) -> str:
    """A file Claude Code re-attaches after a compaction, rendered as the Read it stands for."""
    content = attachment.get("content")
    file = content.get("file") if isinstance(content, Mapping) else None
    if not isinstance(file, Mapping) or not isinstance(file.get("content"), str):
        return "\n".join(_strings({k: v for k, v in attachment.items() if k != "type"}))
    start = int(file.get("startLine") or 1)
    rows = str(file["content"]).split("\n")
    numbered = "\n".join(f"{n}\t{row}" for n, row in enumerate(rows, start))
    path = str(file.get("filePath") or attachment.get("filename") or "")
    called = json.dumps({"file_path": path}, ensure_ascii=False, separators=(",", ":"))
    return (
        f"Called the Read tool with the following input: {called}\n"
        f"Result of calling the Read tool:\n{numbered}"
    )


def _strings(value: Any) -> Iterator[str]:
    """The non-empty strings in a JSON value, depth first."""
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def takes_system_messages(model: str | None, version: str | None = None) -> bool:
    """Whether Claude Code (this release; None: a recent one) sends attachments to this model
    as role "system" messages."""
    parsed = parse_model(model) if model is not None else None
    if parsed is None or parsed[1] < SYSTEM_MESSAGES_FROM:
        return False
    release = _release(version)
    return release is None or release >= SYSTEM_MESSAGES_SINCE


def _marks_system_messages(version: str | None) -> bool:
    """Whether this release (None: a recent one) puts its breakpoint in a trailing role
    "system" message."""
    release = _release(version)
    return release is None or release >= SYSTEM_MARKED_SINCE


def _release(version: str | None) -> tuple[int, ...] | None:
    """ "2.1.97" as (2, 1, 97); None when absent or not a release number."""
    parts = (version or "").split(".")
    return (
        tuple(int(p) for p in parts) if len(parts) == 3 and all(map(str.isdecimal, parts)) else None
    )


def _made_alone(turn: _Turn, version: str | None) -> frozenset[str]:
    """The attachments (uuids) a request sends as reminders of their own, neither as system
    messages (to a model that takes them) nor in a tool result's text (to one that does
    not): what a tool's hooks added since the last prompt a person wrote (`turn`), in
    releases before TOOL_ATTACHMENTS_KEPT_SINCE.

    Read from the sources of 2.1.197 (2.1.97's do the same; 2.1.332's no longer do): the
    query loop makes API messages of each message a running tool yields (its result, what
    its PreToolUse and PostToolUse hooks add, which name the tool's use) on its own, and the
    loop's next requests send those. Alone, an attachment has no user message before it to
    follow as a system message or to join, so it becomes system-reminder text in a user
    message of its own, which joins the tool result's as a block. A new prompt starts a new
    loop from the conversation as recorded, where the attachment is read like any other. A
    missing or unreadable version is taken as a recent release.
    """
    release = _release(version)
    if release is None or release >= TOOL_ATTACHMENTS_KEPT_SINCE:
        return frozenset()
    return frozenset(entry.uuid for entry in turn.attachments if entry.tool_use_id in turn.uses)


@dataclass(frozen=True)
class _Turn:
    """The lines of a request since the last prompt a person wrote that `_made_alone` looks
    at: the tool uses asked for, and the attachments that may name one."""

    uses: frozenset[str] = frozenset()
    attachments: tuple[_Entry, ...] = ()


def _turn(chain: list[_Entry], earlier: _Read | None) -> _Turn:
    """The current turn of a request's lines (`_Turn`), looked for only past the lines of
    the `earlier` request they start with, whose turn goes on when no prompt came since."""
    since = len(earlier.chain) if earlier is not None else 0
    lines: list[_Entry] = []
    for entry in reversed(chain[since:]):
        person = entry.role == "user" and not (entry.attachment or entry.meta)
        if person and _written_prompt(entry.content):
            earlier = None
            break
        lines.append(entry)
    lines.reverse()
    uses = {i for entry in lines for i in _use_ids(entry)}
    attachments = [e for e in lines if e.attachment and e.rendered_role is None]
    if earlier is None:
        return _Turn(frozenset(uses), tuple(attachments))
    before = earlier.turn
    return _Turn(before.uses | uses, (*before.attachments, *attachments))


def _attachment_role(entry: _Entry, system: bool) -> Role:
    """The role of the message an attachment goes in: system where the model takes system
    messages (and the record, if it says, asks for one), else user."""
    return "system" if system and entry.rendered_role in (None, "system") else "user"


def _attachment_texts(entry: _Entry, system: bool) -> tuple[str, ...]:
    """As a system message the texts as they are, in a user message inside system-reminder
    tags (recorded texts carry them: a system message sends them without)."""
    texts: tuple[str, ...] = entry.content
    if _attachment_role(entry, system) == "system":
        return tuple(_untagged(text) for text in texts)
    if entry.rendered_role is not None:
        return texts
    return tuple(f"<system-reminder>\n{text}\n</system-reminder>" for text in texts)


def _with_reminders(blocks: tuple[Block, ...], texts: Sequence[str]) -> tuple[Block, ...]:
    """A tool result's line with reminders appended to its last result's text, as Claude
    Code joins them (2.1.22 to 2.1.332 sources): each part trimmed, the empty ones left
    out, a blank line between."""
    last = max(i for i, b in enumerate(blocks) if b.type == "tool_result")
    block = blocks[last]
    text = "\n\n".join(part for part in (t.strip() for t in (block.text, *texts)) if part)
    added = sum(estimate_block_tokens(t, "prose") for t in texts)
    result = max(len(block.text.strip()) - block.joined, 0)
    appended = replace(
        block,
        key=block_key("tool_result", block.tool_use_id or "", text),
        text=text,
        tokens=block.tokens + added,
        joined=len(text) - result,
    )
    return (*blocks[:last], appended, *blocks[last + 1 :])


# ---------------------------------------------------------------------------------------------
# Content blocks


def _text_block(text: str) -> Block:
    return Block(
        block_key("text", text), "text", text, estimate_block_tokens(text, "prose"), "prose"
    )


def _file_view(path: str, text: str, result: Any) -> FileView | None:
    """What a Read showed, from the structured result when recorded, else from the cat -n text.

    Raises one of MALFORMED when the structured result has fields of the wrong shape.
    """
    if isinstance(result, Mapping) and isinstance(result.get("file"), Mapping):
        file = result["file"]
        content = file.get("content")
        if isinstance(content, str):
            return FileView(
                path=str(file.get("filePath") or path),
                content=content,
                start_line=int(file.get("startLine") or 1),
                num_lines=int(file.get("numLines") or content.count("\n") + 1),
                total_lines=int(file["totalLines"]) if file.get("totalLines") else None,
            )
    return _file_view_from_text(path, text)


def _file_view_from_text(path: str, text: str) -> FileView | None:
    """A Read's view parsed from its cat -n text (sub-agent files record no toolUseResult)."""
    body = _SYSTEM_REMINDER.sub("\n", text)
    numbered = [_CAT_N_LINE.match(row) for row in body.split("\n") if row]
    rows = [m for m in numbered if m is not None]
    if not rows:
        return None
    return FileView(
        path=path,
        content="\n".join(m.group(2) for m in rows),
        start_line=int(rows[0].group(1)),
        num_lines=len(rows),
    )


def _serena_file_view(path: str, content: str, tool_input: Mapping[str, Any]) -> FileView | None:
    """What Serena's `read_file` answered (SERENA_TOOLS, `_serena_answer`): its lines from
    the 0-based `start_line` (the whole file when it starts at 0 and no `end_line` cuts it);
    None when the transcript's `start_line` is no line number (where they go is unknown)."""
    start, end = tool_input.get("start_line", 0), tool_input.get("end_line")
    first = whole_number(start)
    if first is None or first < 0:
        return None
    lines = content.count("\n") + 1
    if first == 0 and end is None:
        return FileView(path, content, 1, lines, total_lines=lines)
    return FileView(path, content, first + 1, lines, cut_at_limit=True)  # where it ends: unknown


def _serena_answer(text: str) -> str | None:
    """What a Serena tool answered; None when it failed (its errors, and an answer too long
    to show, are answers too, not `is_error` results)."""
    content = _mcp_result(text)
    return None if content.startswith(SERENA_FAILURES) else content


def _mcp_result(text: str) -> str:
    """The text an MCP tool returned: its structured content's (`{"result": "..."}`, as
    Claude Code shows a FastMCP tool's string), else the text as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    result = value.get("result") if isinstance(value, dict) else None
    return result if isinstance(result, str) else text


def _bridge_file_view(path: str, text: str, tool_input: Mapping[str, Any]) -> FileView | None:
    """What a bridge Read showed (BRIDGE_TOOLS): the lines as they are, from `offset` (the
    editor's 1-based line); None unless the reminder ends it (a failed read says why)."""
    end = _BRIDGE_READ_END.search(text)
    if end is None:
        return None
    content = text[: end.start()]
    offset = tool_input.get("offset")
    start = offset if isinstance(offset, int) and offset > 1 else 1
    return FileView(path, content, start, content.count("\n") + 1)


def _at_limit(view: FileView, tool_input: Mapping[str, Any]) -> bool:
    """Whether a Read returned as many lines as its `limit` allowed (more may follow)."""
    limit = tool_input.get("limit")
    return isinstance(limit, int) and not isinstance(limit, bool) and view.num_lines >= limit


def _file_change(
    tool: str, tool_input: Mapping[str, Any], result: Any, root: str | None
) -> FileChange | None:
    """The change a result of tool `tool` (as named in the call) made, if it changed a file."""
    path = tool_file_path(tool_input, root)
    structured = result if isinstance(result, Mapping) else {}
    replaced = replaced_strings(tool, tool_input)
    original = text_field(structured, "originalFile")
    if replaced:
        if original is None:  # MultiEdit's name for it
            original = text_field(structured, "originalFileContents")
        return FileChange(path=path, replacements=tuple(replaced), original=original)
    if builtin_tool(tool) == "Write":
        return FileChange(path=path, content=str(tool_input.get("content", "")), original=original)
    return serena_change(tool, tool_input, path)


def _tool_result_block(item: Mapping[str, Any], entry: _Entry, reading: _Reading) -> Block:
    tool_use_id = str(item.get("tool_use_id", ""))
    tool, tool_input = reading.calls.uses.get(tool_use_id, ("", {}))
    content = item.get("content", "")
    text, images = tool_result_text(content, other_items=False)
    media = isinstance(content, list) and any(
        isinstance(part, Mapping) and part.get("type") in MEDIA_TYPES for part in content
    )
    is_error = bool(item.get("is_error"))
    view = change = None
    kind = "tool_output"
    builtin = builtin_tool(tool)
    serena = serena_tool(tool)
    answer = _serena_answer(text) if serena is not None and not is_error else None
    failed = (
        is_error
        or (serena is not None and answer is None)
        or (tool in BRIDGE_TOOLS and text.startswith(BRIDGE_FAILURES))
    )
    root = reading.calls.project_root or entry.cwd
    if serena == "activate_project" and answer is not None:
        reading.calls.project_root = activated_root(answer) or reading.calls.project_root
    if builtin == "Read" and stands_in(tool):
        # No line numbers: estimated as the outputs the constants were fitted among, not
        # as the cat -n text `code` was fitted on (tokens.py).
        path = tool_file_path(tool_input, root)
        if answer is not None:
            view = _serena_file_view(path, answer, tool_input)
        elif not failed:
            view = _bridge_file_view(path, text, tool_input)
    elif builtin == "Read" and not is_error:
        path = tool_file_path(tool_input)
        try:
            view = _file_view(path, text, entry.tool_use_result)
        except MALFORMED as error:
            reading.problem(entry.line, f"malformed Read result ({error!r}); read from its text")
            view = _file_view_from_text(path, text)
        kind = "code" if view is not None else "tool_output"
    elif not failed:
        change = _file_change(tool, tool_input, entry.tool_use_result, root)
    if view is not None and view.total_lines is None and serena is None:
        view = replace(view, cut_at_limit=_at_limit(view, tool_input))
    return Block(
        key=block_key("tool_result", tool_use_id, text),
        type="tool_result",
        text=text,
        tokens=estimate_block_tokens(text, kind) + images,
        kind=kind,
        tool=tool or None,
        tool_use_id=tool_use_id,
        tool_input=tool_input,
        is_error=is_error,
        file_view=view,
        file_change=change,
        media=media,
    )


def _tool_use_block(item: Mapping[str, Any], entry: _Entry, reading: _Reading) -> Block:
    name = str(item.get("name", ""))
    raw_input = item.get("input")
    tool_input: Mapping[str, Any] = raw_input if isinstance(raw_input, Mapping) else {}
    tool_use_id = str(item.get("id", ""))
    reading.calls.uses[tool_use_id] = (name, tool_input)
    if name not in KNOWN_TOOLS and not name.startswith("mcp__"):
        reading.unknown_tools.setdefault(name, []).append(entry.line)
    text = name + json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
    return Block(
        key=block_key("tool_use", tool_use_id, text),
        type="tool_use",
        text=text,
        tokens=estimate_block_tokens(text, "json"),
        kind="json",
        tool=name,
        tool_use_id=tool_use_id,
        tool_input=tool_input,
        path=tool_file_path(tool_input, reading.calls.project_root or entry.cwd) or None,
    )


def _content_block(item: Mapping[str, Any], entry: _Entry, reading: _Reading) -> Block | None:
    """One item of a message's content list; None when it adds nothing (or is unknown)."""
    kind = item.get("type")
    if kind == "text":
        return _text_block(str(item["text"])) if item.get("text") else None
    if kind == "thinking":
        text = str(item.get("thinking", ""))
        tokens = estimate_block_tokens(text, "thinking")
        return Block(block_key("thinking", text), "thinking", text, tokens, "thinking")
    if kind == "redacted_thinking":
        data = str(item.get("data", ""))
        return Block(
            block_key("thinking", data), "thinking", "", estimate_block_tokens(data, "json"), "json"
        )
    if kind == "tool_use":
        return _tool_use_block(item, entry, reading)
    if kind == "tool_result":
        return _tool_result_block(item, entry, reading)
    if kind in MEDIA_TYPES:
        key = block_key(str(kind), json.dumps(item, default=str)[:4096])
        return Block(key, "image", "", media_tokens(item), "image", media=True)
    reading.tallied(entry.line, UNKNOWN_BLOCK, kind)
    return None


def api_content_block(
    item: Mapping[str, Any], calls: ToolCalls, cwd: str | None = None
) -> tuple[Block | None, list[Problem]]:
    """One Messages API content block as the transcript reader reads it (for `ectx gateway`,
    which sees requests, not transcripts); `calls` carries the tool calls seen so far (and
    the project Serena activated) and is updated; `cwd` is where the client runs, as its
    system prompt says. A Read result's view comes from its cat -n text."""
    reading = _Reading("<request>", calls=calls)
    entry = _Entry(0, "", None, "user", 0.0, None, cwd=cwd)
    try:
        return _content_block(item, entry, reading), reading.problems
    except MALFORMED as error:
        return None, [Problem("<request>", 0, f"malformed content block ({error!r})")]


TOOL_LOADED = "Tool loaded."
"""The text Claude Code sends after a tool result that loads deferred tools (ToolSearch's
`tool_reference` items; seen from 2.1.332, the first release here that offers ToolSearch
without MCP servers), which the transcript does not record."""


def _loads_tools(content: Any) -> bool:
    """Whether a user line holds a tool result that references tools (ToolSearch's)."""
    return isinstance(content, list) and any(
        isinstance(item, Mapping)
        and item.get("type") == "tool_result"
        and isinstance(item.get("content"), list)
        and any(
            isinstance(part, Mapping) and part.get("type") == "tool_reference"
            for part in item["content"]
        )
        for item in content
    )


def _blocks(entry: _Entry, reading: _Reading) -> tuple[Block, ...]:
    """The content blocks of one line, made once per line (chains share them)."""
    cached = reading.blocks.get(entry.uuid)
    if cached is not None:
        return cached
    content = entry.content
    blocks: list[Block] = []
    if isinstance(content, str):
        if content:
            blocks.append(_text_block(content))
    elif isinstance(content, list):
        for item in content:
            if not isinstance(item, Mapping):
                continue
            try:
                block = _content_block(item, entry, reading)
            except MALFORMED as error:
                reading.problem(entry.line, f"malformed content block ({error!r}); skipped")
                continue
            if block is not None:
                blocks.append(block)
    else:
        reading.problem(entry.line, "message content is neither text nor a list; skipped")
    if entry.role == "user" and _loads_tools(content):
        blocks.append(_text_block(TOOL_LOADED))
    result = tuple(blocks)
    reading.blocks[entry.uuid] = result
    return result


# ---------------------------------------------------------------------------------------------
# Chains, threads and calls


READ_KEPT = 64
"""Calls whose reading `_Reading.read` keeps, the newest of each thread (a call's reading
goes when the next call takes it up): enough for the threads a session interleaves
(sub-agents side by side); a call whose chain passes through none of them is read whole."""


@dataclass(frozen=True)
class _Resume:
    """Where one step of `_chain` stood when it came to a call's response: `at` lines of its
    input taken, `out` what it made of them, and what it held back (`pending`, whether the
    last line taken was a tool result). The next call's chain through that response holds
    the same lines up to there, and what a step made of them depends on no line past them
    (a line's children on a chain come right after it), so the step goes on from here."""

    at: int
    out: tuple[_Entry, ...]
    pending: tuple[_Entry, ...] = ()
    after_result: bool = False
    resumed: int | None = None
    """For `_with_tool_hooks`, the `_resumed_after` it read with: another changes its work."""
    version: str | None = None
    """For `_with_tool_hooks`, the last release the lines taken name."""


@dataclass(frozen=True)
class _Walk:
    """The sent lines from a root down to a call's response, as `_chain` walks them."""

    lines: tuple[_Entry, ...]
    root: str
    cleared: frozenset[str]
    whole: bool
    """The walk ended at a root, not at a line it had passed (a damaged file's loop): a walk
    that reaches its last line goes on with its lines (none of them is among its own)."""


@dataclass(frozen=True)
class _Read:
    """What reading one call's request made, for the calls whose chains pass through its
    response: each reads only what comes after, so a thread is read in time about linear in
    its length, not quadratic (`_chain`, `_messages`)."""

    walk: _Walk
    parallel: _Resume | None
    hooks: _Resume | None
    chain: list[_Entry] = field(default_factory=list)
    """The request's lines (`_chain`'s, without the response's own), never changed."""
    responses: frozenset[str | None] = frozenset()
    """The responses (message ids) of `chain`'s lines."""
    built: _Built | None = None
    """Where `_messages` stood after its last response."""
    prompt: _Entry | None = None
    """The last prompt a person wrote among `chain` (`_last_prompt`)."""
    turn: _Turn = field(default_factory=_Turn)
    """The current turn of `chain` (`_turn`)."""


def _request_lines(
    lines: list[_Entry], message_id: str, earlier: _Read | None
) -> tuple[list[_Entry], frozenset[str | None], bool]:
    """A chain's lines without the response's own (the walk starts at the response's first
    line, as its link may point at a line that was never written), the responses among
    them, and whether they start with all of the `earlier` request's, none of this
    response's among those: then only the lines past those are looked at (a list
    comparison passes over the lines that are the same objects at once)."""
    if (
        earlier is not None
        and message_id not in earlier.responses
        and lines[: len(earlier.chain)] == earlier.chain
    ):
        rest = [e for e in lines[len(earlier.chain) :] if e.message_id != message_id]
        responses = earlier.responses | {e.message_id for e in rest}
        return [*earlier.chain, *rest], responses, True
    chain = [e for e in lines if e.message_id != message_id]
    return chain, frozenset(e.message_id for e in chain), False


def _walk(start: str | None, reading: _Reading) -> tuple[_Walk, _Read | None]:
    """The sent lines from the root down to `start` (see `_chain`), and the reading of the
    call this walk went through, whose lines it took instead of walking them again."""
    above: list[_Entry] = []
    seen: set[str] = set()
    cleared: frozenset[str] = frozenset()
    node = start
    root = start or ""
    while node is not None and node not in seen:
        earlier = reading.read.get(node)
        if earlier is not None and earlier.walk.whole and node != start:
            del reading.read[node]  # taken up: a thread keeps only its newest call's reading
            walk = earlier.walk
            lines = (*walk.lines, *reversed(above))
            return _Walk(lines, walk.root, walk.cleared | cleared, True), earlier
        seen.add(node)
        root = node
        entry = reading.sent.get(node)
        if entry is not None:
            above.append(entry)
        if node in reading.cleared:
            cleared |= reading.cleared[node]
        parent = reading.links.get(node)
        if parent is not None and parent not in reading.links:
            parent = reading.previous.get(node)
        node = parent
    above.reverse()
    return _Walk(tuple(above), root, cleared, node is None), None


def _chain(start: str, reading: _Reading) -> tuple[list[_Entry], str, frozenset[str], _Read | None]:
    """The sent lines from the root down to `start`, the root's id, the tool results the
    microcompactions on the way cleared, and the reading of the earlier call it went on from.

    A link to a line that is not in the file (Claude Code sometimes links to a record it never
    wrote) continues from the line written before the one holding the link. The messages a
    compaction preserved follow its summary. Each call's reading is kept (`_Read`): the next
    call's chain through its response walks, and completes the parallel tool calls and hook
    lines of, only the lines past it.
    """
    walk, earlier = _walk(start, reading)
    lines = list(walk.lines)
    if earlier is None or reading.preserved:  # (the lines a compaction kept come in between)
        parallel, held = _with_parallel_results(lines, reading)
        out, hooks = _with_tool_hooks(parallel, reading, hold=held)
    else:
        parallel, held = _with_parallel_results(lines, reading, earlier.parallel)
        out, hooks = _with_tool_hooks(parallel, reading, earlier.hooks, hold=held)
    if reading.preserved:
        out = [
            kept
            for entry in out
            for kept in (
                entry,
                *(
                    reading.sent[u]
                    for u in reading.preserved.get(entry.uuid, ())
                    if u in reading.sent
                ),
            )
        ]
    reading.read[start] = _Read(walk, held, hooks)
    while len(reading.read) > READ_KEPT:
        del reading.read[next(iter(reading.read))]
    return out, walk.root, walk.cleared, earlier


def _with_parallel_results(
    chain: list[_Entry], reading: _Reading, resume: _Resume | None = None
) -> tuple[list[_Entry], _Resume | None]:
    """The chain with the parts of parallel tool calls that are off it, and where it stood
    when it came to the response being read (`_Resume`; None when the chain ends in none).

    Claude Code writes one line per tool use of a response and links each result to its own
    tool use; the next line links to whichever result was written last. So a chain can miss
    tool uses of a response it holds (written after the one the result links to) and their
    results. The request carried all of them: one assistant message with every tool use,
    one user message with every result, in the order they were written.
    """
    at = resume.at if resume is not None else 0
    out = list(resume.out) if resume is not None else []
    on_chain = {entry.uuid for entry in chain[at:]}
    while at < len(chain):
        entry = chain[at]
        if entry.role != "assistant" or entry.message_id is None:
            out.append(entry)
            at += 1
            continue
        end = at
        while end < len(chain) and chain[end].role == "assistant":
            end += 1
        if end == len(chain):  # the response being read: what follows it is not sent yet
            held = _Resume(at, tuple(out))
            out.extend(chain[at:])
            return out, held
        turn = _whole_turn(chain[at:end], on_chain, reading)
        results = end
        while results < len(chain) and _result_ids(chain[results]) is not None:
            results += 1
        answered = {i for line in chain[end:results] for i in _result_ids(line) or ()}
        found = []
        for line in turn:
            for child in reading.children.get(line.uuid, ()):
                ids = _result_ids(child)
                fresh = ids and not ids & answered and child.uuid not in on_chain
                if fresh and child.sidechain == entry.sidechain:
                    found.append(child)
        out.extend(turn)
        out.extend(sorted([*chain[end:results], *found], key=lambda line: line.line))
        at = results
    return out, None


def _with_tool_hooks(
    chain: list[_Entry],
    reading: _Reading,
    resume: _Resume | None = None,
    hold: _Resume | None = None,
) -> tuple[list[_Entry], _Resume | None]:
    """The chain with what a tool's PreToolUse hooks added, after the results of its turn,
    and where it stood at `hold`'s line (`_Resume`: `_with_parallel_results` stood there).

    Claude Code links those attachments (they name the tool use, `toolUseID`) to the response
    that asked for the tool and the tool's result to the response too, past them: they are
    off the chain. A running session holds them before the result, and the user messages
    merge with the tool results first (`jfc` in 2.1.197), so they are sent after the results
    of the turn, blocks of their own: a reminder after them is not folded into a result's
    text either (2.1.332, models that take no system messages). Read from runs of 2.1.97,
    2.1.197 and 2.1.332 in one process. A later process (`--continue`, `--resume`) of
    2.1.97 or 2.1.197 rebuilds the conversation from the chain and sends them no more;
    2.1.332's still does (runs against tests/fakes).
    """
    resumed = _resumed_after(chain, reading, resume)
    if resume is not None and resume.resumed != resumed:
        resume = None
    start = resume or _Resume(0, ())
    on_chain = {entry.uuid for entry in chain[start.at :]}
    out = list(start.out)
    pending = list(start.pending)
    after_result = start.after_result
    version = start.version
    held = None
    for at in range(start.at, len(chain)):
        if hold is not None and at == len(hold.out):
            held = _Resume(at, tuple(out), tuple(pending), after_result, resumed, version)
        entry = chain[at]
        version = entry.version or version
        result = _result_ids(entry) is not None
        if after_result and not result:
            out.extend(_beside_results(pending))
            pending = []
        out.append(entry)
        if entry.role == "assistant" and isinstance(entry.content, list):
            found = _hook_lines(entry, _use_ids(entry), on_chain, reading)
            pending.extend(line for line in found if resumed is None or line.line > resumed)
        elif not result:
            pending = []  # no result came (an interrupted turn): nor was what its hooks added
        after_result = result
    if after_result:
        out.extend(_beside_results(pending))
    return out, held


def _beside_results(pending: list[_Entry]) -> list[_Entry]:
    """What the hooks of a turn's tools added, as sent after the turn's results."""
    return [replace(line, beside_result=True) for line in sorted(pending, key=lambda e: e.line)]


def _resumed_after(
    chain: Sequence[_Entry], reading: _Reading, resume: _Resume | None = None
) -> int | None:
    """Where the process that sent this request began writing (the line of the last
    `last-prompt` record before the request's last line), when it is one that rebuilt the
    conversation from the file without the hooks' lines off the chain (releases before
    TOOL_ATTACHMENTS_KEPT_SINCE); None when it sends them all. The release is the last one
    a line names, looked for past the lines `resume` took (a file that names none, such as
    stream-json, would be read back to its root for every call)."""
    if not chain:
        return None
    since, before_version = (resume.at, resume.version) if resume is not None else (0, None)
    version = next((e.version for e in reversed(chain[since:]) if e.version), before_version)
    release = _release(version)
    if release is None or release >= TOOL_ATTACHMENTS_KEPT_SINCE:
        return None
    before = bisect.bisect_left(reading.process_ends, chain[-1].line)
    return reading.process_ends[before - 1] if before else None


def _hook_lines(
    response: _Entry, uses: set[str], on_chain: set[str], reading: _Reading
) -> list[_Entry]:
    """The attachments off the chain below a response that name one of its tool uses (what
    the tools' PreToolUse hooks added), following such attachments down."""
    found: list[_Entry] = []
    below = [response]
    seen: set[str] = set()  # a damaged file's lines may name each other (or themselves)
    while below:
        for child in reading.children.get(below.pop().uuid, ()):
            fresh = child.uuid not in on_chain and child.uuid not in seen
            if child.attachment and fresh and child.tool_use_id in uses:
                seen.add(child.uuid)
                found.append(child)
                below.append(child)
    return found


def _whole_turn(run: list[_Entry], on_chain: set[str], reading: _Reading) -> list[_Entry]:
    """An assistant run of the chain with the lines of its responses that are off it."""
    responses = {line.message_id for line in run}
    lines = list(run)
    seen: set[str] = set()  # apart from `on_chain`: a copy of it per turn made reading cubic
    for line in lines:  # grows as lines are found
        for child in reading.children.get(line.uuid, ()):
            if (
                child.uuid not in on_chain
                and child.uuid not in seen
                and child.role == "assistant"
                and child.message_id in responses
            ):
                seen.add(child.uuid)
                lines.append(child)
    return sorted(lines, key=lambda line: line.line)


def _use_ids(entry: _Entry) -> set[str]:
    """The ids of the tool uses an assistant line asks for."""
    if entry.role != "assistant" or not isinstance(entry.content, list):
        return set()
    return {
        str(item.get("id"))
        for item in entry.content
        if isinstance(item, Mapping) and item.get("type") == "tool_use"
    }


def _result_ids(entry: _Entry) -> set[str] | None:
    """The tool uses a user line answers, when tool results are all it holds (else None)."""
    content = entry.content
    if entry.role != "user" or entry.attachment or not isinstance(content, list) or not content:
        return None
    ids = {
        str(item.get("tool_use_id"))
        for item in content
        if isinstance(item, Mapping) and item.get("type") == "tool_result"
    }
    return ids if len(ids) == len(content) else None


_Part = tuple[Role, tuple[Block, ...], _Entry]
"""A line as `_messages` places it: its role, its blocks, the line."""


@dataclass(frozen=True)
class _Sending:
    """How a request's lines become messages (`_messages`): whether the model takes system
    messages, the tool results sent cleared, whether a system message carries the
    breakpoint (the release's rule) and the attachments made reminders of their own."""

    system: bool
    cleared: frozenset[str]
    marks_system: bool
    alone: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Built:
    """Where `_messages` stood after the last response in a request: the parts of its first
    `lines` lines (no part at or before a response's moves or changes after it: a reminder
    moves up and folds in no further), and the messages of the groups before that
    response's, built from the first `grouped` parts the way `sending` says."""

    lines: int
    parts: tuple[_Part, ...]
    grouped: int
    messages: tuple[Message, ...]
    """All the request's messages: those of the first `grouped` parts go on unchanged, and
    each later one the next request builds alike is taken as it is here, so a message is
    one object in every request that holds it (`_place` then compares them at once)."""
    kept: int
    """How many of `messages` the first `grouped` parts made."""
    sending: _Sending


def _messages(
    chain: Sequence[_Entry], reading: _Reading, sending: _Sending, earlier: _Built | None = None
) -> tuple[list[Message], _Built | None]:
    """Consecutive lines of one role become one message, as the API requires; with where it
    stood after the last response (`_Built`), from which the next request, whose lines start
    the same way (`earlier`), is built.

    Attachments go where Claude Code puts them. With `system` (the model takes them) they are
    role "system" messages after the user lines of their turn; otherwise system-reminder text
    of the user message, moved up before the prompt they follow (past plain user lines, never
    past an assistant turn or a tool result), as Claude Code reorders them. Tool results in
    `cleared` are sent as Claude Code's stub. Without `marks_system` (the release's rule) a
    system message never carries the breakpoint. Attachments in `alone` (`_made_alone`) are
    reminders of their own even so.
    """
    if earlier is not None and earlier.sending != sending:
        earlier = None
    parts = list(earlier.parts) if earlier is not None else []
    taken = earlier.lines if earlier is not None else 0
    frozen = (taken, len(parts))
    for index in range(taken, len(chain)):
        _place_line(chain[index], parts, reading, sending)
        if chain[index].role == "assistant" and parts and parts[-1][2] is chain[index]:
            frozen = (index + 1, len(parts))
    messages = list(earlier.messages[: earlier.kept]) if earlier is not None else []
    grouped = earlier.grouped if earlier is not None else 0
    before = earlier.messages if earlier is not None else ()
    message_at: dict[int, int] = {}
    """Per part that starts a message, that message's place."""
    start = grouped
    for role, group in itertools.groupby(parts[grouped:], key=lambda part: part[0]):
        members = list(group)
        message_at[start] = len(messages)
        start += len(members)
        first = members[0][2]
        blocks = tuple(block for _, part_blocks, _ in members for block in part_blocks)
        uses = messages[-1].blocks if messages and messages[-1].role == "assistant" else ()
        blocks, marked = _as_rendered(blocks, uses)
        carries_mark = role != "system" or sending.marks_system
        message = Message(role, blocks, first.timestamp, first.line, marked, carries_mark)
        same = len(messages) < len(before) and before[len(messages)] == message
        messages.append(before[len(messages)] if same else message)
    return messages, _built(parts, frozen, message_at, messages, sending)


def _built(
    parts: list[_Part],
    frozen: tuple[int, int],
    message_at: Mapping[int, int],
    messages: list[Message],
    sending: _Sending,
) -> _Built | None:
    """Where `_messages` stood after the last response (`frozen`: the lines taken then and
    the parts they made); the messages of the groups before that response's own go on, as
    a later response may still join its group."""
    lines, count = frozen
    group = count - 1
    while group > 0 and parts[group - 1][0] == "assistant":
        group -= 1
    if count == 0 or group not in message_at:
        return None
    return _Built(lines, tuple(parts[:count]), group, tuple(messages), message_at[group], sending)


def _place_line(entry: _Entry, parts: list[_Part], reading: _Reading, sending: _Sending) -> None:
    """Put one line of a request among the parts made of the lines before it (`_messages`)."""
    alone = sending.alone
    if entry.attachment:
        takes = sending.system and entry.uuid not in alone
        role = _attachment_role(entry, takes)
        texts = _attachment_texts(entry, takes)
        at = len(parts)
        while role == "user" and at > 0 and _before_reminder(*parts[at - 1]):
            at -= 1
        folds = role == "user" and not sending.system
        into = _fold_target(entry, parts, at, alone) if folds else None
        if into is not None:
            before_role, before_blocks, before = parts[into]
            parts[into] = (before_role, _with_reminders(before_blocks, texts), before)
            return
        parts.insert(at, (role, tuple(_text_block(text) for text in texts), entry))
        return
    blocks = _blocks(entry, reading)
    if not blocks:
        return
    cleared = sending.cleared
    if cleared and any(b.tool_use_id in cleared for b in blocks if b.type == "tool_result"):
        blocks = tuple(_cleared(b) if b.tool_use_id in cleared else b for b in blocks)
    at = len(parts)
    while entry.role == "user" and at > 0 and parts[at - 1][0] == "system":
        at -= 1
    parts.insert(at, (entry.role, blocks, entry))


def _as_rendered(
    blocks: tuple[Block, ...], uses: tuple[Block, ...]
) -> tuple[tuple[Block, ...], int | None]:
    """A message's blocks as the API renders them, and where the block sent last now is.

    Claude Code sends parallel tool results in the order they finished and puts its
    breakpoint on the last; the API renders them in the order of the tool uses they answer.
    What follows the marked result there is billed as plain input, and the next request
    reads only up to it: the calls that record uncached input in ../shared/corpus and the
    traces (131 of 135 requests ending in two or more results, 1.0.98 to 2.1.x) are those.
    """
    order = rendered_order(
        [b.tool_use_id if b.type == "tool_result" else None for b in blocks],
        [b.tool_use_id or "" for b in uses if b.type == "tool_use"],
    )
    if order == list(range(len(blocks))):
        return blocks, None
    last = len(blocks) - 1
    marked = order.index(last)
    return tuple(blocks[i] for i in order), marked if marked != last else None


CLEARED_RESULT = "[Old tool result content cleared]"
"""What Claude Code's microcompaction sends in place of an old tool result."""


def _cleared(block: Block) -> Block:
    """A tool result as sent after a microcompaction cleared it (the file edit it made stays)."""
    if block.type != "tool_result":
        return block
    return replace(
        block,
        key=block_key("tool_result", block.tool_use_id or "", CLEARED_RESULT),
        text=CLEARED_RESULT,
        tokens=estimate_block_tokens(CLEARED_RESULT, "tool_output"),
        kind="tool_output",
        file_view=None,
    )


def _fold_target(
    entry: _Entry, parts: Sequence[_Part], at: int, alone: frozenset[str]
) -> int | None:
    """Which of the `at` parts before a reminder (for a model that takes no system messages)
    it goes into, if any: the one right before it, past reminders made alone (`_made_alone`),
    which are sent after the rest of their turn's result (2.1.197 and 2.1.97 run against
    tests/fakes: a nested CLAUDE.md in the Read's result, then a PostToolUse hook's context)."""
    if entry.uuid in alone:
        return None
    while at > 0 and parts[at - 1][2].uuid in alone:
        at -= 1
    return at - 1 if at > 0 and _folds_into(entry, *parts[at - 1]) else None


def _folds_into(entry: _Entry, role: Role, blocks: tuple[Block, ...], before: _Entry) -> bool:
    """Whether a reminder goes into the text of the tool result before it (for a model that
    takes no system messages; one that does gets it as a block beside).

    Claude Code joins each attachment to the user message before it, into its last block
    when that is a tool result: 2.1.22 to 2.1.197 (their sources, and runs against
    tests/fakes) only a result sent as a string, 2.1.332 (which records what it sent) any.
    """
    if entry.beside_result or role != "user" or before.attachment:
        return False
    if entry.rendered_role is not None:
        return any(b.type == "tool_result" for b in blocks)
    content = before.content
    last = content[-1] if isinstance(content, list) and content else None
    return (
        isinstance(last, Mapping)
        and last.get("type") == "tool_result"
        and isinstance(last.get("content"), str)
    )


def _before_reminder(role: Role, blocks: tuple[Block, ...], entry: _Entry) -> bool:
    """What a reminder in a user message is moved up past: a user line a person wrote (no
    tool result, not itself an attachment), or an attachment sent as a system message."""
    if role == "system":
        return True
    return role == "user" and not entry.attachment and all(b.type != "tool_result" for b in blocks)


def _place(
    messages: list[Message],
    root: str,
    sidechain: bool,
    session: Session,
    forks: dict[str, list[str]],
) -> str:
    """The thread these messages extend (its id), starting a new one for a new root or a fork.

    `forks` lists, per root, the ids of the threads grown from it so far.
    """
    grown = forks.setdefault(root, [])
    for thread_id in grown:
        known = session.threads[thread_id].messages
        shared = min(len(known), len(messages))
        if known[:shared] == messages[:shared] or all(
            same_message(known[i], messages[i]) for i in range(shared)
        ):
            if len(messages) > len(known):
                known.extend(messages[len(known) :])
            return thread_id
    thread_id = root if not grown else f"{root}#{len(grown)}"
    session.threads[thread_id] = Thread(
        id=thread_id,
        prefix_key="agent" if sidechain else "main",
        messages=list(messages),
        origin=grown[0] if grown else None,
    )
    grown.append(thread_id)
    return thread_id


def _build_session(reading: _Reading) -> Session:
    session = Session(path=reading.path, threads={}, calls=[], problems=reading.problems)
    first_lines: dict[str, _Entry] = {}
    lines_of: dict[str, list[_Entry]] = {}
    for entry in reading.entries:
        if entry.role == "assistant" and entry.message_id and not entry.synthetic:
            first_lines.setdefault(entry.message_id, entry)
            lines_of.setdefault(entry.message_id, []).append(entry)
    pending: list[_Pending] = []
    turn_cwd: dict[str, str] = {}
    forks: dict[str, list[str]] = {}
    for message_id, head in first_lines.items():
        chain, root, cleared, earlier = _chain(head.uuid, reading)
        # The walk starts at the response's own first line (its link may point at a line that
        # was never written); lines of the response are not part of the request.
        chain, responses, continues = _request_lines(chain, message_id, earlier)
        if not continues:
            earlier = None
        if _silent_microcompaction(head.version):
            cleared |= silently_cleared(chain, head.model or "")
        turn = _turn(chain, earlier)
        sending = _Sending(
            takes_system_messages(head.model, head.version),
            cleared,
            _marks_system_messages(head.version),
            _made_alone(turn, head.version),
        )
        built_before = earlier.built if earlier is not None else None
        messages, built = _messages(chain, reading, sending, built_before)
        prompt = _last_prompt(chain, earlier)
        read = reading.read.get(head.uuid)
        if read is not None:
            reading.read[head.uuid] = replace(
                read, chain=chain, responses=responses, built=built, prompt=prompt, turn=turn
            )
        if not messages or messages[-1].role == "assistant":
            reading.problem(head.line, "a response with no request before it; skipped")
            continue
        thread_id = _place(messages, root, head.sidechain, session, forks)
        response_blocks = tuple(b for e in lines_of[message_id] for b in _blocks(e, reading))
        response = Message("assistant", response_blocks, head.timestamp, head.line)
        started = chain[-1].timestamp  # the request's last line: the call starts after it
        turn_cwd[message_id] = _turn_cwd(chain, prompt)
        follows = next((e.message_id for e in reversed(chain) if e.message_id in first_lines), None)
        pending.append(
            _Pending(started, head.timestamp, thread_id, len(messages), response, head, follows)
        )
    skill_changes = _skill_listing_changes(reading)
    first_cwd: dict[str, str] = {}
    for index, call in enumerate(_chain_order(pending, reading)):
        started, thread_id, head = call.started, call.thread, call.head
        # Only the main conversation's prefix is rebuilt; a sub-agent keeps the one it began with.
        main = not head.sidechain
        listing = skill_changes if main and _skills_in_tools(head.version) else []
        cwd = turn_cwd.get(head.message_id or "", "")
        first = first_cwd.setdefault(thread_id, cwd)
        state = PrefixState(
            skills=bisect.bisect_right(listing, started - SKILL_RELOAD_SECONDS),
            cwd=cwd if main and cwd != first and _env_per_turn(head.version) else "",
        )
        session.calls.append(
            Call(
                index=index,
                thread=thread_id,
                model=head.model or "unknown",
                started=started,
                finished=call.finished,
                n_messages=call.n_messages,
                response=call.response,
                usage=head.usage,
                line=head.line,
                prefix=state,
            )
        )
    if not session.calls:
        reading.problem(0, NO_CALLS)
    for model in session.models:
        if not priced(model).known:
            reading.problem(
                0, f"no list price for model {model!r}: its calls are priced as {REFERENCE_MODEL}"
            )
    for model in dict.fromkeys(c.model for c in session.calls if c.speed is Speed.FAST):
        if priced(model).fast is None:
            reading.problem(
                0,
                f"no fast-mode price for model {model!r}: its fast calls are priced at its "
                "standard rates",
            )
    reading.note_unknown_tools()
    session.unanswered = _unanswered(reading, session)
    _link_tasks(session)
    anchor_unmarked(session)
    _infer_prefixes(session)
    anchor_tokens(session)
    _set_inherited_apart(session, {call.head.line for call in pending if call.head.copied})
    return session


def _set_inherited_apart(session: Session, copied: set[int]) -> None:
    """The calls of copied lines become `Session.inherited`: billed in the parent session.

    They stay calls until here, as what they recorded sizes the thread's prefix and anchors
    the tokens of what the fork carries on from.
    """
    if not copied:
        return
    calls = session.calls
    inherited = [c for c in calls if c.line in copied]
    own = [c for c in calls if c.line not in copied]
    session.inherited = [replace(c, index=i) for i, c in enumerate(inherited)]
    session.calls = [replace(c, index=i) for i, c in enumerate(own)]


INTERRUPTED = "[Request interrupted by user]"
"""The user line Claude Code writes when the person stops a request."""


def _unanswered(reading: _Reading, session: Session) -> list[Unanswered]:
    """The requests interrupted before any answer: an interruption notice whose parent is a
    user line (a prompt, a tool result, an attachment) follows a request that ended there
    and left no response line. Each is placed in the thread whose later request carries the
    notice, cut where the notice stands."""
    places: list[tuple[int, str, int, int]] = []  # message line, thread, message index, block
    for thread in session.threads.values():
        for k, message in enumerate(thread.messages):
            for at, block in enumerate(message.blocks):
                if block.type == "text" and block.text == INTERRUPTED:
                    places.append((message.line, thread.id, k, at))
    places.sort()
    found: list[Unanswered] = []
    used: set[tuple[str, int, int]] = set()
    for entry in reading.entries:
        if entry.role != "user" or entry.attachment or not _is_interruption(entry.content):
            continue
        parent = reading.sent.get(reading.sent_parent(reading.links.get(entry.uuid)) or "")
        if parent is None or parent.role != "user":
            continue  # an answer was streaming: its lines are the call
        at_or_before = bisect.bisect_right(places, (entry.line, "\uffff", 0, 0))
        free = [p for p in places[:at_or_before] if (p[1], p[2], p[3]) not in used]
        if not free:
            continue
        # the notice's message as every thread holding it has it (a fork after it shares it):
        # the request went to the thread whose next call comes first
        candidates = [
            (later, p)
            for p in free
            if p[0] == free[-1][0]
            for later in [_next_call(session, p[1], p[2], parent.timestamp)]
            if later is not None
        ]
        if not candidates:
            continue
        later, (_, thread_id, k, at) = min(candidates, key=lambda c: (c[0].started, c[0].index))
        used.update((p[1], p[2], p[3]) for p in free if p[0] == free[-1][0])
        messages = session.threads[thread_id].messages
        n_messages, n_blocks = (k + 1, at) if at else (k, len(messages[k - 1].blocks) if k else 0)
        if n_messages == 0:
            continue
        # as a call, it never starts before the calls it follows in its chain (a clock
        # that goes backwards)
        started = max(
            [parent.timestamp]
            + [
                c.started
                for c in session.calls
                if c.thread == thread_id and c.n_messages < n_messages
            ]
        )
        found.append(
            Unanswered(thread_id, later.model, started, n_messages, n_blocks, later.prefix)
        )
    return sorted(found, key=lambda u: u.started)


def _next_call(session: Session, thread_id: str, k: int, after: float) -> Call | None:
    """The first call of the thread that carries its message `k`, not before `after`."""
    return next(
        (
            c
            for c in session.calls
            if c.thread == thread_id and c.n_messages > k and c.started >= after
        ),
        None,
    )


def _is_interruption(content: Any) -> bool:
    if isinstance(content, str):
        return content == INTERRUPTED
    return (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("text") == INTERRUPTED
    )


SKILL_LISTING_IN_TOOLS = ((2, 1, 0), (2, 1, 22))
"""Claude Code releases that list skills in the Skill tool's description and reload them when
a skill file changes (the file watcher is in 2.1.0's source, not before; from 2.1.23 the
listing is a reminder in the first message, which a change does not rewrite): checked by
running 2.1.22, 2.1.23 and 2.1.27 against tests/fakes."""

SKILL_RELOAD_SECONDS = 1.0
"""How long after a skill file is written Claude Code's watcher reports it: its chokidar
`awaitWriteFinish.stabilityThreshold` (1,000 ms in 2.1.22). A request sent sooner still
carries the old listing."""

SKILL_FILE = re.compile(r"/\.claude/skills/[^/]+/SKILL\.md$")
_LISTED_FIELDS = re.compile(r"^(?:name|description):.*$", re.MULTILINE)
"""The front-matter lines of a skill file its listing shows."""


ENV_PER_TURN_UNTIL = (2, 1, 31)
"""The last release that builds the system prompt's environment section (working directory,
date) anew for every turn: the sources of 2.1.22 to 2.1.31 build the system prompt once per
turn, with no cache of its sections; from 2.1.32 the section (`env_info`) is computed once
per session. The corpus agrees: 2.1.19 and 2.1.27 sessions break their cache at the system
prompt exactly where a turn starts in another directory, 2.1.97 sessions never do."""


def _env_per_turn(version: str | None) -> bool:
    release = _release(version)
    return release is not None and release <= ENV_PER_TURN_UNTIL


def _silent_microcompaction(version: str | None) -> bool:
    """Releases that clear old tool results without a record of it (replay/microcompact.py)."""
    release = _release(version)
    return release is not None and release < SILENT_BEFORE


def _skills_in_tools(version: str | None) -> bool:
    release = _release(version)
    low, high = SKILL_LISTING_IN_TOOLS
    return release is not None and low <= release <= high


def _skill_listing_changes(reading: _Reading) -> list[float]:
    """When the main conversation's skill listing changed, in time order: the times of the
    results of the Writes and edits (Claude Code's own, a bridge's, Serena's literal
    `replace_content`: `replaced_strings`) that gave a skill file a new name or description.
    A Write of content already listed, or an edit that touches neither field, leaves the
    listing as it was."""
    results = {
        str(item.get("tool_use_id")): entry.timestamp
        for entry in reading.entries
        if entry.role == "user" and not entry.sidechain and isinstance(entry.content, list)
        for item in entry.content
        if isinstance(item, Mapping)
        and item.get("type") == "tool_result"
        and not item.get("is_error")  # refused or failed: nothing was written
    }
    listed: dict[str, tuple[str, ...]] = {}
    changes: list[float] = []
    for entry in reading.entries:
        if entry.role != "assistant" or entry.sidechain or not isinstance(entry.content, list):
            continue
        for item in entry.content:
            if not isinstance(item, Mapping) or item.get("type") != "tool_use":
                continue
            name = str(item.get("name", ""))
            tool_input = item.get("input")
            if not isinstance(tool_input, Mapping):
                continue
            path = tool_file_path(tool_input)
            done = results.get(str(item.get("id")))
            if done is None or not SKILL_FILE.search(path):
                continue
            if builtin_tool(name) == "Write":
                fields = tuple(_LISTED_FIELDS.findall(str(tool_input.get("content", ""))))
                if listed.get(path) == fields:
                    continue
                listed[path] = fields
            elif replaced := replaced_strings(name, tool_input):
                strings = (text for r in replaced for text in (r.old, r.new))
                if not any(_LISTED_FIELDS.search(text) for text in strings):
                    continue
                listed.pop(path, None)
            else:
                continue
            changes.append(done)
    return sorted(changes)


def _last_prompt(chain: list[_Entry], earlier: _Read | None) -> _Entry | None:
    """The last prompt a person wrote on a request's chain, looked for only past the lines of
    the `earlier` request it starts with."""
    since = len(earlier.chain) if earlier is not None else 0
    for entry in reversed(chain[since:]):
        if entry.role == "user" and not entry.attachment and _written_prompt(entry.content):
            return entry
    return earlier.prompt if earlier is not None else None


def _turn_cwd(chain: Sequence[_Entry], prompt: _Entry | None) -> str:
    """The working directory of the turn a request belongs to: that of the last prompt a
    person wrote on its chain (`prompt`; Claude Code builds the system prompt, whose
    environment section names it, once per turn)."""
    if prompt is not None:
        return prompt.cwd or ""
    return chain[0].cwd or "" if chain else ""


def _written_prompt(content: Any) -> bool:
    """A user line's content that is a prompt: text, no tool result."""
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(item, Mapping) and item.get("type") == "tool_result" for item in content
    )


@dataclass(frozen=True)
class _Pending:
    """A call being built, before the calls are put in order."""

    started: float
    finished: float
    thread: str
    n_messages: int
    """Messages in its request."""
    response: Message
    head: _Entry
    """The response's first line."""
    follows: str | None
    """The id of the response its request follows (the last one in its chain)."""


def _chain_order(pending: list[_Pending], reading: _Reading) -> list[_Pending]:
    """Calls in time order, except that no call comes before one its request follows.

    A clock that goes backwards (an edited or exported transcript) must not put a longer
    request before the shorter one it extends: not within a thread (its calls go in chain
    order, fewer messages first), nor across threads (a branch's first call follows the
    call whose response it branches from, which the engine must have fed and shown first).
    Of the calls whose predecessors are all placed, the earliest goes next, and no call
    starts before the ones it follows. The gaps there are then guesses (the cache's TTL
    turns on them), so the first such call is noted, with how many there are.
    """
    by_time = sorted(pending, key=lambda call: (call.started, call.finished, call.head.line))
    before: dict[int, list[int]] = {}
    """Per call (its place in time order), the calls it must follow: the one before it in
    its thread, and the one whose response ends its request."""
    in_thread: dict[str, list[int]] = {}
    for place, call in sorted(enumerate(by_time), key=lambda p: (p[1].n_messages, p[1].head.line)):
        in_thread.setdefault(call.thread, []).append(place)
    for places in in_thread.values():
        for earlier, later in itertools.pairwise(places):
            before.setdefault(later, []).append(earlier)
    place_of = {call.head.message_id: place for place, call in enumerate(by_time)}
    for place, call in enumerate(by_time):
        follows = place_of.get(call.follows)
        if follows is not None and follows != place:
            before.setdefault(place, []).append(follows)
    after: dict[int, list[int]] = {}
    for later, earlier_ones in before.items():
        for earlier in earlier_ones:
            after.setdefault(earlier, []).append(later)
    waiting = [len(before.get(place, ())) for place in range(len(by_time))]
    ready = [place for place, count in enumerate(waiting) if not count]
    started: dict[int, float] = {}
    ordered: list[_Pending] = []
    moved: list[tuple[int, float]] = []
    """(line, seconds back) of each call whose clock is earlier than the one it follows."""
    while len(ordered) < len(by_time):
        if not ready:  # a cycle no real chain makes: the earliest call left goes on
            ready = [min(p for p, count in enumerate(waiting) if count and p not in started)]
        place = heapq.heappop(ready)
        if place in started:  # released from a cycle, then freed by the calls it waited on
            continue
        call = by_time[place]
        latest = max((started[p] for p in before.get(place, ()) if p in started), default=0.0)
        if latest > call.started:
            moved.append((call.head.line, latest - call.started))
        started[place] = max(call.started, latest)
        finished = max(call.finished, started[place])
        ordered.append(replace(call, started=started[place], finished=finished))
        for later in after.get(place, ()):
            waiting[later] -= 1
            if not waiting[later]:
                heapq.heappush(ready, later)
    if moved:
        line, back = min(moved)
        others = f"; {len(moved) - 1} more calls like it" if len(moved) > 1 else ""
        reading.problem(
            line,
            f"the clock goes back {back:.0f} s before the call this one follows: it replays at "
            f"that call's time, so the cache's gap there is a guess{others}",
        )
    return ordered


def _link_tasks(session: Session) -> None:
    """Tie each sub-agent thread to the Task call whose prompt opened it (same file only)."""
    tasks: dict[str, str] = {}
    uses = (
        block
        for thread in session.threads.values()
        for message in thread.messages
        for block in message.blocks
        if block.tool in TASK_TOOLS and block.type == "tool_use"
    )
    for block in uses:
        prompt = (block.tool_input or {}).get("prompt")
        if isinstance(prompt, str) and block.tool_use_id:
            tasks.setdefault(prompt, block.tool_use_id)
    for thread in session.threads.values():
        if thread.prefix_key == "agent" and thread.messages:
            # the prompt, after any reminders Claude Code moved up before it
            opening = (tasks.get(block.text) for block in thread.messages[0].blocks)
            thread.task = next((task for task in opening if task), None)


DEFAULT_PREFIX_TOKENS = {"main": 15_000, "agent": 9_500}
"""Tools + system prompt when nothing was recorded: the medians of the sample transcripts."""


def _infer_prefixes(session: Session) -> None:
    """Size each thread's unrecorded prefix from its first call's recorded input total.

    What the first call's usage counts beyond the estimated messages is the prefix (tools and
    system prompt). When that call read from a warm cache, the read ends at the system
    breakpoint, so the read is the prefix and the rest is context Claude Code added without
    writing it down (the files it re-attaches after a compaction). A thread forked off
    another (`Thread.origin`) was sent with that one's prefix.
    """
    first: dict[str, Call] = {}
    for call in session.calls:
        first.setdefault(call.thread, call)
    for thread_id, call in first.items():
        thread = session.threads[thread_id]
        if thread.origin is not None:
            continue  # sent with its origin's prefix (below)
        usage = call.usage
        if usage is None:
            thread.prefix_tokens = DEFAULT_PREFIX_TOKENS[thread.prefix_key]
            continue
        shown = sum(message.tokens for message in session.request(call))
        rest = max(usage.total_input_tokens - shown, 0)
        read = usage.cache_read_input_tokens
        if 0 < read <= rest:
            thread.prefix_tokens, thread.hidden_tokens = read, rest - read
        else:
            thread.prefix_tokens = rest
        thread.warm_tokens = read
    for thread in session.threads.values():
        if thread.origin is not None:
            origin = session.threads[thread.origin]
            thread.prefix_tokens, thread.hidden_tokens = origin.prefix_tokens, origin.hidden_tokens
