"""Pins follow their files, through the checks a fresh pin passes.

A pin is the user's: the engine shows every pinned file to each conversation as it is now.
The editor's buffer changes on every keystroke, so the text is not pinned again then: only
right before a request (`follow`), and only if it still passes the checks of a model's read
(workspace, secret names and contents, size). A file that no longer passes them (an AWS key
typed into it, a `secretPatterns` entry added since, its folder no longer a workspace folder:
`recheck`) is unpinned instead, so its
new text is neither sent nor stored; the version shown earlier stays hydratable. A pinned
file deleted on disk leaves the context (the model
must not read a file that is gone as if it were there): the user is told which, and the id
that still reads the text last pinned. A pinned definition is shown once, as it was then;
it is released likewise when its file is deleted, or when the file no longer defines it
(renamed or removed: the conversations keep what they were shown). A pinned text never
expires from the store while it is pinned (`follow` renews it). The LSP server and
`ectx` hold no pin state of their own.

API:
- `Pins`: `follow` before a request, `pending_tokens` for the usage estimate,
  `note_document_change` for the mirror's changes (pins released by a deletion), `recheck`
  when the secret settings or the workspace folders change.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ephemeral_context.context.blocks import label_of
from ephemeral_context.context.engine import (
    BlockKind,
    ContextEngine,
    EngineStatus,
    ItemInfo,
    UnknownItem,
)
from ephemeral_context.documents import Document, DocumentChange, DocumentMirror
from ephemeral_context.model.secrets import AccessDenied
from ephemeral_context.model.tools import ToolEnv


@dataclass
class PinnedSymbol:
    """One pinned definition: the id of the file's text it was pinned from (what stays
    readable once the pin is released), and the hash of the text last found to define it."""

    item_id: str
    checked: str


@dataclass
class Pins:
    """The pinned files' last pinned texts (by hash), over one engine."""

    engine: ContextEngine
    _hashes: dict[str, str] = field(default_factory=dict)
    _ids: dict[str, str] = field(default_factory=dict)
    """Per URI: the id of the text last pinned (what a deletion leaves readable)."""
    _symbols: dict[str, dict[str, PinnedSymbol]] = field(default_factory=dict)
    """Per URI: its pinned definitions, by the name they were pinned as."""
    _counted: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Per URI: the hash of the text last counted, and its tokens."""

    def pin(self, env: ToolEnv, uri: str, symbol: str | None = None) -> ItemInfo:
        """Pin the file (or one definition of it) as the editor holds it now; AccessDenied
        when a model's read would be refused, UnknownItem for an unknown symbol."""
        document = env.readable(uri)
        if symbol is None:
            self._check_fits(document)
        item = self.engine.pin(document.uri, document.text, version=document.version, symbol=symbol)
        if symbol is None:
            self._hashes[document.uri] = document.hash
            self._ids[document.uri] = item.id
        else:
            pinned = PinnedSymbol(item.id, document.hash)
            self._symbols.setdefault(document.uri, {})[symbol] = pinned
        return item

    def _check_fits(self, document: Document) -> None:
        """AccessDenied ("too-large") when whole pins would take more than half the context
        budget with this one: a pin goes whole into every request and is never evicted, so
        pins past the budget made every request one the API refuses (a 31,921-token pin
        under a 20K budget: 35K requests)."""
        tokens = self.engine.count_tokens(document.text, "code")
        others = sum(
            i.tokens
            for i in self.engine.items()
            if i.pinned and not (i.uri == document.uri and i.kind == BlockKind.FILE)
        )
        share = self.engine.config.context_budget // 2
        if others + tokens > share:
            raise AccessDenied(
                f"{label_of(document.uri)} is too large to pin: {tokens:,} tokens, "
                f"{others + tokens:,} with the other pins, where pins may take {share:,} "
                "(half the context budget)",
                "too-large",
            )

    def note_document_change(self, change: DocumentChange) -> list[str]:
        """Pass an outside change to the engine; when it deleted a pinned file (or one
        with pinned definitions), which the engine then takes out of the context, one
        sentence per pin released, to tell the user."""
        uri = change.uri
        deleted = change.reason == "disk" and change.new_hash is None
        whole = deleted and uri in self.engine.pinned_files()
        symbols = self._symbols.pop(uri, {}) if deleted and uri in self._pinned() else {}
        self.engine.note_document_change(change)
        if not deleted:
            return []
        self._hashes.pop(uri, None)
        item_id = self._ids.pop(uri, None)
        gone = f"{label_of(uri)} was deleted on disk and"
        released = [f"{gone} is no longer pinned{_kept(item_id)}"] if whole else []
        released += [
            f"{gone} its definition {symbol} is no longer pinned{_kept(pinned.item_id)}"
            for symbol, pinned in symbols.items()
        ]
        return released

    def _pinned(self) -> set[str]:
        """URIs the engine holds pinned now, whole or by a definition."""
        return {i.uri for i in self.engine.items() if i.pinned and i.uri is not None}

    def changed(self, mirror: DocumentMirror) -> dict[str, Document]:
        """Whole-file pins whose text changed since they were pinned (nothing is read from
        disk that the mirror does not hold already, and nothing is sent). The files of
        pinned definitions are looked at too, so a deletion is noticed as a whole pin's."""
        for uri in list(self._symbols):
            mirror.get(uri)  # gone: the mirror's change releases its pins
        changed = {}
        for uri in self.engine.pinned_files():
            document = mirror.get(uri)
            if isinstance(document, Document) and self._hashes.get(uri) != document.hash:
                changed[uri] = document
        return changed

    def recheck(self, env: ToolEnv) -> list[str]:
        """The user's secret settings or workspace folders changed (`env` has the new ones):
        each pinned file, whole or by a definition, passes a model's read checks again now,
        and one they withhold (or a folder removed leaves outside) is unpinned, in every
        conversation (the hosted gateway's too); returns one sentence per file released. A
        pin refused for another reason (a buffer out of sync, a file gone) is `follow`'s."""
        released = []
        for uri in sorted(self._pinned()):
            try:
                env.readable(uri)
            except AccessDenied as exc:
                if exc.reason in ("secret", "outsideWorkspace"):
                    released.append(self._release(uri, exc))
        return released

    def _release(self, uri: str, why: AccessDenied) -> str:
        """Unpin a file (whole, and its definitions) that no longer passes the checks; the
        sentence that says so."""
        self.engine.unpin(uri)
        self._symbols.pop(uri, None)
        self._hashes.pop(uri, None)
        self._ids.pop(uri, None)
        return f"{label_of(uri)} is no longer pinned: {why}"

    def follow(self, env: ToolEnv) -> list[str]:
        """Right before a request: pin each changed file again as it is now, or unpin it
        when it no longer passes the checks, and release each pinned definition its file
        no longer has; returns one sentence per pin released."""
        released = self._follow_symbols(env.mirror)
        for uri in self.changed(env.mirror):
            try:
                self.pin(env, uri)
            except AccessDenied as exc:
                released.append(self._release(uri, exc))
        self._keep_stored(env.mirror)
        return released

    def _keep_stored(self, mirror: DocumentMirror) -> None:
        """Each unchanged whole pin's text put in the store again (the same id, its hash's
        prefix; its expiry renewed, its blob written back if gc took it). The store forgets
        a text unread for its TTL, and a pinned text is read only when a conversation first
        shows it: a pin a week old would fail the next new conversation's request."""
        for uri in self.engine.pinned_files():
            document = mirror.get(uri)
            if isinstance(document, Document) and self._hashes.get(uri) == document.hash:
                self.engine.store.put(document.text, uri=uri, version=document.version)

    def _follow_symbols(self, mirror: DocumentMirror) -> list[str]:
        """Release the pinned definitions their files no longer have (the text they were
        pinned from stays readable by id); a file left with no pin is unpinned."""
        released = []
        pinned = self._pinned()
        for uri in list(self._symbols):
            document = mirror.get(uri)  # a deletion releases the file's pins itself
            symbols = self._symbols.get(uri)
            if symbols is None or not isinstance(document, Document):
                continue
            if uri not in pinned:  # unpinned or dropped since
                del self._symbols[uri]
                continue
            for symbol, pin in list(symbols.items()):
                if pin.checked == document.hash:
                    continue
                try:
                    self.engine.definition(uri, document.text, symbol)
                except UnknownItem as exc:
                    del symbols[symbol]
                    released.append(f"{symbol} is no longer pinned ({exc}){_kept(pin.item_id)}")
                else:
                    pin.checked = document.hash
            if not symbols:
                del self._symbols[uri]
                if uri not in self.engine.pinned_files():
                    self.engine.unpin(uri)
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


def _kept(item_id: str | None) -> str:
    """The end of a release sentence: the id that still reads the text last pinned."""
    if item_id is None:
        return ""
    return f"; the text last pinned stays readable by id {item_id} (ectx store get {item_id})"
