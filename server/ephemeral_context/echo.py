"""How an error message quotes back what a user, an editor or the model typed."""

from __future__ import annotations


def quoted(text: str, limit: int = 80) -> str:
    """`text` as repr() shows it, cut to its start and its length past `limit` characters:
    a 100,000-character name or id typed by mistake does not come back whole in the error
    (nor in the editor's message popup, nor in the model's tool result)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"
