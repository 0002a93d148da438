"""A store another process holds locked (or one that cannot be written), over a real `ectx
serve`: each request that needs the store answers RequestFailed with the store's one line
(never InternalError with a traceback), a notification that opens the store tells the
editor (window/showMessage), the session goes on, and once the lock is gone the same
requests work and store what the editor holds then.

The server is `ectx serve` with the store's busy timeout shortened to BUSY_TIMEOUT_MS (its
own 30 s would make each failure wait that long); the lock is a real SQLite write lock that
a connection of this process takes on the server's index file, as another process would.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_lsp
from ephemeral_context.store import Store, StoreBusy
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.fakes.conversation import read_file_turn
from tests.fakes.messages_api import FakeMessagesAPI
from tests.lsp.lsp_session import Editor, wait_until

BUSY_TIMEOUT_MS = 200
SHORT_BUSY_SERVER = [
    sys.executable,
    "-c",
    "import functools, sys\n"
    "from ephemeral_context import cli, store\n"
    "from ephemeral_context.lsp import server\n"
    f"server.Store = functools.partial(store.Store, busy_timeout_ms={BUSY_TIMEOUT_MS})\n"
    "sys.exit(cli.main(['serve']))\n",
]
REQUEST_FAILED = -32803


# pytest-lsp's fixture decorator is unannotated
@pytest_lsp.fixture(config=ClientServerConfig(server_command=SHORT_BUSY_SERVER))  # type: ignore[untyped-decorator]
async def busy_server(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """`ectx serve` whose store gives up on a lock after BUSY_TIMEOUT_MS (not initialized)."""
    yield


@pytest.fixture
async def editor(busy_server: LanguageClient) -> AsyncIterator[Editor]:
    editor = Editor(busy_server)
    yield editor
    await busy_server.shutdown_session()


def default_store() -> Path:
    """The server's store: it inherits this test's EPHEMERAL_CONTEXT_HOME."""
    return Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store"


class Lock:
    """Another process's write lock on a store (created first if need be), until `release`."""

    def __init__(self, root: Path) -> None:
        Store(root).close()
        self.root = root
        self._other: sqlite3.Connection | None = sqlite3.connect(
            root / "index.sqlite3", isolation_level=None
        )
        self._other.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self._other is not None:
            self._other.execute("ROLLBACK")
            self._other.close()
            self._other = None

    def busy(self) -> str:
        """StoreBusy's one line (its wording is tests/unit/test_store.py's business)."""
        return str(StoreBusy(self.root))


@pytest.fixture
def locked() -> Iterator[Lock]:
    """The server's default store, locked; released at the end whatever happens."""
    lock = Lock(default_store())
    yield lock
    lock.release()


async def fails_busy(editor: Editor, lock: Lock, method: str, params: object = None) -> None:
    with pytest.raises(JsonRpcException) as raised:
        if method.startswith("ectx."):
            await editor.command(method, *([params] if params is not None else []))
        else:
            await editor.request(method, params)
    assert (raised.value.code, raised.value.message) == (REQUEST_FAILED, lock.busy())


def edit(text: str) -> types.TextDocumentContentChangePartial:
    start = types.Position(0, 0)
    return types.TextDocumentContentChangePartial(range=types.Range(start, start), text=text)


async def test_a_pin_fails_while_the_store_is_locked_and_the_edited_buffer_is_pinned_after(
    editor: Editor, workspace: Path
) -> None:
    await editor.initialize("visual_studio_code", workspace)
    uri = editor.open(workspace / "src" / "app.py")
    lock = Lock(default_store())
    try:
        await fails_busy(editor, lock, "ephemeralContext/pin", {"uri": uri})
        await fails_busy(editor, lock, "ectx.pin", {"uri": uri})
        editor.change(uri, [edit("# typed while the store was locked\n")])
        status = await editor.request("ephemeralContext/status")  # the session goes on
        assert (status.openDocuments, status.items) == (1, 0)
    finally:
        lock.release()
    pinned = await editor.request("ephemeralContext/pin", {"uri": uri})
    with Store(default_store()) as store:
        stored = store.get(pinned.item.id).text
    assert stored == editor.buffers[uri].source
    assert stored.startswith("# typed while the store was locked\nimport os\n")
    assert editor.client.messages == []  # the answers said it; no window besides


async def test_a_store_locked_at_initialize_is_told_and_the_next_request_opens_it(
    editor: Editor, workspace: Path, locked: Lock
) -> None:
    await editor.initialize("neovim", workspace)  # initialize itself succeeds
    await wait_until(lambda: editor.client.messages)
    (shown,) = editor.client.messages
    assert shown.type == types.MessageType.Warning
    assert shown.message == (
        f"Ephemeral Context: {locked.busy()} (the next request that needs it opens it)"
    )
    uri = editor.open(workspace / "src" / "app.py")
    for method in ("ephemeralContext/status", "ephemeralContext/items", "ectx.status"):
        await fails_busy(editor, locked, method)
    locked.release()
    assert (await editor.request("ephemeralContext/status")).openDocuments == 1
    pinned = await editor.request("ephemeralContext/pin", {"uri": uri})
    hydrated = await editor.request("ephemeralContext/hydrate", {"id": pinned.item.id})
    assert hydrated.text == (workspace / "src" / "app.py").read_text(encoding="utf-8")


async def test_a_store_that_cannot_be_written_is_told_and_opened_once_it_can(
    editor: Editor, workspace: Path
) -> None:
    """A store folder that cannot be made (here a file in its way; a read-only or full disk
    alike): initialize succeeds and says so, each request that needs the store fails with
    its one line, never InternalError with a traceback, and works once the way is clear."""
    blocked = default_store()
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")
    try:
        await editor.initialize("visual_studio_code", workspace)
        await wait_until(lambda: editor.client.messages)
        (shown,) = editor.client.messages
        assert shown.type == types.MessageType.Warning
        assert f"the store in {blocked} cannot be used" in shown.message
        with pytest.raises(JsonRpcException) as raised:
            await editor.request("ephemeralContext/status")
        assert raised.value.code == REQUEST_FAILED
        assert raised.value.message.startswith(f"the store in {blocked} cannot be used: ")
        assert "Traceback" not in str(raised.value.data)
    finally:
        blocked.unlink()
    assert (await editor.request("ephemeralContext/status")).items == 0


@pytest.fixture
def gateway_port(monkeypatch: pytest.MonkeyPatch) -> int:
    """A free port for the hosted gateway (`ectx serve` reads it when it starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    monkeypatch.setenv("ECTX_GATEWAY_PORT", str(port))
    return port


def listens(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.usefixtures("gateway_port")  # set before the server starts
async def test_a_hosted_gateway_whose_store_was_locked_starts_with_the_request_that_opens_it(
    gateway_port: int, editor: Editor, workspace: Path, locked: Lock
) -> None:
    """`ectx serve --gateway` whose store is busy when `initialized` would start the gateway:
    the request that opens the store starts it, and the user hears it listens now."""
    editor.client.set_configuration({"model": "claude-sonnet-4-6"}, section="ephemeralContext")
    await editor.initialize("visual_studio_code", workspace)
    # Told twice: by initialize, and by the settings `initialized` pulls, which decides on
    # the gateway right after that second message, before it reads another one: so the
    # lock below is released only once that decision (no engine: no gateway) was made.
    await wait_until(lambda: len(editor.client.messages) == 2)
    busy = f"Ephemeral Context: {locked.busy()} (the next request that needs it opens it)"
    assert [m.message for m in editor.client.messages] == [busy, busy]
    assert not listens(gateway_port)
    locked.release()
    assert (await editor.request("ephemeralContext/status")).items == 0  # opens the store
    await wait_until(lambda: len(editor.client.messages) == 3)
    told = editor.client.messages[2]
    assert told.type == types.MessageType.Info
    assert told.message == f"Ephemeral Context: the gateway listens on port {gateway_port} now"
    with urllib.request.urlopen(f"http://127.0.0.1:{gateway_port}/ectx/status") as answer:
        assert json.loads(answer.read())["total"]["requests"] == 0


async def test_a_data_directory_whose_store_is_locked_is_told_and_opened_by_the_next_request(
    editor: Editor, workspace: Path, tmp_path: Path
) -> None:
    await editor.initialize("visual_studio_code", workspace)
    uri = editor.open(workspace / "src" / "app.py")
    moved = tmp_path / "elsewhere"
    lock = Lock(moved / "store")
    try:
        settings = {"ephemeralContext": {"dataDirectory": str(moved)}}
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=settings)
        )
        await wait_until(lambda: editor.client.messages)
        (shown,) = editor.client.messages
        assert shown.message == (
            f"Ephemeral Context: {lock.busy()} (the next request that needs it opens it)"
        )
        await fails_busy(editor, lock, "ephemeralContext/pin", {"uri": uri})
    finally:
        lock.release()
    pinned = await editor.request("ephemeralContext/pin", {"uri": uri})
    with Store(moved / "store") as store:  # the store the settings name, not the old one
        assert store.info(pinned.item.id).uri == uri


@pytest.mark.usefixtures("api_key")
async def test_an_ask_whose_read_cannot_be_stored_fails_and_the_conversation_goes_on(
    editor: Editor, workspace: Path, api: FakeMessagesAPI
) -> None:
    options = {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    await editor.initialize("visual_studio_code", workspace, options)
    ask = {"prompt": "What does run return?", "conversationId": "c-1"}
    api.add_turns(read_file_turn("src/app.py"))
    lock = Lock(default_store())
    try:
        await fails_busy(editor, lock, "ephemeralContext/ask", ask)
    finally:
        lock.release()
    api.add_turns(read_file_turn("src/app.py"), "It returns the working directory.")
    answer = await editor.request("ephemeralContext/ask", ask)
    assert (answer.stopReason, answer.text) == ("end_turn", "It returns the working directory.")
    # the read that could not be stored still has its result: the thread stays valid
    first_use = api.message_requests[0].body
    retried = api.message_requests[1].body["messages"]
    assert len(retried) > len(first_use["messages"])
    results = [
        block
        for message in retried
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert results and results[0]["is_error"] is True
    assert results[0]["content"] == f"[not recorded: {lock.busy()}]"  # not "cancelled"


@pytest.mark.usefixtures("api_key")
async def test_a_response_whose_large_edit_cannot_be_stored_leaves_no_call_without_result(
    editor: Editor, workspace: Path, api: FakeMessagesAPI
) -> None:
    """The response reads a file, then edits it with a large input (kept in the store, so it
    can shrink to a reference later): the read's tool_use must not stay behind alone when
    that input cannot be stored (the API refuses a tool_use without its tool_result, so
    every later ask of the conversation would fail)."""
    options = {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    await editor.initialize("visual_studio_code", workspace, options)
    body = "".join(f"        step_{n} = os.getcwd()\n" for n in range(40))
    edit = {"path": "src/app.py", "old_string": "        return os.getcwd()\n", "new_string": body}
    read = {"name": "read_file", "input": {"path": "src/app.py"}}
    api.add_turns({"tool_use": [read, {"name": "edit_file", "input": edit}]})
    ask = {"prompt": "Spell run out", "conversationId": "c-2"}
    lock = Lock(default_store())
    try:
        await fails_busy(editor, lock, "ephemeralContext/ask", ask)
    finally:
        lock.release()
    api.add_turns("Nothing is edited yet.")
    answer = await editor.request("ephemeralContext/ask", {**ask, "prompt": "Go on"})
    assert answer.text == "Nothing is edited yet."
    assert "step_0" not in (workspace / "src" / "app.py").read_text(encoding="utf-8")
