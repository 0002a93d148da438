"""The EditApplier for an attached editor: `edit_file` calls become `workspace/applyEdit`.

An edit to a document open in the editor goes through the editor, so it lands in the buffer
(unsaved, undoable) and comes back to the mirror as an ordinary didChange. A file that is
not open is written on disk (model/edits.py), because an edit the editor applies to a
buffer nobody sees would leave the disk and the mirror disagreeing. After the client says
it applied the edit, the applier waits (briefly) for that didChange, so the model's next
read sees the new text.

API:
- `ClientEditApplier(server, mirror).apply(path, old, new)`: the model's edit, through the client's
  buffer when the file is open there, else on disk.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ephemeral_context.documents import (
    Document,
    DocumentChange,
    DocumentMirror,
    content_hash,
    path_to_uri,
    utf8,
)
from ephemeral_context.lsp import converters
from ephemeral_context.model.edits import (
    DiskEditApplier,
    EditError,
    EditOutcome,
    plan_edit,
)

log = logging.getLogger(__name__)

ECHO_TIMEOUT_S = 5.0


class ClientEditApplier:
    """Applies replacements through the client when the file is open there, else on disk."""

    def __init__(self, server: LanguageServer, mirror: DocumentMirror) -> None:
        self._server = server
        self._mirror = mirror
        self._disk = DiskEditApplier()
        self.own_hashes: set[str] = set()
        """Hashes of texts our own edits produce: their didChange is not an outside change."""

    async def apply(self, path: Path, old: str, new: str) -> EditOutcome:
        uri = path_to_uri(path)
        current = self._mirror.get(uri)
        if not (self._mirror.is_open(uri) and isinstance(current, Document)):
            return await self._disk.apply(path, old, new)
        try:
            plan = plan_edit(current.text, old, new)
        except EditError as exc:
            return EditOutcome(False, str(exc))
        where, replacement = current.client_edit(plan.start, plan.end, plan.replacement)
        edit = types.TextEdit(
            range=converters.from_range(where.start, where.end), new_text=replacement
        )
        expected = content_hash(utf8(plan.new_text))
        self.own_hashes.add(expected)
        echoed = self._await_text(current.uri, expected)
        try:
            result = await self._server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(
                    edit=self._workspace_edit(current, edit),
                    label="Ephemeral Context: edit_file",
                )
            )
        except Exception as exc:
            echoed.cancel()
            self.own_hashes.discard(expected)
            return EditOutcome(False, f"the editor could not apply the edit: {exc}")
        if not result.applied:
            echoed.cancel()
            self.own_hashes.discard(expected)
            reason = result.failure_reason or "no reason given"
            return EditOutcome(False, f"the editor refused the edit: {reason}")
        try:
            await asyncio.wait_for(echoed, ECHO_TIMEOUT_S)
        except TimeoutError:
            log.warning("no didChange for %s after applyEdit; the mirror may lag", uri)
        return EditOutcome(True, "edited in the editor", plan.new_text)

    def _workspace_edit(self, document: Document, edit: types.TextEdit) -> types.WorkspaceEdit:
        """Versioned documentChanges when the client takes them, so a stale edit is refused;
        named by the buffer's URI (the mirror keys the file by its real path)."""
        uri = self._mirror.editor_uri(document.uri)
        workspace = self._server.client_capabilities.workspace
        edit_caps = workspace.workspace_edit if workspace else None
        if edit_caps and edit_caps.document_changes:
            identifier = types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=document.version
            )
            return types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=identifier, edits=[edit])]
            )
        return types.WorkspaceEdit(changes={uri: [edit]})

    def _await_text(self, uri: str, expected_hash: str) -> asyncio.Future[None]:
        """A future that resolves when the mirror holds `expected_hash` for `uri`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def listener(change: DocumentChange) -> None:
            if change.uri == uri and change.new_hash == expected_hash and not future.done():
                future.set_result(None)

        unsubscribe = self._mirror.subscribe(listener)
        future.add_done_callback(lambda _: unsubscribe())
        return future
