"""Claude Code's silent microcompaction: old tool results cleared with no record of it.

Before every request, Claude Code up to 2.1.8 may clear old tool results in place (they are
sent as "[Old tool result content cleared]" from then on), and it writes nothing about it in
the transcript; from 2.1.9 it writes a `microcompact_boundary` naming what it cleared, which
the reader follows. The rule, as the sources of 1.0.98 and 2.0.8 have it (`microcompact`
there): results of Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit and Write count, each
sized as its text's length / 4 (2,000 per image); the 3 newest are kept; the oldest others
are cleared until what is left of them is at most 40,000 tokens. It happens only when the
last response's usage (input, cache writes and reads, output) is past the context warning
threshold (the context window less the output reserved, the auto-compact buffer of 13,000
and 20,000 more) and clears 20,000 tokens or more. What is cleared stays cleared.

Assumed, since no transcript says: auto-compaction on (Claude Code's default; off moves the
threshold 13,000 tokens up) and the feature not switched off remotely (`mc_disabled`).

API:
- `silently_cleared(chain, model)`: the tool results cleared in the request made of `chain`.
- `warning_threshold(model)`: the context size from which it clears.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ephemeral_context.replay.flow import RecordedUsage

SILENT_BEFORE = (2, 1, 9)
"""The first release that records its microcompactions (2.1.7 has no boundary record, 2.1.9
has; checked in the npm packages)."""

CLEARABLE_TOOLS = frozenset(
    {"Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"}
)
KEEP_RECENT = 3
KEEP_TOKENS = 40_000
LEAST_SAVED = 20_000
IMAGE_SIZE = 2_000
CONTEXT_WINDOW = 200_000
AUTO_COMPACT_BUFFER = 13_000
WARNING_BUFFER = 20_000
OUTPUT_RESERVED = 32_000
"""`CLAUDE_CODE_MAX_OUTPUT_TOKENS`'s default; 8,192 for Haiku and Claude 3.5 models."""
SMALL_OUTPUT_RESERVED = 8_192


class ChainLine(Protocol):
    """One sent line of a request, as the reader holds it."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> Any: ...
    @property
    def message_id(self) -> str | None: ...
    @property
    def usage(self) -> RecordedUsage | None: ...
    @property
    def synthetic(self) -> bool: ...


def warning_threshold(model: str) -> int:
    """The context size (last response's usage) from which Claude Code microcompacts."""
    reserved = SMALL_OUTPUT_RESERVED if "haiku" in model or "3-5" in model else OUTPUT_RESERVED
    return CONTEXT_WINDOW - reserved - AUTO_COMPACT_BUFFER - WARNING_BUFFER


def silently_cleared(chain: Sequence[ChainLine], model: str) -> frozenset[str]:
    """The tool use ids whose results the request made of `chain` sent cleared: the rule is
    applied before each request on the chain (each response's first line) and before this
    one, as Claude Code applies it before every request it sends."""
    threshold = warning_threshold(model)
    results = _Results()
    context = 0
    response: str | None = None
    for line in chain:
        if line.role == "assistant" and not line.synthetic and line.message_id != response:
            response = line.message_id
            results.clear(context >= threshold)
        if line.role == "assistant" and line.usage is not None and not line.synthetic:
            context = line.usage.total_input_tokens + line.usage.output_tokens
        results.note(line.content)
    results.clear(context >= threshold)
    return frozenset(results.uses[: results.cleared])


class _Results:
    """The clearable tool uses in the order they came and what their results weigh. A
    microcompaction clears the oldest uses not cleared yet, so what it has cleared is always
    the first `cleared` of them: each request's rule then looks at the uses it clears and
    no others (over the whole chain, as it was, a long session's replay took cubic time)."""

    def __init__(self) -> None:
        self.uses: list[str] = []
        self.position: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.cleared = 0
        self.left = 0
        """What the results of the uses not cleared weigh (those already answered)."""

    def note(self, content: Any) -> None:
        """Count the clearable tool uses and the sizes of their results in one line."""
        if not isinstance(content, list):
            return
        for item in content:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "tool_use" and item.get("name") in CLEARABLE_TOOLS:
                use = item.get("id")
                if isinstance(use, str) and use not in self.position:
                    self.position[use] = len(self.uses)
                    self.uses.append(use)
                    self.left += self.sizes.get(use, 0)
            elif item.get("type") == "tool_result" and isinstance(item.get("tool_use_id"), str):
                use = item["tool_use_id"]
                if use not in self.sizes:
                    self.sizes[use] = _result_tokens(item.get("content"))
                    if self.position.get(use, -1) >= self.cleared:
                        self.left += self.sizes[use]

    def clear(self, over: bool) -> None:
        """One request's microcompaction, when the context is over the threshold: the
        oldest results but the newest `KEEP_RECENT` until at most `KEEP_TOKENS` are left,
        if that saves `LEAST_SAVED` or more."""
        if not over:
            return
        end, saved = self.cleared, 0
        while end < len(self.uses) - KEEP_RECENT and self.left - saved > KEEP_TOKENS:
            saved += self.sizes.get(self.uses[end], 0)
            end += 1
        if saved >= LEAST_SAVED:
            self.cleared, self.left = end, self.left - saved


def _result_tokens(content: Any) -> int:
    """Claude Code's size of a tool result: characters / 4, rounded; 2,000 per image."""
    if isinstance(content, str):
        return _quarter(len(content))
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            total += _quarter(len(str(part.get("text", ""))))
        elif isinstance(part, Mapping) and part.get("type") == "image":
            total += IMAGE_SIZE
    return total


def _quarter(length: int) -> int:
    """`Math.round(length / 4)` (halves round up)."""
    return (length + 2) // 4
