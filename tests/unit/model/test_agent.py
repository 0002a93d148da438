"""The agent loop end to end: real SDK, real HTTP to the local Messages API, real engine,
store, document mirror and files. The fake computes usage with cache_sim, so cache reads
in the recorded usage are what the documented cache rules give for what we sent."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.documents import Document, DocumentMirror, TextEdit, path_to_uri
from ephemeral_context.model.agent import AgentEvents
from ephemeral_context.model.client import ClientSettings, ModelClient, ModelError
from ephemeral_context.model.edits import EditOutcome, plan_edit
from ephemeral_context.model.secrets import Workspace
from ephemeral_context.model.tools import SkillFolder, ToolEnv
from ephemeral_context.store import Store

from tests.fakes.conversation import PRIVATE_KEY, big_module, read_file_turn, tool_results
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    Raw,
    RecordedRequest,
    message_start,
    overloaded,
    sse,
    unknown_model,
)
from tests.unit.model.agent_session import MODEL, Session
from tests.unit.model.test_client import HALF, TEXT_START


@pytest.fixture
async def session(tmp_path: Path, api: FakeMessagesAPI) -> AsyncIterator[Session]:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(big_module())
    (root / ".env").write_text("DB_PASSWORD=correct-horse\n")
    (root / "keys.py").write_text("KEY = '''\n" + PRIVATE_KEY + "'''\n")
    skills = tmp_path / "skills"
    (skills / "review").mkdir(parents=True)
    (skills / "review" / "SKILL.md").write_text(
        "---\nname: review\ndescription: review checklist\nephemeral: true\n---\n"
        "Check tests first.\n"
        + "".join(f"{n}. Read the diff for step {n} and say what it breaks.\n" for n in range(8))
    )
    memory = tmp_path / "data" / "memories"
    with Store(tmp_path / "store") as store:
        client = ModelClient(ClientSettings(api_key="sk-ant-test-key", base_url=api.base_url))
        env = ToolEnv(
            workspace=Workspace.of([root]),
            mirror=DocumentMirror(),
            skills=SkillFolder(skills),
            memory_root=memory,
        )
        engine = ContextEngine(store)
        env.mirror.subscribe(engine.note_document_change)
        yield Session(root, api, engine, client, env)
        await client.close()


def breakpoints(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


async def test_read_twice_edit_read_again(session: Session) -> None:
    original = (session.root / "src" / "app.py").read_text()
    edit = {"path": "src/app.py", "old_string": "return 'old'", "new_string": "return 'new'"}
    session.api.add_turns(
        read_file_turn("src/app.py"),
        read_file_turn("src/app.py"),
        {"text": "Changing it.", "tool_use": [{"name": "edit_file", "input": edit}]},
        read_file_turn("src/app.py"),
        "Done: target() now returns 'new'.",
    )
    streamed: list[str] = []
    result = await session.ask(
        "Make target return 'new'", events=AgentEvents(on_text=streamed.append)
    )
    assert result.stop_reason == "end_turn"
    assert result.calls == 5
    assert result.text == "Done: target() now returns 'new'."
    assert "".join(streamed) == "Changing it.Done: target() now returns 'new'."
    # the default applier wrote the edit to disk
    assert (session.root / "src" / "app.py").read_text() == original.replace("'old'", "'new'")
    assert [(e.applied, e.uri is not None) for e in result.edits] == [(True, True)]

    bodies = await session.bodies(5)
    last = json.dumps(bodies[-1])
    # the file's content went to the model exactly once, in the first read's result
    assert last.count(json.dumps(original)[1:-1]) == 1
    results = tool_results(bodies[-1])
    assert results[0]["content"] == original
    assert "unchanged since [[file:" in results[1]["content"]
    assert results[2]["content"] == "src/app.py: edited"
    assert "unchanged since [[file:" in results[3]["content"]
    # the edited version was never sent as a whole: the model's own edit carries it
    assert json.dumps(original.replace("'old'", "'new'"))[1:-1] not in last
    # at most four breakpoints per request, and the later calls read from the cache
    assert all(breakpoints(body) <= 4 for body in bodies)
    recorded = [r.usage for r in session.api.message_requests]
    usage = [u for u in recorded if u is not None]
    assert len(usage) == len(recorded)  # every request has its usage
    assert usage[0]["cache_read_input_tokens"] == 0
    assert all(u["cache_read_input_tokens"] > 0 for u in usage[2:])
    assert result.usage["cache_read_input_tokens"] == sum(
        u["cache_read_input_tokens"] for u in usage
    )
    status = session.engine.status("c-1")
    assert status.cache_hit_rate > 0.5
    assert status.last_call is not None


async def test_secrets_are_withheld_and_never_sent(session: Session) -> None:
    session.api.add_turns(
        {
            "tool_use": [
                {"name": "read_file", "input": {"path": ".env"}},
                {"name": "read_file", "input": {"path": "keys.py"}},
                {"name": "search", "input": {"pattern": "PASSWORD|PRIVATE"}},
            ]
        },
        "I cannot read those files.",
    )
    seen: list[tuple[str, str, bool]] = []
    result = await session.ask(
        "Show me the secrets",
        events=AgentEvents(on_tool_result=lambda n, t, e: seen.append((n, t, e))),
    )
    assert result.stop_reason == "end_turn"
    body = json.dumps((await session.bodies(2))[1])
    assert "correct-horse" not in body
    assert "MHcCAQEEIBLAH" not in body
    results = tool_results((await session.bodies(2))[1])
    assert results[0]["is_error"] is True and "secret pattern '.env'" in results[0]["content"]
    assert results[1]["is_error"] is True and "private-key block" in results[1]["content"]
    assert (
        "keys.py: [withheld: keys.py contains what looks like a private-key block"
        in (results[2]["content"])
    )
    assert [error for _, _, error in seen] == [True, True, False]


async def test_path_escapes_are_refused(session: Session, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("top secret outside\n")
    (session.root / "link.txt").symlink_to(tmp_path / "outside.txt")
    session.api.add_turns(
        {
            "tool_use": [
                {"name": "read_file", "input": {"path": "../outside.txt"}},
                {"name": "read_file", "input": {"path": "link.txt"}},
                {
                    "name": "edit_file",
                    "input": {"path": "link.txt", "old_string": "top", "new_string": "x"},
                },
            ]
        },
        "Refused.",
    )
    await session.ask("Read outside")
    body = (await session.bodies(2))[1]
    assert "top secret outside" not in json.dumps(body)
    assert all(
        r["is_error"] and "outside the workspace" in r["content"] for r in tool_results(body)
    )
    assert (tmp_path / "outside.txt").read_text() == "top secret outside\n"


async def test_skills_and_memory_go_through_the_ledger(session: Session) -> None:
    notes = "".join(f"- note {n}: the build uses make, tests use pytest\n" for n in range(40))
    session.api.add_turns(
        {
            "tool_use": [
                {"name": "invoke_skill", "input": {"name": "review"}},
                {
                    "name": "memory",
                    "input": {"command": "create", "path": "/memories/n.md", "file_text": notes},
                },
                {"name": "memory", "input": {"command": "view", "path": "/memories/n.md"}},
            ]
        },
        "Noted.",
    )
    result = await session.ask("Review and remember")
    assert result.stop_reason == "end_turn"
    assert session.env.memory_root is not None
    assert (session.env.memory_root / "n.md").read_text() == notes
    kinds = [item.kind for item in session.engine.items()]
    assert kinds.count("skill") == 1 and kinds.count("memory") == 1  # evictable items
    request = (await session.bodies(1))[0]
    names = [tool["name"] for tool in request["tools"]]
    assert "invoke_skill" in names and "memory" in names


async def test_retries_inside_the_loop_are_counted(session: Session) -> None:
    session.api.add_turns(overloaded(0.0), overloaded(0.0, mid_stream=True), "ok")
    result = await session.ask("hi")
    assert result.text == "ok"
    assert result.retries == 2
    assert result.calls == 1


async def test_model_errors_surface_and_the_next_ask_works(session: Session) -> None:
    session.api.add_turns(unknown_model(MODEL))
    with pytest.raises(ModelError) as caught:
        await session.ask("hi")
    assert caught.value.kind == "unknown_model"
    session.api.add_turns("second try")
    result = await session.ask("again")
    assert result.text == "second try"


async def test_a_half_answer_is_never_recorded_and_the_next_ask_keeps_both_prompts(
    session: Session,
) -> None:
    """Every attempt a stream cut before its message_stop: the ask fails, the engine holds
    the prompt and nothing of the half answer."""
    half = Raw(sse(message_start(), TEXT_START, HALF), content_type="text/event-stream")
    session.api.add_turns(*[half] * 5)
    with pytest.raises(ModelError):
        await session.ask("first prompt")
    session.api.add_turns("second try")
    assert (await session.ask("second prompt")).text == "second try"
    sent = json.dumps((await session.bodies(6))[5]["messages"])
    assert "first prompt" in sent and "second prompt" in sent and "Half" not in sent


async def test_refusal_ends_the_loop(session: Session) -> None:
    session.api.add_turns({"refusal": ""})
    result = await session.ask("something bad")
    assert result.stop_reason == "refusal"
    assert "declined" in result.text


async def test_a_cut_off_tool_call_is_answered_and_the_loop_goes_on(session: Session) -> None:
    session.api.add_turns({**read_file_turn("src/app.py"), "stop_reason": "max_tokens"}, "ok")
    result = await session.ask("read it")
    assert result.text == "ok" and result.calls == 2
    results = tool_results((await session.bodies(2))[1])
    assert results[0]["is_error"] is True and "max_tokens" in results[0]["content"]


async def test_max_steps_bounds_the_loop(session: Session) -> None:
    session.api.add_turns(*[read_file_turn("src/app.py")] * 3)
    result = await session.ask("loop forever", max_steps=3)
    assert result.stop_reason == "max_steps"
    assert result.calls == 3
    assert session.api.remaining_turns == 0


async def test_cancel_mid_stream(session: Session) -> None:
    long_answer = "word " * 40_000
    session.api.add_turns(long_answer)
    cancel = asyncio.Event()
    pieces: list[str] = []

    def on_text(text: str) -> None:
        pieces.append(text)
        if len(pieces) == 3:
            cancel.set()

    result = await session.ask("talk", events=AgentEvents(on_text=on_text), cancel=cancel)
    assert result.stop_reason == "cancelled"
    assert 3 <= len("".join(pieces)) < len(long_answer)
    # the conversation stays usable
    session.api.add_turns("short")
    assert (await session.ask("again")).text == "short"


async def test_cancel_while_waiting_and_between_tools(session: Session) -> None:
    started, release = threading.Event(), threading.Event()

    def hold(_: RecordedRequest) -> str:
        started.set()
        release.wait(10)
        return "late"

    session.api.add_turns(hold)
    cancel = asyncio.Event()
    task = asyncio.create_task(session.ask("wait", cancel=cancel))
    try:
        await asyncio.to_thread(started.wait, 10)
        cancel.set()
        result = await task
    finally:
        release.set()
    assert result.stop_reason == "cancelled"
    assert result.calls == 0


async def test_task_cancel_during_tools_keeps_the_thread_valid(session: Session) -> None:
    class SlowApplier:
        def __init__(self) -> None:
            self.entered = asyncio.Event()

        async def apply(self, path: Path, old: str, new: str) -> Any:
            self.entered.set()
            await asyncio.Event().wait()

    applier = SlowApplier()
    session.env.applier = applier
    edit = {"path": "src/app.py", "old_string": "'old'", "new_string": "'new'"}
    session.api.add_turns(
        {
            "tool_use": [
                {"name": "edit_file", "input": edit},
                {"name": "outline", "input": {"path": "src/app.py"}},
            ]
        }
    )
    task = asyncio.create_task(session.ask("edit"))
    await applier.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    session.api.add_turns("fine")
    assert (await session.ask("next")).text == "fine"
    body = (await session.bodies(2))[1]
    results = tool_results(body)
    assert len(results) == 2 and all("cancelled" in r["content"] for r in results)


class BufferApplier:
    """What the editor does with applyEdit: the open buffer changes and comes back to the
    mirror as a didChange (lsp/apply_edit.py waits for exactly that echo)."""

    def __init__(self, mirror: DocumentMirror) -> None:
        self.mirror = mirror

    async def apply(self, path: Path, old: str, new: str) -> EditOutcome:
        uri = path_to_uri(path)
        doc = self.mirror.get(uri)
        assert isinstance(doc, Document)
        plan = plan_edit(doc.text, old, new)
        self.mirror.change(uri, doc.version + 1, [TextEdit(None, plan.new_text)])
        return EditOutcome(True, "edited in the editor", plan.new_text)


async def test_own_edit_in_the_editor_is_not_an_outside_change(session: Session) -> None:
    app = session.root / "src" / "app.py"
    session.env.mirror.open(path_to_uri(app), "python", 1, app.read_text())
    session.env.applier = BufferApplier(session.env.mirror)
    edit = {"path": "src/app.py", "old_string": "return 'old'", "new_string": "return 'new'"}
    session.api.add_turns(
        read_file_turn("src/app.py"),
        {"tool_use": [{"name": "edit_file", "input": edit}]},
        "done",
        "ok",
    )
    await session.ask("edit it")
    await session.ask("anything else?")
    last = json.dumps((await session.bodies(4))[3])
    assert "changed outside this conversation" not in last
    # a real outside change (the user types in the buffer) still gets its note
    doc = session.env.mirror.get(path_to_uri(app))
    assert isinstance(doc, Document)
    session.env.mirror.change(doc.uri, doc.version + 1, [TextEdit(None, doc.text + "# typed\n")])
    session.api.add_turns("seen")
    await session.ask("and now?")
    assert "changed outside this conversation" in json.dumps((await session.bodies(5))[4])


async def test_a_memory_larger_than_the_budget_goes_in_cut_and_is_read_on_by_id(
    session: Session,
) -> None:
    """A 300,000-character memory file viewed under a 20,000-token budget: its result went
    whole into the next request (about 90,000 tokens); it goes cut at a line, with a note
    naming its id and the character where the rest starts."""
    assert session.env.memory_root is not None
    session.env.memory_root.mkdir(parents=True)
    log = "".join(f"- step {n}: the nightly build passed on the third retry\n" for n in range(5500))
    (session.env.memory_root / "log.md").write_text(log)
    session.engine.config = EngineConfig(context_budget=20_000)
    view = {"command": "view", "path": "/memories/log.md"}
    session.api.add_turns({"tool_use": [{"name": "memory", "input": view}]}, "Read it.")
    result = await session.ask("What does the log say?")
    assert result.stop_reason == "end_turn"
    second = (await session.bodies(2))[1]
    (sent,) = [
        block["content"]
        for block in second["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(json.dumps(second)) < 100_000
    found = re.search(r"\[\[\w+:(\w+)\]\] cut here: .* from character (\d+) ", sent)
    assert found is not None, sent[-300:]
    whole = session.engine.read_session_file(found[1]).text
    head, offset = sent[: found.start()], int(found[2])
    assert len(head) == offset and whole.startswith(head) and head.endswith("\n")
    assert "- step 5499: " in whole[offset:]


async def test_an_edit_after_an_outside_change_leaves_that_change_to_be_read(
    session: Session,
) -> None:
    """The user changes a file the model has read; the model's edit lands on the changed
    file; a later read must show the user's change, which the model never saw."""
    app = session.root / "src" / "app.py"
    edit = {"path": "src/app.py", "old_string": "return 'old'", "new_string": "return 'new'"}

    def user_types_then_edit(_: RecordedRequest) -> dict[str, Any]:
        app.write_text("USER_LINE = 1\n" + app.read_text())
        return {"tool_use": [{"name": "edit_file", "input": edit}]}

    session.api.add_turns(
        read_file_turn("src/app.py"), user_types_then_edit, read_file_turn("src/app.py"), "done"
    )
    await session.ask("edit it")
    assert app.read_text().startswith("USER_LINE = 1\n") and "return 'new'" in app.read_text()
    reread = tool_results((await session.bodies(4))[3])[2]["content"]
    assert "USER_LINE" in reread


async def test_a_call_too_long_for_any_response_is_told_to_come_in_parts(session: Session) -> None:
    """A response that is one edit_file call cut by max_tokens: 'with less output before
    it' cannot help (there was none), and the model made the same call until max_steps."""
    tool = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_big", "name": "edit_file", "input": {}},
    }
    part = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"path": "big.py", "new_str'},
    }
    cut = {
        "type": "message_delta",
        "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
        "usage": {"output_tokens": 8192},
    }
    stop = {"type": "content_block_stop", "index": 0}
    stream = sse(message_start(), tool, part, stop, cut, {"type": "message_stop"})
    session.api.add_turns(Raw(stream, content_type="text/event-stream"), "ok")
    result = await session.ask("write big.py")
    assert result.text == "ok"
    body = (await session.bodies(2))[1]
    told = tool_results(body)[0]
    assert told["is_error"] is True
    assert f"(max_tokens: {body['max_tokens']})" in told["content"]
    assert "smaller parts" in told["content"]
