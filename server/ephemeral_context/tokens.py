"""Offline token estimates per content kind, fitted to the usage real transcripts record.

Claude's tokenizer is not available offline (and tiktoken, which downloads its encodings at
run time, counts for other models), so the estimate is characters divided by a ratio per
kind of content, plus a fixed cost per content block. The constants are a least-squares fit
to the per-call input totals that Anthropic returned in real Claude Code sessions:
`ectx replay --fit-tokens PATH...` recomputes them (replay/calibrate.py) and
docs/cost-model.md ("Token estimate") records the fit and its error. When an API key is
present, `count_tokens` asks the Messages API's count_tokens endpoint instead.
"""

from __future__ import annotations

import math
import os
from typing import Any

KINDS = ("prose", "thinking", "code", "json", "tool_output")
"""prose: what people and the model write; thinking: the model's thinking blocks; code: file
text (Read results); json: tool-use inputs; tool_output: command, search and other tool
output."""

CHARS_PER_TOKEN: dict[str, float] = {
    "prose": 3.66,
    "thinking": 3.33,
    "code": 2.99,
    "json": 3.40,
    "tool_output": 2.45,
}
"""Fitted on the four transcripts in shared/traces (348 call-to-call steps), 2026-11-30."""

BLOCK_OVERHEAD_TOKENS = 33
"""Per content block: the block's framing plus the reminders Claude Code adds unrecorded."""


def estimate_tokens(text: str, kind: str = "code") -> int:
    """Tokens `text` is likely to cost on its own; unknown kinds count as code."""
    if not text:
        return 0
    return math.ceil(len(text) / CHARS_PER_TOKEN.get(kind, CHARS_PER_TOKEN["code"]))


def estimate_block_tokens(text: str, kind: str = "code") -> int:
    """Tokens one content block of a request costs: its text plus the per-block overhead."""
    return estimate_tokens(text, kind) + BLOCK_OVERHEAD_TOKENS


def count_tokens(text: str, model: str, client: Any | None = None) -> int:
    """Exact tokens of `text` sent as one user message, from the count_tokens endpoint.

    Needs ANTHROPIC_API_KEY (or a ready `anthropic.Anthropic` client, for instance one pointed
    at a local server); raises RuntimeError without either.
    """
    if client is None:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise RuntimeError("count_tokens needs ANTHROPIC_API_KEY; use estimate_tokens offline")
        import anthropic

        client = anthropic.Anthropic()
    result = client.messages.count_tokens(
        model=model, messages=[{"role": "user", "content": text or " "}]
    )
    return int(result.input_tokens)
