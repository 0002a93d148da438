"""The custom `ephemeralContext/*` protocol: typed messages and the protocol class that knows them.

Every shape here is documented, with JSON examples, in docs/protocol.md; the VS Code
extension is written against that page, so change both together. The lsprotocol converter
pygls uses maps these snake_case attrs fields to camelCase keys and omits `None` values.

`EphemeralContextProtocol` also closes gaps in pygls' JSON-RPC handling: `$/cancelRequest`
reaches a task that runs inside another request (an `ectx.*` command inside its
`workspace/executeCommand`), which pygls alone would leave running; a request whose
params fail to structure, whose method is not a string or whose id is not an id, and a
message the reader discarded, get a JSON-RPC error response instead of silence, so a client
never waits forever. The params of our own methods are checked for their JSON types before
they are structured (cattrs would coerce `123` into the URI "123"), and the error names the
field. A request answered with an error the client is told about (a pin of a missing file,
params of the wrong type) is logged as one line at DEBUG, not as pygls' traceback at ERROR.

API:
- The method names (`STATUS`, `ITEMS`, `PIN`, `UNPIN`, `DROP`, `HYDRATE`, `ASK`, `REPLAY`,
  `USAGE`, `ASK_PROGRESS`) and their params/result attrs classes, as docs/protocol.md writes
  them; `REQUESTS`, `NOTIFICATIONS`.
- `EphemeralContextProtocol`: typed (de)serialisation of our methods, malformed params
  answered with InvalidParams, `cancellable()` for `$/cancelRequest`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import types as pytypes
import typing
from collections.abc import Callable, Generator, Iterator
from typing import Any, Literal

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method

log = logging.getLogger(__name__)


class _AnsweredRefusals(logging.Filter):
    """Drops pygls' ERROR tracebacks for requests it answers with a JSON-RPC error other
    than InternalError: refusals the client is told about (our own `report_server_error`
    and `_answer` log them at DEBUG). An InternalError, a bug, keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException):
            return isinstance(error, JsonRpcInternalError)
        # Params cattrs could not structure: answered with InvalidParams (structure_message).
        message = record.getMessage()
        return not (
            message.startswith("Unable to deserialize message")
            and "cattrs.errors.ClassValidationError" in message
        )


logging.getLogger("pygls.protocol.json_rpc").addFilter(_AnsweredRefusals())

STATUS = "ephemeralContext/status"
ITEMS = "ephemeralContext/items"
PIN = "ephemeralContext/pin"
UNPIN = "ephemeralContext/unpin"
DROP = "ephemeralContext/drop"
HYDRATE = "ephemeralContext/hydrate"
ASK = "ephemeralContext/ask"
REPLAY = "ephemeralContext/replay"
USAGE = "ephemeralContext/usage"
ASK_PROGRESS = "ephemeralContext/askProgress"

# Marks the stand-in body the framed reader hands over instead of a message it discarded.
DISCARDED_METHOD = "$/ephemeralContext/discardedMessage"

MsgId = int | str
_ID_TYPE: Any = MsgId
_OPTIONAL_ID_TYPE: Any = MsgId | None


# ----- payloads -----------------------------------------------------------------------------


@attrs.define
class EmptyParams:
    """Params of requests that take none (`{}`)."""


# Fields without defaults on purpose: the lsprotocol converter leaves out values equal to
# their default, and a client should always see every count, zeros included.


@attrs.define
class Breakdown:
    """Tokens per item state; `evicted` counts tokens kept out of the request."""

    full: int
    partial: int
    synopsis: int
    evicted: int


@attrs.define
class LastCall:
    """Usage the last model response reported, in the API's own counts."""

    cache_read: int
    cache_write: int
    input: int
    output: int


@attrs.define(kw_only=True)
class UsageParams:
    """The `ephemeralContext/usage` payload: what a status bar shows."""

    context_tokens: int
    budget: int
    cache_hit_rate: float
    saved_tokens: int
    saved_usd: float
    breakdown: Breakdown
    last_call: LastCall | None = None


@attrs.define(kw_only=True)
class StatusResult(UsageParams):
    """The usage payload plus counts and settings the status view needs."""

    items: int
    model: str
    open_documents: int
    position_encoding: str


@attrs.define(kw_only=True)
class ContextItem:
    """One row of the Context tree view."""

    id: str
    kind: str
    state: str
    tokens: int
    label: str
    pinned: bool
    uri: str | None = None
    version: int | None = None


@attrs.define
class ItemsResult:
    items: list[ContextItem]


@attrs.define
class PinParams:
    uri: str
    symbol: str | None = None


@attrs.define
class PinResult:
    item: ContextItem


@attrs.define
class DropParams:
    """Exactly one of `uri` and `id`."""

    uri: str | None = None
    id: str | None = None


@attrs.define
class DropResult:
    dropped: list[str]


@attrs.define
class HydrateParams:
    id: str
    offset: int = 0
    limit: int | None = None


@attrs.define(kw_only=True)
class HydrateResult:
    id: str
    text: str
    total_length: int
    offset: int
    uri: str | None = None
    version: int | None = None


@attrs.define
class AskParams:
    prompt: str
    conversation_id: str | None = None
    work_done_token: int | str | None = None


@attrs.define
class AskUsage:
    """Token counts summed over an ask, named as the Messages API names them."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


@attrs.define
class AskEdit:
    uri: str
    applied: bool


@attrs.define(kw_only=True)
class AskResult:
    conversation_id: str
    text: str
    stop_reason: str | None
    calls: int
    usage: AskUsage
    edits: list[AskEdit]


AskProgressKind = Literal["text", "toolUse", "toolResult", "edit", "usage", "subagent"]

SubagentProgressEvent = Literal["start", "text", "toolUse", "toolResult", "usage", "retry", "end"]
"""What a sub-agent did, in a "subagent" askProgress (agent.SubagentEventKind, camelCase)."""


@attrs.define(kw_only=True)
class AskProgressParams:
    """One streamed event of a running ask; which fields are set depends on `kind`."""

    conversation_id: str
    kind: AskProgressKind
    text: str | None = None
    tool: str | None = None
    input: dict[str, Any] | None = None
    is_error: bool | None = None
    uri: str | None = None
    applied: bool | None = None
    usage: AskUsage | None = None
    agent: str | None = None
    """"subagent" only: the sub-agent's label (its conversation id)."""
    event: SubagentProgressEvent | None = None
    """"subagent" only: what the sub-agent did; text, tool, input, isError and usage as for
    the main agent's kinds."""


@attrs.define
class ReplayParams:
    path: str


# ----- JSON-RPC envelopes -------------------------------------------------------------------


OPTIONAL_EMPTY = EmptyParams | None


def _request(method: str, params_type: Any) -> type[Any]:
    """A request envelope class typed for one method, shaped like lsprotocol's own.

    `method` and `jsonrpc` have no defaults: the converter leaves out default values.
    """
    cls = attrs.make_class(
        _class_name(method, "Request"),
        {
            "id": attrs.field(type=_ID_TYPE),
            "params": (
                attrs.field(type=params_type, default=None)
                if params_type == OPTIONAL_EMPTY
                else attrs.field(type=params_type)
            ),
            "method": attrs.field(type=str),
            "jsonrpc": attrs.field(type=str),
        },
        kw_only=True,
    )
    return cls


def _response(method: str, result_type: Any) -> type[Any]:
    return attrs.make_class(
        _class_name(method, "Response"),
        {
            "id": attrs.field(type=_OPTIONAL_ID_TYPE),
            "result": attrs.field(type=result_type),
            "jsonrpc": attrs.field(type=str),
        },
        kw_only=True,
    )


def _notification(method: str, params_type: Any) -> type[Any]:
    return attrs.make_class(
        _class_name(method, "Notification"),
        {
            "params": attrs.field(type=params_type),
            "method": attrs.field(type=str),
            "jsonrpc": attrs.field(type=str),
        },
        kw_only=True,
    )


def _class_name(method: str, suffix: str) -> str:
    name = method.split("/", 1)[1]
    return name[0].upper() + name[1:] + suffix


# method -> (params type, result type); the single table both directions are built from.
REQUESTS: dict[str, tuple[Any, Any]] = {
    STATUS: (OPTIONAL_EMPTY, StatusResult),
    ITEMS: (OPTIONAL_EMPTY, ItemsResult),
    PIN: (PinParams, PinResult),
    UNPIN: (PinParams, PinResult),
    DROP: (DropParams, DropResult),
    HYDRATE: (HydrateParams, HydrateResult),
    ASK: (AskParams, AskResult),
    REPLAY: (ReplayParams, dict[str, Any]),
}
NOTIFICATIONS: dict[str, Any] = {USAGE: UsageParams, ASK_PROGRESS: AskProgressParams}

MESSAGE_TYPES: dict[str, type[Any]] = {
    **{method: _request(method, params) for method, (params, _) in REQUESTS.items()},
    **{method: _notification(method, params) for method, params in NOTIFICATIONS.items()},
}
RESULT_TYPES: dict[str, type[Any]] = {
    method: _response(method, result) for method, (_, result) in REQUESTS.items()
}


# ----- JSON types of our params, checked before cattrs (which coerces) structures them -----


class ParamsTypeError(ValueError):
    """A field of our params has the wrong JSON type; the message names the field."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _accepts(kind: Any, value: Any) -> bool:
    """Whether a JSON value has the type a field declares (no coercion, bool is no int)."""
    origin = typing.get_origin(kind)
    if kind is Any:
        return True
    if kind is None or kind is type(None):
        return value is None
    if origin in (typing.Union, pytypes.UnionType):
        return any(_accepts(arg, value) for arg in typing.get_args(kind))
    if origin is Literal:
        return value in typing.get_args(kind)
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(_accepts(item, v) for v in value)
    if origin is dict or kind is dict:
        return isinstance(value, dict)
    if attrs.has(kind):
        return isinstance(value, dict) and params_problem(kind, value) is None
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _type_name(kind: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
    args = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    return " or ".join(names.get(a, getattr(a, "__name__", str(a))) for a in args)


def params_problem(cls: type[Any], data: Any) -> str | None:
    """What is wrong with the JSON types of `data` as params of the attrs class `cls`."""
    if data is None and not any(f.default is attrs.NOTHING for f in attrs.fields(cls)):
        return None
    if not isinstance(data, dict):
        return f"params must be an object, got {_json_kind(data)}"
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        key = _camel(field.name)
        if key not in data:
            if field.default is attrs.NOTHING:
                return f"{key} is required"
        elif not _accepts(hints[field.name], data[key]):
            kind = hints[field.name]
            return f"{key} must be {_type_name(kind)}, got {_json_kind(data[key])}"
    return None


def check_params_types(converter: cattrs.Converter, classes: typing.Iterable[type[Any]]) -> None:
    """Structure `classes` only from JSON of their declared types (requests and commands
    alike): anything else raises ParamsTypeError naming the field."""
    for cls in classes:
        structure = converter.get_structure_hook(cls)

        def checked(data: Any, kind: Any, cls: type[Any] = cls, structure: Any = structure) -> Any:
            if (problem := params_problem(cls, data)) is not None:
                raise ParamsTypeError(problem)
            return structure(data, kind)

        converter.register_structure_hook(cls, checked)


def _params_error(exc: BaseException) -> str | None:
    """The ParamsTypeError inside a cattrs validation error, if one caused it."""
    if isinstance(exc, ParamsTypeError):
        return str(exc)
    for inner in getattr(exc, "exceptions", ()):
        if (found := _params_error(inner)) is not None:
            return found
    return _params_error(exc.__cause__) if exc.__cause__ is not None else None


def _is_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


@attrs.define
class RejectedRequest:
    """A message that cannot be handled at all: a request is answered with `error`, a
    notification (`is_request` false) is logged, and a rejected didChange reported."""

    id: MsgId | None
    error: JsonRpcException
    method: str | None = None
    params: Any = None
    is_request: bool = True
    jsonrpc: str = "2.0"


class EphemeralContextProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that knows the custom messages and answers every broken request."""

    initialize_received = False
    rejected_change: Callable[[str | None, str], None] | None = None
    """Told (uri, problem) of a didChange that could not be read: the edit is lost, so the
    mirror must stop trusting that document (every open one when the URI is None: what
    could be read of the change does not say which)."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        check_params_types(converter, {p for p, _ in REQUESTS.values() if attrs.has(p)})
        self._cancellable: dict[MsgId, asyncio.Task[Any]] = {}

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[None]:
        """While inside, a `$/cancelRequest` for the current request cancels the running task.

        pygls cancels the future of the request it answers; for a command that is the
        executeCommand request's, not the task running the command, so this hands the
        cancel on to the task itself (for a plain request the two are one, and cancelling
        twice is harmless)."""
        msg_id, task = self.msg_id, asyncio.current_task()
        if msg_id is None or task is None:
            yield
            return
        self._cancellable[msg_id] = task
        try:
            yield
        finally:
            self._cancellable.pop(msg_id, None)

    # Text sync: documents.DocumentMirror is the one copy of every open document. pygls'
    # built-in handlers would keep a second copy in its Workspace and re-split it on every
    # change; these replace them and only pass the notification on to the server's handler.

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        """Omitted `arguments` (the LSP makes them optional) are no arguments: pygls would
        call the command without its params and answer InternalError with a traceback."""
        if params.arguments is None:
            params = attrs.evolve(params, arguments=[])
        return (yield from super().lsp_workspace__execute_command(params))

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return MESSAGE_TYPES.get(method) or super().get_message_type(method)

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return RESULT_TYPES.get(method) or super().get_result_type(method)

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            return data  # a nested object, or not JSON-RPC at all (handle_message answers)
        method = data.get("method")
        if method == DISCARDED_METHOD:
            return _discarded(data)
        if "id" in data and not _is_id(data["id"]) and (method is not None or "error" not in data):
            error = JsonRpcInvalidRequest("id must be a number or a string")
            return RejectedRequest(id=None, error=error, is_request="method" in data)
        if "method" in data and not isinstance(method, str):
            error = JsonRpcInvalidRequest(f"method must be a string, got {_json_kind(method)}")
            return RejectedRequest(id=data.get("id"), error=error, is_request="id" in data)
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            # pygls raises here and nobody answers; for a request, answer with the error.
            if (problem := _params_error(exc)) is not None:
                exc = JsonRpcInvalidParams(f"{JsonRpcInvalidParams.MESSAGE}: {problem}")
            elif isinstance(exc.__cause__, cattrs.ClassValidationError):
                where = "; ".join(cattrs.transform_error(exc.__cause__, path="$"))
                exc = JsonRpcInvalidParams(f"{JsonRpcInvalidParams.MESSAGE}: {where}")
            if method is None:
                raise
            return RejectedRequest(
                id=data.get("id"),
                error=exc,
                method=method,
                params=data.get("params"),
                is_request="id" in data,
            )

    def handle_message(self, message: Any) -> None:
        if getattr(message, "jsonrpc", None) != "2.0":
            # A batch, a scalar, or an object without "jsonrpc": "2.0" (pygls would drop it).
            msg_id = (
                message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            )
            error = JsonRpcInvalidRequest("not a JSON-RPC 2.0 request, response or notification")
            self._answer(msg_id if _is_id(msg_id) else None, error)
            return
        if isinstance(message, RejectedRequest):
            self._reject(message)
            return
        if self._out_of_order(message):
            return
        if getattr(message, "method", None) == types.CANCEL_REQUEST:
            task = self._cancellable.get(message.params.id)
            if task is not None:
                task.cancel()
        super().handle_message(message)

    def _reject(self, message: RejectedRequest) -> None:
        """Answer a rejected request, log a rejected notification; a lost didChange is
        reported either way (`rejected_change`)."""
        if message.is_request:
            self._answer(message.id, message.error)
        else:
            problem = f"{message.method or 'notification'} ignored: {message.error.message}"
            log.warning(problem)
            self.notify(
                types.WINDOW_LOG_MESSAGE, types.LogMessageParams(types.MessageType.Warning, problem)
            )
        if message.method == types.TEXT_DOCUMENT_DID_CHANGE and self.rejected_change:
            self.rejected_change(_document_uri(message.params), message.error.message)

    def _out_of_order(self, message: Any) -> bool:
        """LSP's order, enforced: `initialize` first and once; before it a request gets
        ServerNotInitialized and a notification other than `exit` is dropped. Over TCP this
        is what keeps a process that connects from reading anything without a session."""
        method = getattr(message, "method", None)
        is_request = getattr(message, "id", None) is not None and method is not None
        if method == types.INITIALIZE and is_request:
            if self.initialize_received:
                self._answer(message.id, JsonRpcInvalidRequest("initialize was already received"))
                return True
            self.initialize_received = True
            return False
        if self.initialize_received or method is None or method == types.EXIT:
            return False
        if is_request:
            early = JsonRpcServerNotInitialized(f"{method}: send initialize first")
            self._answer(message.id, early)
        else:
            log.warning("%s before initialize: dropped", method)
        return True

    def _answer(self, msg_id: MsgId | None, error: JsonRpcException) -> None:
        """Send `error` as the response to `msg_id` (null when the id is unknown).

        `_send_response` and `_send_data` are JsonRPCProtocol's own output primitives, used
        here as the subclass API they are (pygls has no public way to answer a message its
        routing never reached); nothing outside this class touches pygls' underscored names.
        An unknown id goes out as `"id": null`, which JSON-RPC requires and the converter
        would leave out (as it leaves out every None)."""
        log.debug("answered %s with an error: %s", msg_id, error.message)
        if msg_id is None:
            response = self._converter.unstructure(error.to_response_error())
            self._send_data({"jsonrpc": "2.0", "id": None, "error": response})
            return
        self._send_response(msg_id, error=error.to_response_error())


def _document_uri(params: Any) -> str | None:
    """The `textDocument.uri` of a notification's raw params, if they hold one."""
    document = params.get("textDocument") if isinstance(params, dict) else None
    uri = document.get("uri") if isinstance(document, dict) else None
    return uri if isinstance(uri, str) else None


def _discarded(data: dict[str, Any]) -> RejectedRequest:
    """The stand-in as the message it replaced: a didChange keeps its document's URI, so
    `handle_message` can report the lost edit like one that could not be read. A body
    that is not JSON is answered with ParseError and id null, as JSON-RPC requires."""
    params = data.get("params") or {}
    method = params.get("requestMethod")
    if params.get("unparsable"):
        error: JsonRpcException = JsonRpcParseError(params.get("reason"))
        msg_id, is_request = None, True
    else:
        message = f"{params.get('reason')} ({method or 'unknown method'}); discarded"
        log.warning(message)
        error = JsonRpcInvalidRequest(message)
        msg_id, is_request = data.get("id"), "id" in data
    return RejectedRequest(
        id=msg_id,
        error=error,
        method=method,
        params={"textDocument": {"uri": params.get("uri")}},
        is_request=is_request,
    )


def discarded_stand_in(
    msg_id: MsgId | None,
    method: str | None,
    uri: str | None,
    reason: str,
    *,
    unparsable: bool = False,
) -> bytes:
    """The body passed on in place of a message the framed reader discarded, or (when
    `unparsable`) of one the message loop could not parse: ParseError answers that one."""
    params = {"reason": reason, "requestMethod": method, "uri": uri, "unparsable": unparsable}
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": DISCARDED_METHOD, "params": params}
    if msg_id is not None:
        body["id"] = msg_id
    return json.dumps(body).encode()
