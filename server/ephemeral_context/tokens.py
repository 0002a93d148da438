"""Offline token estimates per content kind (a first, uncalibrated version).

Placeholder constants: characters per token for each kind. The replay owner fits these to
the usage figures real transcripts record (docs/cost-model.md); callers only rely on
`estimate_tokens(text, kind)`.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN: dict[str, float] = {
    "prose": 4.0,
    "code": 3.5,
    "json": 3.0,
    "tool_output": 3.5,
}


def estimate_tokens(text: str, kind: str = "code") -> int:
    """Tokens `text` is likely to cost; unknown kinds count as code."""
    if not text:
        return 0
    return math.ceil(len(text) / CHARS_PER_TOKEN.get(kind, CHARS_PER_TOKEN["code"]))
