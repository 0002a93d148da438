"""A local Messages API for tests: real HTTP on 127.0.0.1, answers from a script.

No Anthropic API key exists on this machine, so every test that talks to "Claude" talks to
this server instead. It speaks the wire protocol the anthropic SDK expects: POST
/v1/messages (JSON, or Server-Sent Events when `stream` is true, with the same event
sequence as the API) and POST /v1/messages/count_tokens; it accepts `x-api-key` and
`Authorization: Bearer` and any `anthropic-version` (which, as there, must be sent: 400
without one). What it says comes from a script, one turn per request: text, tool_use
blocks, a refusal, or an injected error (429/529/500 with retry-after, 401, 404, 400), or
bytes no API would send (`Raw`: an HTML page, a body cut short, a stream framed by `sse`
that ends before its message_stop), or a broken network (`cut`: the connection dropped,
or silent). An answer longer than `max_tokens` is cut (stop_reason "max_tokens"), and
`max_tokens: 0` is the documented cache pre-warm (no content). Requests the real
API would refuse are refused the same way (400: more than 4 cache_control breakpoints,
those inside a tool result counted, a tool_use without its tool_result, empty content,
a max_tokens over the model's output limit, a blank stop sequence, ...), so a client bug
fails here as it would there. Usage is computed by
ephemeral_context.cache_sim, so cache reads and writes follow the documented cache rules.
Every request is recorded (headers and JSON body) so tests can inspect exactly what was
sent.

In-process:

    with FakeMessagesAPI(["hello", {"tool_use": [{"name": "read_file", "input": {...}}]}]) as api:
        client = anthropic.Anthropic(api_key="test", base_url=api.base_url)
        ...
        api.requests[0].body["messages"]

As a subprocess (editor end-to-end tests), from the repository root:

    python -m tests.fakes.messages_api --script script.json --port 0 --record requests.jsonl

prints its base URL on the first line of stdout, then serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import secrets
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from ephemeral_context.cache_sim import (
    CacheControlError,
    PromptCache,
    Request,
    Usage,
    resolve_breakpoints,
)
from ephemeral_context.prices import PriceRow, UnknownModelError, lookup
from ephemeral_context.request_view import request_from_messages_api
from ephemeral_context.tokens import estimate_tokens

MESSAGES_PATH = "/v1/messages"
MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""The Messages and Token Counting APIs' request size limit (errors page: 32 MB)."""

# ---------------------------------------------------------------------------------------------
# The script


Cut = Literal["drop", "stall"]
"""How a broken network ends an answer: the connection closed, or silent."""


@dataclass(slots=True, frozen=True)
class ToolCall:
    """One tool_use block the scripted model emits."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None


@dataclass(slots=True, frozen=True)
class Reply:
    """A successful turn: optional text, then tool calls; stop_reason follows from them."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    delay: float = 0.0
    """Seconds between streamed events (JSON "delay"): lets an editor cancel mid-answer."""
    gate: threading.Event | None = field(default=None, compare=False)
    """In-process only: a stream stops after its first text delta until the test sets this."""
    cut: Cut | None = None
    """Where the text would first reach the client (JSON "cut"): a stream after its first
    text delta, a non-streamed answer (sent whole once ready) before any byte of it. "drop"
    closes the connection there, "stall" sends nothing more until the client goes away (at
    most 60 s)."""

    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


@dataclass(slots=True, frozen=True)
class ApiError:
    """An injected error, shaped as the API shapes it.

    With `mid_stream`, a streaming request gets HTTP 200, message_start, then an `error`
    event (as the API does for overload during a stream); a non-streaming one gets `status`.
    """

    status: int
    type: str
    message: str
    retry_after: float | None = None
    mid_stream: bool = False


@dataclass(slots=True, frozen=True)
class Raw:
    """An answer sent byte for byte, as no API would send it but a proxy or a broken
    upstream might: an HTML page, JSON that is not a message, SSE events out of order.
    With `cut`, the first half of the body is sent, then the connection closes ("drop") or
    goes silent ("stall")."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    cut: Cut | None = None


Turn = Reply | ApiError | Raw


def sse(*events: Mapping[str, Any] | bytes) -> bytes:
    """Events framed as the API frames them, for a `Raw` stream no API would send whole (one
    that ends before its message_stop, events out of order); bytes go as they are (a frame
    whose data does not parse)."""
    return b"".join(
        e if isinstance(e, bytes) else f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
        for e in events
    )


def message_start(model: str = "claude-sonnet-4-6") -> dict[str, Any]:
    """A stream's first event, as the API sends it."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": _new_id("msg"), "type": "message", "role": "assistant", "model": model}
    fields: dict[str, Any] = {"content": [], "stop_reason": None, "stop_sequence": None}
    return {"type": "message_start", "message": {**message, **fields, "usage": usage}}


@dataclass(slots=True)
class RecordedRequest:
    """What a client sent, and what the fake answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    usage: dict[str, Any] | None = None
    time: float = 0.0
    completed: bool = False
    """The whole answer was written (false when the client went away mid-stream)."""
    done: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set when the server has finished with this request, answered or not."""
    left: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set when the client went away from an answer that stalled (`cut="stall"`), before
    the fake gave up on it."""


TurnLike = Turn | str | Mapping[str, Any]
"""A turn, or what `parse_turn` makes one of: its text, or its JSON form."""

TurnSource = TurnLike | Callable[[RecordedRequest], TurnLike]
"""A turn, or a function that chooses the turn from the request it answers."""


def rate_limited(retry_after: float = 0.01) -> ApiError:
    return ApiError(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        retry_after,
    )


def overloaded(retry_after: float | None = 0.01, *, mid_stream: bool = False) -> ApiError:
    return ApiError(529, "overloaded_error", "Overloaded", retry_after, mid_stream)


def server_error(retry_after: float | None = 0.01) -> ApiError:
    return ApiError(500, "api_error", "Internal server error", retry_after)


def invalid_api_key() -> ApiError:
    return ApiError(401, "authentication_error", "invalid x-api-key")


def unknown_model(model: str) -> ApiError:
    return ApiError(404, "not_found_error", f"model: {model}")


def refused(message: str = "The request was refused by the content policy.") -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def parse_turn(item: Any) -> Turn:
    """A turn from its JSON form (the --script file) or a plain string (text).

    Forms: "text"; {"text": ...}; {"tool_use": [{"name", "input", "id"?}], "text"?: ...};
    {"refusal": "text"} (stop_reason "refusal"); {"stop_reason": ...} alongside text;
    {"error": {"status", "type", "message", "retry_after"?, "mid_stream"?}};
    "delay" and "cut" ("drop" or "stall") alongside text.
    """
    if isinstance(item, (Reply, ApiError, Raw)):
        return item
    if isinstance(item, str):
        return Reply(text=item)
    if not isinstance(item, Mapping):
        raise ValueError(f"a script turn must be a string or an object, got {item!r}")
    if "error" in item:
        err = item["error"]
        if not isinstance(err, Mapping) or not isinstance(err.get("status"), int):
            raise ValueError(f"an error turn needs an integer 'status': {item!r}")
        default_type = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(err["status"], "api_error")
        retry = err.get("retry_after")
        return ApiError(
            status=err["status"],
            type=str(err.get("type", default_type)),
            message=str(err.get("message", default_type)),
            retry_after=float(retry) if retry is not None else None,
            mid_stream=bool(err.get("mid_stream", False)),
        )
    if "refusal" in item:
        return Reply(text=str(item["refusal"]), stop_reason="refusal")
    calls: list[ToolCall] = []
    for call in item.get("tool_use") or []:
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ValueError(f"a tool_use entry needs a 'name': {call!r}")
        tool_input = call.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise ValueError(f"tool_use input must be an object: {call!r}")
        calls.append(ToolCall(call["name"], dict(tool_input), call.get("id")))
    if not calls and "text" not in item:
        raise ValueError(f"a turn needs 'text', 'tool_use', 'refusal' or 'error': {item!r}")
    return Reply(
        str(item.get("text", "")),
        tuple(calls),
        item.get("stop_reason"),
        delay=float(item.get("delay", 0.0)),
        cut=item.get("cut"),
    )


def load_script(path: Path) -> list[Turn]:
    """Turns from a JSON file holding a list (or {"turns": [...]})."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, Mapping):
        data = data.get("turns")
    if not isinstance(data, list):
        raise ValueError(f"{path}: the script must be a JSON list of turns")
    return [parse_turn(item) for item in data]


# ---------------------------------------------------------------------------------------------
# Request checks the real API makes, so a client bug fails here as it would there


MID_CONVERSATION_SYSTEM = (4, 8)
"""The first model version that accepts role "system" messages inside `messages` (Opus 4.8)."""


def _typed_text_problem(where: str, block: Mapping[str, Any]) -> str | None:
    """A text block's text, or a tool result's content, of a type the API's schema refuses
    (a number, an object): in its words, or None."""
    kind = block.get("type")
    if kind == "text" and not isinstance(block.get("text"), str):
        return f"{where}.text.text: Input should be a valid string"
    if kind != "tool_result" or "content" not in block:
        return None
    content = block["content"]
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"{where}.tool_result.content: Input should be a valid list"
    for n, item in enumerate(content):
        text = item.get("text") if isinstance(item, Mapping) and item.get("type") == "text" else ""
        if not isinstance(text, str):
            return f"{where}.tool_result.content.{n}.text.text: Input should be a valid string"
    return None


def conversation_problem(messages: Sequence[Any], *, system_messages: bool = True) -> str | None:
    """What the API would reject in this message list, in its words, or None.

    Checked: every message is an object with a user, assistant or (where the model takes
    them, `system_messages`) system role; the first is a user message; content is not empty
    (except a final assistant prefill); no empty text blocks; every tool_use has a string id
    and every tool_result a string tool_use_id; each tool_use is answered by a
    tool_result in the next user message, and each tool_result answers a tool_use just before
    it. A mid-conversation system message comes right after a user turn (or another system
    message) and holds text only; it leaves the tool_use pairing untouched. One that carries
    a per-turn control (`output_config`, Claude Code 2.1.332's effort for the turn) may hold
    nothing else.
    """
    if not messages:
        return "messages: at least one message is required"
    pending: set[str] = set()
    previous_role = ""
    for m, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant", "system"):
            return f"messages.{m}: each message needs a role of 'user', 'assistant' or 'system'"
        if m == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        if role == "system":
            problem = _system_message_problem(m, message, previous_role, system_messages)
            if problem is not None:
                return problem
            previous_role = role
            continue
        previous_role = role
        content = message.get("content")
        final_prefill = m == len(messages) - 1 and role == "assistant"
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or (not (blocks and content) and not final_prefill):
            return (
                f"messages.{m}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        answered: set[str] = set()
        uses: set[str] = set()
        for j, block in enumerate(blocks):
            if not isinstance(block, Mapping):
                return f"messages.{m}.content.{j}: a content block must be an object"
            kind = block.get("type")
            if kind == "text" and not block.get("text") and not final_prefill:
                return f"messages.{m}.content.{j}: text content blocks must be non-empty"
            if (problem := _typed_text_problem(f"messages.{m}.content.{j}", block)) is not None:
                return problem
            field = {"tool_use": "id", "tool_result": "tool_use_id"}.get(str(kind))
            if field is not None and not isinstance(block.get(field), str):
                return f"messages.{m}.content.{j}.{kind}.{field}: " + (
                    "Field required" if field not in block else "Input should be a valid string"
                )
            if kind == "tool_result":
                tool_use_id = str(block.get("tool_use_id"))
                if tool_use_id not in pending:
                    return (
                        f"messages.{m}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {tool_use_id}. Each `tool_result` block must "
                        "have a corresponding `tool_use` block in the previous message."
                    )
                answered.add(tool_use_id)
            elif kind == "tool_use" and role == "assistant":
                uses.add(str(block.get("id")))
        if pending - answered:
            missing = ", ".join(sorted(pending - answered))
            return (
                f"messages.{m - 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {missing}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        pending = uses
    return None


def system_problem(system: Any) -> str | None:
    """What the API rejects in the top-level `system`, or None: a string or a list of
    non-empty text blocks (Messages API reference: `string | TextBlockParam[]`)."""
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: Input should be a valid string or a list of text blocks"
    for j, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return f"system.{j}.type: Input should be 'text'"
        if (problem := _typed_text_problem(f"system.{j}", block)) is not None:
            return problem
        if not block["text"]:
            return f"system.{j}: text content blocks must be non-empty"
    return None


def tools_problem(tools: Any) -> str | None:
    """What the API rejects in `tools`, or None: two tools of one name (deferred or not),
    "tools: Tool names must be unique." as the API says it."""
    if not isinstance(tools, list):
        return None  # absent, or refused by request_view
    names = [t["name"] for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)]
    if len(names) != len(set(names)):
        return "tools: Tool names must be unique."
    return None


def _system_message_problem(
    m: int, message: Mapping[str, Any], previous_role: str, allowed: bool
) -> str | None:
    """What the API rejects in a role "system" message at position `m`, or None."""
    if not allowed:
        return f"messages.{m}: role 'system' is not supported on this model"
    if previous_role not in ("user", "system"):
        return f"messages.{m}: a system message must follow a user turn"
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if blocks == [] and isinstance(message.get("output_config"), Mapping):
        return None
    if not isinstance(blocks, list) or not blocks:
        return f"messages.{m}: system messages must have non-empty content"
    for j, block in enumerate(blocks):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return f"messages.{m}.content.{j}: system messages may only hold text blocks"
        if not block.get("text"):
            return f"messages.{m}.content.{j}: text content blocks must be non-empty"
    return None


THINKING_TYPES = frozenset({"enabled", "disabled", "adaptive"})
THINKING_DISPLAYS = frozenset({"summarized", "omitted"})
"""How thinking comes back (`thinking.display`; Claude Code 2.1.332 sends "omitted")..."""
UPDATES_DISPLAY_BETA = "thinking-display-updates-2026-08-18"
"""...and "updates" with this beta (2.1.332 in stream-json mode; refused, it retries with
"omitted" and without the beta)."""


def thinking_problem(thinking: Any, betas: frozenset[str] = frozenset()) -> str | None:
    """What the API rejects in the `thinking` parameter, or None (absent is fine), under
    the beta features the request names (its `anthropic-beta` header).

    The budget is compared with max_tokens by `max_tokens_problem`.
    """
    if thinking is None:
        return None
    if not isinstance(thinking, Mapping) or thinking.get("type") not in THINKING_TYPES:
        return "thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'"
    displays = THINKING_DISPLAYS | ({"updates"} if UPDATES_DISPLAY_BETA in betas else set())
    display = thinking.get("display")
    if thinking["type"] != "disabled" and display is not None and display not in displays:
        return f"thinking.{thinking['type']}.display: Input should be 'summarized' or 'omitted'"
    if thinking["type"] != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    return None


INTERLEAVED_THINKING_BETA = "interleaved-thinking-"
"""The beta (interleaved-thinking-2025-05-14) under which a thinking budget may exceed
max_tokens: it then spans every thinking block of the turn (extended thinking,
"Interleaved thinking")."""


def max_tokens_problem(body: Mapping[str, Any], row: PriceRow, betas: frozenset[str]) -> str | None:
    """What the API rejects in a `max_tokens` it has (an integer of at least 0), in its
    words, or None: more than the model's output limit under the request's betas (a model
    the table gives no limit takes any), or, with thinking enabled and no tools, a budget
    that leaves no room for the answer. With tools the fake takes any budget: interleaved
    thinking lets it span the turn, under the beta on Claude 4 and by default on later
    models, and which of them interleave without it no stored page says."""
    max_tokens = int(body["max_tokens"])
    limit = row.output_limit(betas)
    if limit is not None and max_tokens > limit:
        return (
            f"max_tokens: {max_tokens} > {limit}, which is the maximum allowed number of "
            f"output tokens for {body['model']}"
        )
    thinking = body.get("thinking")
    interleaved = any(beta.startswith(INTERLEAVED_THINKING_BETA) for beta in betas)
    may_interleave = interleaved or bool(body.get("tools"))
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled" or may_interleave:
        return None
    budget = thinking.get("budget_tokens")
    if isinstance(budget, int) and budget >= max_tokens:
        return (
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#max-tokens-and-context-window-size"
        )
    return None


def stop_sequences_problem(stop_sequences: Any) -> str | None:
    """What the API rejects in `stop_sequences`, in its words, or None: not a list of
    strings (Messages API reference: `string[]`), an empty one ("each stop sequence must be
    non-empty") or one of whitespace only ("each stop sequence must contain
    non-whitespace", the 400 a ["\\n"] got). No limit on how many: none is documented."""
    if stop_sequences is None:
        return None
    if not isinstance(stop_sequences, list):
        return "stop_sequences: Input should be a valid list"
    for n, sequence in enumerate(stop_sequences):
        if not isinstance(sequence, str):
            return f"stop_sequences.{n}: Input should be a valid string"
        if not sequence:
            return "stop_sequences: each stop sequence must be non-empty"
        if not sequence.strip():
            return "stop_sequences: each stop sequence must contain non-whitespace"
    return None


FORCED_TOOL_CHOICES = frozenset({"any", "tool"})


def sampling_problem(body: Mapping[str, Any]) -> str | None:
    """What the API rejects in `temperature` and `tool_choice`, or None: a temperature
    outside 0..1 (Messages API reference), and, with thinking enabled, a temperature other
    than 1 or a tool_choice that forces tool use ("Thinking isn't compatible with
    temperature or top_k modifications as well as forced tool use", extended thinking)."""
    temperature = body.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature <= 1
    ):
        return "temperature: Input should be a number from 0 to 1"
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    if temperature is not None and temperature != 1:
        return "temperature may only be set to 1 when thinking is enabled"
    tool_choice = body.get("tool_choice")
    if isinstance(tool_choice, Mapping) and tool_choice.get("type") in FORCED_TOOL_CHOICES:
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def request_problem(
    body: Any, *, need_max_tokens: bool = True, betas: frozenset[str] = frozenset()
) -> ApiError | None:
    """What the API refuses in a request body, as it answers (400, or 404 for an unknown
    model), or None: the checks every request to the fake goes through, for tests that
    validate a request without sending it. `betas`: those its `anthropic-beta` header names."""

    def invalid(message: str) -> ApiError:
        return ApiError(400, "invalid_request_error", message)

    if not isinstance(body, Mapping):
        return invalid("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return invalid("model: Field required")
    if not isinstance(body.get("messages"), list):
        return invalid("messages: Field required")
    if need_max_tokens:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            return invalid("max_tokens: Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
            return invalid("max_tokens: Input should be a valid integer of at least 0")
        if max_tokens == 0 and body.get("stream"):
            return invalid("max_tokens: 0 cannot be streamed")
    try:
        info = lookup(model)
    except UnknownModelError:
        return unknown_model(model)
    problem = (
        (max_tokens_problem(body, info, betas) if need_max_tokens else None)
        or conversation_problem(
            body["messages"], system_messages=info.version >= MID_CONVERSATION_SYSTEM
        )
        or system_problem(body.get("system"))
        or tools_problem(body.get("tools"))
        or thinking_problem(body.get("thinking"), betas)
        or sampling_problem(body)
        or stop_sequences_problem(body.get("stop_sequences"))
    )
    if problem is not None:
        return invalid(problem)
    try:
        request = request_from_messages_api(body)
        resolve_breakpoints(request.blocks(), request.auto_cache_ttl)
    except CacheControlError as exc:
        return invalid(str(exc))
    return None


# ---------------------------------------------------------------------------------------------
# Responses


class _Reject(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """The API's JSON shape of the input side of `usage` (cache_sim.usage_from_dict reads it)."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
        },
    }


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake{secrets.token_hex(10)}"


def _content_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or _new_id("toolu"),
                "name": call.name,
                "input": dict(call.input),
            }
        )
    return blocks


def _output_tokens(blocks: Sequence[Mapping[str, Any]]) -> int:
    total = 0
    for block in blocks:
        if block["type"] == "text":
            total += estimate_tokens(block["text"], "prose")
        else:
            total += estimate_tokens(block["name"] + json.dumps(block["input"]), "json")
    return total


def _answer(reply: Reply, max_tokens: int) -> tuple[Reply, list[dict[str, Any]]]:
    """The content the turn produces within `max_tokens`, cut short as the API cuts it.

    `max_tokens: 0` is the documented cache pre-warm: no content, stop_reason max_tokens.
    """
    if max_tokens == 0:
        return Reply(stop_reason="max_tokens"), []
    blocks = _content_blocks(reply)
    if _output_tokens(blocks) <= max_tokens:
        return reply, blocks
    text = reply.text
    while text and estimate_tokens(text, "prose") > max_tokens:
        text = text[: max(0, min(len(text) - 1, max_tokens * 3))]
    cut = Reply(text=text, stop_reason="max_tokens")
    return cut, _content_blocks(cut)


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _error_body(error: ApiError, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error.type, "message": error.message},
        "request_id": request_id,
    }


# ---------------------------------------------------------------------------------------------
# The server


class FakeMessagesAPI:
    """A scripted Messages API on 127.0.0.1; a context manager that serves in a thread."""

    def __init__(
        self,
        script: Sequence[TurnSource] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_keys: Collection[str] | None = None,
        clock: Callable[[], float] = time.time,
        record_path: Path | None = None,
        chunk_size: int = 12,
    ) -> None:
        self._script: list[Turn | Callable[[RecordedRequest], TurnLike]] = [
            t if callable(t) else parse_turn(t) for t in script
        ]
        self._api_keys = frozenset(api_keys) if api_keys is not None else None
        self._clock = clock
        self._record_path = record_path
        self._chunk_size = max(1, chunk_size)
        self._lock = threading.Lock()
        self._recorded = threading.Condition(self._lock)
        self._requests: list[RecordedRequest] = []
        self._caches: dict[str, PromptCache] = {}
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                args=(0.02,),
                name="fake-messages-api",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in the calling thread (the subprocess form)."""
        self._server.serve_forever()

    # --- what tests look at

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """Only the POST /v1/messages requests."""
        return [r for r in self.requests if r.path == MESSAGES_PATH]

    async def wait_for_message_requests(
        self, count: int, timeout: float = 10.0
    ) -> list[RecordedRequest]:
        """`message_requests` once `count` are recorded, or as they stand after `timeout`.

        A request is recorded just after its answer is written, so a client that has its
        answer may still find the record missing for a moment: wait here, don't sleep. The
        wait runs in a worker thread, so the caller's event loop keeps serving its client.
        """

        def enough() -> bool:
            return sum(r.path == MESSAGES_PATH for r in self._requests) >= count

        def wait() -> None:
            with self._recorded:
                self._recorded.wait_for(enough, timeout)

        await asyncio.to_thread(wait)
        return self.message_requests

    @property
    def remaining_turns(self) -> int:
        with self._lock:
            return len(self._script)

    def add_turns(self, *turns: TurnSource) -> None:
        with self._lock:
            self._script.extend(t if callable(t) else parse_turn(t) for t in turns)

    # --- request handling (called from handler threads)

    def _record(self, record: RecordedRequest) -> None:
        with self._recorded:
            self._requests.append(record)
            self._recorded.notify_all()
            if self._record_path is not None:
                line = {
                    "method": record.method,
                    "path": record.path,
                    "headers": _redacted(record.headers),
                    "body": record.body,
                    "status": record.status,
                    "usage": record.usage,
                    "time": record.time,
                }
                with self._record_path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line) + "\n")

    def _check_auth(self, headers: Mapping[str, str]) -> None:
        """The key (401 without one), then the version header the API requires (400)."""
        key = headers.get("x-api-key")
        auth = headers.get("authorization", "")
        if key is None and auth.lower().startswith("bearer "):
            key = auth[7:].strip()
        if not key:
            raise _Reject(ApiError(401, "authentication_error", "x-api-key header is required"))
        if self._api_keys is not None and key not in self._api_keys:
            raise _Reject(invalid_api_key())
        if not headers.get("anthropic-version"):  # "you must send" it (API versioning page)
            raise _Reject(
                ApiError(400, "invalid_request_error", "anthropic-version: header is required")
            )

    def _parse_body(self, record: RecordedRequest, *, need_max_tokens: bool) -> Mapping[str, Any]:
        header = record.headers.get("anthropic-beta", "")
        betas = frozenset(name.strip() for name in header.split(",") if name.strip())
        problem = request_problem(record.body, need_max_tokens=need_max_tokens, betas=betas)
        if problem is not None:
            raise _Reject(problem)
        assert isinstance(record.body, Mapping)
        return record.body

    def _cache_request(self, body: Mapping[str, Any]) -> Request:
        """The cache's view of a body `request_problem` accepted."""
        return request_from_messages_api(body)

    def _usage(self, model: str, request: Request, now: float) -> Usage:
        with self._lock:
            cache = self._caches.get(model)
            if cache is None:
                cache = self._caches[model] = PromptCache(model)
            return cache.call(request, now)

    def _next_turn(self, record: RecordedRequest) -> Turn:
        with self._lock:
            if not self._script:
                source: TurnSource = ApiError(
                    500,
                    "api_error",
                    "fake Messages API: the script has no turn left for this request",
                )
            else:
                source = self._script.pop(0)
        return parse_turn(source(record) if callable(source) else source)

    def _count_tokens(self, record: RecordedRequest) -> dict[str, Any]:
        self._check_auth(record.headers)
        body = self._parse_body(record, need_max_tokens=False)
        return {"input_tokens": self._cache_request(body).total_tokens}


def _redacted(headers: Mapping[str, str]) -> dict[str, str]:
    out = dict(headers)
    for name in ("x-api-key", "authorization"):
        if name in out:
            out[name] = "<redacted …" + out[name][-4:] + ">"
    return out


def _handler_for(api: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms stalls
        server_version = "FakeMessagesAPI/1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read records
            return

        def do_GET(self) -> None:
            record = self._start_record("GET", None)
            self._send_error(ApiError(404, "not_found_error", f"Not found: {self.path}"))
            record.done.set()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_REQUEST_BYTES:
                self._refuse_too_large(length)
                return
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except (json.JSONDecodeError, RecursionError):  # nested too deep: no JSON either
                body = raw.decode("utf-8", "replace")
            record = self._start_record("POST", body)
            path = self.path.split("?", 1)[0]
            try:
                if path == MESSAGES_PATH:
                    self._messages(record)
                elif path == "/v1/messages/count_tokens":
                    self._send_json(200, api._count_tokens(record))
                elif isinstance(body, str):
                    raise _Reject(ApiError(400, "invalid_request_error", "body is not valid JSON"))
                else:
                    raise _Reject(ApiError(404, "not_found_error", f"Not found: {path}"))
            except _Reject as rejected:
                self._send_error(rejected.error)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away (a cancelled stream)
            except Exception as exc:  # a bug in the fake must not hang the client under test
                print(f"fake Messages API: {exc!r}", file=sys.stderr)
                self._send_error(ApiError(500, "api_error", f"fake Messages API failed: {exc!r}"))
            finally:
                record.done.set()

        # --- helpers

        def _refuse_too_large(self, length: int) -> None:
            """413 request_too_large, as Cloudflare answers before the API reads the body
            (read here and dropped, so the client can finish sending and hear it)."""
            while length > 0 and (chunk := self.rfile.read(min(length, 1 << 20))):
                length -= len(chunk)
            record = self._start_record("POST", None)
            error = f"Request exceeds the maximum allowed number of bytes ({MAX_REQUEST_BYTES})."
            self._send_error(ApiError(413, "request_too_large", error))
            record.done.set()

        def _start_record(self, method: str, body: Any) -> RecordedRequest:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._delay = 0.0
            self._record = RecordedRequest(
                method, self.path.split("?", 1)[0], headers, body, time=api._clock()
            )
            self._request_id = _new_id("req")
            return self._record

        def _send_json(
            self, status: int, payload: Mapping[str, Any], extra: Mapping[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self._record.status = status
            api._record(self._record)  # before answering: a client that got its answer sees it
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", self._request_id)
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self._record.completed = True

        def _send_error(self, error: ApiError) -> None:
            extra = {}
            if error.retry_after is not None:
                extra["retry-after"] = f"{error.retry_after:g}"
            self._send_json(error.status, _error_body(error, self._request_id), extra)

        def _messages(self, record: RecordedRequest) -> None:
            api._check_auth(record.headers)
            if isinstance(record.body, str):
                raise _Reject(ApiError(400, "invalid_request_error", "body is not valid JSON"))
            body = api._parse_body(record, need_max_tokens=True)
            cache_request = api._cache_request(body)
            turn = api._next_turn(record)
            if isinstance(turn, Raw):
                self._send_raw(turn)
                return
            stream = bool(body.get("stream"))
            if isinstance(turn, ApiError) and not (turn.mid_stream and stream):
                raise _Reject(turn)
            # The cache is written once the response begins, so only answered requests count.
            usage = api._usage(str(body["model"]), cache_request, record.time)
            message_id = _new_id("msg")
            usage_json = {**usage_to_dict(usage), "service_tier": "standard"}
            record.usage = usage_json
            if isinstance(turn, ApiError):
                self._stream(message_id, str(body["model"]), usage_json, None, turn)
                return
            turn, blocks = _answer(turn, int(body["max_tokens"]))
            output_tokens = _output_tokens(blocks)
            if stream:
                self._stream(
                    message_id, str(body["model"]), usage_json, (turn, blocks, output_tokens), None
                )
                return
            if turn.cut is not None:
                api._record(record)  # answered by no byte at all
                self._cut(turn.cut)
                return
            self._send_json(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": blocks,
                    "stop_reason": turn.resolved_stop_reason(),
                    "stop_sequence": None,
                    "usage": {**usage_json, "output_tokens": output_tokens},
                },
            )

        def _send_raw(self, raw: Raw) -> None:
            self._record.status = raw.status
            api._record(self._record)
            self.send_response(raw.status)
            self.send_header("content-type", raw.content_type)
            self.send_header("content-length", str(len(raw.body)))
            self.end_headers()
            if raw.cut is not None:
                self.wfile.write(raw.body[: len(raw.body) // 2])
                self.wfile.flush()
                self._cut(raw.cut)
                return
            self.wfile.write(raw.body)
            self._record.completed = True

        def _stream(
            self,
            message_id: str,
            model: str,
            usage_json: dict[str, Any],
            reply: tuple[Reply, list[dict[str, Any]], int] | None,
            error: ApiError | None,
        ) -> None:
            self._record.status = 200
            api._record(self._record)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("request-id", self._request_id)
            self.end_headers()
            self._event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage_json, "output_tokens": 1},
                    },
                },
            )
            self._event("ping", {"type": "ping"})
            if error is not None:
                self._event("error", _error_body(error, self._request_id))
                self._end_chunks()
                return
            assert reply is not None
            turn, blocks, output_tokens = reply
            self._delay = turn.delay
            for index, block in enumerate(blocks):
                start: dict[str, Any]
                if block["type"] == "text":
                    start = {"type": "text", "text": ""}
                    pieces = _chunks(block["text"], api._chunk_size)
                    self._stream_block(
                        index, start, "text_delta", "text", pieces, turn.gate, turn.cut
                    )
                    if turn.cut is not None:
                        return
                else:
                    start = {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    }
                    pieces = itertools.chain(
                        [""], _chunks(json.dumps(block["input"]), api._chunk_size)
                    )
                    self._stream_block(index, start, "input_json_delta", "partial_json", pieces)
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": turn.resolved_stop_reason(), "stop_sequence": None},
                    "usage": {**_delta_usage(usage_json), "output_tokens": output_tokens},
                },
            )
            self._event("message_stop", {"type": "message_stop"})
            self._end_chunks()
            self._record.completed = True

        def _stream_block(
            self,
            index: int,
            start: Mapping[str, Any],
            delta_type: str,
            field: str,
            pieces: Iterable[str],
            gate: threading.Event | None = None,
            cut: Cut | None = None,
        ) -> None:
            """One content block as the API streams it: start, a delta per piece, stop.

            With a `gate`, each delta waits for it (a test holds the stream mid-block); with
            a `cut`, the stream breaks after the first delta.
            """
            self._event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            for piece in pieces:
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": delta_type, field: piece},
                    },
                )
                if gate is not None and not gate.is_set():
                    gate.wait(timeout=60)
                if cut is not None:
                    self._cut(cut)
                    return
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})

        def _cut(self, how: Cut) -> None:
            """End a stream the way a broken network does: closed, or silent until the client
            walks away."""
            if how == "stall":
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    if readable and self._gone():
                        self._record.left.set()
                        break
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

        def _gone(self) -> bool:
            """The client closed its connection (readable: its end, or a reset)."""
            try:
                return not self.connection.recv(1, socket.MSG_PEEK)
            except ConnectionResetError:
                return True

        def _event(self, name: str, data: Mapping[str, Any]) -> None:
            if self._delay:
                time.sleep(self._delay)
            payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

        def _end_chunks(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def _delta_usage(usage_json: Mapping[str, Any]) -> dict[str, Any]:
    """message_delta repeats the cumulative input counts, without the per-TTL breakdown."""
    return {
        k: usage_json[k]
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    }


# ---------------------------------------------------------------------------------------------
# As a subprocess


REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(slots=True, frozen=True)
class FakeProcess:
    """A fake Messages API running in a subprocess: its URL and the file it records to."""

    base_url: str
    record: Path

    def requests(self) -> list[dict[str, Any]]:
        """The requests recorded so far (API keys redacted), oldest first."""
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


@contextlib.contextmanager
def fake_api_subprocess(
    script: Sequence[Any], workdir: Path, python: str = sys.executable
) -> Iterator[FakeProcess]:
    """Run the fake as `python -m tests.fakes.messages_api` for a server under test to reach.

    `script` is the JSON form of the turns (see parse_turn); script.json and requests.jsonl
    are written in `workdir`. The process is stopped on exit.
    """
    script_path = workdir / "script.json"
    script_path.write_text(json.dumps(list(script)), encoding="utf-8")
    record = workdir / "requests.jsonl"
    command = [python, "-m", "tests.fakes.messages_api", "--script", str(script_path)]
    process = subprocess.Popen(
        [*command, "--port", "0", "--record", str(record)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the fake Messages API did not start (printed {url!r})")
        yield FakeProcess(url, record)
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


# ---------------------------------------------------------------------------------------------
# Subprocess entry point


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.messages_api",
        description="A scripted local Messages API for tests.",
    )
    parser.add_argument("--script", type=Path, help="JSON list of turns (see parse_turn)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--record", type=Path, help="append every request as a JSON line here")
    parser.add_argument(
        "--api-key", action="append", dest="api_keys", help="accept only these keys"
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError) as exc:
        print(f"fake Messages API: {exc}", file=sys.stderr)
        return 2
    api = FakeMessagesAPI(
        script, host=args.host, port=args.port, api_keys=args.api_keys, record_path=args.record
    )
    print(api.base_url, flush=True)
    try:
        api.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        api.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
