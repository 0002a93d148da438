"""A conversation's thread: its content blocks as they are sent now, and their invariants.

`Thread` owns the blocks, the token offset of each, the recorded-style baseline (every
block as first shown, what the savings are measured against), which blocks are consumed
(before the latest model response) and cacheable (not thinking), and the CacheView (what
the prompt cache is believed to hold). `append` keeps all of these in step; `replace` puts
a placeholder or reference where content was, keeping the content; `reflow` recomputes the
offsets after blocks shrank and forgets the cache entries the change invalidated; `fork`
starts another thread from a prefix of this one (a rewind, an edited prompt), as sent now,
so the cache entries of that prefix serve both.

API:
- `Thread`: `append(call, role, block, tokens, ...)`, `replace(index, block, tokens, kind)`,
  `reflow(first)`, `fork(at)`, `end(index)`, `consumed(index)`, `shows(needle)`.
- `ThreadBlock`: one block as sent now, with its kind, item and recorded-style twin.
- `message_block(key, role, first, tokens, run, ttl)`: the cache model's block for a thread block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from ephemeral_context.cache_sim import Block, Ttl, lookback_run
from ephemeral_context.context.blocks import content_key, readable
from ephemeral_context.context.cacheview import CacheView
from ephemeral_context.context.kinds import BlockKind

Role = Literal["user", "assistant"]
THINKING = ("thinking", "redacted_thinking")


@dataclass
class ThreadBlock:
    """One content block of the conversation as it is sent now, plus what it carries.

    `original` keeps the block as first shown when a placeholder replaced it, so the content
    can be appended again (re-hydration) and accounted for.
    """

    role: Role
    block: dict[str, Any]
    tokens: int
    call: int
    key: int = 0
    kind: BlockKind = BlockKind.TEXT
    item_id: str | None = None
    uri: str | None = None
    text: str = ""
    evicted: bool = False
    clipped: bool = False
    """Only its head is sent (clipping.py): still a candidate for eviction."""
    original: dict[str, Any] | None = None
    original_tokens: int = 0
    original_key: int = 0
    """The content key the block had as first shown (before a placeholder replaced it)."""
    first: bool = True
    """It starts a message: the block before it has the other role (the API sends the blocks
    of one role in a row as one message)."""
    relies_on: tuple[int, ...] = ()
    """The blocks it points the model at (a Read answered by a reference to, or a diff
    against, what the model saw): while it is unanswered they stay visible."""
    sent: Block = field(init=False, repr=False, compare=False)
    """The cache model's block for it as sent now, without a breakpoint (`message_block`),
    kept with `key` and `tokens` so a request makes no new one per block."""

    @cached_property
    def readable(self) -> str:
        """Its text as the model reads it (`blocks.readable`): where quotes and needles are
        looked for."""
        return readable(self.text)

    def __post_init__(self) -> None:
        if not self.key:
            self.key = content_key(self.block)
        if not self.original_tokens:
            self.original_tokens = self.tokens
        self.sent = message_block(self.key, self.role, self.first, self.tokens, self.run)

    @property
    def run(self) -> str:
        """Its lookback run (cache_sim.lookback_run): parallel tool calls and results."""
        return lookback_run(self.block.get("type"))


def message_block(
    key: int, role: Role, first: bool, tokens: int, run: str, ttl: Ttl | None = None
) -> Block:
    """The cache model's block for a thread block: its content, its role and whether it
    starts a message (the same content opening a message or inside one is another prefix),
    and its lookback run."""
    return Block(hash((key, role, first)), tokens, ttl, run=run)


@dataclass
class Thread:
    """The blocks, their offsets and the cache view of one conversation."""

    blocks: list[ThreadBlock] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    tokens: int = 0
    added_tokens: int = 0
    """Tokens ever appended (for the mean lifetime of thread content)."""
    baseline: list[Block] = field(default_factory=list)
    baseline_ends: list[int] = field(default_factory=list)
    """len(baseline) after each block (a rehydration has no recorded-style twin)."""
    response_start: int = -1
    """Index of the first block of the latest model response: what precedes it is consumed
    (the model has answered after it); the response itself is not yet."""
    responses: list[int] = field(default_factory=list)
    """The first block of every model response so far (`response_start` is the last)."""
    last_cacheable: int = -1
    cache: CacheView = field(default_factory=CacheView)

    def __len__(self) -> int:
        return len(self.blocks)

    def __bool__(self) -> bool:
        return bool(self.blocks)

    def __getitem__(self, index: int) -> ThreadBlock:
        return self.blocks[index]

    def __iter__(self) -> Iterator[ThreadBlock]:
        return iter(self.blocks)

    def append(
        self,
        call: int,
        role: Role,
        block: dict[str, Any],
        tokens: int,
        *,
        kind: BlockKind = BlockKind.TEXT,
        item_id: str | None = None,
        uri: str | None = None,
        text: str = "",
        baseline: tuple[int, int] | None = None,
        answers: bool = True,
        relies_on: tuple[int, ...] = (),
    ) -> int:
        """Add a block shown first at `call` (and its recorded-style twin, `baseline` =
        (key, tokens) when the transcript showed something else); returns its index.
        An assistant block with `answers=False` (a call fetching evicted content back)
        leaves what precedes it unconsumed."""
        index = len(self.blocks)
        first = index == 0 or self.blocks[index - 1].role != role
        tb = ThreadBlock(
            role, block, tokens, call, kind=kind, item_id=item_id, uri=uri, text=text,
            first=first, relies_on=relies_on,
        )  # fmt: skip
        self.blocks.append(tb)
        self.offsets.append(self.tokens)
        self.tokens += tokens
        self.added_tokens += tokens
        if baseline is not None:
            key, base_tokens = baseline
            self.baseline.append(Block(hash((key, role)), base_tokens, run=tb.run))
        elif kind not in (BlockKind.REHYDRATION, BlockKind.NOTE):
            self.baseline.append(Block(hash((tb.key, role)), tokens, run=tb.run))
        self.baseline_ends.append(len(self.baseline))
        if (
            answers
            and role == "assistant"
            and (index == 0 or self.blocks[index - 1].role != "assistant")
        ):
            self.response_start = index
            self.responses.append(index)
        if block.get("type") not in THINKING:
            self.last_cacheable = index
        return index

    def replace(
        self, index: int, block: dict[str, Any], tokens: int, kind: BlockKind | None = None
    ) -> None:
        """Send `block` instead of block `index` from now on (its content stays in
        `original`); the caller reflows from the first block it replaced."""
        tb = self.blocks[index]
        if tb.original is None:
            tb.original, tb.original_key = tb.block, tb.key
        tb.block, tb.key, tb.tokens, tb.evicted = block, content_key(block), tokens, True
        tb.sent = message_block(tb.key, tb.role, tb.first, tokens, tb.run)
        if kind is not None:
            tb.kind = kind

    def reflow(self, first: int) -> None:
        """Recompute offsets from `first` and forget boundaries the change invalidated."""
        total = self.offsets[first]
        for i in range(first, len(self.blocks)):
            self.offsets[i] = total
            total += self.blocks[i].tokens
        self.tokens = total
        self.cache.invalidate_from(first)

    def fork(self, at: int) -> Thread:
        """A new thread holding this one's first `at` blocks as they are sent now (their
        content kept), with the cache entries that end within them."""
        blocks = [replace(tb) for tb in self.blocks[:at]]
        base = self.baseline_ends[at - 1] if at else 0
        thread = Thread(
            blocks=blocks,
            offsets=self.offsets[:at],
            tokens=self.end(at - 1) if at else 0,
            added_tokens=sum(tb.original_tokens for tb in blocks),
            baseline=self.baseline[:base],
            baseline_ends=self.baseline_ends[:at],
            cache=CacheView(dict(self.cache.entries)),
        )
        thread.cache.invalidate_from(at)
        thread.responses = [r for r in self.responses if r < at]
        thread.response_start = thread.responses[-1] if thread.responses else -1
        thread.last_cacheable = next(
            (i for i in range(at - 1, -1, -1) if blocks[i].block.get("type") not in THINKING), -1
        )
        return thread

    def end(self, index: int) -> int:
        """Token offset where block `index` ends."""
        return self.offsets[index] + self.blocks[index].tokens

    def consumed(self, index: int) -> bool:
        """The model has answered after block `index`."""
        return index < self.response_start

    def shows(self, needle: str) -> bool:
        """`needle` occurs in a block not evicted."""
        return any(not tb.evicted and needle in tb.readable for tb in self.blocks)
