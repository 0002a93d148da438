"""The language server: builds the one `SERVER` object and attaches every feature to it.

Handlers are thin adapters (docs/protocol.md is their specification): they look up the
state on the server object passed in as `ls`, call one function of the core (documents.py,
context/, model/, replay/), convert the result with converters.py and return it. Nothing
here prints to stdout, which is the protocol channel.

API:
- `SERVER` (an `EphemeralContextServer`): every handler registered on it; a request and its
  `ectx.*` command through `request_and_command(method)`.
- `serve(server, tcp=None, ...)`: run over stdio, or TCP at `tcp` (lsp/transport.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import logging
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
)
from pygls.lsp.server import LanguageServer

from ephemeral_context import __version__
from ephemeral_context.context.engine import (
    ContextEngine,
    EngineConfig,
    LedgerLimits,
    UnknownItem,
)
from ephemeral_context.documents import (
    DocumentChange,
    DocumentMirror,
    OutOfSync,
    followed_path,
    path_to_uri,
    real_path,
    uri_to_path,
)
from ephemeral_context.lsp import converters
from ephemeral_context.lsp.apply_edit import ClientEditApplier
from ephemeral_context.lsp.options import (
    CONFIGURATION_SECTION,
    Options,
    merge_settings,
    parse_options,
)
from ephemeral_context.lsp.protocol import (
    ASK,
    ASK_PROGRESS,
    DROP,
    HYDRATE,
    ITEMS,
    OPTIONAL_EMPTY,
    PIN,
    REPLAY,
    REQUESTS,
    STATUS,
    UNPIN,
    USAGE,
    AskParams,
    AskProgressKind,
    AskProgressParams,
    AskResult,
    DropParams,
    DropResult,
    EmptyParams,
    EphemeralContextProtocol,
    HydrateParams,
    HydrateResult,
    ItemsResult,
    PinParams,
    PinResult,
    ReplayParams,
    StatusResult,
)
from ephemeral_context.lsp.throttle import Throttle
from ephemeral_context.lsp.transport import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    FramedReader,
    serve_stdio,
    serve_tcp,
    stdin_receiver,
)
from ephemeral_context.model.edits import DiskEditApplier
from ephemeral_context.model.pins import Pins
from ephemeral_context.model.secrets import AccessDenied, Workspace
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.prices import priced
from ephemeral_context.replay.report import discover, to_json
from ephemeral_context.replay.report import replay as replay_report
from ephemeral_context.store import (
    ExpiredId,
    InvalidId,
    OffsetPastEnd,
    Store,
    StoreDown,
    StoreError,
    UnknownId,
    data_dir,
)

if TYPE_CHECKING:
    from pygls.server import ServerErrors

    from ephemeral_context.gateway import Gateway
    from ephemeral_context.model.agent import AgentEvents, SubagentEvent
    from ephemeral_context.model.session import AskSession

log = logging.getLogger(__name__)

WATCHER_REGISTRATION_ID = "ephemeralContext/watchedFiles"
REQUEST_FAILED = types.LSPErrorCodes.RequestFailed.value
COMMAND_PREFIX = "ectx."

Handler = TypeVar("Handler", bound=Callable[..., Any])


class EphemeralContextServer(LanguageServer):
    """The server object: per-session state lives here, never in module globals."""

    options: Options
    mirror: DocumentMirror
    usage_throttle: Throttle
    store: Store | None
    engine: ContextEngine | None
    applier: ClientEditApplier
    asks: AskSession | None

    def __init__(self) -> None:
        super().__init__(
            "ephemeral-context",
            __version__,
            protocol_cls=EphemeralContextProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.options = Options()
        self.initialization_settings: dict[str, Any] = {}
        self.usage_throttle = Throttle(self.send_usage, self.options.usage_throttle_ms / 1000)
        self.store = None
        self.engine = None
        self.pins: Pins | None = None
        self.asks = None
        self.conversation_locks: dict[str, asyncio.Lock] = {}
        self.watching = False
        """Whether the client accepted our didChangeWatchedFiles registration."""
        self.watch_lock = asyncio.Lock()
        """Registering and re-registering the watcher one at a time: a folder change that
        arrives while the first registration is in flight waits for it, then replaces it."""
        self.last_output_tokens = 0
        """Output tokens of the last model call (the engine records the input side)."""
        self.gateway_port: int | None = None
        """`ectx serve --gateway PORT`: host `ectx gateway` over this server's engine."""
        self.gateway: Gateway | None = None
        self.hosting = False
        """`initialized` ran: the hosted gateway starts once there is an engine for it (a
        store busy then is opened by a later request, which starts it)."""
        self.gateway_start: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop serving the client (set at initialize), for warnings that come
        from a worker thread."""
        self.shut_down = False
        """Whether the client sent `shutdown`: `exit` then ends the process with 0, else 1."""
        self.attach_mirror(DocumentMirror())
        self.rpc.rejected_change = self.lost_edit

    @property
    def rpc(self) -> EphemeralContextProtocol:
        """The protocol object, typed as ours (pygls types it as its base class)."""
        protocol = self.protocol
        assert isinstance(protocol, EphemeralContextProtocol)
        return protocol

    def request_and_command(self, method: str) -> Callable[[Handler], Handler]:
        """Register a handler for an `ephemeralContext/*` request and as its `ectx.*` command
        (`ephemeralContext/pin` and `ectx.pin`), for clients that cannot send custom requests.

        A command takes the request's params object as its one argument (pygls structures
        it from the handler's annotation, through the same type checks), and no argument
        for a request without params. Both answer a busy store as RequestFailed
        (`answers_store_down`)."""
        command = COMMAND_PREFIX + method.split("/", 1)[1]
        takes_params = REQUESTS[method][0] != OPTIONAL_EMPTY

        def register(handler: Handler) -> Handler:
            answering = answers_store_down(handler)
            self.feature(method)(answering)
            if takes_params:
                self.command(command)(answering)
            else:

                def without_params(ls: EphemeralContextServer) -> Any:
                    return answering(ls, None)

                self.command(command)(without_params)
            return answering

        return register

    # ----- state --------------------------------------------------------------------------

    def attach_mirror(self, mirror: DocumentMirror) -> None:
        """A new mirror (one per session, in the negotiated encoding) wired to the engine."""
        self.mirror = mirror
        self.applier = ClientEditApplier(self, mirror)
        mirror.subscribe(self._on_document_change)

    def _on_document_change(self, change: DocumentChange) -> None:
        """Outside changes become notes for the model; the echo of its own edits does not."""
        if change.new_hash is not None and change.new_hash in self.applier.own_hashes:
            self.applier.own_hashes.discard(change.new_hash)
            return
        if self.pins is not None:
            for released in self.pins.note_document_change(change):
                self.warn(f"Ephemeral Context: {released}")

    def warn(self, text: str) -> None:
        """Tell the user (window/showMessage) and the log. A change the mirror finds while
        a worker thread reads (a search) comes from that thread: the loop sends it."""
        log.warning(text)
        params = types.ShowMessageParams(types.MessageType.Warning, text)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.window_show_message, params)
            return
        self.window_show_message(params)

    def lost_edit(self, uri: str | None, problem: str) -> None:
        """A didChange that could not be read or applied: the mirror stops trusting the
        document (every open one when the change did not say which), and the user hears
        how to resynchronise."""
        uris = [uri] if uri is not None else self.mirror.open_uris()
        if not uris:
            return
        for each in uris:
            self.mirror.desync(each, problem)
        target, files = (uri, "the file") if uri else (f"one of {', '.join(uris)}", "them")
        text = (
            f"Ephemeral Context: an edit to {target} could not be applied ({problem}); "
            f"close and reopen {files} so the server sees the text again"
        )
        self.warn(text)
        self.usage_throttle.poke()

    def apply_options(self, raw: object, origin: str) -> None:
        """Take new settings; invalid ones fall back to the defaults and tell the user why."""
        options, problem = parse_options(raw)
        if problem is not None:
            text = f"Ephemeral Context: invalid {origin}, using the defaults: {problem}"
            self.warn(text)
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, text))
        old = self.options
        self.options = options
        secrets = (options.secret_patterns, options.allow_secret_files)
        if self.pins is not None and secrets != (old.secret_patterns, old.allow_secret_files):
            for released in self.pins.recheck(self.tool_env()):  # withheld now: unpinned
                self.warn(f"Ephemeral Context: {released}")
        self.mirror.set_max_bytes(options.limits.max_file_bytes)
        self.usage_throttle.interval_s = options.usage_throttle_ms / 1000
        moved = options.data_directory != old.data_directory
        if self.engine is None or (moved and self.engine.empty()):
            try:
                self.open_store()
            except StoreDown as exc:  # a notification, or initialize: the session goes on
                self.warn(f"Ephemeral Context: {exc} (the next request that needs it opens it)")
        else:
            if moved and self.store is not None:  # what it holds stays where it was recorded
                whose = "this session's context" + (
                    " (the hosted gateway's too)" if self.gateway is not None else ""
                )
                self.warn(
                    "Ephemeral Context: dataDirectory takes effect when the server restarts: "
                    f"{whose} is in {self.store.root}"
                )
            self.engine.config = engine_config(options)

    def open_store(self) -> None:
        """The store and the engine over it, where the settings say. StoreDown when it cannot
        serve (another process holds it locked; a read-only or full disk): there is then no
        engine until a request opens it (`require_pins`); the one replaced was empty, so
        nothing recorded is lost."""
        if self.store is not None:
            self.store.close()
        self.store, self.engine, self.pins = None, None, None
        self.store = Store(self.data_root() / "store")
        self.engine = ContextEngine(self.store, engine_config(self.options))
        self.pins = Pins(self.engine)
        self.host_gateway()

    def host_gateway(self, announce: bool = True) -> None:
        """The hosted gateway (`--gateway`) serves from the engine there is now: started
        once with the first one after `initialized` (a store busy then is opened by a later
        request: `announce` tells the user, who heard it was busy), moved onto a new one
        when the settings moved the store (apply_options replaces only an empty engine)."""
        if self.gateway is not None and self.engine is not None:
            self.gateway.core.serve_from(self.engine)
        elif (
            self.hosting
            and self.gateway_port is not None
            and self.gateway_start is None
            and self.engine is not None
            and self.loop is not None
        ):
            start = self.start_gateway(self.gateway_port, self.engine, announce)
            self.gateway_start = self.loop.create_task(start)

    async def start_gateway(self, port: int, engine: ContextEngine, announce: bool) -> None:
        """Listen on `port`; a port already taken is told and the editor works on."""
        from ephemeral_context.gateway import host_gateway  # aiohttp and the SDK: only if asked

        try:
            self.gateway = await host_gateway(
                engine,
                port,
                self.usage_throttle.poke,
                before_plan=self.follow_pins,
                secrets=lambda: self.tool_env().secrets,  # the settings as they are then
            )
        except (OSError, OverflowError) as error:  # the port taken, or none: the user hears why
            self.warn(f"Ephemeral Context: the gateway cannot listen on port {port}: {error}")
            return
        self.host_gateway()  # the settings may have moved the store while it started
        if announce:
            text = f"Ephemeral Context: the gateway listens on port {port} now"
            log.info(text)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Info, text))

    def follow_pins(self) -> None:
        """Before a hosted gateway request: the pins as their files are now, as before an
        ask; the user hears of each pin released."""
        if self.pins is not None:
            for released in self.pins.follow(self.tool_env()):
                self.warn(f"Ephemeral Context: {released}")

    def data_root(self) -> Path:
        """`dataDirectory`, else $EPHEMERAL_CONTEXT_HOME or the platform's data folder."""
        if self.options.data_directory:
            return Path(self.options.data_directory).expanduser()
        return data_dir()

    def require_engine(self) -> ContextEngine:
        return self.require_pins().engine

    def require_pins(self) -> Pins:
        """The pins and their engine; a store that was busy when the settings named it is
        opened now (requests run after initialize, which set the options)."""
        if self.pins is None:
            self.open_store()
        return cast(Pins, self.pins)

    def label_folders(self) -> list[Path]:
        """Workspace folders as the client names them and with symlinks resolved, deepest
        first, for workspace-relative item labels."""
        named = [p for f in self.workspace.folders.values() if (p := uri_to_path(f.uri))]
        folders = {*named, *self.workspace_folders().roots}
        return sorted(folders, key=lambda p: len(p.parts), reverse=True)

    def client_uri(self, key: str) -> str:
        """The URI the editor knows a file by, for what is sent back to it (the core keys
        files by their real path): the one it opened or pinned the file by, else the file's
        path under a workspace folder it named by a link, else the key itself."""
        named = self.mirror.editor_uri(key)
        path = uri_to_path(named)
        if named != key or path is None:
            return named
        for folder in self.workspace.folders.values():
            given = uri_to_path(folder.uri)
            if given is None:
                continue
            real = real_path(given)
            if real != given and path.is_relative_to(real):
                return path_to_uri(given / path.relative_to(real))
        return key

    def workspace_folders(self) -> Workspace:
        """The folders the model may touch (symlinks resolved); the cwd if the client gave none."""
        paths = [p for f in self.workspace.folders.values() if (p := uri_to_path(f.uri))]
        root = uri_to_path(self.workspace.root_uri) if self.workspace.root_uri else None
        if not paths and root is not None:
            paths = [root]
        return Workspace.of(paths or [Path.cwd()])

    def tool_env(self) -> ToolEnv:
        """The tools as the folders, the settings and the client's capabilities are now."""
        return ToolEnv.configured(
            mirror=self.mirror,
            folders=self.workspace_folders().roots,
            engine=self.engine,
            secret_patterns=self.options.secret_patterns,
            allow_secret_files=self.options.allow_secret_files,
            skills_directory=self.options.skills_directory,
            memory_root=self.data_root() / "memories",
            applier=self.applier if self.client_applies_edits() else DiskEditApplier(),
        )

    def client_applies_edits(self) -> bool:
        capabilities = self.client_capabilities.workspace
        return bool(capabilities and capabilities.apply_edit)

    def ask_session(self, engine: ContextEngine) -> AskSession:
        """The model side of the next ask (the CLI's `ectx ask` builds the same AskSession),
        from the tools and settings as they are now: folders, options and the client's
        capabilities may have changed since the last ask. The API client is kept while it
        reaches the same API the same way."""
        from ephemeral_context.model.session import AskSession

        self.asks = AskSession.create(
            engine=engine,
            env=self.tool_env(),
            model=self.options.model,
            max_steps=self.options.limits.max_turns,
            api_base_url=self.options.api_base_url,
            stall_timeout=self.options.stall_timeout_seconds,
            pins=self.require_pins(),
            previous=self.asks,
        )
        return self.asks

    # ----- notifications ------------------------------------------------------------------

    def send_usage(self) -> None:
        """The throttle's sender: computes the payload at send time, so it is never stale."""
        if self.pins is not None:
            status = self.pins.status(self.mirror)
            self.protocol.notify(USAGE, converters.usage_params(status, self.last_output_tokens))

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """Out-of-band errors go to the log only (a body that is not JSON is answered by
        the message loop: lsp/transport.py)."""
        if source is FeatureRequestError:  # already answered with a JSON-RPC error
            log.debug("request failed: %s", error)
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


def engine_config(options: Options) -> EngineConfig:
    """The engine's settings; its budget is the model's window where that is smaller, so
    that pins (held to half of it) and the status bar's budget are ones the model takes."""
    limits = options.limits
    return EngineConfig(
        limits=LedgerLimits(max_file_bytes=limits.max_file_bytes),
        context_budget=min(limits.context_tokens, priced(options.model).context_window),
        max_tokens=limits.max_output_tokens,
        cache_ttl=options.cache_ttl,
        follow_path=followed_path,  # the hosted gateway's Reads are keyed as the pins are
    )


def request_failed(exc: Exception) -> JsonRpcException:
    """A failure the user must act on (key, model, network), as JSON-RPC RequestFailed."""
    kind = getattr(exc, "kind", None)  # ModelError says which failure it was
    data = {"kind": kind} if kind is not None else None
    return JsonRpcException(message=str(exc), code=REQUEST_FAILED, data=data)


@contextlib.contextmanager
def store_down_fails_request() -> Iterator[None]:
    """StoreDown (busy, read-only, full) is not the request's fault: RequestFailed
    with the store's one line, never InternalError with a traceback."""
    try:
        yield
    except StoreDown as exc:
        raise request_failed(exc) from exc


def answers_store_down(handler: Handler) -> Handler:
    """`handler` (a coroutine function or not, as pygls tells them apart) inside
    `store_down_fails_request`: every ephemeralContext/* request and ectx.* command."""
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def awaited(*args: Any) -> Any:
            with store_down_fails_request():
                return await handler(*args)

        return cast(Handler, awaited)

    @functools.wraps(handler)
    def called(*args: Any) -> Any:
        with store_down_fails_request():
            return handler(*args)

    return cast(Handler, called)


def invalid_params(message: str, reason: str | None = None) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message, data={"reason": reason} if reason else None)


SERVER = EphemeralContextServer()


# ----- lifecycle ----------------------------------------------------------------------------


@SERVER.feature(types.INITIALIZE)
def initialize(ls: EphemeralContextServer, params: types.InitializeParams) -> None:
    """Runs after pygls built the workspace and chose the encoding, before capabilities go out."""
    encoding = converters.position_encoding(ls.workspace.position_encoding)
    ls.initialization_settings = (
        dict(params.initialization_options)
        if isinstance(params.initialization_options, dict)
        else {}
    )
    ls.loop = asyncio.get_running_loop()
    ls.attach_mirror(DocumentMirror(position_encoding=encoding))
    ls.apply_options(params.initialization_options, "initializationOptions")


@SERVER.feature(types.INITIALIZED)
async def initialized(ls: EphemeralContextServer, params: types.InitializedParams) -> None:
    """Pull the workspace settings and ask to hear about files changed outside the editor."""
    async with ls.watch_lock:
        await register_watchers(ls)
    await pull_configuration(ls)
    ls.hosting = True
    ls.host_gateway(announce=False)  # no engine when the store is busy: the request opening it
    if ls.gateway_start is not None:  # starts the gateway then
        await ls.gateway_start
    # The model side loads the anthropic SDK (seconds); load it now, off the event loop,
    # rather than on the first ask.
    await asyncio.to_thread(importlib.import_module, "ephemeral_context.model.agent")


@SERVER.feature(types.SHUTDOWN)
async def shutdown(ls: EphemeralContextServer, params: None) -> None:
    """pygls cancels running requests (asks) after this; close what we opened."""
    ls.shut_down = True
    ls.usage_throttle.cancel()
    if ls.gateway_start is not None:
        await ls.gateway_start  # a start under way ends before the gateway stops
    if ls.gateway is not None:
        await ls.gateway.stop()
        ls.gateway = None
    if ls.asks is not None:
        await ls.asks.close()
        ls.asks = None
    if ls.store is not None:
        ls.store.close()


async def register_watchers(ls: EphemeralContextServer) -> None:
    """Dynamic registration of didChangeWatchedFiles, when the client supports it."""
    capabilities = ls.client_capabilities.workspace
    watched = capabilities.did_change_watched_files if capabilities else None
    if not (watched and watched.dynamic_registration):
        return
    folders = list(ls.workspace.folders.values())
    if not folders and ls.workspace.root_uri:
        folders = [types.WorkspaceFolder(uri=ls.workspace.root_uri, name="root")]
    if not folders:
        return
    relative = bool(watched.relative_pattern_support)
    watchers = [
        types.FileSystemWatcher(
            glob_pattern=(
                types.RelativePattern(base_uri=folder.uri, pattern="**/*")
                if relative
                else f"{converters.folder_path(folder.uri)}/**/*"
            )
        )
        for folder in folders
    ]
    registration = types.Registration(
        id=WATCHER_REGISTRATION_ID,
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
    )
    try:
        await ls.client_register_capability_async(types.RegistrationParams([registration]))
        ls.watching = True
    except Exception as exc:  # a client may refuse; watching is an optimisation
        log.warning("client refused the file watcher registration: %s", exc)


async def pull_configuration(ls: EphemeralContextServer) -> None:
    """workspace/configuration wins over initializationOptions, key by key."""
    capabilities = ls.client_capabilities.workspace
    if not (capabilities and capabilities.configuration):
        return
    try:
        answer = await ls.workspace_configuration_async(
            types.ConfigurationParams([types.ConfigurationItem(section=CONFIGURATION_SECTION)])
        )
    except Exception as exc:
        log.warning("workspace/configuration failed: %s", exc)
        return
    section = answer[0] if answer else None
    if isinstance(section, dict):
        ls.apply_options(merge_settings(ls.initialization_settings, section), "settings")


@SERVER.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    ls: EphemeralContextServer, params: types.DidChangeConfigurationParams
) -> None:
    """Pushed settings are used directly; a bare notification means: pull them again."""
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get(CONFIGURATION_SECTION), dict):
        merged = merge_settings(ls.initialization_settings, settings[CONFIGURATION_SECTION])
        ls.apply_options(merged, "settings")
    else:
        await pull_configuration(ls)


@SERVER.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def did_change_workspace_folders(
    ls: EphemeralContextServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    """pygls already updated the folder list; watch the new set instead of the old one.
    A pin in a folder removed is released now, as a read there is refused."""
    if ls.pins is not None:
        for released in ls.pins.recheck(ls.tool_env()):
            ls.warn(f"Ephemeral Context: {released}")
    async with ls.watch_lock:
        if ls.watching:
            await unregister_watchers(ls)
        await register_watchers(ls)


async def unregister_watchers(ls: EphemeralContextServer) -> None:
    ls.watching = False
    try:
        await ls.client_unregister_capability_async(
            types.UnregistrationParams(
                [
                    types.Unregistration(
                        id=WATCHER_REGISTRATION_ID,
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    )
                ]
            )
        )
    except Exception as exc:
        log.info("unregistering the file watcher failed: %s", exc)


# ----- documents ----------------------------------------------------------------------------


@SERVER.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: EphemeralContextServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.mirror.open(doc.uri, doc.language_id, doc.version, doc.text)
    ls.usage_throttle.poke()


@SERVER.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: EphemeralContextServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = params.text_document
    try:
        ls.mirror.change(doc.uri, doc.version, converters.to_text_edits(params.content_changes))
    except OutOfSync as exc:
        ls.lost_edit(doc.uri, str(exc))
        return
    ls.usage_throttle.poke()


@SERVER.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: EphemeralContextServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.mirror.close(params.text_document.uri)
    ls.usage_throttle.poke()


@SERVER.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(
    ls: EphemeralContextServer, params: types.DidChangeWatchedFilesParams
) -> None:
    """Files changed on disk are re-read on next use, not now (most are never asked for);
    files in the context are re-read at once, so the model hears of the change. A folder
    deleted comes as one event (VS Code's watcher): the files held under it are re-read."""
    engine = ls.engine
    held = sorted({i.uri for i in engine.items() if i.uri}) if engine is not None else []
    for change in params.changes:
        ls.mirror.mark_stale(change.uri)
        uri = ls.mirror.key_of(change.uri)
        inside = uri.rstrip("/") + "/"
        for each in [uri, *(u for u in held if u.startswith(inside))]:
            if engine is not None and engine.holds(each) and not ls.mirror.is_open(each):
                ls.mirror.get(each)  # emits the disk change the engine turns into a note
    ls.usage_throttle.poke()


# ----- the ephemeralContext/* protocol and its ectx.* commands ------------------------------


@SERVER.request_and_command(STATUS)
def status(ls: EphemeralContextServer, params: EmptyParams | None) -> StatusResult:
    encoding = converters.position_encoding(ls.workspace.position_encoding)
    return converters.status_result(
        ls.require_pins().status(ls.mirror),
        ls.last_output_tokens,
        ls.options.model,
        len(ls.mirror.open_uris()),
        encoding,
    )


@SERVER.request_and_command(ITEMS)
def items(ls: EphemeralContextServer, params: EmptyParams | None) -> ItemsResult:
    folders = ls.label_folders()
    return ItemsResult(
        [
            converters.context_item(i, folders, ls.client_uri)
            for i in ls.require_pins().items(ls.mirror)
        ]
    )


@SERVER.request_and_command(PIN)
def pin(ls: EphemeralContextServer, params: PinParams) -> PinResult:
    """Pinning sends the current version, so the same rules as a model read apply to it."""
    try:
        item = ls.require_pins().pin(ls.tool_env(), ls.mirror.name(params.uri), params.symbol)
    except AccessDenied as exc:
        raise invalid_params(str(exc), exc.reason) from exc
    except UnknownItem as exc:
        raise invalid_params(str(exc), "unknown") from exc
    ls.usage_throttle.poke()
    return PinResult(converters.context_item(item, ls.label_folders(), ls.client_uri))


@SERVER.request_and_command(UNPIN)
def unpin(ls: EphemeralContextServer, params: PinParams) -> PinResult:
    try:
        item = ls.require_engine().unpin(ls.mirror.key_of(params.uri))
    except UnknownItem as exc:
        raise invalid_params(str(exc), "unknown") from exc
    ls.usage_throttle.poke()
    return PinResult(converters.context_item(item, ls.label_folders(), ls.client_uri))


@SERVER.request_and_command(DROP)
def drop(ls: EphemeralContextServer, params: DropParams) -> DropResult:
    if (params.uri is None) == (params.id is None):
        raise invalid_params("give exactly one of uri and id", "invalid")
    target = ls.mirror.key_of(params.uri) if params.uri is not None else str(params.id)
    dropped = ls.require_engine().drop(target)
    ls.usage_throttle.poke()
    return DropResult(dropped)


@SERVER.request_and_command(HYDRATE)
def hydrate(ls: EphemeralContextServer, params: HydrateParams) -> HydrateResult:
    """A file item's id gives the file as it is now: the buffer, which may be newer than
    any version the context recorded."""
    engine = ls.require_engine()
    try:
        text = engine.hydrate(params.id, params.offset, params.limit, mirror=ls.mirror)
    except StoreDown:
        raise  # not the id's fault: answered as every request answers it
    except StoreError as exc:
        raise invalid_params(str(exc), STORE_ERROR_REASONS.get(type(exc), "invalid")) from exc
    return converters.hydrate_result(text, ls.client_uri)


STORE_ERROR_REASONS: dict[type[StoreError], str] = {
    InvalidId: "invalid",
    UnknownId: "unknown",
    ExpiredId: "expired",
    OffsetPastEnd: "offsetPastEnd",
}


@SERVER.request_and_command(ASK)
async def ask(ls: EphemeralContextServer, params: AskParams) -> AskResult:
    """Runs as a task of its own: the server keeps serving, and $/cancelRequest cancels it
    (for the command too: see EphemeralContextProtocol.cancellable)."""
    from ephemeral_context.model.client import ModelError

    engine = ls.require_engine()
    if not params.prompt.strip():
        raise invalid_params("the prompt is empty", "invalid")
    conversation = params.conversation_id or f"c-{uuid.uuid4().hex[:12]}"
    session = ls.ask_session(engine)
    reporter = AskReporter(ls, conversation, session.env.workspace, params.work_done_token)
    lock = ls.conversation_locks.setdefault(conversation, asyncio.Lock())
    with ls.rpc.cancellable():
        async with lock:  # one ask at a time per conversation: a second one waits
            reporter.begin()
            try:
                result = await session.ask(params.prompt, conversation, reporter.events())
            except ModelError as exc:
                raise request_failed(exc) from exc
            finally:
                reporter.end()
                ls.usage_throttle.poke()
    return converters.ask_result(result, ls.client_uri)


class AskReporter:
    """Turns agent events into askProgress notifications (and $/progress when asked)."""

    def __init__(
        self,
        ls: EphemeralContextServer,
        conversation: str,
        workspace: Workspace,
        token: int | str | None,
    ) -> None:
        self.ls = ls
        self.conversation = conversation
        self.workspace = workspace
        self.token = token
        self.text = ""
        self._edit_paths: list[str] = []

    def events(self) -> AgentEvents:
        from ephemeral_context.model.agent import AgentEvents

        return AgentEvents(
            on_text=self.on_text,
            on_tool_use=self.on_tool_use,
            on_tool_result=self.on_tool_result,
            on_usage=self.on_usage,
            on_subagent=self.on_subagent,
            on_notice=self.on_notice,
        )

    def send(self, kind: AskProgressKind, **fields: Any) -> None:
        params = AskProgressParams(conversation_id=self.conversation, kind=kind, **fields)
        self.ls.protocol.notify(ASK_PROGRESS, params)

    def on_notice(self, text: str) -> None:
        self.ls.warn(f"Ephemeral Context: {text}")

    def on_text(self, delta: str) -> None:
        self.text += delta
        self.send("text", text=delta)
        if self.token is not None:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=self.text[-200:])
            )

    def on_tool_use(self, name: str, args: Mapping[str, Any]) -> None:
        if name == "edit_file":
            self._edit_paths.append(str(args.get("path", "")))
        self.send("toolUse", tool=name, input=dict(args))

    def on_tool_result(self, name: str, shown: str, is_error: bool) -> None:
        self.send("toolResult", tool=name, text=shown, is_error=is_error)
        if name == "edit_file" and self._edit_paths:
            path = self._edit_paths.pop(0)
            try:
                uri = path_to_uri(self.workspace.resolve(path))
            except AccessDenied:
                return
            # The buffer's URI, as the ask's result names it, for a file opened by a link.
            self.send("edit", uri=self.ls.client_uri(uri), applied=not is_error)

    def on_usage(self, usage: Mapping[str, int]) -> None:
        self.ls.last_output_tokens = usage.get("output_tokens", 0)
        self.send("usage", usage=converters.ask_usage(usage))
        self.ls.usage_throttle.poke()

    def on_subagent(self, event: SubagentEvent) -> None:
        """A delegate's work, labelled; its text never joins the main answer."""
        params = converters.subagent_progress(self.conversation, event)
        self.ls.protocol.notify(ASK_PROGRESS, params)
        if event.kind == "usage":
            self.ls.usage_throttle.poke()

    def begin(self) -> None:
        """The progress is `cancellable`: its Cancel (window/workDoneProgress/cancel, which
        pygls only marks on the token's future) cancels this ask's task, as $/cancelRequest
        does."""
        if self.token is not None:
            self.ls.work_done_progress.begin(
                self.token,
                types.WorkDoneProgressBegin(title="Ephemeral Context: ask", cancellable=True),
            )
            task = asyncio.current_task()
            marked = self.ls.work_done_progress.tokens.get(self.token)
            if task is not None and marked is not None:
                marked.add_done_callback(lambda done: task.cancel() if done.cancelled() else None)

    def end(self) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
            self.ls.work_done_progress.tokens.pop(self.token, None)  # and the task it holds


@SERVER.request_and_command(REPLAY)
async def replay(ls: EphemeralContextServer, params: ReplayParams) -> dict[str, Any]:
    """Replays can take seconds: a worker thread runs them while the server keeps serving."""
    path = Path(params.path).expanduser()
    if not path.exists():
        raise invalid_params(f"{path}: no such file or folder", "notFound")
    report = await asyncio.to_thread(replay_report, discover([path]))
    if not report.sessions and report.errors:
        raise invalid_params("; ".join(map(str, report.errors)), "unreadable")
    return to_json(report)


def serve(
    server: EphemeralContextServer,
    tcp: tuple[str, int] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
    gateway_port: int | None = None,
) -> int:
    """Run until `exit`; the exit code says whether the client sent `shutdown` first."""
    server.gateway_port = gateway_port
    if tcp is not None:
        serve_tcp(server, *tcp, max_message_bytes, body_timeout)
    else:
        receive = stdin_receiver(sys.stdin.buffer.fileno(), server.thread_pool)
        serve_stdio(server, FramedReader(receive, max_message_bytes, body_timeout))
    return 0 if server.shut_down else 1
