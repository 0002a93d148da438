"""Helpers shared by the pytest-lsp tests: the server command, initialize params, and an
`Editor` that plays the parts of a real editor pytest-lsp leaves out (registerCapability,
applyEdit applied to its own buffers and echoed back as didChange)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument
from pytest_lsp import LanguageClient, client_capabilities

SERVER_COMMAND = [sys.executable, "-m", "ephemeral_context", "serve"]
CLIENTS = ["neovim", "visual_studio_code"]
USAGE = "ephemeralContext/usage"
USAGE_FIELDS = (
    "contextTokens", "budget", "cacheHitRate", "savedTokens", "savedUsd", "breakdown", "lastCall",
)  # fmt: skip

Handler = TypeVar("Handler", bound=Callable[..., Any])


def feature(client: LanguageClient, method: str) -> Callable[[Handler], Handler]:
    """`@client.feature(method)`, typed: pygls leaves the client's decorator unannotated (it
    registers the handler and returns it unchanged)."""
    register: Callable[[Handler], Handler] = client.feature(method)
    return register


def initialize_params(
    client_name: str, workspace: Path, options: dict[str, Any] | None = None
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(client_name),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
        initialization_options=options,
    )


@dataclass
class Editor:
    """The test's editor: buffers with versions, plus everything the server asked of it."""

    client: LanguageClient
    encoding: str = "utf-16"
    buffers: dict[str, TextDocument] = field(default_factory=dict)
    registrations: list[types.Registration] = field(default_factory=list)
    applied: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    notifications: dict[str, list[Any]] = field(default_factory=dict)
    initialize_result: types.InitializeResult | None = None

    def install(self) -> None:
        """Register the client-side handlers; call before `initialize`."""
        client = self.client

        @feature(client, types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @feature(client, types.CLIENT_UNREGISTER_CAPABILITY)
        def unregister(params: types.UnregistrationParams) -> None:
            gone = {u.id for u in params.unregisterations}
            self.registrations[:] = [r for r in self.registrations if r.id not in gone]

        @feature(client, types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.applied.append(params)
            return self._apply(params.edit)

        for method in (USAGE, "ephemeralContext/askProgress"):
            self._record(method)

    def _record(self, method: str) -> None:
        seen = self.notifications.setdefault(method, [])

        @feature(self.client, method)
        def handler(params: Any) -> None:
            seen.append(params)

    async def initialize(
        self, client_name: str, workspace: Path, options: dict[str, Any] | None = None
    ) -> types.InitializeResult:
        self.install()
        result = await self.client.initialize_session(
            initialize_params(client_name, workspace, options)
        )
        self.initialize_result = result
        self.encoding = str(result.capabilities.position_encoding or "utf-16")
        return result

    # ----- buffers ---------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None, language_id: str = "python") -> str:
        uri = path.as_uri()
        source = path.read_text(encoding="utf-8") if text is None else text
        self.buffers[uri] = TextDocument(
            uri, source, version=1, position_codec=PositionCodec(self._kind())
        )
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=source)
            )
        )
        return uri

    def change(self, uri: str, edits: list[types.TextDocumentContentChangeEvent]) -> None:
        buffer = self.buffers[uri]
        for edit in edits:
            buffer.apply_change(edit)
        buffer.version = (buffer.version or 0) + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=buffer.version
                ),
                content_changes=edits,
            )
        )

    def close(self, uri: str) -> None:
        self.buffers.pop(uri)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def _kind(self) -> types.PositionEncodingKind:
        return types.PositionEncodingKind(self.encoding)

    def _apply(self, edit: types.WorkspaceEdit) -> types.ApplyWorkspaceEditResult:
        """Apply like an editor: to open buffers, then tell the server with didChange."""
        per_uri: dict[str, list[types.TextEdit]] = {}
        for change in edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit):
                buffer = self.buffers.get(change.text_document.uri)
                if buffer is None or change.text_document.version not in (None, buffer.version):
                    return types.ApplyWorkspaceEditResult(False, "stale or unknown document")
                per_uri.setdefault(change.text_document.uri, []).extend(
                    e for e in change.edits if isinstance(e, types.TextEdit)
                )
        for uri, edits in (edit.changes or {}).items():
            per_uri.setdefault(uri, []).extend(edits)
        for uri, edits in per_uri.items():
            if uri not in self.buffers:
                return types.ApplyWorkspaceEditResult(False, f"{uri} is not open")
            ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))
            self.change(
                uri,
                [
                    types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                    for e in reversed(ordered)
                ],
            )
        return types.ApplyWorkspaceEditResult(applied=True)

    # ----- waiting -------------------------------------------------------------------------------

    def mark(self, method: str = USAGE) -> int:
        """How many `method` notifications have arrived; take it before the actions a wait
        is about and pass it as `since`."""
        return len(self.notifications.setdefault(method, []))

    async def notified(
        self, method: str, condition: Callable[[Any], bool] | None = None, since: int = 0
    ) -> Any:
        """The first `method` notification from the `since`-th on that meets `condition`
        (any, without one), whether it has arrived already or is still to come."""
        seen = self.notifications.setdefault(method, [])

        def first() -> Any:
            wanted = (p for p in seen[since:] if condition is None or condition(p))
            return next(wanted, None)

        await wait_until(lambda: first() is not None)
        return first()

    async def usage(self, since: int) -> Any:
        """The usage notification that shows the state the actions since `mark()` left.

        Not "the next" one: the throttle (lsp/throttle.py) may send it at once, maybe before
        an answer the test still awaits, or later, folded with other changes. What it
        promises is a send after the last change, computed when sent; requests are answered
        in order, so a status requested now is that state.
        """
        status = await self.request("ephemeralContext/status")
        return await self.notified(USAGE, lambda usage: shows(usage, status), since)

    async def request(self, method: str, params: Any = None) -> Any:
        # pytest-lsp's override of send_request_async is unannotated
        return await self.client.protocol.send_request_async(  # type: ignore[no-untyped-call]
            method, params or {}
        )

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )


def shows(usage: Any, status: Any) -> bool:
    """Whether a usage notification says what a status answer says (status has more)."""
    return all(getattr(usage, name, None) == getattr(status, name, None) for name in USAGE_FIELDS)


async def wait_until(predicate: Callable[[], object]) -> None:
    """Poll a condition driven by incoming messages until it holds.

    No deadline: how long the server takes under load never decides the outcome (pytest's
    timeout in pyproject.toml ends a hang).
    """
    while not predicate():
        await asyncio.sleep(0.01)
