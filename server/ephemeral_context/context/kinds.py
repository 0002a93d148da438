"""What a thread block or a ledger item carries: one vocabulary for the whole engine.

A block's kind decides whether the policy may evict it and what its placeholder says; an
item's kind (the subset FILE, SYMBOL, SKILL, MEMORY, TOOL_RESULT) what the Context view
lists. The values are the strings the protocol and the placeholders show.

API:
- `BlockKind`: the kinds.
- `EVICTABLE`: the kinds the policy may evict.
- `FILE_COPIES`: the kinds that carry a copy of a file.
"""

from __future__ import annotations

from enum import StrEnum


class BlockKind(StrEnum):
    TEXT = "text"
    """A message, a short tool result or a one-line answer: never evicted."""
    FILE = "file"
    """A read of a file (block); one version of a file (item)."""
    SYMBOL = "symbol"
    """Item only: a range read of a file."""
    EDIT = "edit"
    """A tool result of the model's own edit: enters the thread as TOOL_RESULT."""
    TOOL_RESULT = "tool_result"
    TOOL_INPUT = "tool_input"
    """A large tool_use input, stored so it can shrink to a reference."""
    WRITE_INPUT = "write_input"
    """A Write's content: the file's new version."""
    SKILL = "skill"
    MEMORY = "memory"
    PINNED = "pinned"
    """A pinned file or definition: never evicted while pinned."""
    REHYDRATION = "rehydration"
    """Evicted content appended again."""
    CONSOLIDATED = "consolidated"
    """A thread copy of a file that moved into the file segment."""
    NOTE = "note"
    """Text the engine adds for itself (how to fetch content back): never evicted, and
    no part of the recorded-style twin."""


EVICTABLE = frozenset(
    {
        BlockKind.FILE,
        BlockKind.TOOL_RESULT,
        BlockKind.WRITE_INPUT,
        BlockKind.TOOL_INPUT,
        BlockKind.SKILL,
        BlockKind.MEMORY,
        BlockKind.REHYDRATION,
    }
)
"""Blocks the policy may replace by a placeholder. Re-hydrated content is one of them once
the model has answered after it: it is in the store under its id, like the first copy."""
FILE_COPIES = frozenset({BlockKind.FILE, BlockKind.WRITE_INPUT, BlockKind.REHYDRATION})
"""Blocks that hold a file's text (their placeholder names the file)."""
