"""The real Claude Code CLI through `ectx gateway` to tests/fakes, against the same script sent
directly: each session completes, the gateway's upstream bill is smaller, and every id the
model asks for hydrates without Claude Code ever seeing the call (its own Read at a path
of the engine's, context/fetching.py).

The script (tests/gateway_harness.py `claude_code_session`, also `make bench`'s) is one
`claude -p` session: reads of three large files, range re-reads, an edit and a re-read after
it, a long Bash output, a sub-agent (Agent) that reads a file itself, and a turn that asks
for the last id a placeholder or reference carries. Claude Code runs every tool itself; only
the model is scripted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ephemeral_context.context.fetching import CLIENT_READ, FETCH_ROOT

from tests.claude_code import ClaudeCode
from tests.gateway_harness import (
    SESSION_ANSWER,
    SESSION_PROMPT,
    SESSION_TOOLS,
    GatewayThread,
    billed,
    claude_code_session,
    gateway_front,
)

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "env", [{}, {"ENABLE_PROMPT_CACHING_1H": "1"}], ids=["5m-cache", "1h-cache"]
)
def test_claude_code_through_the_gateway_completes_cheaper_and_hydrates(
    claude_code: ClaudeCode, tmp_path: Path, env: dict[str, str]
) -> None:
    script = claude_code_session(claude_code.workspace)
    direct = claude_code.run(SESSION_PROMPT, script, allowed_tools=SESSION_TOOLS, env=env)
    assert direct.returncode == 0, direct.stderr
    started: list[GatewayThread] = []
    through = claude_code.run(
        SESSION_PROMPT,
        claude_code_session(claude_code.workspace),  # the files as they were before the edit
        allowed_tools=SESSION_TOOLS,
        env=env,
        front=gateway_front(tmp_path / "gateway", started),
    )
    assert through.returncode == 0, through.stderr
    assert through.stdout.strip() == SESSION_ANSWER
    assert all(r.status == 200 for r in through.requests)
    if env:  # Claude Code asked for 1-hour writes, and they went upstream as valid breakpoints
        assert any('"ttl": "1h"' in json.dumps(r.body) for r in through.requests)

    # the model asked for an id and got its content; Claude Code never saw that call, and
    # its tools went upstream as it sent them
    hydrations = [
        (i, b)
        for i, r in enumerate(through.requests)
        for m in r.body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if CLIENT_READ.asks(b)
    ]
    assert hydrations
    transcript = through.transcript.read_text(encoding="utf-8")
    assert FETCH_ROOT not in transcript
    assert [r.body["tools"] for r in through.requests[:1]] == [direct.requests[0].body["tools"]]
    status = started[0].status()
    assert status["total"]["hydrations"] >= 1
    assert status["total"]["hydration_errors"] == 0
    # each went into the engine as a round trip, which its recorded-style twin never pays for
    assert started[0].core.engine.status().rehydrations == status["total"]["hydrations"]
    assert status["total"]["passthrough"] == 0
    # one conversation for the session, one for the sub-agent: the answer merged over the
    # hydration round came back and continued its conversation instead of forking it
    assert len(started[0].core.engine.conversations()) == 2

    sent, own = billed(through.requests), billed(direct.requests)
    assert sent < own, f"through the gateway {sent:.0f} >= direct {own:.0f}"
    assert status["total"]["billed_input_sent"] == pytest.approx(sent, rel=0.01)
