"""What a Context view and a status bar see, over a real `ectx serve`: contextTokens moves
when a file is pinned and when the pinned buffer is edited, labels are workspace-relative,
one row per file whose pin survives an ask that edits it, a drop removes the row, and a
pinned buffer's typed versions reach the store only when an ask shows one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ephemeral_context.store import Store
from lsprotocol import types

from tests.fakes.conversation import read_file_turn
from tests.fakes.messages_api import FakeMessagesAPI
from tests.lsp.lsp_session import Editor

pytestmark = pytest.mark.usefixtures("api_key")


def insert(line: int, text: str) -> types.TextDocumentContentChangePartial:
    here = types.Position(line, 0)
    return types.TextDocumentContentChangePartial(range=types.Range(here, here), text=text)


async def test_context_tokens_follow_pins_and_edits(editor: Editor, workspace: Path) -> None:
    since = editor.mark()
    uri = editor.open(workspace / "src" / "app.py")
    assert (await editor.usage(since)).contextTokens == 0

    pinned = await editor.request("ephemeralContext/pin", {"uri": uri})
    assert pinned.item.label == "src/app.py"
    after_pin = (await editor.request("ephemeralContext/status")).contextTokens
    assert after_pin == pinned.item.tokens > 0

    since = editor.mark()
    editor.change(uri, [insert(0, "# a longer comment typed into the pinned buffer\n")])
    assert (await editor.usage(since)).contextTokens > after_pin  # what the status bar shows
    rows = (await editor.request("ephemeralContext/items")).items
    assert [(r.label, r.version, r.pinned) for r in rows] == [("src/app.py", 2, True)]

    dropped = await editor.request("ephemeralContext/drop", {"uri": uri})
    assert dropped.dropped
    assert (await editor.request("ephemeralContext/items")).items == []
    assert (await editor.request("ephemeralContext/status")).contextTokens == 0
    kept = await editor.request("ephemeralContext/hydrate", {"id": pinned.item.id})
    assert "def run(self)" in kept.text  # what was shown stays retrievable by id


async def test_pin_survives_an_ask_that_edits_the_file(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    uri = raw_editor.open(workspace / "src" / "app.py")
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    edit = {"path": "src/app.py", "old_string": "def run(self)", "new_string": "def start(self)"}
    api.add_turns(
        read_file_turn("src/app.py"),
        {"tool_use": [{"name": "edit_file", "input": edit}]},
        "Renamed.",
    )
    await raw_editor.request(
        "ephemeralContext/ask", {"prompt": "Rename run", "conversationId": "a"}
    )
    rows = (await raw_editor.request("ephemeralContext/items")).items
    files = [r for r in rows if r.kind == "file"]
    assert [(r.uri, r.state, r.pinned) for r in files] == [(uri, "full", True)]
    assert (await raw_editor.request("ephemeralContext/unpin", {"uri": uri})).item.pinned is False

    # a pin is the user's: a new conversation shows the pinned file as the buffer is now
    await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    since = raw_editor.mark()
    raw_editor.change(uri, [insert(0, "# typed after the ask\n")])
    await raw_editor.usage(since)
    api.add_turns("Seen it.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "Look", "conversationId": "b"})
    body = json.dumps(api.message_requests[-1].body)
    assert "# typed after the ask" in body and body.count("def start(self)") == 1


def stored_versions(uri: str) -> list[int | None]:
    """Versions of `uri` in the server's store (on disk, under EPHEMERAL_CONTEXT_HOME)."""
    with Store(Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store") as store:
        return [e.version for e in store.entries() if e.uri == uri]


async def test_typing_into_a_pin_stores_nothing_until_an_ask(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    uri = raw_editor.open(workspace / "src" / "app.py")
    since = raw_editor.mark()
    pinned = await raw_editor.request("ephemeralContext/pin", {"uri": uri})
    assert stored_versions(uri) == [1]

    tokens = [(await raw_editor.usage(since)).contextTokens]
    for n in range(3):
        since = raw_editor.mark()
        raw_editor.change(uri, [insert(0, f"# typed line {n} of a longer comment\n")])
        tokens.append((await raw_editor.usage(since)).contextTokens)
    assert tokens == sorted(set(tokens)) and tokens[0] == pinned.item.tokens
    rows = (await raw_editor.request("ephemeralContext/items")).items
    assert [(r.version, r.tokens) for r in rows] == [(4, tokens[-1])]
    assert stored_versions(uri) == [1]  # shown to nobody yet

    api.add_turns("Seen it.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "Look", "conversationId": "a"})
    assert stored_versions(uri) == [1, 4]
    assert "# typed line 2" in json.dumps(api.message_requests[-1].body)


@pytest.mark.parametrize(
    ("symbol", "asked_first", "watched"),
    [
        (None, False, True),
        (None, True, True),
        (None, False, False),
        ("App.run", True, True),
        ("App.run", True, False),
    ],
    ids=["pinned-only", "seen-by-an-ask", "no-watcher-event", "symbol", "symbol-no-watcher-event"],
)
async def test_a_file_deleted_on_disk_leaves_items_and_totals(
    raw_editor: Editor,
    api: FakeMessagesAPI,
    workspace: Path,
    symbol: str | None,
    asked_first: bool,
    watched: bool,
) -> None:
    """A pinned file (not open in the editor), or a pinned definition of it, is deleted;
    the watched-file event (or, from a client that sends none, the next status) takes it
    out of items and its tokens out of the totals, whether or not a model has seen it, and
    the editor is warned once, naming the file (the definition) and the id that still
    reads the text last pinned; what a conversation was shown stays, with a note."""
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    path = workspace / "src" / "app.py"

    async def look() -> None:
        api.add_turns("Seen.")
        await raw_editor.request("ephemeralContext/ask", {"prompt": "look", "conversationId": "d"})

    if symbol is not None:  # a definition goes to the conversations there are
        await look()
    params = {"uri": path.as_uri()} | ({"symbol": symbol} if symbol else {})
    pinned = await raw_editor.request("ephemeralContext/pin", params)
    if asked_first and symbol is None:
        await look()
    state = "full" if symbol is None else "partial"
    before = await raw_editor.request("ephemeralContext/status")
    assert getattr(before.breakdown, state) == pinned.item.tokens > 0
    warnings = len(raw_editor.client.messages)
    path.unlink()
    if watched:
        raw_editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Deleted)]
            )
        )
    status = await raw_editor.request("ephemeralContext/status")
    assert (await raw_editor.request("ephemeralContext/items")).items == []
    assert status.items == 0 and getattr(status.breakdown, state) == 0
    if not asked_first:
        assert status.contextTokens == before.contextTokens - pinned.item.tokens == 0
    [warning] = raw_editor.client.messages[warnings:]  # sent before the answers above
    assert warning.type == types.MessageType.Warning
    released = "" if symbol is None else f" its definition {symbol}"
    assert f"{path} was deleted on disk and{released} is no longer pinned" in warning.message
    assert f"readable by id {pinned.item.id}" in warning.message
    api.add_turns("Gone.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "and now?", "conversationId": "d"})
    sent = json.dumps(api.message_requests[-1].body)
    if asked_first:  # what the model was shown stays in its thread; a note says it is gone
        assert "app.py was deleted" in sent
    else:
        assert "return os.getcwd()" not in sent
    if symbol is not None:
        assert f"app.py::{symbol} (lines 5-6)" in sent
    kept = await raw_editor.request("ephemeralContext/hydrate", {"id": pinned.item.id})
    assert "def run(self)" in kept.text  # what was shown stays retrievable by id
    assert len(raw_editor.client.messages) == warnings + 1  # said once


async def test_a_pinned_definition_renamed_in_the_buffer_is_released_at_the_next_ask(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The file stays, its pinned definition does not: the next ask warns once, naming the
    definition, what the file has instead and the id of the text it was pinned from; the
    file is unpinned, the conversation keeps what it was shown, the store the text."""
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    uri = raw_editor.open(workspace / "src" / "app.py")
    api.add_turns("Hello.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "hi", "conversationId": "d"})
    pinned = await raw_editor.request("ephemeralContext/pin", {"uri": uri, "symbol": "App.run"})
    warnings = len(raw_editor.client.messages)
    since = raw_editor.mark()
    raw_editor.change(uri, [insert(4, "    def start(self) -> None:\n        pass\n\n")])
    await raw_editor.usage(since)
    api.add_turns("Still there.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "more", "conversationId": "d"})
    assert len(raw_editor.client.messages) == warnings  # still defined: nothing to say
    since = raw_editor.mark()
    start = types.Position(7, len("    def run"))
    raw_editor.change(
        uri, [types.TextDocumentContentChangePartial(types.Range(start, start), "_all")]
    )
    await raw_editor.usage(since)
    api.add_turns("Renamed.", "Again.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "and now?", "conversationId": "d"})
    await raw_editor.request("ephemeralContext/ask", {"prompt": "again", "conversationId": "d"})
    [warning] = raw_editor.client.messages[warnings:]  # said once
    assert warning.type == types.MessageType.Warning
    assert warning.message.startswith("Ephemeral Context: App.run is no longer pinned")
    assert "did you mean App.run_all," in warning.message
    assert f"readable by id {pinned.item.id}" in warning.message
    rows = (await raw_editor.request("ephemeralContext/items")).items
    assert [(r.uri, r.pinned) for r in rows if r.kind == "file"] == [(uri, False)]
    sent = json.dumps(api.message_requests[-1].body)
    assert "app.py::App.run (lines 5-6)" in sent and "def run_all" not in sent
    with Store(Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store") as store:
        assert "def run(self)" in store.get(pinned.item.id).text


async def test_a_pinned_definition_stays_one_when_the_model_reads_its_file(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """A model's read of the whole file records a newer version: the pin stays a pin of
    the definition, so another conversation is not shown the whole file."""
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    uri = raw_editor.open(workspace / "src" / "app.py")
    api.add_turns("Hello.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "hi", "conversationId": "a"})
    await raw_editor.request("ephemeralContext/pin", {"uri": uri, "symbol": "App.run"})
    since = raw_editor.mark()
    raw_editor.change(uri, [insert(0, "# typed into the buffer\n")])  # a version not pinned
    await raw_editor.usage(since)
    api.add_turns(read_file_turn("src/app.py"), "Read it.", "Seen.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "read", "conversationId": "a"})
    [row] = [r for r in (await raw_editor.request("ephemeralContext/items")).items if r.uri == uri]
    assert row.pinned
    await raw_editor.request("ephemeralContext/ask", {"prompt": "look", "conversationId": "b"})
    assert "# typed into the buffer" not in json.dumps(api.message_requests[-1].body)


COMPONENT = """<template>
  <button @click="increment(1)">{{ count }}</button>
</template>

<script setup lang="ts">
import { ref } from 'vue';

const count = ref(0);

function increment(step: number): void {
  count.value += step;
}
</script>
"""


async def test_a_vue_components_definition_is_pinned_and_sent_alone(
    raw_editor: Editor, api: FakeMessagesAPI, workspace: Path
) -> None:
    """The server outlines a component by its script, at the component's own lines, and
    follows the buffer's edits: a definition added in the editor is pinned, and the model
    is sent that definition, not the template around it."""
    await raw_editor.initialize(
        "visual_studio_code", workspace, {"apiBaseUrl": api.base_url, "model": "claude-sonnet-4-6"}
    )
    path = workspace / "src" / "Counter.vue"
    path.write_text(COMPONENT, encoding="utf-8")
    since = raw_editor.mark()
    uri = raw_editor.open(path, COMPONENT, language_id="vue")
    await raw_editor.usage(since)
    since = raw_editor.mark()
    raw_editor.change(uri, [insert(12, "\nfunction reset(): void {\n  count.value = 0;\n}\n")])
    await raw_editor.usage(since)
    api.add_turns("Hello.", "Seen.")
    await raw_editor.request("ephemeralContext/ask", {"prompt": "hi", "conversationId": "v"})
    await raw_editor.request("ephemeralContext/pin", {"uri": uri, "symbol": "reset"})
    await raw_editor.request("ephemeralContext/ask", {"prompt": "look", "conversationId": "v"})
    sent = json.dumps(api.message_requests[-1].body)
    assert "Counter.vue::reset (lines 14-16)" in sent
    assert "count.value = 0;" in sent
    assert "<button" not in sent and "count.value += step" not in sent
