"""`ectx serve --gateway PORT`: the language server hosts `ectx gateway` over its own engine,
so a Claude Code session through it moves the editor's usage notifications and status. The
port comes from $ECTX_GATEWAY_PORT here, as it does when VS Code's extension starts the server."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from ephemeral_context.store import Store
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.claude_code import cat_n
from tests.fakes.messages_api import FakeMessagesAPI
from tests.lsp.lsp_session import USAGE, Editor, wait_until

READ = {"name": "Read", "input_schema": {"type": "object", "properties": {}}}


@pytest.fixture
def gateway_url(api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fake as the hosted gateway's upstream, and a free port for it (set before the
    server starts: `usefixtures` runs it first); the gateway's URL.

    The port is picked here, a moment before the server binds it, not when the module is
    imported: minutes of other tests in between would give anything else the time to take it.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    monkeypatch.setenv("ECTX_UPSTREAM_URL", api.base_url)
    monkeypatch.setenv("ECTX_GATEWAY_PORT", str(port))
    return f"http://127.0.0.1:{port}"


def _status(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{url}/ectx/status", timeout=30) as answer:
            return dict(json.loads(answer.read()))
    except OSError:
        return None


async def _gateway_up(url: str) -> None:
    """Once the gateway the server starts after `initialized` answers (a minute at most: on a
    loaded machine it can take seconds; only a broken server takes that long)."""
    deadline = time.monotonic() + 60
    while await asyncio.to_thread(_status, url) is None:
        if time.monotonic() > deadline:
            raise AssertionError("the hosted gateway never answered")
        await asyncio.sleep(0.05)  # polling for the port to open, not a timed assertion


def _read_through_gateway(url: str, api: FakeMessagesAPI) -> None:
    """A Claude Code-like session of two requests through the hosted gateway: a Read of a
    400-line file and the answer after it."""
    api.add_turns({"tool_use": [{"name": "Read", "input": {}, "id": "toolu_1"}]}, "read it")
    text = cat_n("\n".join(f"line {n}" for n in range(400)))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read"}]
    for _ in range(2):
        answer = _ask_through_gateway(url, messages)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in answer.content]})
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": text}
        messages.append({"role": "user", "content": [result]})
    assert isinstance(answer.content[0], anthropic.types.TextBlock)
    assert answer.content[0].text == "read it"


def _ask_through_gateway(url: str, messages: list[dict[str, Any]]) -> anthropic.types.Message:
    """One request of a Claude Code-like session (it has a Read tool) through the gateway."""
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "tools": [READ],
        "messages": messages,
    }
    with anthropic.Anthropic(api_key="sk-ant-test-hosted", base_url=url, max_retries=0) as sdk:
        answer: anthropic.types.Message = sdk.messages.create(**body)
    return answer


@pytest.mark.usefixtures("gateway_url")
async def test_a_session_through_the_hosted_gateway_reaches_the_status_bar(
    gateway_url: str, lsp_process: LanguageClient, workspace: Path, api: FakeMessagesAPI
) -> None:
    editor = Editor(lsp_process)
    await editor.initialize("visual_studio_code", workspace)
    await _gateway_up(gateway_url)
    await asyncio.to_thread(_read_through_gateway, gateway_url, api)
    await editor.notified(USAGE, lambda usage: usage.contextTokens > 1000)
    status = _status(gateway_url)
    assert status is not None and status["total"]["requests"] == 2
    assert [t["name"] for t in api.message_requests[0].body["tools"]] == [
        "Read",
        "read_session_file",
    ]
    await lsp_process.shutdown_session()


@pytest.fixture
def busy_port(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A port something else already listens on, as the hosted gateway's (before the server
    starts)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        monkeypatch.setenv("ECTX_GATEWAY_PORT", str(port))
        yield port


@pytest.mark.usefixtures("busy_port")
async def test_a_gateway_port_already_taken_is_told_and_the_editor_works_on(
    lsp_process: LanguageClient, workspace: Path, busy_port: int
) -> None:
    editor = Editor(lsp_process)
    await editor.initialize("visual_studio_code", workspace)
    await wait_until(lambda: editor.client.messages)
    (shown,) = editor.client.messages
    assert shown.type == types.MessageType.Warning
    assert f"the gateway cannot listen on port {busy_port}" in shown.message
    assert "address already in use" in shown.message
    status = await editor.request("ephemeralContext/status")
    assert status.budget > 0
    await lsp_process.shutdown_session()


@pytest.fixture
def port_out_of_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """No port there is, as the hosted gateway's (before the server starts)."""
    monkeypatch.setenv("ECTX_GATEWAY_PORT", "70000")


@pytest.mark.usefixtures("port_out_of_range")
async def test_a_gateway_port_out_of_range_is_told_and_the_editor_works_on(
    lsp_process: LanguageClient, workspace: Path
) -> None:
    """$ECTX_GATEWAY_PORT 70000: the user hears the gateway cannot listen there (it was an
    OverflowError in a task nobody heard of)."""
    editor = Editor(lsp_process)
    await editor.initialize("visual_studio_code", workspace)
    await wait_until(lambda: editor.client.messages)
    (shown,) = editor.client.messages
    assert shown.type == types.MessageType.Warning
    assert "the gateway cannot listen on port 70000: " in shown.message
    await lsp_process.shutdown_session()


def _stored(root: Path) -> int:
    with Store(root / "store") as store:
        return len(store.entries())


def _move_data_directory(editor: Editor, moved: Path) -> None:
    settings = {"ephemeralContext": {"dataDirectory": str(moved)}}
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=settings)
    )


@pytest.fixture
async def hosting(
    gateway_url: str, lsp_process: LanguageClient, workspace: Path
) -> AsyncIterator[Editor]:
    """An editor whose server's gateway answers (the port is set before the server starts:
    `gateway_url` comes first); shut down after the test."""
    editor = Editor(lsp_process)
    await editor.initialize("visual_studio_code", workspace)
    await _gateway_up(gateway_url)
    yield editor
    await lsp_process.shutdown_session()


async def test_a_data_directory_change_moves_the_hosted_gateway_onto_the_new_store(
    hosting: Editor, gateway_url: str, api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """Nothing recorded yet: the settings move the store, and the gateway serves from the
    new one (it kept the engine it started with, over the store the move closed: every
    request went through unchanged)."""
    editor = hosting
    moved = tmp_path / "elsewhere"
    _move_data_directory(editor, moved)
    # The server opened the new store (the engine and the gateway move with it, in one step).
    await wait_until(lambda: (moved / "store" / "index.sqlite3").exists())
    await asyncio.to_thread(_read_through_gateway, gateway_url, api)
    status = _status(gateway_url)
    assert status is not None and status["total"]["requests"] == 2
    assert status["total"]["passthrough"] == 0
    assert _stored(moved) > 0
    assert editor.client.messages == []


async def test_a_data_directory_change_after_the_gateway_recorded_says_why_it_waits(
    hosting: Editor, gateway_url: str, api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """The gateway's conversation is in the engine's store: the move waits for a restart,
    the user hears why and where the context is, and the gateway serves on from there."""
    editor = hosting
    await asyncio.to_thread(_read_through_gateway, gateway_url, api)
    home = Path(os.environ["EPHEMERAL_CONTEXT_HOME"])
    assert _stored(home) > 0
    moved = tmp_path / "elsewhere"
    _move_data_directory(editor, moved)
    await wait_until(lambda: editor.client.messages)
    (shown,) = editor.client.messages
    assert shown.type == types.MessageType.Warning
    assert shown.message == (
        "Ephemeral Context: dataDirectory takes effect when the server restarts: this "
        f"session's context (the hosted gateway's too) is in {home / 'store'}"
    )
    await asyncio.to_thread(_read_through_gateway, gateway_url, api)
    status = _status(gateway_url)
    assert status is not None and status["total"]["requests"] == 4
    assert status["total"]["passthrough"] == 0
    assert not (moved / "store").exists()


async def test_a_pin_edited_in_the_editor_reaches_the_next_request_as_it_is_now(
    hosting: Editor, gateway_url: str, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The editor's pins are shown to the Claude Code session through the hosted gateway;
    once the pinned buffer is edited, the next request carries the edit (the pins follow
    their files before the gateway's request as before an ask), not the version pinned."""
    editor = hosting
    path = workspace / "pinned.py"
    path.write_text("VALUE = 'as pinned'\n", encoding="utf-8")
    uri = editor.open(path)
    await editor.request("ephemeralContext/pin", {"uri": uri})
    api.add_turns("one", "two")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    await asyncio.to_thread(_ask_through_gateway, gateway_url, messages)
    start, end = types.Position(0, 0), types.Position(0, 19)
    edit = types.TextDocumentContentChangePartial(types.Range(start, end), "VALUE = 'edited'\n")
    editor.change(uri, [edit])
    await editor.request("ephemeralContext/status")  # the change has reached the server
    messages += [{"role": "assistant", "content": "one"}, {"role": "user", "content": "again"}]
    await asyncio.to_thread(_ask_through_gateway, gateway_url, messages)
    first, second = (json.dumps(r.body["messages"]) for r in api.message_requests)
    assert "VALUE = 'as pinned'" in first
    assert "VALUE = 'edited'" in second


def _read_in_one_request(url: str, path: Path, content: str) -> None:
    """A request of Claude Code's whose last message answers its Read of `path`."""
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": str(path)}}
    result = {"type": "tool_result", "tool_use_id": "r1", "content": content}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read"},
        {"role": "assistant", "content": [read]},
        {"role": "user", "content": [result]},
    ]
    _ask_through_gateway(url, messages)


@pytest.mark.parametrize("named_by", ["secretPatterns", "link"])
async def test_a_secret_file_claude_code_reads_is_never_stored(
    hosting: Editor, gateway_url: str, api: FakeMessagesAPI, workspace: Path, named_by: str
) -> None:
    """Claude Code reads, through the hosted gateway, a file the editor's `secretPatterns`
    name (the gateway knew the built-in names only), or `notes.txt`, a link to the
    workspace's `.env` (the name checked was the link's alone): it goes upstream as the
    client sent it and is never written to the store, as a `.env` read by its name is."""
    editor = hosting
    if named_by == "link":
        path = workspace / "notes.txt"
        path.symlink_to(".env")
        (workspace / ".env").write_text("password = hunter2\n", encoding="utf-8")
    else:
        path = workspace / "app.conf"
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"ephemeralContext": {"secretPatterns": ["*.conf"]}}
            )
        )
        await editor.request("ephemeralContext/status")  # the settings have reached the server
    api.add_turns("read it")
    conf = cat_n("".join(f"option_{n} = {n}\n" for n in range(300)) + "password = hunter2")
    await asyncio.to_thread(_read_in_one_request, gateway_url, path, conf)
    assert api.message_requests[0].body["messages"][-1]["content"][0]["content"] == conf
    with Store(Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store") as store:
        assert not [e for e in store.entries() if "hunter2" in store.get(e.id).text]


@pytest.fixture
async def hosting_linked(
    gateway_url: str, lsp_process: LanguageClient, workspace: Path
) -> AsyncIterator[tuple[Editor, Path]]:
    """`hosting`, the workspace folder opened by a link to it; the editor and the link."""
    link = workspace.parent / "linked"
    link.symlink_to(workspace)
    editor = Editor(lsp_process)
    await editor.initialize("visual_studio_code", link)
    await _gateway_up(gateway_url)
    yield editor, link
    await lsp_process.shutdown_session()


@pytest.mark.parametrize("read_by", ["link", "real"])
async def test_a_pinned_file_claude_code_reads_by_either_name_is_sent_once(
    hosting_linked: tuple[Editor, Path],
    gateway_url: str,
    api: FakeMessagesAPI,
    workspace: Path,
    read_by: str,
) -> None:
    """The workspace folder opened by a link, a file pinned by the linked path: Claude Code
    reads it by the linked path (its cwd) or the real one, and the request the gateway
    sends carries the file once (the read is a reference to the pin), not twice."""
    editor, link = hosting_linked
    text = "".join(f"def pinned_{n}(): return {n}\n" for n in range(40))
    (workspace / "src" / "big.py").write_text(text, encoding="utf-8")
    await editor.request("ephemeralContext/pin", {"uri": (link / "src" / "big.py").as_uri()})
    api.add_turns("read it")
    read_path = (link if read_by == "link" else workspace) / "src" / "big.py"
    await asyncio.to_thread(_read_in_one_request, gateway_url, read_path, cat_n(text))
    assert json.dumps(api.message_requests[-1].body["messages"]).count("def pinned_17()") == 1
