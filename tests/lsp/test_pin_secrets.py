"""A pin follows its file through the same checks as a fresh pin, over a real `ectx serve`:
a pinned buffer that gains a secret (an AWS key typed into it) is neither sent to the model
nor stored; the pin is released and the user is told why. A model's edit of a file that
holds a secret is refused like its read, so nothing of the file is stored either."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ephemeral_context.store import Store
from lsprotocol import types

from tests.fakes.messages_api import FakeMessagesAPI
from tests.lsp.lsp_session import Editor, wait_until

pytestmark = pytest.mark.usefixtures("api_key")

AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"


def stored_texts() -> list[str]:
    """Every text in the server's store (on disk, under EPHEMERAL_CONTEXT_HOME)."""
    with Store(Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store") as store:
        return [store.get(entry.id).text for entry in store.entries()]


async def test_a_pinned_buffer_that_gains_a_secret_is_neither_sent_nor_stored(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    uri = raw_editor.open(workspace / "src" / "app.py")
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    here = types.Position(0, 0)
    typed = f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n'
    since = raw_editor.mark()
    raw_editor.change(uri, [types.TextDocumentContentChangePartial(types.Range(here, here), typed)])
    await raw_editor.usage(since)

    api.add_turns("Seen it.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "Look", "conversationId": "a"})
    assert AWS_KEY not in json.dumps(api.message_requests[-1].body)
    assert not any(AWS_KEY in text for text in stored_texts())
    rows = (await raw_editor.request("ephemeralContext/items")).items
    assert [(r.uri, r.pinned) for r in rows] == [(uri, False)]
    assert any("AWS access key" in m.message for m in raw_editor.client.messages)


async def test_a_pinned_file_the_new_secret_settings_withhold_is_released_at_once(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A `secretPatterns` entry added after the pin: the pin is released when the settings
    arrive, not at the next change of its text, so no conversation (the hosted gateway's
    neither) is shown the file again; the user is told."""
    settings = {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    await raw_editor.initialize("visual_studio_code", workspace, settings)
    uri = raw_editor.open(workspace / "src" / "app.py")
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    raw_editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"ephemeralContext": {**settings, "secretPatterns": ["app.py"]}}
        )
    )
    await wait_until(
        lambda: any("no longer pinned" in m.message for m in raw_editor.client.messages)
    )
    rows = (await raw_editor.request("ephemeralContext/items")).items
    assert [(r.uri, r.pinned) for r in rows] == [(uri, False)]
    (told,) = [m.message for m in raw_editor.client.messages if "no longer pinned" in m.message]
    assert told.startswith("Ephemeral Context: ") and "app.py matches the secret pattern" in told


@pytest.mark.parametrize("open_in_editor", [False, True], ids=["on-disk", "open"])
async def test_a_file_holding_a_secret_is_not_edited_nor_stored(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path, open_in_editor: bool
) -> None:
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    conf = workspace / "conf.py"
    text = f'KEY = "{AWS_KEY}"\n\n\ndef f():\n    return 1\n'
    conf.write_text(text, encoding="utf-8")
    if open_in_editor:
        raw_editor.open(conf)
    edit = {"path": str(conf), "old_string": "return 1", "new_string": "return 2"}
    api.add_turns({"tool_use": [{"name": "edit_file", "input": edit}]}, "Done.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "Edit", "conversationId": "a"})
    result = api.message_requests[-1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "AWS access key" in json.dumps(result)
    assert conf.read_text(encoding="utf-8") == text
    assert not any(AWS_KEY in json.dumps(r.body) for r in api.message_requests)
    assert not any(AWS_KEY in text for text in stored_texts())
