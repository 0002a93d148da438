"""Claude Code itself as the ground truth for `ectx replay`: scripted sessions, call by call.

Each test runs the real Claude Code CLI (tests/claude_code.py) against tests/fakes with a
script for "the model"; Claude Code runs the tools, writes its transcript, and the fake keeps
every request as sent. The reader's reconstruction of that transcript is then compared with
those requests: how many calls, which messages in which order with which roles, which tool
ids and what content, and the TTL each call's cache writes asked for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.claude_code import ClaudeCode

pytestmark = pytest.mark.e2e


def read_turn(path: Path) -> dict[str, object]:
    return {"tool_use": [{"name": "Read", "input": {"file_path": str(path)}}]}


def test_claude_code_runs_against_the_fake_and_writes_a_transcript(
    claude_code: ClaudeCode,
) -> None:
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    run = claude_code.run("What does app.py do?", [read_turn(app), "It prints hello."])

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "It prints hello."
    assert [request.status for request in run.requests] == [200, 200]
    body = run.requests[0].body
    # The request shapes the fake must take as the API does (see tests/fakes).
    assert body["thinking"] == {"type": "adaptive"}
    assert "context_management" in body and "output_config" in body
    assert "system" in [message["role"] for message in body["messages"]]
    assert run.transcript.parent.parent == run.projects
