"""Today's ways of laying out a coding session's context, replayed on the same flow.

Each strategy is a `LayoutStrategy`: a name and a per-session layout that turns each call into
a request for the cache model (see simulate.py for the shared driving loop). All of them send
the thread's fixed prefix (tools + system prompt, with Claude Code's breakpoint after it) and
differ in what the messages carry:

- `recorded`: what Claude Code sent; breakpoints after the system prompt and on the last message.
- `cc-dedup`: Claude Code's file-unchanged stub (releases 2.1.97 to 2.1.197; 2.1.22 and
  2.1.332 send the file again) for a Read with the same offset and limit as the last Read of
  that file, the file unchanged and not edited or written by the model in between.
- `clear-tool-uses`: Anthropic's clear_tool_uses_20250919 with its defaults: once a request
  exceeds 100,000 input tokens, the results of all but the 3 most recent tool uses are
  replaced by a placeholder, on the server, before the cache is consulted.
- `clear-at-least`: the same with `clear_at_least` 50,000 tokens: results are cleared oldest
  first in chunks, so the cache breaks once per chunk.
- `clear-thinking`: clear_thinking_20251015 keeping the current turn's thinking blocks.
- `compaction`: server-side compaction (compact_20260112) at its 150,000-token trigger; the
  summary is as long as the median real Claude Code compaction summary.
- `aider`: Aider's request shape (Aider-AI/aider e568d09, aider/coders/chat_chunks.py): system,
  history of finished turns, the current text of every file in the chat, then the current
  turn; breakpoints after the system prompt and after the chat files.
- `seed-inplace`: the seed proposal: one block with the current text of every file seen, placed
  before the conversation (cached) and rewritten in place on every change; Read results in the
  thread become short references.

`STRATEGIES` maps names to strategies; a new one (the context engine's `ours`) is one entry.

API:
- `STRATEGIES`: name -> strategy.
- `UNCHANGED_STUB`, `CLEARED_PLACEHOLDER`, `FILE_REFERENCE`, `AIDER_FILE_NOTE`: the texts they
  send.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ephemeral_context import cache_sim
from ephemeral_context.cache_sim import lookback_run
from ephemeral_context.replay.files import FileTracker
from ephemeral_context.replay.flow import (
    FIRST_PREFIX,
    Block,
    Call,
    Message,
    PrefixState,
    Session,
    Thread,
    Unanswered,
    block_key,
    mark_position,
    prefix,
)
from ephemeral_context.replay.ours import OURS_STRATEGIES
from ephemeral_context.replay.simulate import LayoutStrategy, Prompt, Strategy
from ephemeral_context.tokens import estimate_block_tokens

CLEAR_TRIGGER_TOKENS = 100_000
CLEAR_KEEP_TOOL_USES = 3
CLEARED_PLACEHOLDER = "[tool result cleared by context management]"
CLEAR_AT_LEAST_TOKENS = 50_000
"""The clear_at_least value of the API reference's example ({"type": "input_tokens"})."""
COMPACTION_TRIGGER_TOKENS = 150_000
"""compact_20260112's default trigger (input tokens)."""
COMPACTION_SUMMARY_CHARS = 8_089
"""The median length of the five compaction summaries in ../shared/corpus and traces
(7,329 to 12,852 characters): what a summary of a coding session runs to."""
COMPACTION_SUMMARY_TOKENS = estimate_block_tokens("x" * COMPACTION_SUMMARY_CHARS, "prose")
UNCHANGED_STUB = (
    "Wasted call \u2014 file unchanged since your last Read. Refer to that earlier tool_result "
    "instead."
)
"""What Claude Code 2.1.197 sends for such a Read. 2.1.97 sent "File unchanged since last
read. ..." unless a server-side flag picked this text; 2.1.332 only recognises both in a
resumed history and sends the file again (tests/e2e/test_claude_code_reread.py)."""
FILE_REFERENCE = "Read {path}: in the file context (cached: true)"
FILE_UPDATED = "Updated {path}: in the file context"
AIDER_FILE_NOTE = "Added {path} to the chat."


def cache_block(block: Block) -> cache_sim.Block:
    """The cache model's view of one content block."""
    return cache_sim.Block(
        block.key, block.tokens, None, block.type != "thinking", lookback_run(block.type)
    )


@functools.lru_cache(maxsize=4096)
def text_block(text: str, *parts: str) -> cache_sim.Block:
    """A block this layout writes itself (a stub, a placeholder, a reference); made once per
    text (a layout sends its stubs again with every request: hashing and counting each
    anew took a third of a long thread's replay)."""
    return cache_sim.Block(block_key(text, *parts), estimate_block_tokens(text, "prose"))


def with_breakpoint(
    blocks: Sequence[cache_sim.Block], ttl: cache_sim.Ttl, last: int | None = None
) -> tuple[cache_sim.Block, ...]:
    """`blocks` with a breakpoint on the last one that may carry one (not a thinking block),
    at or before position `last` when given."""
    marked = list(blocks)
    for i in range(len(marked) - 1 if last is None else last, -1, -1):
        block = marked[i]
        if block.auto_target:
            marked[i] = replace(block, cache_ttl=ttl)
            break
    return tuple(marked)


def claude_code_mark(out: Outgoing, blocks: Sequence[cache_sim.Block]) -> int | None:
    """The position in `blocks` of the block Claude Code marked, when it is not the last one
    (`flow.mark_position`) and the layout kept its message block for block."""
    found = mark_position(out.messages)
    if found is None:
        return None
    at, block = found
    kept = out.rewritten[at]
    if len(kept) != len(out.messages[at].blocks):
        return None
    after = sum(len(rewritten) for rewritten in out.rewritten[at + 1 :])
    return len(blocks) - after - len(kept) + block


@dataclass(frozen=True)
class Outgoing:
    """What one call sends of its thread: the recorded messages and the layout's rewrite."""

    thread: Thread
    messages: Sequence[Message]
    rewritten: Sequence[tuple[cache_sim.Block, ...]]
    """One tuple per message of `messages`: the blocks that stand for it in this layout."""
    tracker: FileTracker
    """The thread's files as of the last message."""
    ttl: cache_sim.Ttl
    """The TTL of this request's breakpoints."""
    state: PrefixState = FIRST_PREFIX
    """What Claude Code built this request's fixed prefix from."""

    @property
    def prefix(self) -> tuple[cache_sim.Block, ...]:
        return prefix(self.thread, self.ttl, self.state)

    def blocks(self, start: int = 0, stop: int | None = None) -> list[cache_sim.Block]:
        """The rewritten blocks of messages[start:stop], in order."""
        return [block for message in self.rewritten[start:stop] for block in message]


@dataclass
class _ThreadMemo:
    """A thread's messages as already rewritten (each message once, in order)."""

    messages: list[tuple[cache_sim.Block, ...]] = field(default_factory=list)
    tracker: FileTracker = field(default_factory=FileTracker)


class ThreadLayout:
    """A layout that rewrites each message once, in order, and sends the thread as it stands.

    Subclasses override `rewrite` (block by block, with the thread's file tracker at hand)
    and `assemble` (where the rewritten messages go in the request). Breakpoints carry the
    session's TTL regime (the user's Claude Code setting), so baselines compare fairly.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.memo: dict[str, _ThreadMemo] = {}
        self._lost: dict[int, int] = {}

    @property
    def lost_tokens(self) -> int:
        return sum(self._lost.values())

    def lose(self, key: int, tokens: int) -> None:
        """The content under `key` is gone for good: counted once, however many requests
        (or threads sharing it) leave it out."""
        self._lost.setdefault(key, tokens)

    def prompt(self, call: Call) -> Prompt:
        thread = self.session.threads[call.thread]
        memo = self.memo.setdefault(call.thread, _ThreadMemo())
        messages = self.session.request(call)
        for message in messages[len(memo.messages) :]:
            memo.messages.append(tuple(self._rewrite_message(message, memo)))
        rewritten = memo.messages[: len(messages)]
        return self.assemble(
            Outgoing(thread, messages, rewritten, memo.tracker, self.ttl(call), call.prefix)
        )

    def unanswered(self, request: Unanswered) -> Prompt:
        """An interrupted request laid out as a call would be (its state moves on as for
        one); the cut last message goes as it stands, not rewritten."""
        thread = self.session.threads[request.thread]
        memo = self.memo.setdefault(request.thread, _ThreadMemo())
        messages = self.session.request(request)
        for message in messages[len(memo.messages) : len(messages) - 1]:
            memo.messages.append(tuple(self._rewrite_message(message, memo)))
        last = tuple(cache_block(block) for block in messages[-1].blocks)
        rewritten = [*memo.messages[: len(messages) - 1], last]
        ttl = self.session.cache_ttl
        return self.assemble(
            Outgoing(thread, messages, rewritten, memo.tracker, ttl, request.prefix)
        )

    def ttl(self, call: Call) -> cache_sim.Ttl:
        """The TTL of the call's breakpoints: the session's regime."""
        return self.session.cache_ttl

    def _rewrite_message(self, message: Message, memo: _ThreadMemo) -> Iterable[cache_sim.Block]:
        for block in message.blocks:
            yield from self.rewrite(block, memo.tracker)

    def rewrite(self, block: Block, tracker: FileTracker) -> Sequence[cache_sim.Block]:
        """The blocks that stand for `block` in this layout (by default: itself)."""
        tracker.apply(block)
        return (cache_block(block),)

    def assemble(self, out: Outgoing) -> Prompt:
        """Claude Code's shape: prefix, then the messages, breakpoint where Claude Code puts
        it (the last block it sends, which the API may render before other results)."""
        blocks = out.blocks()
        return Prompt(out.prefix, with_breakpoint(blocks, out.ttl, claude_code_mark(out, blocks)))


class RecordedLayout(ThreadLayout):
    """What Claude Code sent, each call with the TTL its recorded usage shows."""

    def ttl(self, call: Call) -> cache_sim.Ttl:
        return self.session.call_ttl(call)


class DedupLayout(ThreadLayout):
    """Claude Code's file-unchanged stub for a Read the tracker calls a repeat (`Update`)."""

    def rewrite(self, block: Block, tracker: FileTracker) -> Sequence[cache_sim.Block]:
        update = tracker.apply(block)
        if update is not None and update.repeat:
            return (text_block(UNCHANGED_STUB, "stub", block.key.to_bytes(8).hex()),)
        return (cache_block(block),)


class ClearToolUsesLayout(ThreadLayout):
    """clear_tool_uses_20250919, applied by the server on every request.

    With its defaults (`clear_at_least` 0) every request over the trigger has the results of
    all but the `keep` most recent tool uses replaced. With `clear_at_least`, results are
    cleared oldest first in chunks of at least that many tokens, each time the request as
    sent goes over the trigger again, and not at all when fewer are clearable: the cache
    breaks once per chunk instead of on every call (the documented way to keep it warm).
    """

    clear_at_least = 0

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._chunks: dict[str, set[str]] = {}
        """Per thread, the tool uses whose results a chunked clearing has replaced."""

    def assemble(self, out: Outgoing) -> Prompt:
        head = out.prefix
        flow = [block for message in out.messages for block in message.blocks]
        cleared = self._clearing(out.thread.id, head, flow)
        blocks: list[cache_sim.Block] = []
        for block in flow:
            if block.type != "tool_result" or block.tool_use_id not in cleared:
                blocks.append(cache_block(block))
                continue
            self.lose(block.key, block.tokens)
            blocks.append(text_block(CLEARED_PLACEHOLDER, "cleared"))
        return Prompt(head, with_breakpoint(blocks, out.ttl))

    def _clearing(
        self, thread: str, head: Sequence[cache_sim.Block], flow: Sequence[Block]
    ) -> set[str | None]:
        """The tool uses whose results this request sends as the placeholder."""
        uses = [b.tool_use_id for b in flow if b.type == "tool_use" and b.tool_use_id]
        keep = set(uses[-CLEAR_KEEP_TOOL_USES:])
        old = [b for b in flow if b.type == "tool_result" and b.tool_use_id not in keep]
        total = sum(b.tokens for b in head) + sum(b.tokens for b in flow)
        if not self.clear_at_least:
            return {b.tool_use_id for b in old} if total > CLEAR_TRIGGER_TOKENS else set()
        chunked = self._chunks.setdefault(thread, set())
        placeholder = estimate_block_tokens(CLEARED_PLACEHOLDER, "prose")
        sent = total - sum(b.tokens - placeholder for b in old if b.tool_use_id in chunked)
        if sent > CLEAR_TRIGGER_TOKENS:
            chunk: list[str] = []
            freed = 0
            for block in old:
                if block.tool_use_id in chunked or block.tool_use_id is None:
                    continue
                chunk.append(block.tool_use_id)
                freed += block.tokens - placeholder
                if freed >= self.clear_at_least:
                    chunked.update(chunk)
                    break
        return set(chunked)


class ClearAtLeastLayout(ClearToolUsesLayout):
    """clear_tool_uses_20250919 with clear_at_least: 50,000 input tokens."""

    clear_at_least = CLEAR_AT_LEAST_TOKENS


class ClearThinkingLayout(ThreadLayout):
    """clear_thinking_20251015 keeping the current turn: the thinking blocks of earlier turns
    are dropped by the server (a turn runs from a person's prompt to the next)."""

    def assemble(self, out: Outgoing) -> Prompt:
        turn = _current_turn(out.messages)
        blocks: list[cache_sim.Block] = []
        for i, message in enumerate(out.messages):
            for block in message.blocks:
                if block.type == "thinking" and i < turn:
                    self.lose(block.key, block.tokens)
                    continue
                blocks.append(cache_block(block))
        return Prompt(out.prefix, with_breakpoint(blocks, out.ttl))


class CompactionLayout(ThreadLayout):
    """Server-side compaction (compact_20260112) at its default trigger.

    A request whose input is over the trigger is first summarised in an extra sampling step
    over the whole prompt; the answer then continues from the prefix and the summary, and
    every later request of the thread starts from there (the cache restarts from the
    summary). What was summarised is gone for good.
    """

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._since: dict[str, int] = {}
        """Per thread: how many messages the latest summary replaced."""

    def assemble(self, out: Outgoing) -> Prompt:
        thread = out.thread.id
        start = self._since.get(thread, 0)
        summary = [self._summary(thread, start)] if start else []
        kept = [cache_block(b) for m in out.messages[start:] for b in m.blocks]
        prompt = Prompt(out.prefix, with_breakpoint([*summary, *kept], out.ttl))
        if prompt.tokens <= COMPACTION_TRIGGER_TOKENS:
            return prompt
        for message in out.messages[start:]:
            for block in message.blocks:
                self.lose(block.key, block.tokens)
        self._since[thread] = len(out.messages)
        fresh = self._summary(thread, len(out.messages))
        return Prompt(
            out.prefix,
            with_breakpoint([fresh], out.ttl),
            steps_before=(prompt,),
            output_tokens=fresh.tokens,
        )

    @staticmethod
    def _summary(thread: str, upto: int) -> cache_sim.Block:
        return cache_sim.Block(block_key("summary", thread, str(upto)), COMPACTION_SUMMARY_TOKENS)


class FileBlockLayout(ThreadLayout):
    """Shared by the layouts that keep files apart: Read and change results become references."""

    reference = FILE_REFERENCE

    def rewrite(self, block: Block, tracker: FileTracker) -> Sequence[cache_sim.Block]:
        update = tracker.apply(block)
        if update is None:
            return (cache_block(block),)
        if update.replaced_tokens:
            self.lose(block.key, update.replaced_tokens)
        template = self.reference if update.how in ("read", "external") else FILE_UPDATED
        return (text_block(template.format(path=update.path), "ref", str(block.key)),)

    def file_blocks(self, tracker: FileTracker) -> list[cache_sim.Block]:
        """One block per file in the order first seen, each with its current text."""
        return [cache_sim.Block(tracker.key(path), tracker.tokens(path)) for path in tracker.files]


class SeedInPlaceLayout(FileBlockLayout):
    """The seed proposal: one file block before the conversation, rewritten on every change."""

    def assemble(self, out: Outgoing) -> Prompt:
        files = self.file_blocks(out.tracker)
        system = list(out.prefix)
        if files:
            merged = cache_sim.Block(
                block_key("files", *(str(b.key) for b in files)),
                sum(b.tokens for b in files),
                out.ttl,
            )
            system.append(merged)
        return Prompt(tuple(system), with_breakpoint(out.blocks(), out.ttl))


class AiderLayout(FileBlockLayout):
    """Aider: system | finished turns | chat files (breakpoint) | current turn."""

    reference = AIDER_FILE_NOTE

    def assemble(self, out: Outgoing) -> Prompt:
        turn = _current_turn(out.messages)
        files = with_breakpoint(self.file_blocks(out.tracker), out.ttl)
        return Prompt(out.prefix, (*out.blocks(0, turn), *files, *out.blocks(turn)))


def _current_turn(messages: Sequence[Message]) -> int:
    """Index of the message that opened the current turn (the last prompt a person wrote)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user" and not any(b.type == "tool_result" for b in message.blocks):
            return i
    return 0


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        LayoutStrategy("recorded", RecordedLayout, "what Claude Code sent"),
        LayoutStrategy("cc-dedup", DedupLayout, "Claude Code's file-unchanged stub"),
        LayoutStrategy("clear-tool-uses", ClearToolUsesLayout, "clear_tool_uses_20250919"),
        LayoutStrategy(
            "clear-at-least", ClearAtLeastLayout, "clear_tool_uses with clear_at_least 50K"
        ),
        LayoutStrategy("clear-thinking", ClearThinkingLayout, "clear_thinking_20251015"),
        LayoutStrategy("compaction", CompactionLayout, "server-side compaction at 150K"),
        LayoutStrategy("aider", AiderLayout, "files re-sent after the history"),
        LayoutStrategy("seed-inplace", SeedInPlaceLayout, "file block updated in place"),
        *OURS_STRATEGIES,
    )
}
"""Every strategy the report runs, by name, in report order."""
