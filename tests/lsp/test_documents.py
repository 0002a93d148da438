"""Text sync end to end: open, edit (in the negotiated encoding) and close, seen through
status, items, pin, hydrate and drop, with a usage notification after each change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from tests.lsp.lsp_session import Editor

# A precomposed letter, a combining mark, CJK and a character outside the BMP: UTF-8,
# UTF-16 and UTF-32 columns all differ on this line.
SAMPLE = "title = 'caf\u00e9 nai\u0308ve \u6f22\u5b57 \U0001d11e end'\nsecond = 2\n"


def edit(line: int, start: int, end: int, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, start), types.Position(line, end)), text=text
    )


async def test_open_edit_pin_hydrate_close(editor: Editor, workspace: Path) -> None:
    """The server's copy of the buffer matches the editor's after edits past non-ASCII text."""
    path = workspace / "src" / "sample.py"
    path.write_text("on disk, not in the buffer\n", encoding="utf-8")
    since = editor.mark()
    uri = editor.open(path, SAMPLE)
    await editor.usage(since)

    buffer = editor.buffers[uri]
    # Column of " end'" in client units, whatever the encoding: let the editor's codec say.
    line0 = buffer.lines[0]
    end_col = buffer.position_codec.position_to_client_units(
        buffer.lines, types.Position(0, line0.index(" end"))
    ).character
    since = editor.mark()
    editor.change(uri, [edit(0, end_col, end_col + 4, " fin")])
    editor.change(uri, [edit(1, 0, 0, "# inserted\n"), edit(0, 0, 0, "")])
    await editor.usage(since)
    expected = buffer.source
    assert "\U0001d11e fin'" in expected and "# inserted\nsecond = 2" in expected

    status = await editor.request("ephemeralContext/status")
    assert status.openDocuments == 1
    assert status.positionEncoding == editor.encoding

    since = editor.mark()
    pinned = await editor.request("ephemeralContext/pin", {"uri": uri})
    item = pinned.item
    assert (item.kind, item.state, item.pinned, item.uri) == ("file", "full", True, uri)
    assert item.version == buffer.version and item.tokens > 0
    assert (await editor.usage(since)).contextTokens == item.tokens

    whole = await editor.request("ephemeralContext/hydrate", {"id": item.id})
    assert whole.text == expected and whole.totalLength == len(expected)
    part = await editor.request(
        "ephemeralContext/hydrate", {"id": item.id, "offset": 8, "limit": 5}
    )
    assert part.text == expected[8:13] and part.offset == 8

    listed = await editor.request("ephemeralContext/items")
    assert [(i.id, i.pinned) for i in listed.items] == [(item.id, True)]
    assert (await editor.request("ephemeralContext/status")).items == 1

    # the id of a file item hydrates the buffer as it is now
    since = editor.mark()
    editor.change(uri, [edit(0, 0, 0, "# newer\n")])
    assert (await editor.usage(since)).contextTokens > item.tokens
    newer = await editor.request("ephemeralContext/hydrate", {"id": item.id})
    assert newer.text == buffer.source and newer.version == buffer.version

    unpinned = await editor.request("ephemeralContext/unpin", {"uri": uri})
    assert unpinned.item.pinned is False
    dropped = await editor.request("ephemeralContext/drop", {"uri": uri})
    assert item.id in dropped.dropped

    since = editor.mark()
    editor.close(uri)
    await editor.usage(since)
    assert (await editor.request("ephemeralContext/status")).openDocuments == 0
    # closed: the file is read from disk again
    again = await editor.request("ephemeralContext/pin", {"uri": uri})
    reread = await editor.request("ephemeralContext/hydrate", {"id": again.item.id})
    assert reread.text == "on disk, not in the buffer\n"


async def test_commands_match_requests(editor: Editor, workspace: Path) -> None:
    """The ectx.* commands answer like the ephemeralContext/* requests."""
    uri = (workspace / "src" / "app.py").as_uri()
    via_command = await editor.command("ectx.pin", {"uri": uri})
    assert via_command["item"]["uri"] == uri and via_command["item"]["pinned"] is True
    items = await editor.command("ectx.items")
    assert [i["id"] for i in items["items"]] == [via_command["item"]["id"]]
    status = await editor.command("ectx.status")
    assert status["items"] == 1 and set(status["breakdown"]) == {
        "full",
        "partial",
        "synopsis",
        "evicted",
    }
    text = await editor.command("ectx.hydrate", {"id": via_command["item"]["id"], "limit": 9})
    assert text["text"] == "import os"
    dropped = await editor.command("ectx.drop", {"id": via_command["item"]["id"]})
    assert via_command["item"]["id"] in dropped["dropped"]


async def test_watched_file_change_is_read_again(editor: Editor, workspace: Path) -> None:
    """A didChangeWatchedFiles event makes the next use re-read the file from disk."""
    path = workspace / "README.md"
    uri = path.as_uri()
    first = await editor.request("ephemeralContext/pin", {"uri": uri})
    path.write_text("# Project\n\nRewritten by git checkout.\n", encoding="utf-8")
    since = editor.mark()
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
        )
    )
    await editor.usage(since)
    second = await editor.request("ephemeralContext/pin", {"uri": uri})
    text = await editor.request("ephemeralContext/hydrate", {"id": second.item.id})
    assert text.text.endswith("Rewritten by git checkout.\n")
    assert second.item.id != first.item.id


async def test_a_deleted_folder_releases_the_pins_under_it(
    raw_editor: Editor, workspace: Path
) -> None:
    """VS Code reports a deleted folder as one event for the folder: a file pinned under it
    leaves the context at once, with the warning (it stayed until a status or items read)."""
    await raw_editor.initialize("visual_studio_code", workspace)
    uri = (workspace / "src" / "app.py").as_uri()
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    shutil.rmtree(workspace / "src")
    raw_editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=(workspace / "src").as_uri(), type=types.FileChangeType.Deleted)]
        )
    )
    # Answered after the notification, and touching no file: whatever the server was to say
    # about the deletion it has said by then.
    await raw_editor.request("ephemeralContext/drop", {"id": "0123abcd"})
    assert any("app.py was deleted on disk" in m.message for m in raw_editor.client.messages)


async def test_secret_settings(raw_editor: Editor, workspace: Path) -> None:
    """secretPatterns adds patterns; allowSecretFiles is the user's opt-in for one file."""
    (workspace / ".env").write_text("DEBUG=1\n", encoding="utf-8")
    (workspace / "notes.private").write_text("mine\n", encoding="utf-8")
    options = {"secretPatterns": ["*.private"], "allowSecretFiles": [".env"]}
    await raw_editor.initialize("visual_studio_code", workspace, options)
    allowed = await raw_editor.request(
        "ephemeralContext/pin", {"uri": (workspace / ".env").as_uri()}
    )
    assert allowed.item.label.endswith(".env")
    with pytest.raises(JsonRpcInvalidParams, match=r"\*\.private"):
        await raw_editor.request(
            "ephemeralContext/pin", {"uri": (workspace / "notes.private").as_uri()}
        )


async def test_document_over_the_size_limit(raw_editor: Editor, workspace: Path) -> None:
    """A buffer larger than limits.maxFileBytes is not mirrored, and says so when pinned."""
    await raw_editor.initialize("neovim", workspace, {"limits": {"maxFileBytes": 1000}})
    uri = raw_editor.open(workspace / "src" / "big.py", "x = 1\n" * 1000)
    with pytest.raises(JsonRpcInvalidParams, match="too-large"):
        await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    assert (await raw_editor.request("ephemeralContext/status")).openDocuments == 1
    # The user raises the limit: the open buffer is mirrored now, not at its next edit.
    raw_editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"ephemeralContext": {"limits": {"maxFileBytes": 10_000}}}
        )
    )
    for _ in range(500):  # the notification's handler is a task: it may run after a request
        try:
            pinned = await raw_editor.request("ephemeralContext/pin", {"uri": uri})
            break
        except JsonRpcInvalidParams as exc:
            refused = exc
    else:
        pytest.fail(f"still refused under the new limit: {refused}")
    assert pinned.item.uri == uri and pinned.item.state == "full"


async def test_data_directory_setting(raw_editor: Editor, workspace: Path, tmp_path: Path) -> None:
    """dataDirectory moves the store (and memories) away from $EPHEMERAL_CONTEXT_HOME."""
    data = tmp_path / "ectx-data"
    await raw_editor.initialize("neovim", workspace, {"dataDirectory": str(data)})
    pinned = await raw_editor.request(
        "ephemeralContext/pin", {"uri": (workspace / "src" / "app.py").as_uri()}
    )
    assert pinned.item.id
    assert (data / "store").is_dir() and any((data / "store").iterdir())
