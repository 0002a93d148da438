"""initialize, capabilities, configuration and shutdown of `ectx serve` over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.lsp_session import Editor, wait_until
from tests.lsp.raw_rpc import connect, tcp_server

COMMANDS = {
    "ectx.status",
    "ectx.items",
    "ectx.pin",
    "ectx.unpin",
    "ectx.drop",
    "ectx.hydrate",
    "ectx.ask",
    "ectx.replay",
}


async def test_capabilities(editor: Editor) -> None:
    """Incremental sync, every ectx.* command, and an encoding the client asked for."""
    result = editor.initialize_result
    assert result is not None
    caps = result.capabilities
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.execute_command_provider is not None
    assert set(caps.execute_command_provider.commands) == COMMANDS
    assert caps.workspace is not None and caps.workspace.workspace_folders is not None
    assert caps.workspace.workspace_folders.change_notifications is True
    client_caps = editor.client.capabilities
    assert client_caps is not None
    offered = (client_caps.general.position_encodings if client_caps.general else None) or [
        "utf-16"
    ]
    assert caps.position_encoding in offered
    assert result.server_info is not None and result.server_info.name == "ephemeral-context"


async def test_invalid_initialization_options(raw_editor: Editor, workspace: Path) -> None:
    """Bad options: defaults, a showMessage warning and a logMessage, and the server works."""
    await raw_editor.initialize("visual_studio_code", workspace, {"limits": {"maxTurns": "many"}})
    client = raw_editor.client
    await wait_until(lambda: client.messages)
    shown = client.messages[-1]
    assert shown.type == types.MessageType.Warning
    assert "max_turns" in shown.message and "defaults" in shown.message
    assert any("defaults" in m.message for m in client.log_messages)
    status = await raw_editor.request("ephemeralContext/status")
    assert status.budget == 150_000


async def test_configuration_pull_wins(raw_editor: Editor, workspace: Path) -> None:
    """workspace/configuration is asked for after initialized and wins over the options."""
    raw_editor.client.set_configuration(
        {"limits": {"contextTokens": 1234}}, section="ephemeralContext"
    )
    await raw_editor.initialize("visual_studio_code", workspace, {"limits": {"contextTokens": 99}})
    budgets = [(await raw_editor.request("ephemeralContext/status")).budget]
    while budgets[-1] != 1234 and len(budgets) < 500:  # the answer to the pull is on its way
        budgets.append((await raw_editor.request("ephemeralContext/status")).budget)
    assert budgets[0] in (99, 1234) and budgets[-1] == 1234


async def test_invalid_configuration_reported(raw_editor: Editor, workspace: Path) -> None:
    raw_editor.client.set_configuration({"cacheTtl": "forever"}, section="ephemeralContext")
    await raw_editor.initialize("visual_studio_code", workspace)
    await wait_until(lambda: raw_editor.client.messages)
    assert "forever" in raw_editor.client.messages[-1].message


@pytest.mark.parametrize("client_name", ["visual_studio_code", "neovim", "neovim@v0.7.0"])
async def test_watched_files_registration(
    raw_editor: Editor, workspace: Path, client_name: str
) -> None:
    """didChangeWatchedFiles is registered for the workspace when the client can take it."""
    await raw_editor.initialize(client_name, workspace)
    await raw_editor.request("ephemeralContext/status")  # the server has read `initialized`
    caps = raw_editor.client.capabilities
    assert caps is not None and caps.workspace is not None
    watched = caps.workspace.did_change_watched_files
    if watched and watched.dynamic_registration:
        # The status answer is no barrier here: `initialized` runs as a task of its own.
        await wait_until(lambda: raw_editor.registrations)
        assert [r.method for r in raw_editor.registrations] == [
            types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        ]
        assert workspace.as_uri() in str(raw_editor.registrations[0].register_options) or str(
            workspace
        ) in str(raw_editor.registrations[0].register_options)
    else:
        assert raw_editor.registrations == []


def test_exit_codes(tmp_path: Path) -> None:
    """exit after shutdown ends with 0, exit without shutdown with 1 (LSP says so)."""
    from tests.lsp.raw_rpc import RawServer

    for with_shutdown, expected in ((True, 0), (False, 1)):
        with RawServer.start() as server:
            server.request(
                "initialize", {"processId": os.getpid(), "capabilities": {}, "rootUri": None}
            )
            server.notify("initialized", {})
            if with_shutdown:
                server.request("shutdown", None)
            server.notify("exit", None)
            assert server.wait() == expected


def test_nothing_on_stdout_when_the_client_goes_away() -> None:
    """`ectx serve` writes nothing but protocol to stdout: here, nothing at all on EOF."""
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "serve"],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == b""


def test_tcp(workspace: Path) -> None:
    """`ectx serve --tcp HOST:PORT` speaks the same protocol over a socket."""
    with tcp_server() as port, connect(port) as client:
        answer = client.initialize(workspace.as_uri())
    assert answer["id"] == 1 and "ectx.status" in json.dumps(answer["result"])


def test_tcp_argument_is_checked() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "serve", "--tcp", "nowhere"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and b"HOST:PORT" in done.stderr


async def test_workspace_folders_change(
    raw_editor: Editor, workspace: Path, tmp_path: Path
) -> None:
    """A folder added later can be pinned from, and the file watcher follows the folders."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.py").write_text("NOTE = 1\n", encoding="utf-8")
    await raw_editor.initialize("visual_studio_code", workspace)
    uri = (other / "notes.py").as_uri()
    refused = raw_editor.request("ephemeralContext/pin", {"uri": uri})
    with pytest.raises(Exception, match="outside the workspace"):
        await refused
    raw_editor.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
            )
        )
    )
    pinned = await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    assert pinned.item.uri == uri
    await wait_until(lambda: str(other) in str(raw_editor.registrations))
    assert len(raw_editor.registrations) == 1
    # Removed again: its pin is released at once (it stayed, shown to every ask, until
    # the file changed), and the user hears why.
    raw_editor.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[], removed=[types.WorkspaceFolder(uri=other.as_uri(), name="other")]
            )
        )
    )
    await wait_until(lambda: raw_editor.client.messages)  # the handler is a task: wait for it
    assert "notes.py is no longer pinned" in raw_editor.client.messages[-1].message
    items = await raw_editor.request("ephemeralContext/items")
    assert [(i.uri, i.pinned) for i in items.items] == [(uri, False)]
