"""The real Claude Code CLI through `ectx gateway` to tests/fakes, against the same script sent
directly: each session completes, the gateway's upstream bill is smaller, and every id the
model asks for hydrates without Claude Code ever seeing the hydration tool.

The script (SESSION_TURNS) is one `claude -p` session: reads of three large files, a range
re-read, an edit and a re-read after it, a long Bash output, a sub-agent (Agent) that reads
a file itself, and a turn that asks for the last id a placeholder or reference carries.
Claude Code runs every tool itself; only the model is scripted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.cache_sim import usage_from_dict

from tests.claude_code import ClaudeCode, ClaudeCodeRun
from tests.fakes.messages_api import RecordedRequest, Reply, ToolCall
from tests.gateway_harness import GatewayThread, gateway_front, referenced_ids

pytestmark = pytest.mark.e2e

TOOLS = ("Read", "Edit", "Bash", "Agent")


def big_file(name: str, lines: int = 600) -> str:
    return "\n".join(
        f"def {name}_{i}(value):\n    return value * {i} + len('{name}')  # step {i}"
        for i in range(lines // 2)
    )


def use(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": [{"name": name, "input": tool_input}]}


def hydrate_or_read(fallback: Path) -> Callable[[RecordedRequest], Reply]:
    """Ask for the last id the request carries; with none (sent directly), read a file."""

    def turn(request: RecordedRequest) -> Reply:
        ids = referenced_ids(request)
        if ids:
            return Reply(tool_calls=(ToolCall("read_session_file", {"id": ids[-1]}),))
        return Reply(tool_calls=(ToolCall("Read", {"file_path": str(fallback)}),))

    return turn


def session_turns(workspace: Path) -> list[Any]:
    a, b, c = (workspace / f"{n}.py" for n in "abc")
    for path in (a, b, c):
        path.write_text(big_file(path.stem) + "\n", encoding="utf-8")
    return [
        use("Read", file_path=str(a)),
        use("Read", file_path=str(b)),
        use("Read", file_path=str(c)),
        use("Read", file_path=str(a), offset=1, limit=40),  # a range of what it already saw
        use("Edit", file_path=str(a), old_string="return value * 7 +", new_string="return 7 *"),
        use("Read", file_path=str(a)),  # re-read after the edit
        use("Bash", command="seq 1 3000", description="Print numbers"),
        use("Read", file_path=str(b), offset=100, limit=60),
        use(
            "Agent",
            description="Survey b",
            prompt=f"Summarize {b}",
            subagent_type="general-purpose",
        ),
        use("Read", file_path=str(b)),  # the sub-agent's own read
        "b.py is a table of multipliers.",  # the sub-agent's report
        use("Read", file_path=str(c), offset=1, limit=30),
        hydrate_or_read(c),
        "Done: a.py edited; b and c are tables.",
    ]


def billed(run: ClaudeCodeRun) -> float:
    """What the upstream billed for the run's input (base-token equivalents)."""
    return sum(usage_from_dict(r.usage).billed_input for r in run.requests if r.usage)


def test_claude_code_through_the_gateway_completes_cheaper_and_hydrates(
    claude_code: ClaudeCode, tmp_path: Path
) -> None:
    script = session_turns(claude_code.workspace)
    direct = claude_code.run("Survey this workspace.", script, allowed_tools=TOOLS)
    assert direct.returncode == 0, direct.stderr
    session_turns(claude_code.workspace)  # the files as they were before the edit
    started: list[GatewayThread] = []
    through = claude_code.run(
        "Survey this workspace.",
        session_turns(claude_code.workspace),
        allowed_tools=TOOLS,
        front=gateway_front(tmp_path / "gateway", started),
    )
    assert through.returncode == 0, through.stderr
    assert through.stdout.strip() == "Done: a.py edited; b and c are tables."
    assert all(r.status == 200 for r in through.requests)

    # the model asked for an id and got its content; Claude Code never saw that tool
    hydrations = [
        (i, b)
        for i, r in enumerate(through.requests)
        for m in r.body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("name") == "read_session_file"
    ]
    assert hydrations
    transcript = through.transcript.read_text(encoding="utf-8")
    assert "read_session_file" not in transcript
    status = started[0].status()
    assert status["total"]["hydrations"] >= 1
    assert status["total"]["hydration_errors"] == 0
    assert status["total"]["passthrough"] == 0

    sent, own = billed(through), billed(direct)
    assert sent < own, f"through the gateway {sent:.0f} >= direct {own:.0f}"
    assert status["total"]["billed_input_sent"] == pytest.approx(sent, rel=0.01)
