"""The invariants on every real transcript with its usage removed: the markdown-export shape.

Exports and some gateways keep the conversation but no usage, so the replay knows neither
the token counts billed nor the TTL the client cached with (5 minutes, then) and the
engine has no lead over its twins from the TTL to bet with. Each file of
tests/property/test_transcripts.py is replayed once more without any `usage`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ephemeral_context.replay.reader import read_session

from tests.property.invariants import replay_invariants
from tests.property.test_transcripts import files

pytestmark = pytest.mark.slow


def without_usage(line: str) -> str:
    """The line with its message's usage removed (lines that are not JSON as they are)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return line
    message = record.get("message") if isinstance(record, dict) else None
    if not isinstance(message, dict) or "usage" not in message:
        return line
    del message["usage"]
    return json.dumps(record, ensure_ascii=False)


@pytest.mark.parametrize("path", files())
def test_without_usage_every_invariant_holds(path: Path, tmp_path: Path) -> None:
    lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    stripped = tmp_path / path.name
    text = "\n".join(without_usage(line) for line in lines) + "\n"
    stripped.write_text(text, encoding="utf-8", errors="surrogateescape")
    session = read_session(stripped)
    assert session.calls and all(call.usage is None for call in session.calls)
    found = replay_invariants(session)
    assert found.broken() == {}
