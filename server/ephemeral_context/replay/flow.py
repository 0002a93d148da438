"""The information flow of a coding session, as every replay strategy consumes it.

A transcript reader turns a Claude Code session into a `Session`: threads of messages (the main
conversation, each sub-agent, each continuation after a compaction) and the API calls made on
them, in time order. Each call knows exactly which messages its request carried, what the
response added, when it started and finished, and (when the transcript records it) the usage
Anthropic billed. Content blocks keep their meaning, not only their text: a Read result knows
its path, line range and file content; an Edit knows its old and new strings; so a strategy can
lay the same information out differently (dedup a repeated read, keep one copy of a file,
clear old tool results) without parsing text again.

Token counts here are estimates from `tokens.py`, made once when the block is read; the fixed
prefix Claude Code sends (tools and system prompt) is not in the transcript and is inferred per
thread from the first recorded call (see docs/cost-model.md, "Replay and fidelity").

API:
- `Session`, `Thread`, `Call`, `Message`, `Block`, `Role`: the flow.
- `FileView`, `FileChange`, `Replacement`, `Pattern`, `LineEdit`: what a Read showed, what
  an edit changed.
- `RecordedUsage`: the usage a call recorded.
- `PrefixState`, `FIRST_PREFIX`: what a call's fixed prefix was built from (it can change
  mid-session).
- `Unanswered`: a request sent and interrupted before its answer.
- `Problem`: something skipped, where and why.
- `block_key(...)`: the content key of a block.
- `mark_position(messages)`: where Claude Code's breakpoint is when not on the last block.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

import regex
import xxhash

from ephemeral_context.cache_sim import Block as CacheBlock
from ephemeral_context.cache_sim import Ttl, Usage
from ephemeral_context.documents import utf8
from ephemeral_context.patterns import compile_pattern, time_left
from ephemeral_context.prices import Geo, PriceRow, Speed, priced

BlockType = Literal["text", "thinking", "tool_use", "tool_result", "image", "hidden"]
Role = Literal["user", "assistant", "system"]
"""A message's role; "system" for the mid-conversation system messages Claude Code sends."""


def block_key(*parts: str) -> int:
    """The content key of a block made of these parts (what `Block.key` holds)."""
    return xxhash.xxh3_64_intdigest(utf8("\x00".join(parts)))


@dataclass(frozen=True)
class FileView:
    """What a Read showed: `content` is the raw text of lines start_line.. (no line numbers)."""

    path: str
    content: str
    start_line: int = 1
    num_lines: int = 0
    total_lines: int | None = None
    cut_at_limit: bool = False
    """The Read stopped at the `limit` it was given, with the file's length not recorded:
    more lines may follow."""

    @property
    def whole_file(self) -> bool:
        """True when the view covers the file from its first to its last line."""
        return (
            self.start_line <= 1
            and not self.cut_at_limit
            and (self.total_lines is None or self.num_lines >= self.total_lines)
        )


class Replacement(NamedTuple):
    """One string an edit replaces: its first occurrence, or every one (`replace_all`)."""

    old: str
    new: str
    every: bool = False

    def apply(self, text: str) -> str:
        every = self.every and self.old  # an empty old string matches once, at the start
        return text.replace(self.old, self.new, -1 if every else 1)


PATTERN_SECONDS = 2.0
"""The longest one transcript's pattern may take to match: a pattern written to backtrack
for hours leaves its file unknown, not the replay stalled."""

_GROUP_REFERENCE = re.compile(r"\$!(\d+)")
"""A group of the match in Serena's replacement text: `$!1`, `$!2`, ..."""


class Pattern(NamedTuple):
    """A regular expression's matches replaced, as Serena's `replace_content` in regex mode
    replaces them (oraios/serena src/serena/util/text_utils.py, `ContentReplacer`): Python's
    `re` with DOTALL and MULTILINE; `repl` verbatim but for `$!N`, group N of the match (left
    as written when the group matched nothing); every match with `every`, else exactly one.
    With `template`, as the `replace_regex` of Serena's releases before it replaces them
    (src/serena/tools/file_tools.py, `ReplaceRegexTool`: `re.subn`, `repl` a Python template
    with `\\1` and escapes, no check for a match holding another)."""

    pattern: str
    repl: str
    every: bool = False
    template: bool = False

    def apply(self, text: str) -> str | None:
        """`text` after the replacement; None where Serena refuses it (no match, several
        without `every`, a match over lines the pattern matches again inside, a group it
        lacks, a pattern `re` does not read) or where matching takes longer than
        PATTERN_SECONDS in all, so `text` is not known to be the file it edited."""
        deadline = time.monotonic() + PATTERN_SECONDS
        try:
            compiled = compile_pattern(self.pattern, re.DOTALL | re.MULTILINE)
            matches = list(compiled.finditer(text, timeout=time_left(deadline)))
            if not matches or (len(matches) > 1 and not self.every):
                return None
            if not self.template and any(
                "\n" in m[0] and compiled.search(m[0][1:], timeout=time_left(deadline))
                for m in matches
            ):
                return None  # Serena's check for a match that swallowed another one
            parts, at = [], 0
            for m in matches:
                new = m.expand(self.repl) if self.template else _dollar_groups(m, self.repl)
                parts += [text[at : m.start()], new]
                at = m.end()
        except (regex.error, IndexError, ValueError, TimeoutError):
            return None
        return "".join(parts) + text[at:]

    def matched(self, text: str) -> list[str]:
        """What the pattern matches in `text`, in order (none where `re` cannot read it, or
        not within PATTERN_SECONDS)."""
        try:
            compiled = compile_pattern(self.pattern, re.DOTALL | re.MULTILINE)
            return [m[0] for m in compiled.finditer(text, timeout=PATTERN_SECONDS)]
        except (regex.error, TimeoutError):
            return []


def _dollar_groups(match: regex.Match[str], repl: str) -> str:
    """`repl` with each `$!N` replaced by group N of `match`, or left as written when the
    group matched nothing (IndexError when the pattern has no group N)."""

    def group(reference: re.Match[str]) -> str:
        value = match[int(reference[1])]
        return reference[0] if value is None else value

    return _GROUP_REFERENCE.sub(group, repl)


class LineEdit(NamedTuple):
    """Lines replaced by number, as Serena's `delete_lines`, `insert_at_line` and
    `replace_lines` do (oraios/serena src/serena/code_editor.py: a 0-based line `n` is line
    `n + 1` here): `removed` lines from line `first` deleted, `inserted` put in their place."""

    first: int
    removed: int
    inserted: tuple[str, ...] = ()

    def apply(self, lines: Mapping[int, str]) -> dict[int, str]:
        """Lines by number (1-based, some of a file's) after the edit: those after the
        removed ones move by what it added."""
        end, moved = self.first + self.removed, len(self.inserted) - self.removed
        before = {n: t for n, t in lines.items() if n < self.first}
        after = {n + moved: t for n, t in lines.items() if n >= end}
        return {**before, **dict(enumerate(self.inserted, self.first)), **after}

    def old(self, text: str, start_line: int) -> str | None:
        """The lines it removes, as `text` (the file's lines from `start_line`) shows them;
        None unless it shows every one of them."""
        lines = text.split("\n")
        at = self.first - start_line
        if not self.removed or at < 0 or at + self.removed > len(lines):
            return None
        return "\n".join(lines[at : at + self.removed])


@dataclass(frozen=True)
class FileChange:
    """A change the model made to a file: replacements (Edit, MultiEdit, a literal Serena
    `replace_content`), whole content (Write), a regular expression's matches replaced
    (`pattern`) or lines replaced by number (`lines`); with none of them, a change whose
    result the transcript does not say (Serena's symbol edits: where a definition ends is
    the language server's answer), the body of definition `symbol` when it says which.

    `original` is the whole file before the change when the transcript recorded it.
    """

    path: str
    replacements: tuple[Replacement, ...] = ()
    content: str | None = None
    original: str | None = None
    pattern: Pattern | None = None
    lines: LineEdit | None = None
    symbol: str | None = None
    """The definition whose body it replaced (Serena's `name_path`, `Class/method`)."""
    elsewhere: bool = False
    """It may have changed other files too, which ones unsaid (Serena's `rename_symbol`)."""


@dataclass(frozen=True)
class Block:
    """One content block of a message, with its estimated tokens and what it means.

    `key` identifies the content for the cache model: equal keys mean byte-equal blocks.
    """

    key: int
    type: BlockType
    text: str
    tokens: int
    kind: str = "prose"
    """The token-estimate kind the text was counted as (tokens.KINDS)."""
    tool: str | None = None
    tool_use_id: str | None = None
    tool_input: Mapping[str, Any] | None = None
    is_error: bool = False
    file_view: FileView | None = None
    file_change: FileChange | None = None
    path: str | None = None
    """The file a tool_use's input names, as the reader resolved it when the call was made
    (a Serena `relative_path` under its project); None when it names none."""
    media: bool = False
    """An image or document, or a tool result whose content carries some (`tokens` counts
    them): the context engine sends it as it came and never evicts it."""
    raw: Mapping[str, Any] | None = field(default=None, compare=False)
    """The API dict this block was read from, when it must pass on unchanged (the gateway)."""
    joined: int = 0
    """How many characters at the end of a tool result's `text` are reminders Claude Code
    joined into it: estimated, and fitted (`calibrate.py`), as prose, whatever `kind` is."""


@dataclass(frozen=True)
class Message:
    """One API message; consecutive transcript lines of one role are merged, as the API wants."""

    role: Role
    blocks: tuple[Block, ...]
    timestamp: float
    line: int
    marked: int | None = None
    """Where Claude Code's breakpoint is when the message ends a request, if not on its last
    block: it marks the last block it sends, and the API renders a message's tool results in
    the order of the tool uses they answer, which `blocks` follows (reader.py)."""
    carries_mark: bool = True
    """Whether Claude Code's breakpoint goes in this message when it ends a request: not in a
    role "system" message sent by releases 2.1.154 to 2.1.211, which mark the message before."""

    @property
    def tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)


def same_message(a: Message, b: Message) -> bool:
    """The same message sent the same way, whatever counts its blocks carry (a
    microcompaction, a process resuming the session, send one changed)."""
    return (
        a.line == b.line
        and len(a.blocks) == len(b.blocks)
        and all(x is y or x.key == y.key for x, y in zip(a.blocks, b.blocks, strict=True))
    )


def shared_messages(a: Sequence[Message], b: Sequence[Message]) -> int:
    """How many leading messages two threads have in common (where a fork starts)."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if not same_message(x, y)), min(len(a), len(b)))


def mark_position(messages: Sequence[Message]) -> tuple[int, int] | None:
    """Where Claude Code's breakpoint is in a request of these messages, as (message, block)
    indices, when it is not on the last block (None when it is). What follows it is billed
    as plain input: the call's recorded `input_tokens` when the cache took the request."""
    end = len(messages)
    while end > 0 and not messages[end - 1].carries_mark:
        end -= 1
    if end == 0:
        return None
    message = messages[end - 1]
    if message.marked is None and end == len(messages):
        return None
    return end - 1, len(message.blocks) - 1 if message.marked is None else message.marked


@dataclass(frozen=True, slots=True)
class RecordedUsage(Usage):
    """The usage Anthropic returned for one call, as the transcript recorded it.

    The input side (and its `billed_input`, `total_input_tokens`) is the cache model's `Usage`,
    so recorded and modelled calls are priced by one rule; the output side is added here.
    """

    output_tokens: int = 0
    cache_counted: bool = True
    """The usage had both cache counts, as every usage Anthropic returns has (zero or not);
    one without them comes from a gateway or an export that dropped them, and its zeros are
    not what Anthropic's cache billed."""
    speed: Speed = Speed.STANDARD
    """How the request was served (`usage.speed`, recorded since 2026): a setting the
    client asked for (`/fast`), like its model and TTL, not a cache figure."""
    inference_geo: Geo = Geo.GLOBAL
    """Where it ran (`usage.inference_geo`): US-only inference, an organisation's setting."""

    @property
    def ttl(self) -> Ttl | None:
        """The TTL this call wrote with (None when it wrote nothing)."""
        if self.ephemeral_1h_input_tokens >= max(self.ephemeral_5m_input_tokens, 1):
            return "1h"
        return "5m" if self.ephemeral_5m_input_tokens else None


@dataclass
class Thread:
    """One conversation sent to the API: the main session, a sub-agent, or a continuation.

    `prefix_key` says which fixed prefix (tools + system prompt) its calls start with: "main"
    or "agent". `prefix_tokens` is that prefix's size, `hidden_tokens` the unrecorded context
    Claude Code adds after a compaction (files it re-attaches), and `warm_tokens` what the
    thread's first call read from a cache something outside the transcript had warmed (an
    earlier session, the compaction call); all three come from the first call's recorded usage.
    """

    id: str
    prefix_key: str
    messages: list[Message] = field(default_factory=list)
    prefix_tokens: int = 0
    hidden_tokens: int = 0
    warm_tokens: int = 0
    origin: str | None = None
    """For a thread forked off another of the same file (one of its messages sent otherwise:
    after a microcompaction, by a resumed process), the thread it forked off: the same
    process sent both with one prefix, so the cache keeps what they share."""
    task: str | None = None
    """For a sub-agent started in the same file: the id of the Task tool use that started it."""


@dataclass(frozen=True)
class PrefixState:
    """What the fixed prefix Claude Code sent was built from, where it changes mid-session.

    `skills`: how many times the skill listing changed before the call (Claude Code 2.1.0 to
    2.1.22 lists skills in the Skill tool's description, among the tools, and re-reads them
    about a second after a skill file is written). `cwd`: the working directory of the turn
    when it is not the one the thread began in (the system prompt's environment section
    names it; releases up to 2.1.31 build it once per turn), else "".
    """

    skills: int = 0
    cwd: str = ""


FIRST_PREFIX = PrefixState()
"""The state of a prefix nothing is known to have changed."""


def prefix(
    thread: Thread, ttl: Ttl | None, state: PrefixState = FIRST_PREFIX
) -> tuple[CacheBlock, ...]:
    """The thread's fixed prefix (with Claude Code's breakpoint) and any unrecorded context.

    A new skill listing changes the tools, so the whole prefix; a new working directory
    changes the system prompt after its first breakpoint: the unrecorded context when the
    prefix was sized as what other sessions had cached (the tools and that first part),
    else the whole prefix.
    """
    skills = str(state.skills)
    head = (skills,) if thread.hidden_tokens else (skills, state.cwd)
    sent = thread.origin or thread.id
    blocks = [
        CacheBlock(block_key("prefix", sent, *head), max(thread.prefix_tokens, 1), ttl),
    ]
    if thread.hidden_tokens:
        blocks.append(
            CacheBlock(block_key("hidden", sent, skills, state.cwd), thread.hidden_tokens)
        )
    return tuple(blocks)


@dataclass(frozen=True)
class Call:
    """One API call: the first `n_messages` messages of its thread, answered by `response`."""

    index: int
    thread: str
    model: str
    started: float
    finished: float
    n_messages: int
    response: Message
    usage: RecordedUsage | None
    line: int
    prefix: PrefixState = FIRST_PREFIX
    """What the call's fixed prefix (tools, system prompt) was built from."""

    @property
    def speed(self) -> Speed:
        """How the call was served (standard where nothing was recorded)."""
        return self.usage.speed if self.usage is not None else Speed.STANDARD

    @property
    def price(self) -> PriceRow:
        """The prices of this call: its model's row in effect when it started, at its speed
        and where it ran."""
        geo = self.usage.inference_geo if self.usage is not None else Geo.GLOBAL
        return priced(self.model, self.started).served(self.speed, geo)


@dataclass(frozen=True)
class Unanswered:
    """A request Claude Code sent that no response answers: the person interrupted it before
    its first token ("[Request interrupted by user]" right after the request's last line).
    The API had read the prompt by then, so its cache holds it as after any call; nothing
    was recorded or billed for it here. It carried the first `n_messages` messages of its
    thread, the last one cut to its first `n_blocks` blocks (a later request merges the
    interruption notice and the next prompt into that user message)."""

    thread: str
    model: str
    started: float
    n_messages: int
    n_blocks: int
    prefix: PrefixState = FIRST_PREFIX


@dataclass(frozen=True)
class Problem:
    """Something in the input not taken as it stands: where it was, what became of it."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class Session:
    """A whole transcript as an information flow: threads, and calls in time order."""

    path: str
    threads: dict[str, Thread]
    calls: list[Call]
    problems: list[Problem] = field(default_factory=list)
    unanswered: list[Unanswered] = field(default_factory=list)
    """Requests sent and interrupted before any answer, in time order (they warm the cache)."""
    inherited: list[Call] = field(default_factory=list)
    """For a forked session (`/fork`, `--fork-session`), the calls of the parent it starts
    from, in time order: their lines are copies of the parent's, their usage the parent's
    bill. Not calls of this session; they warm its cache as they warmed the parent's (the
    cache is shared by content), so its first call reads what they wrote within the TTL."""
    parent: str | None = None
    """For a sub-agent file (`<session>/subagents/agent-*.jsonl`), its parent session's file.

    A sub-agent's calls use its own cache (its prompt and tools differ from the parent's);
    one forked from the parent (an aside question) reads what the parent cached, which its
    first call's recorded cache read shows (Thread.warm_tokens)."""

    @property
    def models(self) -> list[str]:
        """The models the calls used, in order of first use."""
        return list(dict.fromkeys(call.model for call in self.calls))

    @property
    def model(self) -> str:
        """The model of most calls: the one whose prices the report quotes."""
        counts: dict[str, int] = {}
        for call in self.calls:
            counts[call.model] = counts.get(call.model, 0) + 1
        return max(counts, key=lambda name: counts[name]) if counts else "unknown"

    def request(self, call: Call | Unanswered) -> Sequence[Message]:
        """The messages the request carried, oldest first."""
        messages = self.threads[call.thread].messages[: call.n_messages]
        if isinstance(call, Call) or not messages:
            return messages
        last = messages[-1]
        cut = Message(last.role, last.blocks[: call.n_blocks], last.timestamp, last.line)
        return [*messages[:-1], cut]

    @property
    def recorded(self) -> bool:
        """True when every call has recorded usage (the fidelity check needs all of them)."""
        return bool(self.calls) and all(call.usage is not None for call in self.calls)

    @cached_property
    def cache_ttl(self) -> Ttl:
        """The session's TTL regime (the user's Claude Code setting): the TTL that most of
        the recorded cache writes used; 5 minutes when nothing was recorded."""
        hour = sum(c.usage.ephemeral_1h_input_tokens for c in self.calls if c.usage)
        five = sum(c.usage.ephemeral_5m_input_tokens for c in self.calls if c.usage)
        return "1h" if hour > five else "5m"

    def call_ttl(self, call: Call) -> Ttl:
        """The TTL `call` wrote with, as its usage shows; else the session's regime."""
        return (call.usage.ttl if call.usage else None) or self.cache_ttl
