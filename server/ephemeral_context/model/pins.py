"""Pins follow their files, through the checks a fresh pin passes.

A pin is the user's: the engine shows every pinned file to each conversation as it is now.
The editor's buffer changes on every keystroke, so the text is not pinned again then: only
right before a request (`follow`), and only if it still passes the checks of a model's read
(workspace, secret names and contents, size). A file that no longer passes them (an AWS key
typed into it) is unpinned instead, so its new text is neither sent nor stored; the version
shown earlier stays hydratable. A pinned file deleted on disk leaves the context (the model
must not read a file that is gone as if it were there): the user is told which, and the id
that still reads the text last pinned. The LSP server and `ectx` hold no pin state of their
own.

API:
- `Pins`: `follow` before a request, `pending_tokens` for the usage estimate,
  `note_document_change` for the mirror's changes (a pin released by a deletion).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ephemeral_context.context.blocks import label_of
from ephemeral_context.context.engine import BlockKind, ContextEngine, EngineStatus, ItemInfo
from ephemeral_context.documents import Document, DocumentChange, DocumentMirror
from ephemeral_context.model.secrets import AccessDenied
from ephemeral_context.model.tools import ToolEnv


@dataclass
class Pins:
    """The pinned files' last pinned texts (by hash), over one engine."""

    engine: ContextEngine
    _hashes: dict[str, str] = field(default_factory=dict)
    _ids: dict[str, str] = field(default_factory=dict)
    """Per URI: the id of the text last pinned (what a deletion leaves readable)."""
    _counted: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Per URI: the hash of the text last counted, and its tokens."""

    def pin(self, env: ToolEnv, uri: str, symbol: str | None = None) -> ItemInfo:
        """Pin the file (or one definition of it) as the editor holds it now; AccessDenied
        when a model's read would be refused, UnknownItem for an unknown symbol."""
        document = env.readable(uri)
        item = self.engine.pin(document.uri, document.text, version=document.version, symbol=symbol)
        if symbol is None:
            self._hashes[document.uri] = document.hash
            self._ids[document.uri] = item.id
        return item

    def note_document_change(self, change: DocumentChange) -> str | None:
        """Pass an outside change to the engine; when it deleted a pinned file, which the
        engine then takes out of the context, the sentence that tells the user."""
        deleted = change.reason == "disk" and change.new_hash is None
        released = deleted and change.uri in self.engine.pinned_files()
        self.engine.note_document_change(change)
        if not released:
            return None
        self._hashes.pop(change.uri, None)
        item_id = self._ids.pop(change.uri, None)
        kept = (
            f"; the text last pinned stays readable by id {item_id} (ectx store get {item_id})"
            if item_id is not None
            else ""
        )
        return f"{label_of(change.uri)} was deleted on disk and is no longer pinned{kept}"

    def changed(self, mirror: DocumentMirror) -> dict[str, Document]:
        """Whole-file pins whose text changed since they were pinned (nothing is read from
        disk that the mirror does not hold already, and nothing is sent)."""
        changed = {}
        for uri in self.engine.pinned_files():
            document = mirror.get(uri)
            if isinstance(document, Document) and self._hashes.get(uri) != document.hash:
                changed[uri] = document
        return changed

    def follow(self, env: ToolEnv) -> list[str]:
        """Right before a request: pin each changed file again as it is now, or unpin it
        when it no longer passes the checks; returns one sentence per pin released."""
        released = []
        for uri in self.changed(env.mirror):
            try:
                self.pin(env, uri)
            except AccessDenied as exc:
                self.engine.unpin(uri)
                self._hashes.pop(uri, None)
                self._ids.pop(uri, None)
                released.append(f"{label_of(uri)} is no longer pinned: {exc}")
        return released

    def status(self, mirror: DocumentMirror) -> EngineStatus:
        """The engine's numbers, each changed pin counted as the next ask will pin it."""
        return self.engine.status(pending_pins=self.pending_tokens(mirror))

    def items(self, mirror: DocumentMirror) -> list[ItemInfo]:
        """The Context view's rows; a changed pin's row shows the buffer (its version and
        tokens) as the next ask will pin it."""
        changed, tokens = self.changed(mirror), self.pending_tokens(mirror)
        return [
            replace(i, version=changed[i.uri].version, tokens=tokens[i.uri])
            if i.uri in changed and i.pinned and i.kind == BlockKind.FILE
            else i
            for i in self.engine.items()
        ]

    def pending_tokens(self, mirror: DocumentMirror) -> dict[str, int]:
        """Tokens of each changed pin's new text, for the status numbers while typing;
        counted once per text, as pinning it would count them (the checks run at `follow`)."""
        pending = {}
        for uri, document in self.changed(mirror).items():
            counted, tokens = self._counted.get(uri, ("", 0))
            if counted != document.hash:
                tokens = self.engine.count_tokens(document.text, "code")
                self._counted[uri] = (document.hash, tokens)
            pending[uri] = tokens
        return pending
