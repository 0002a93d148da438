"""Sub-agents (`delegate`): the brief carries ids, never pasted content.

End to end with the real SDK over HTTP to the local Messages API (tests/fakes), the real
engine, store, mirror and files. The sub-agent's turns are functions of the request they
answer, so the id it hydrates is the one its request actually carried.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model.agent import (
    AgentEvents,
    SubagentEvent,
)
from ephemeral_context.model.client import ClientSettings, ModelClient
from ephemeral_context.model.delegation import (
    SUBAGENT_SYSTEM,
    SUBAGENT_TOOLS,
    SeenFile,
    brief,
    reference_pasted,
    synopsis_line,
)
from ephemeral_context.model.secrets import Workspace
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store

from tests.fakes.conversation import (
    big_module,
    delegate_turn,
    first_user_text,
    hydrate_the_reference,
    read_file_turn,
    tool_results,
)
from tests.fakes.messages_api import FakeMessagesAPI, RecordedRequest, Reply, refused
from tests.unit.model.agent_session import Session

# -- the pure parts ------------------------------------------------------------------------


def numbered(n: int) -> str:
    return "".join(f"line {i} = compute({i})\n" for i in range(1, n + 1))


def test_a_pasted_chunk_becomes_its_reference_and_the_range_hydrates_it() -> None:
    text = numbered(100)
    seen = [SeenFile("abcd1234", "src/calc.py", text)]
    chunk = "".join(text.splitlines(keepends=True)[39:69])  # lines 40-69
    task = f"Why does this fail?\n{chunk}Thanks."
    replaced, count = reference_pasted(task, seen)
    assert count == 30
    assert "compute(" not in replaced
    assert replaced.startswith("Why does this fail?\n[[file:abcd1234]] src/calc.py lines 40-69")
    assert replaced.endswith(")\nThanks.")
    found = re.search(r"offset=(\d+), limit=(\d+)", replaced)
    assert found is not None
    offset, limit = int(found[1]), int(found[2])
    assert text[offset : offset + limit] == chunk


def test_a_pasted_chunk_is_referenced_by_the_lines_the_editor_shows() -> None:
    """A form feed ends no line in the editor (LSP): the reference names the editor's line
    numbers (it counted str.splitlines', one more for each form feed above)."""
    text = "# page one\f\n" + numbered(100)
    seen = [SeenFile("abcd1234", "src/calc.py", text)]
    chunk = "".join(text.split("\n")[i] + "\n" for i in range(39, 69))  # editor lines 40-69
    replaced, count = reference_pasted(f"Why?\n{chunk}", seen)
    assert count == 30 and "src/calc.py lines 40-69" in replaced


def test_short_chunks_and_unseen_text_stay_as_written() -> None:
    text = numbered(100)
    seen = [SeenFile("abcd1234", "calc.py", text)]
    chunk = "".join(text.splitlines(keepends=True)[:19])
    assert reference_pasted("look:\n" + chunk, seen) == ("look:\n" + chunk, 0)
    other = "".join(f"other {i}\n" for i in range(40))
    assert reference_pasted(other, seen) == (other, 0)
    assert reference_pasted(other, []) == (other, 0)
    with pytest.raises(ValueError, match="min_lines"):
        reference_pasted(other, seen, min_lines=0)


def test_trailing_whitespace_is_ignored_and_the_longest_match_wins() -> None:
    text = numbered(60)
    short = SeenFile("11111111", "a.py", "".join(text.splitlines(keepends=True)[:25]))
    full = SeenFile("22222222", "b.py", text, start_line=101, whole=False)
    pasted = "".join(line.rstrip("\n") + "   \n" for line in text.splitlines(keepends=True))
    replaced, count = reference_pasted(pasted, [short, full])
    assert count == 60
    assert replaced == (
        "[[file:22222222]] b.py lines 101-160 (pasted text replaced by its reference: "
        f"read_session_file('22222222', offset=0, limit={len(text)}))\n"
    )


def test_the_brief_lists_ids_and_synopses_not_content() -> None:
    module = big_module()
    seen = [SeenFile("abcd1234", "src/app.py", module)]
    line = synopsis_line(seen[0])
    assert line.startswith(f"[[file:abcd1234]] src/app.py — {len(module.splitlines())} lines")
    assert "defines target, helper_0," in line and "(+" in line
    first = brief("Find the slowest helper", seen)
    assert "Find the slowest helper" in first and "[[file:abcd1234]]" in first
    assert "math.sqrt" not in first
    assert brief("Just this", []) == "Task from the main agent:\nJust this"


def test_a_components_blocks_are_not_listed_as_its_definitions() -> None:
    component = "<template>\n  <p>hi</p>\n</template>\n\n<script>\nfunction go() {}\n</script>\n"
    line = synopsis_line(SeenFile("abcd1234", "src/Hi.vue", component))
    assert line.endswith("; defines go")


# -- end to end ----------------------------------------------------------------------------


@pytest.fixture
async def session(tmp_path: Path, api: FakeMessagesAPI) -> AsyncIterator[Session]:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(big_module())
    with Store(tmp_path / "store") as store:
        client = ModelClient(ClientSettings(api_key="sk-ant-test-key", base_url=api.base_url))
        engine = ContextEngine(store)
        env = ToolEnv(workspace=Workspace.of([root]), mirror=DocumentMirror(), engine=engine)
        yield Session(root, api, engine, client, env)
        await client.close()


def is_subagent(body: dict[str, Any]) -> bool:
    return SUBAGENT_SYSTEM in json.dumps(body["system"])


async def test_the_sub_agent_gets_ids_hydrates_them_and_its_report_comes_back(
    session: Session,
) -> None:
    module = big_module()
    session.api.add_turns(
        read_file_turn("src/app.py"),
        delegate_turn("Which helper returns the largest value for x=4?"),
        hydrate_the_reference,
        "Sub-agent text: helper_119 (sqrt(4) + 119 = 121).",
        "helper_119 does.",
    )
    heard: list[SubagentEvent] = []
    main_text: list[str] = []
    results: list[tuple[str, str, bool]] = []
    result = await session.ask(
        "Which helper is largest?",
        events=AgentEvents(
            on_text=main_text.append,
            on_subagent=heard.append,
            on_tool_result=lambda *r: results.append(r),
        ),
    )
    assert (result.stop_reason, result.text) == ("end_turn", "helper_119 does.")
    assert (result.calls, result.subagent_calls) == (3, 2)

    recorded = await session.api.wait_for_message_requests(5)
    bodies = [r.body for r in recorded]
    assert [is_subagent(b) for b in bodies] == [False, False, True, True, False]
    parent_tools = [t["name"] for t in bodies[0]["tools"]]
    assert parent_tools[-1] == "delegate" and "edit_file" in parent_tools
    assert {t["name"] for t in bodies[2]["tools"]} == SUBAGENT_TOOLS

    # the file went to the model once (the parent's read); the sub-agent got its id
    read_id = next(iter(session.engine.conversation("c-1").files.values())).item_id
    sub_first = json.dumps(bodies[2])
    assert f"[[file:{read_id}]] src/app.py" in sub_first
    assert "math.sqrt" not in sub_first
    assert len(bodies[2]["messages"]) == 1
    # hydrating the id gave the sub-agent the content
    assert tool_results(bodies[3])[0]["content"] == module
    # the parent received the report as the delegate call's result
    delegated = tool_results(bodies[4])[-1]
    assert delegated["content"] == "Sub-agent text: helper_119 (sqrt(4) + 119 = 121)."
    assert results[-1] == ("delegate", delegated["content"], False)

    # sub-agent events are labelled and never mixed into the main answer
    assert "".join(main_text) == "helper_119 does."
    assert {e.agent for e in heard} == {"c-1/sub-1"}
    kinds = [e.kind for e in heard]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert ("tool_use", "read_session_file") in [(e.kind, e.tool) for e in heard]
    assert "".join(e.text for e in heard if e.kind == "text").startswith("Sub-agent text")
    # the sub-agent's usage is part of the ask's total
    sub_input = sum(r.usage["input_tokens"] for r in recorded[2:4] if r.usage)
    assert result.usage["input_tokens"] == sum(r.usage["input_tokens"] for r in recorded if r.usage)
    assert sub_input > 0


async def test_a_pasted_chunk_reaches_the_sub_agent_as_its_reference(session: Session) -> None:
    module = big_module()
    pasted = "".join(module.splitlines(keepends=True)[10:40])
    session.api.add_turns(
        read_file_turn("src/app.py"),
        delegate_turn(f"Explain these helpers:\n{pasted}Be brief."),
        "They add n to sqrt(x).",
        "Done.",
    )
    result = await session.ask("Explain")
    assert result.text == "Done."
    recorded = await session.api.wait_for_message_requests(4)
    sub_first = first_user_text(recorded[2].body)
    assert "math.sqrt" not in sub_first
    assert "src/app.py lines 11-40 (pasted text replaced by its reference" in sub_first
    assert sub_first.count("[[file:") == 2  # the pasted chunk, then the seen-files list


async def test_the_step_bound_holds_and_the_parent_is_told(session: Session) -> None:
    session.api.add_turns(
        delegate_turn("Search forever"),
        *[{"tool_use": [{"name": "search", "input": {"pattern": "helper_"}}]}] * 3,
        "Gave up on that.",
    )
    result = await session.ask("Go", subagent_steps=3)
    recorded = await session.api.wait_for_message_requests(5)
    assert [is_subagent(r.body) for r in recorded] == [False, True, True, True, False]
    assert result.subagent_calls == 3
    told = tool_results(recorded[4].body)[-1]
    assert told["content"] == "[the sub-agent used all 3 steps before finishing and left no report]"
    assert told["is_error"] is True
    assert session.api.remaining_turns == 0


async def test_the_sub_agent_cannot_edit_or_delegate(session: Session) -> None:
    before = (session.root / "src" / "app.py").read_text()
    edit = {"path": "src/app.py", "old_string": "return 'old'", "new_string": "return 'x'"}
    session.api.add_turns(
        delegate_turn("Change target"),
        {
            "tool_use": [
                {"name": "edit_file", "input": edit},
                {"name": "delegate", "input": {"task": "nest"}},
            ]
        },
        "I could not edit.",
        "Ok.",
    )
    result = await session.ask("Go")
    assert result.text == "Ok."
    assert (session.root / "src" / "app.py").read_text() == before
    recorded = await session.api.wait_for_message_requests(4)
    refused = tool_results(recorded[2].body)
    assert all(r["is_error"] for r in refused)
    assert refused[0]["content"].startswith("edit_file is not available here; available:")
    assert refused[1]["content"].startswith("delegate is not available here")
    assert "delegate" not in [t["name"] for t in recorded[1].body["tools"]]


async def test_no_delegate_tool_when_sub_agents_are_off(session: Session) -> None:
    session.api.add_turns("hi")
    await session.ask("hi", subagent_steps=0)
    recorded = await session.api.wait_for_message_requests(1)
    assert "delegate" not in [t["name"] for t in recorded[0].body["tools"]]


async def test_a_bad_task_is_an_error_result(session: Session) -> None:
    session.api.add_turns({"tool_use": [{"name": "delegate", "input": {"task": " "}}]}, "ok")
    await session.ask("go")
    recorded = await session.api.wait_for_message_requests(2)
    told = tool_results(recorded[1].body)[-1]
    assert told["is_error"] is True and "non-empty string" in told["content"]


async def test_a_cancel_during_the_sub_agent_ends_the_ask_cleanly(session: Session) -> None:
    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()

    def cancel_now(request: RecordedRequest) -> Reply:
        loop.call_soon_threadsafe(cancel.set)
        return Reply(text="looking…", delay=0.05)

    session.api.add_turns(delegate_turn("Look around"), cancel_now, "Fine.")
    heard: list[SubagentEvent] = []
    result = await session.ask("Go", cancel=cancel, events=AgentEvents(on_subagent=heard.append))
    assert result.stop_reason == "cancelled"
    assert heard[-1] == SubagentEvent(
        "c-1/sub-1", "end", text="[cancelled by the user while the sub-agent worked]", is_error=True
    )
    again = await session.ask("And now?")  # the thread is valid: every tool_use has a result
    assert again.text == "Fine."
    recorded = await session.api.wait_for_message_requests(3)
    # the fake records the cancelled stream when its answer starts: on a loaded machine,
    # after the next ask's request
    (last,) = [r.body for r in recorded if "And now?" in json.dumps(r.body)]
    told = tool_results(last)[-1]
    assert told["content"] == "[cancelled by the user while the sub-agent worked]"


async def test_a_failed_sub_agent_s_calls_still_count(session: Session) -> None:
    """A sub-agent that made a call, then failed for good (the API refused its second):
    the call it made was billed, so the ask's usage and call counts include it."""
    session.api.add_turns(
        delegate_turn("Look around"),
        {"tool_use": [{"name": "outline", "input": {"path": "src/app.py"}}]},
        refused("This request was refused."),
        "Did it myself.",
    )
    result = await session.ask("Go")
    recorded = await session.api.wait_for_message_requests(4)
    told = tool_results(recorded[3].body)[-1]
    assert told["is_error"] is True and "the sub-agent failed" in told["content"]
    assert (result.calls, result.subagent_calls) == (2, 1)
    billed = [r.usage for r in recorded if r.usage]
    assert len(billed) == 3
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert result.usage[name] == sum(u[name] for u in billed)
