"""What the tests that script a model conversation share (tests/unit/model, tests/lsp).

A workspace file big enough for the prompt cache to apply, a secret for the secret filter
to withhold, scripted turns that read a file, delegate a task or hydrate the id a
sub-agent's brief carried, and the tool results a recorded request carried.
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.messages_api import RecordedRequest, Reply, ToolCall

REF = re.compile(r"\[\[file:([0-9a-f]+)\]\]")

PRIVATE_KEY = "-----BEGIN " + "EC PRIVATE KEY-----\nMHcCAQEEIBLAH\n-----END EC PRIVATE KEY-----\n"
"""Built by concatenation so this file itself does not look like it holds a secret."""


def big_module() -> str:
    """A Python file large enough (> 1024 tokens with the prefix) for the prompt cache."""
    parts = ["import math\n\n\ndef target():\n    return 'old'\n"]
    parts += [f"\n\ndef helper_{n}(x):\n    return math.sqrt(x) + {n}\n" for n in range(120)]
    return "".join(parts)


def read_file_turn(path: str) -> dict[str, Any]:
    """A scripted model turn that calls the read_file tool on `path`."""
    return {"tool_use": [{"name": "read_file", "input": {"path": path}}]}


def delegate_turn(task: str) -> dict[str, Any]:
    """A scripted model turn that hands `task` to a sub-agent."""
    return {"tool_use": [{"name": "delegate", "input": {"task": task}}]}


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def hydrate_the_reference(request: RecordedRequest) -> Reply:
    """A sub-agent's first turn: read_session_file on the first id its brief carried."""
    ids = REF.findall(first_user_text(request.body))
    return Reply(tool_calls=(ToolCall("read_session_file", {"id": ids[0]}),))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a Messages API request body, oldest first."""
    return [
        block
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
