"""`ectx gateway`: the latency it adds per request, and what goes upstream through it.

Latency: one scripted coding session (a model that reads this project's own modules, 40
calls, every third a re-read; Claude Code's shape: 24 tools named as Claude Code names its
own, the model reading through `Read`, three system blocks, a breakpoint on the last message
block) played twice in step, by the anthropic SDK streaming each
request once straight to a local Messages API (tests/fakes) and once through the gateway to
a second one, so both see the same load; per request, the time to the final message. The
fake answers at once, so the difference is the gateway's own cost: the engine's bookkeeping,
a second HTTP hop, the re-framed stream. Three sessions, a fresh gateway each.

Billed input: what the fake's cache model billed (base-token equivalents, from the usage it
returned) through the gateway against direct, for that SDK session and for the scripted
Claude Code session of the e2e test (tests/gateway_harness.py `claude_code_session`) run by
the real CLI, when it is installed.

The tool names matter to the bill: the engine takes a tool result for a file read only when
its tool is Claude Code's `Read` (replay/reader.py), so a re-read of an unchanged file
becomes a reference and puts the gateway ahead of its twin, which pays for the warm cuts
(docs/cost-model.md, "Do no harm"). Tools named Tool0..Tool23, as here until 2026-12-02, made
every re-read plain tool output: nothing was deduplicated, the conversation stayed level
with its 5-minute twins and its warm cuts waited (0.97x direct, 0.52x with `Read`).
Claude Code 2.1.332 sends a whole-file re-read of an unchanged file in full (run against
tests/fakes), as the bench's client does.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic

from tests.claude_code import ClaudeCode, cat_n, claude_code_binary
from tests.fakes.messages_api import FakeMessagesAPI
from tests.gateway_harness import (
    SESSION_PROMPT,
    SESSION_TOOLS,
    GatewayThread,
    billed,
    claude_code_session,
    gateway_front,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "server" / "ephemeral_context"
MODEL = "claude-sonnet-4-6"
CALLS = 40
SESSIONS = 3
TOOL_NAMES = (
    "Agent", "AskUserQuestion", "Bash", "BashOutput", "Edit", "EnterPlanMode", "ExitPlanMode",
    "Glob", "Grep", "KillShell", "MultiEdit", "NotebookEdit", "Read", "SendMessage", "Skill",
    "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TodoWrite", "ToolSearch", "WebFetch",
    "WebSearch", "Write",
)  # fmt: skip
"""24 of Claude Code's tool names (replay/tools.py KNOWN_TOOLS), sorted as it sends them."""
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool. " + "It does one thing and says what it did. " * 50,
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
    for name in TOOL_NAMES
]
SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: bench"},
    {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Work carefully. " * 1500, "cache_control": {"type": "ephemeral"}},
]


def _files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if 4_000 < p.stat().st_size < 30_000)[:12]


def _script(files: list[Path]) -> list[Any]:
    turns: list[Any] = []
    for n in range(CALLS - 1):
        path = files[(n // 3) % len(files)] if n % 3 == 2 else files[n % len(files)]
        turns.append({"tool_use": [{"name": "Read", "input": {"file_path": str(path)}}]})
    return [*turns, "done"]


class _Session:
    """One side of the session: its client, its messages, the times of its requests."""

    def __init__(self, base_url: str) -> None:
        self.client = anthropic.Anthropic(api_key="sk-ant-bench-0000", base_url=base_url)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the code."}]
        self.times: list[float] = []

    def step(self) -> None:
        body = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS}
        start = time.perf_counter()
        with self.client.messages.stream(**body, messages=_marked(self.messages)) as stream:  # type: ignore[arg-type]
            message = stream.get_final_message()
        self.times.append(time.perf_counter() - start)
        content = [b.model_dump(exclude_none=True) for b in message.content]
        self.messages.append({"role": "assistant", "content": content})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b["id"],
                "content": cat_n(Path(b["input"]["file_path"]).read_text(encoding="utf-8")),
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        if results:
            self.messages.append({"role": "user", "content": results})


def _marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a breakpoint on the last block, as Claude Code sends them."""
    *head, last = messages
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    *rest, final = blocks
    marked = [*rest, {**final, "cache_control": {"type": "ephemeral"}}]
    return [*head, {**last, "content": marked}]


def _percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def _sdk_sessions(scratch: Path) -> tuple[list[float], list[float], float, float]:
    files = _files()
    direct_times: list[float] = []
    gateway_times: list[float] = []
    direct_billed = gateway_billed = 0.0
    for n in range(SESSIONS):
        with (
            FakeMessagesAPI(_script(files)) as straight,
            FakeMessagesAPI(_script(files)) as behind,
            GatewayThread(behind.base_url, scratch / f"store-{n}") as gateway,
        ):
            direct, through = _Session(straight.base_url), _Session(gateway.base_url)
            for _ in range(CALLS):
                direct.step()
                through.step()
            direct_times += direct.times
            gateway_times += through.times
            direct_billed += billed(straight.message_requests)
            gateway_billed += billed(behind.message_requests)
    return direct_times, gateway_times, direct_billed, gateway_billed


def _claude_code(scratch: Path) -> str:
    binary = claude_code_binary()
    if binary is None:
        return "Claude Code session: skipped (the CLI is not installed: `make e2e-deps`)."
    runner = ClaudeCode(binary, scratch / "claude-code")
    direct = runner.run(
        SESSION_PROMPT, claude_code_session(runner.workspace), allowed_tools=SESSION_TOOLS
    )
    started: list[GatewayThread] = []
    through = runner.run(
        SESSION_PROMPT,
        claude_code_session(runner.workspace),
        allowed_tools=SESSION_TOOLS,
        front=gateway_front(scratch / "gateway", started),
    )
    if direct.returncode or through.returncode:
        return f"Claude Code session: failed ({direct.stderr[-200:]} {through.stderr[-200:]})"
    own, sent = billed(direct.requests), billed(through.requests)
    hydrations = started[0].status()["total"]["hydrations"]
    return (
        f"| Claude Code 2.1 CLI, scripted session ({len(direct.requests)} calls direct, "
        f"{len(through.requests)} through, {hydrations} hydrated) | {own:,.0f} | {sent:,.0f} "
        f"| {sent / own:.2f} |"
    )


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="ectx-bench-gateway-") as tmp:
        scratch = Path(tmp)
        direct, through, own, sent = _sdk_sessions(scratch)
        added = [g - d for d, g in zip(direct, through, strict=True)]
        claude_code = _claude_code(scratch)
    ms = 1000.0
    lines = [
        f"Latency per streamed request, {len(direct)} requests each way "
        f"({SESSIONS} sessions of {CALLS} calls, a fresh gateway per session):",
        "",
        "| | p50 ms | p99 ms |",
        "|---|---:|---:|",
        f"| direct to the fake | {_percentile(direct, 50) * ms:.1f} "
        f"| {_percentile(direct, 99) * ms:.1f} |",
        f"| through the gateway | {_percentile(through, 50) * ms:.1f} "
        f"| {_percentile(through, 99) * ms:.1f} |",
        f"| added by the gateway (per pair) | {_percentile(added, 50) * ms:.1f} "
        f"| {_percentile(added, 99) * ms:.1f} |",
        "",
        "Billed input upstream (base-token equivalents, the fake's cache model):",
        "",
        "| session | direct | through the gateway | ratio |",
        "|---|---:|---:|---:|",
        f"| SDK, {SESSIONS} x {CALLS} calls reading this package's modules | {own:,.0f} "
        f"| {sent:,.0f} | {sent / own:.2f} |",
        claude_code,
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
