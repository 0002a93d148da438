"""Offline token estimates per content kind, fitted to the usage real transcripts record.

Claude's tokenizer is not available offline (and tiktoken, which downloads its encodings at
run time, counts for other models), so the estimate is ASCII characters divided by a ratio per
kind of content, a cost per character for CJK and for other non-ASCII scripts, plus a fixed
cost per content block. The constants are a least-squares fit
to the per-call input totals that Anthropic returned in real Claude Code sessions:
`ectx replay --fit-tokens PATH...` recomputes them (replay/calibrate.py) and
docs/cost-model.md ("Token estimate") records the fit and its error. When an API key is
present, `count_tokens` asks the Messages API's count_tokens endpoint instead.

API:
- `estimate_tokens(text, kind)`, `estimate_block_tokens(text, kind)`: the offline estimate.
- `count_tokens(...)`: exact counts from the API when a key is present.
- `KINDS`, `CHARS_PER_TOKEN`, `TOKENS_PER_WIDE_CHAR`, `TOKENS_PER_OTHER_CHAR`,
  `BLOCK_OVERHEAD_TOKENS`, `script_counts`: the fitted constants.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

KINDS = ("prose", "thinking", "code", "json", "tool_output")
"""prose: what people and the model write; thinking: the model's thinking blocks; code: file
text (Read results); json: tool-use inputs; tool_output: command, search and other tool
output."""

CHARS_PER_TOKEN: dict[str, float] = {
    "prose": 4.23,
    "thinking": 3.69,
    "code": 2.98,
    "json": 3.32,
    "tool_output": 3.04,
}
"""For ASCII characters. Fitted on shared/corpus and shared/traces (2,406 call-to-call
steps, 65 transcripts, much of the corpus in Chinese), 2026-12-01."""

BLOCK_OVERHEAD_TOKENS = 48
"""Per content block: the block's framing plus the reminders Claude Code adds unrecorded."""


TOKENS_PER_WIDE_CHAR = 1.501
"""Per character of the CJK scripts (Han, kana, Hangul, full-width forms), whatever the kind."""

TOKENS_PER_OTHER_CHAR = 0.253
"""Per other non-ASCII character (Cyrillic, Greek, accented Latin, arrows, box drawing, emoji)."""

_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
)


def script_counts(text: str) -> tuple[int, int, int]:
    """(ASCII, CJK, other) characters of `text`: the estimate prices each script apart."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    if ascii_chars == len(text):
        return ascii_chars, 0, 0
    wide = len(_WIDE.findall(text))
    return ascii_chars, wide, len(text) - ascii_chars - wide


def estimate_tokens(text: str, kind: str = "code") -> int:
    """Tokens `text` is likely to cost on its own; unknown kinds count as code.

    ASCII characters count by the kind's ratio; CJK and other non-ASCII characters at their
    own per-character cost, since a tokenizer fitted on English splits them much finer.
    """
    if not text:
        return 0
    ascii_chars, wide, other = script_counts(text)
    ratio = CHARS_PER_TOKEN.get(kind, CHARS_PER_TOKEN["code"])
    return math.ceil(
        ascii_chars / ratio + wide * TOKENS_PER_WIDE_CHAR + other * TOKENS_PER_OTHER_CHAR
    )


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

        with anthropic.Anthropic() as own:  # closed after, not left to the garbage collector
            return count_tokens(text, model, own)
    result = client.messages.count_tokens(
        model=model, messages=[{"role": "user", "content": text or " "}]
    )
    return int(result.input_tokens)
