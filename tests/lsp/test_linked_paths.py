"""A file reached through a symbolic link is one file, over a real `ectx serve`: the editor
names it by the linked path (the workspace folder opened by a link, or a link inside a real
folder), the model's tools by the real one. Whatever the order of pinning, opening and the
model's reads, the context holds one item for it, its content goes to the model once, and
the editor is sent back the URI it named the file by. A link stays no way around the
workspace boundary or the secret filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from tests.fakes.conversation import read_file_turn, tool_results
from tests.fakes.messages_api import FakeMessagesAPI
from tests.lsp.lsp_session import Editor

pytestmark = pytest.mark.usefixtures("api_key")

MARKER = "def run(self)"


async def start(editor: Editor, api: FakeMessagesAPI, folder: Path) -> None:
    settings = {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    await editor.initialize("visual_studio_code", folder, settings)


async def read_by_model(editor: Editor, api: FakeMessagesAPI, path: str) -> None:
    api.add_turns(read_file_turn(path), "Read it.")
    await editor.request("ephemeralContext/ask", {"prompt": "read", "conversationId": "c"})


def linked(tmp_path: Path, workspace: Path, layout: str) -> tuple[Path, Path]:
    """The folder the editor opens and the path it names src/app.py by: through a linked
    workspace folder, or through a link to it inside the real folder."""
    if layout == "folder":
        link = tmp_path / "linked"
        link.symlink_to(workspace)
        return link, link / "src" / "app.py"
    alias = workspace / "src" / "alias.py"
    alias.symlink_to("app.py")
    return workspace, alias


async def file_rows(editor: Editor) -> list[tuple[str, bool]]:
    rows = (await editor.request("ephemeralContext/items")).items
    return [(r.uri, r.pinned) for r in rows if r.kind == "file"]


@pytest.mark.parametrize("layout", ["folder", "file"])
@pytest.mark.parametrize(
    "steps",
    [("pin", "read"), ("read", "pin"), ("open", "read"), ("pin", "open")],
    ids=["pin-then-read", "read-then-pin", "open-then-read", "pin-then-open"],
)
async def test_one_item_whatever_the_order(
    raw_editor: Editor,
    api: FakeMessagesAPI,
    workspace: Path,
    tmp_path: Path,
    layout: str,
    steps: tuple[str, str],
) -> None:
    """Each order, then a read by the model: one item, named by the editor's URI, and the
    file's content once in the last request (the repeat is a reference)."""
    folder, path = linked(tmp_path, workspace, layout)
    await start(raw_editor, api, folder)
    uri = path.as_uri()
    for step in steps:
        if step == "pin":
            await raw_editor.request("ephemeralContext/pin", {"uri": uri})
        elif step == "open":
            raw_editor.open(path)
        else:
            await read_by_model(raw_editor, api, "src/app.py")
    await read_by_model(raw_editor, api, "src/app.py")

    assert await file_rows(raw_editor) == [(uri, "pin" in steps)]
    assert json.dumps(api.message_requests[-1].body).count(MARKER) == 1


async def test_a_pinned_buffer_opened_by_a_link_follows_its_typing(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """Pinned by the linked path, then opened and typed into: the pin shows the buffer, and
    the model's read of the real path is a reference to it, not the file on disk."""
    folder, path = linked(tmp_path, workspace, "folder")
    await start(raw_editor, api, folder)
    uri = path.as_uri()
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    raw_editor.open(path, text="# typed, unsaved\n" + path.read_text(encoding="utf-8"))
    await read_by_model(raw_editor, api, "src/app.py")

    body = json.dumps(api.message_requests[-1].body)
    assert body.count("# typed, unsaved") == 1 and body.count(MARKER) == 1
    [answer] = tool_results(api.message_requests[-1].body)
    assert MARKER not in json.dumps(answer)
    assert await file_rows(raw_editor) == [(uri, True)]


async def test_a_file_reached_by_two_links_is_one_item(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """Pinned by one link, opened by another, read by its real name: one item, named by the
    URI the editor named it by last."""
    one, two = workspace / "src" / "one.py", workspace / "src" / "two.py"
    one.symlink_to("app.py")
    two.symlink_to("app.py")
    await start(raw_editor, api, workspace)
    await raw_editor.request("ephemeralContext/pin", {"uri": one.as_uri()})
    raw_editor.open(two)
    await read_by_model(raw_editor, api, "src/app.py")
    await read_by_model(raw_editor, api, "src/one.py")

    assert await file_rows(raw_editor) == [(two.as_uri(), True)]
    assert json.dumps(api.message_requests[-1].body).count(MARKER) == 1


@pytest.mark.parametrize("target", ["outside", "secret"])
async def test_a_link_is_no_way_around_the_policy(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path, tmp_path: Path, target: str
) -> None:
    """A link inside the workspace to a file outside it, or to a secret file: the pin is
    refused, the model's read by the link's name too, and nothing of the file is sent."""
    secret = "TOKEN = 'outside-the-boundary'\n"
    if target == "outside":
        real = tmp_path / "elsewhere.py"
        reason = "outsideWorkspace"
    else:
        real = workspace / ".env"
        reason = "secret"
    real.write_text(secret, encoding="utf-8")
    link = workspace / "src" / "notes.py"
    link.symlink_to(real)
    await start(raw_editor, api, workspace)

    with pytest.raises(JsonRpcInvalidParams) as refused:
        await raw_editor.request("ephemeralContext/pin", {"uri": link.as_uri()})
    assert refused.value.data == {"reason": reason}
    raw_editor.open(link)
    await read_by_model(raw_editor, api, "src/notes.py")
    [answer] = tool_results(api.message_requests[-1].body)
    assert answer["is_error"]
    assert "outside-the-boundary" not in json.dumps([r.body for r in api.message_requests])
    assert await file_rows(raw_editor) == []
