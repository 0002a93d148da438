"""ephemeralContext/ask end to end: a real `ectx serve`, the local Messages API
(tests/fakes, real HTTP on 127.0.0.1) and a client that applies edits like an editor.

The scripted model reads a file twice, edits it and reads it again. What the fake API
recorded must show the file content once, a reference for the repeat, at most four cache
breakpoints per request and cache reads on the later calls; the edit must reach the client
as workspace/applyEdit and land in its buffer.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.fakes import conversation
from tests.fakes.conversation import (
    PRIVATE_KEY,
    delegate_turn,
    hydrate_the_reference,
    tool_results,
)
from tests.fakes.conversation import read_file_turn as read
from tests.fakes.messages_api import FakeMessagesAPI, Reply
from tests.lsp.lsp_session import USAGE, Editor

pytestmark = pytest.mark.usefixtures("api_key")


def big_module() -> str:
    """The shared module with non-ASCII before the edit on its line: the applyEdit range
    differs by encoding."""
    return conversation.big_module().replace(
        "return 'old'", "s = 'caf\u00e9 \U0001d11e'; return 'old'"
    )


def text_of(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else json.dumps(content)


async def start(editor: Editor, api: FakeMessagesAPI, workspace: Path, client: str) -> None:
    await editor.initialize(
        client, workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )


@pytest.mark.parametrize("client", ["neovim", "visual_studio_code"])
async def test_read_twice_edit_read_again(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path, client: str
) -> None:
    source = workspace / "src" / "app.py"
    source.write_text(big_module(), encoding="utf-8")
    await start(raw_editor, api, workspace, client)
    uri = raw_editor.open(source)
    edit = {"path": "src/app.py", "old_string": "return 'old'", "new_string": "return 'new'"}
    api.add_turns(
        read("src/app.py"),
        read("src/app.py"),
        {"text": "Changing it.", "tool_use": [{"name": "edit_file", "input": edit}]},
        read("src/app.py"),
        "Done: target() now returns 'new'.",
    )
    result = await raw_editor.request(
        "ephemeralContext/ask", {"prompt": "Make target return 'new'", "conversationId": "c-1"}
    )

    assert (result.conversationId, result.stopReason, result.calls) == ("c-1", "end_turn", 5)
    assert result.text == "Done: target() now returns 'new'."
    assert [(e.uri, e.applied) for e in result.edits] == [(uri, True)]

    # the edit reached the client as workspace/applyEdit and landed in its buffer, unsaved
    assert len(raw_editor.applied) == 1
    expected = big_module().replace("return 'old'", "return 'new'")
    assert raw_editor.buffers[uri].source == expected
    assert "return 'old'" in source.read_text(encoding="utf-8")

    bodies = [r.body for r in api.message_requests]
    assert len(bodies) == 5
    marker = "def helper_119(x):"
    # the file's content went to the model once, and stayed once in every later request
    assert [json.dumps(b).count(marker) for b in bodies] == [0, 1, 1, 1, 1]
    results = tool_results(bodies[-1])
    assert marker in text_of(results[0])
    assert "[[file:" in text_of(results[1]) and marker not in text_of(results[1])
    assert marker not in text_of(results[3])
    # our own edit is not reported back to the model as an outside change
    last = json.dumps(bodies[-1])
    i = last.find("changed outside")
    assert i < 0, last[i - 300 : i + 200]
    # at most four breakpoints per request, and the later calls read from the cache
    assert all(json.dumps(b).count('"cache_control"') <= 4 for b in bodies)
    usage = [r.usage for r in api.message_requests]
    assert all(u is not None and u["cache_read_input_tokens"] > 0 for u in usage[2:])
    assert result.usage.cacheReadInputTokens == sum(
        u["cache_read_input_tokens"] for u in usage if u
    )

    # progress: streamed text, tool calls, the edit; usage notifications after the calls
    progress = raw_editor.notifications["ephemeralContext/askProgress"]
    kinds = [p.kind for p in progress]
    assert "".join(p.text for p in progress if p.kind == "text") == (
        "Changing it.Done: target() now returns 'new'."
    )
    assert kinds.count("toolUse") == 4 and kinds.count("usage") == 5
    assert [(p.uri, p.applied) for p in progress if p.kind == "edit"] == [(uri, True)]
    await raw_editor.notified(USAGE, lambda usage: getattr(usage, "lastCall", None) is not None)
    status = await raw_editor.request("ephemeralContext/status")
    assert status.cacheHitRate > 0.5 and status.lastCall.cacheRead > 0
    last_usage = [p.usage for p in progress if p.kind == "usage"][-1]
    assert status.lastCall.output == last_usage.outputTokens > 0


async def test_secrets_are_withheld(editor: Editor, api: FakeMessagesAPI, workspace: Path) -> None:
    """(The `editor` fixture has no apiBaseUrl: the settings push sets it.)"""
    (workspace / ".env").write_text("DB_PASSWORD=correct-horse\n", encoding="utf-8")
    (workspace / "keys.py").write_text("KEY = '''\n" + PRIVATE_KEY + "'''\n", encoding="utf-8")
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"ephemeralContext": {"apiBaseUrl": api.base_url}}
        )
    )
    api.add_turns(
        {
            "tool_use": [
                {"name": "read_file", "input": {"path": ".env"}},
                {"name": "read_file", "input": {"path": "keys.py"}},
            ]
        },
        "I cannot read those files.",
    )
    result = await editor.request("ephemeralContext/ask", {"prompt": "Show me the secrets"})
    assert result.stopReason == "end_turn" and result.conversationId
    sent = json.dumps([r.body for r in api.message_requests])
    assert "correct-horse" not in sent and "MHcCAQEEIBLAH" not in sent
    results = tool_results(api.message_requests[1].body)
    assert all(r["is_error"] and "withheld" in text_of(r) for r in results)
    progress = editor.notifications["ephemeralContext/askProgress"]
    assert [p.isError for p in progress if p.kind == "toolResult"] == [True, True]


async def test_cancel_mid_answer(raw_editor: Editor, api: FakeMessagesAPI, workspace: Path) -> None:
    """$/cancelRequest stops the ask mid-stream; the conversation works afterwards."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    gate = threading.Event()
    api.add_turns(Reply(text="Let me think about this at length.", gate=gate), "Second answer.")
    protocol = raw_editor.client.protocol
    pending = asyncio.wrap_future(
        protocol.send_request(
            "ephemeralContext/ask", {"prompt": "Long one", "conversationId": "c-9"}, msg_id="ask-1"
        )
    )
    await raw_editor.notified("ephemeralContext/askProgress")  # the answer has begun
    protocol.notify("$/cancelRequest", types.CancelParams(id="ask-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    gate.set()
    again = await raw_editor.request(
        "ephemeralContext/ask", {"prompt": "Short one", "conversationId": "c-9"}
    )
    assert again.text == "Second answer."
    assert len(api.message_requests) == 2
    assert "Short one" in json.dumps(api.message_requests[1].body)


async def test_ask_through_execute_command(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    await start(raw_editor, api, workspace, "neovim")
    api.add_turns("Hello from the command.")
    result = await raw_editor.command("ectx.ask", {"prompt": "hi"})
    assert result["text"] == "Hello from the command." and result["calls"] == 1


async def test_pinned_file_is_in_a_new_conversation(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Pins belong to the user: a conversation started after the pin shows the file."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    uri = raw_editor.open(workspace / "src" / "app.py")
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    api.add_turns("Seen it.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "What is in app.py?"})
    first = json.dumps(api.message_requests[0].body)
    assert "return os.getcwd()" in first and first.count("return os.getcwd()") == 1


async def test_cancel_ask_command(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """$/cancelRequest also stops an ask started with workspace/executeCommand ectx.ask:
    the task running the command, not only the executeCommand request's answer."""
    await start(raw_editor, api, workspace, "neovim")
    gate = threading.Event()
    api.add_turns(Reply(text="A long answer.", gate=gate), "Next.")
    protocol = raw_editor.client.protocol
    ask = {"prompt": "long", "conversationId": "c-cmd"}
    params = types.ExecuteCommandParams(command="ectx.ask", arguments=[ask])
    pending = asyncio.wrap_future(
        protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="cmd-1")
    )
    await raw_editor.notified("ephemeralContext/askProgress")  # the answer has begun
    protocol.notify("$/cancelRequest", types.CancelParams(id="cmd-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    try:  # the fake still holds the first stream: only a cancelled task frees its conversation
        again = await raw_editor.command("ectx.ask", {"prompt": "short", "conversationId": "c-cmd"})
    finally:
        gate.set()
    assert again["text"] == "Next."
    await asyncio.to_thread(api.message_requests[0].done.wait)
    assert api.message_requests[0].completed is False  # the server dropped the stream


async def test_an_edit_that_starts_inside_a_crlf_lands_as_planned(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """An old_string that starts with the LF of a CRLF: no client position falls between CR
    and LF, so the edit sent takes the CR along; the buffer is the text the model was told
    (the CR was cut, and the model's next read was an outside change)."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    path = workspace / "src" / "dos.py"
    uri = raw_editor.open(path, text="a = 1\r\nb = 2\r\nc = 3\r\n")
    edit = {"path": "src/dos.py", "old_string": "\nb = 2", "new_string": "\nb = 22"}
    api.add_turns({"tool_use": [{"name": "edit_file", "input": edit}]}, read("src/dos.py"), "Done.")
    result = await raw_editor.request("ephemeralContext/ask", {"prompt": "b is 22"})
    assert [e.applied for e in result.edits] == [True]
    assert raw_editor.buffers[uri].source == "a = 1\r\nb = 22\r\nc = 3\r\n"
    last = json.dumps(api.message_requests[-1].body)
    assert "changed outside" not in last


async def test_a_buffer_in_a_folder_opened_by_a_link_is_edited_in_the_editor(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """The workspace folder opened by a linked path (the tools resolve it): the model's edit
    of an open buffer still goes to the editor (it was written to the disk under the
    unsaved buffer), and every URI the ask reports is the buffer's."""
    link = tmp_path / "linked"
    link.symlink_to(workspace)
    await start(raw_editor, api, link, "visual_studio_code")
    uri = raw_editor.open(link / "src" / "app.py", text="x = 'unsaved'\n")
    edit = {"path": "src/app.py", "old_string": "'unsaved'", "new_string": "'edited'"}
    api.add_turns({"tool_use": [{"name": "edit_file", "input": edit}]}, "Done.")
    result = await raw_editor.request("ephemeralContext/ask", {"prompt": "edit"})
    assert [(e.uri, e.applied) for e in result.edits] == [(uri, True)]
    assert len(raw_editor.applied) == 1 and raw_editor.buffers[uri].source == "x = 'edited'\n"
    assert "import os" in (workspace / "src" / "app.py").read_text(encoding="utf-8")
    progress = raw_editor.notifications["ephemeralContext/askProgress"]
    assert [(p.uri, p.applied) for p in progress if p.kind == "edit"] == [(uri, True)]


async def test_edit_of_a_file_not_open_goes_to_disk(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    await start(raw_editor, api, workspace, "visual_studio_code")
    edit = {"path": "README.md", "old_string": "A small sample.", "new_string": "A sample."}
    api.add_turns({"tool_use": [{"name": "edit_file", "input": edit}]}, "Edited.")
    result = await raw_editor.request("ephemeralContext/ask", {"prompt": "shorten"})
    assert [e.applied for e in result.edits] == [True]
    assert raw_editor.applied == []
    assert (workspace / "README.md").read_text(encoding="utf-8") == "# Project\n\nA sample.\n"


async def test_an_unsaved_buffer_holding_a_key_is_not_edited_nor_probed(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A buffer with no file on disk yet (or any more) is edited in the editor: whether
    old_string matched would tell what it holds, so it is checked as a read of it is."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    uri = raw_editor.open(workspace / "draft.py", text=f"KEY = {PRIVATE_KEY!r}\n")
    edit = {"path": "draft.py", "old_string": "MHcCAQEEIBLAH", "new_string": "x"}
    api.add_turns({"tool_use": [{"name": "edit_file", "input": edit}]}, "Could not.")
    result = await raw_editor.request("ephemeralContext/ask", {"prompt": "guess"})
    assert result.edits == []
    assert raw_editor.applied == [] and "MHcCAQEEIBLAH" in raw_editor.buffers[uri].source
    [answer] = tool_results(api.message_requests[-1].body)
    assert answer["is_error"] and "private-key block" in text_of(answer)


async def test_work_done_progress_and_serial_asks(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """With a workDoneToken the ask also reports $/progress; two asks in one conversation
    run one after the other, so the second sees the first's answer."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    api.add_turns("First answer.", "Second answer.")
    raw_editor.client.progress_reports["tok-1"] = []  # a client-chosen token needs no create
    first = raw_editor.request(
        "ephemeralContext/ask", {"prompt": "one", "conversationId": "c-2", "workDoneToken": "tok-1"}
    )
    second = raw_editor.request("ephemeralContext/ask", {"prompt": "two", "conversationId": "c-2"})
    answers = await asyncio.gather(first, second)
    assert [a.text for a in answers] == ["First answer.", "Second answer."]
    second_body = json.dumps(api.message_requests[1].body)
    assert "First answer." in second_body and "two" in second_body
    kinds = [type(r).__name__ for r in raw_editor.client.progress_reports["tok-1"]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert "WorkDoneProgressReport" in kinds


async def test_outside_change_on_disk_is_noted(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A file the model read changes on disk (git checkout): the watched-file event makes
    the next request carry a short note instead of silently stale content."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    api.add_turns(read("README.md"), "Read it.", "Noted.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "read", "conversationId": "c-3"})
    readme = workspace / "README.md"
    readme.write_text("# Project\n\nChanged by a checkout.\n", encoding="utf-8")
    raw_editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=readme.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    await raw_editor.request("ephemeralContext/ask", {"prompt": "again", "conversationId": "c-3"})
    last = json.dumps(api.message_requests[-1].body)
    assert "README.md changed outside this conversation" in last
    assert "Changed by a checkout." not in last  # a note, not the content


async def test_a_sub_agents_work_streams_as_subagent_progress(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The main agent delegates; the sub-agent hydrates the id its brief carried. The editor
    hears each of the sub-agent's steps as a labelled "subagent" askProgress, apart from the
    main answer."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    api.add_turns(
        read("src/app.py"),
        delegate_turn("What does cwd() return?"),
        hydrate_the_reference,
        "Sub-agent: it returns os.getcwd().",
        "cwd() returns the working directory.",
    )
    result = await raw_editor.request(
        "ephemeralContext/ask", {"prompt": "What does cwd do?", "conversationId": "c-s"}
    )
    assert result.text == "cwd() returns the working directory."
    assert (result.stopReason, result.calls) == ("end_turn", 3)

    progress = raw_editor.notifications["ephemeralContext/askProgress"]
    sub = [p for p in progress if p.kind == "subagent"]
    assert {p.agent for p in sub} == {"c-s/sub-1"}
    assert {p.conversationId for p in progress} == {"c-s"}
    events = [p.event for p in sub]
    assert events[0] == "start" and "What does cwd() return?" in sub[0].text
    assert events[-1] == "end" and sub[-1].text == "Sub-agent: it returns os.getcwd()."
    assert sub[-1].isError is False
    used = [p for p in sub if p.event == "toolUse"]
    assert [p.tool for p in used] == ["read_session_file"]
    item_id = used[0].input.id
    assert f"[[file:{item_id}]]" in sub[0].text
    hydrated = next(p for p in sub if p.event == "toolResult")
    assert (hydrated.tool, hydrated.isError) == ("read_session_file", False)
    assert "return os.getcwd()" in hydrated.text
    assert events.count("usage") == 2 and all(
        p.usage.outputTokens > 0 for p in sub if p.event == "usage"
    )
    sub_text = "".join(p.text for p in sub if p.event == "text")
    assert sub_text == "Sub-agent: it returns os.getcwd()."
    # the main agent's own kinds carry none of it: its text is the answer, its tool calls
    # are read_file and delegate, and the report is the delegate call's result
    main_text = "".join(p.text for p in progress if p.kind == "text")
    assert main_text == "cwd() returns the working directory."
    assert [p.tool for p in progress if p.kind == "toolUse"] == ["read_file", "delegate"]
    delegated = [p for p in progress if p.kind == "toolResult"][-1]
    assert (delegated.tool, delegated.text) == ("delegate", sub_text)
    assert [p.kind for p in progress].count("usage") == 3


async def test_a_lone_surrogate_in_a_pinned_buffer_is_sent_as_a_replacement_character(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A UTF-16 editor can hold half a surrogate pair (JSON carries it as "\\ud83d"); UTF-8
    cannot encode it, so the request carries U+FFFD there, and every ask still works."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    uri = raw_editor.open(workspace / "src" / "app.py")
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    start_of_file = types.Range(types.Position(0, 0), types.Position(0, 0))
    edit = types.TextDocumentContentChangePartial(range=start_of_file, text="# half \ud83d here\n")
    raw_editor.change(uri, [edit])
    api.add_turns("Seen it.", "Still fine.")
    for prompt in ("What is in app.py?", "And now \udc00?"):
        result = await raw_editor.request("ephemeralContext/ask", {"prompt": prompt})
        assert result.text
    first, second = (json.dumps(r.body) for r in api.message_requests)
    assert "# half \\ufffd here" in first and "And now \\ufffd?" in second
    assert "\\ud83d" not in first + second and "\\udc00" not in second


async def test_the_progress_cancel_button_cancels_the_ask(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The ask's progress is begun `cancellable`: an editor shows a Cancel button, whose
    window/workDoneProgress/cancel pygls only marks on a future nobody awaited, so the ask
    (and its model call) ran on to the end."""
    await start(raw_editor, api, workspace, "visual_studio_code")
    gate = threading.Event()
    api.add_turns(Reply(text="A long answer.", gate=gate), "Next.")
    raw_editor.client.progress_reports["tok-c"] = []
    ask = {"prompt": "long", "conversationId": "c-pc", "workDoneToken": "tok-c"}
    pending = asyncio.ensure_future(raw_editor.request("ephemeralContext/ask", ask))
    try:
        await raw_editor.notified("ephemeralContext/askProgress")  # the answer has begun
        raw_editor.client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams("tok-c")
        )
        with pytest.raises(JsonRpcRequestCancelled):
            await pending
        again = await raw_editor.request(
            "ephemeralContext/ask", {"prompt": "short", "conversationId": "c-pc"}
        )
    finally:
        gate.set()
    assert again.text == "Next."
    await asyncio.to_thread(api.message_requests[0].done.wait)
    assert api.message_requests[0].completed is False  # the server dropped the stream
