"""The replay's `ours` and `ectx gateway` put the same messages into the engine alike.

Both go through replay/feed.py: the same session as a transcript (the replay) and as one
request (the gateway, no HTTP: `GatewayCore.prepare`) must leave the engine the same thread,
block for block: role, type, tokens, kind, and what a tool result's content list holds. The
gateway's blocks carry the client's images; the replay's a stand-in of the same size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.context.thread import Thread
from ephemeral_context.gateway import GatewayCore
from ephemeral_context.gateway.core import Plan
from ephemeral_context.replay.ours import OursLayout
from ephemeral_context.replay.reader import read_session
from ephemeral_context.store import Store

from tests.claude_code import cat_n
from tests.unit.context.test_media import image
from tests.unit.replay.builder import Transcript, text, tool_use

APP = "\n".join(f"def f{i}(x):\n    return x * {i}" for i in range(100))
READ = {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}


def _shape(thread: Thread) -> list[tuple[Any, ...]]:
    return [
        (tb.role, tb.block.get("type"), tb.tokens, tb.kind, tb.evicted, _items(tb.block))
        for tb in thread
    ]


def _items(block: dict[str, Any]) -> list[str] | None:
    content = block.get("content")
    return [c["type"] for c in content] if isinstance(content, list) else None


def test_images_enter_the_engine_alike_from_a_transcript_and_from_a_request(
    tmp_path: Path,
) -> None:
    pasted, shot = image(), image(300, 200)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "What do these show?"}, pasted]},
        {"role": "assistant", "content": [tool_use("toolu_1", "Read", file_path="/w/shot.png")]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [shot]}],
        },
        {"role": "assistant", "content": [tool_use("toolu_2", "Read", file_path="/w/app.py")]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": cat_n(APP)}],
        },
    ]
    t = Transcript()
    for message in messages:
        if message["role"] == "user":
            t.user(message["content"])
        else:
            t.assistant(message["content"])
    t.assistant([text("a form and an app")])
    session = read_session(t.write(tmp_path / "s.jsonl"))
    layout = OursLayout(session)
    try:
        for call in session.calls:
            layout.prompt(call)
        (replayed,) = layout.engine.conversations()
        replay_thread = _shape(layout.engine.conversation(replayed).thread)
    finally:
        layout.close()

    store = Store(tmp_path / "store")
    try:
        core = GatewayCore(ContextEngine(store))
        client = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": [READ]}
        plan = core.prepare({**client, "system": "x", "messages": messages}, {})
        assert isinstance(plan, Plan), plan
        assert _shape(core.engine.conversation(plan.thread.conv).thread) == replay_thread
        sent = plan.body["messages"]
        assert sent[0]["content"][1] == pasted
        assert sent[2]["content"][0]["content"] == [shot]
    finally:
        store.close()
    assert [row[1] for row in replay_thread] == [
        "text", "image", "tool_use", "tool_result", "tool_use", "tool_result"
    ]  # fmt: skip
    assert replay_thread[3][-1] == ["image"]
