"""The anthropic SDK through `ectx gateway` to the local Messages API (tests/fakes).

Real HTTP on both sides: the SDK talks to the gateway, the gateway to the fake. What the
fake recorded is what the gateway sent upstream; what the SDK returns or raises is what the
client of the gateway sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import httpx2
import pytest
from aiohttp import web
from ephemeral_context.context.engine import EngineStatus
from ephemeral_context.context.fetching import CLIENT_READ, FETCH_ROOT, READ_SESSION_FILE
from ephemeral_context.gateway.core import MAX_HYDRATION_ROUNDS

from tests.claude_code import cat_n
from tests.fakes.messages_api import (
    ApiError,
    Cut,
    FakeMessagesAPI,
    Raw,
    RecordedRequest,
    Reply,
    ToolCall,
    overloaded,
    rate_limited,
    unknown_model,
)
from tests.gateway_harness import (
    GatewayThread,
    billed,
    hydrate_first_reference,
    referenced_ids,
    request_text,
)
from tests.unit.context.context_helpers import Clock
from tests.unit.context.test_media import image

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test-" + "g" * 24
READ_TOOL = {
    "name": "Read",
    "description": "Read a file",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    },
}
SYSTEM = [
    {"type": "text", "text": "You are a coding agent."},
    {"type": "text", "text": "Be brief. " * 300, "cache_control": {"type": "ephemeral"}},
]
APP = "\n".join(f"def f{i}(x):\n    return x * {i}  # helper number {i}" for i in range(200))


@pytest.fixture
def gateway(api: FakeMessagesAPI, tmp_path: Path) -> Iterator[GatewayThread]:
    with GatewayThread(api.base_url, tmp_path / "store") as running:
        yield running


@pytest.fixture
def client(gateway: GatewayThread) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk:
        yield sdk


def ask(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 512,
        "system": SYSTEM,
        "tools": [READ_TOOL],
        "messages": messages,
        "metadata": {"user_id": '{"session_id": "11111111-2222-3333-4444-555555555555"}'},
        **extra,
    }


def read_result(use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": cat_n(APP)}


def _created(
    client: anthropic.Anthropic, tools: list[Any], stream: bool = False
) -> anthropic.APIStatusError:
    """The status error the SDK raises for one request through the gateway, streamed or
    not."""
    body = ask([{"role": "user", "content": "hi"}], tools=tools)
    with pytest.raises(anthropic.APIStatusError) as raised:
        if stream:
            with client.messages.stream(**body) as running:
                running.get_final_message()
        else:
            client.messages.create(**body)
    return raised.value


def test_a_plain_answer_passes_the_client_fields_through(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    api.add_turns("hello there")
    message = client.messages.create(
        **ask([{"role": "user", "content": "hi"}]),
        extra_body={"temperature": 0.5, "an_unknown_field": {"kept": [1, 2]}},
        extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
    )
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "hello there"
    sent = api.message_requests[0]
    auth = sent.headers.get("x-api-key") or sent.headers["authorization"]
    assert auth.endswith(KEY)  # the client's own credentials, to the upstream only
    assert sent.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert sent.body["temperature"] == 0.5
    assert sent.body["an_unknown_field"] == {"kept": [1, 2]}
    assert sent.body["metadata"] == ask([])["metadata"]
    assert sent.body["system"][:2] == SYSTEM
    assert sent.body["tools"] == [READ_TOOL]  # its Read fetches by id: nothing added


def test_streaming_text_reaches_the_sdk(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.add_turns("streamed " * 40)
    with client.messages.stream(**ask([{"role": "user", "content": "hi"}])) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == "streamed " * 40
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens + (final.usage.cache_creation_input_tokens or 0) > 0


def _read_twice_then_hydrate(api: FakeMessagesAPI, answer: str | Reply | ApiError) -> None:
    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_2"}]},
        hydrate_first_reference,
        answer,
    )


def _conversation(client: anthropic.Anthropic, stream: bool, **extra: Any) -> list[Any]:
    """Play Claude Code's part: run each Read the model asks for, until it answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What does app.py do?"}]
    answers = []
    for _ in range(4):
        if stream:
            with client.messages.stream(**ask(messages, **extra)) as running:
                message = running.get_final_message()
        else:
            message = client.messages.create(**ask(messages, **extra))
        answers.append(message)
        content = [b.model_dump(exclude_none=True) for b in message.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            return answers
        messages.append({"role": "user", "content": [read_result(u["id"]) for u in uses]})
    raise AssertionError("the conversation did not end")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_reference_the_model_asks_for_hydrates_inside_one_answer(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread, stream: bool
) -> None:
    _read_twice_then_hydrate(api, "app.py defines 200 helpers")
    answers = _conversation(client, stream)
    assert len(answers) == 3  # the hydration round never reached the client
    last = answers[-1]
    assert [b.type for b in last.content] == ["text"]
    assert last.content[0].text == "app.py defines 200 helpers"
    assert last.stop_reason == "end_turn"
    third, fourth = api.message_requests[2], api.message_requests[3]
    repeat = third.body["messages"][-1]["content"][0]["content"]
    assert "unchanged since [[file:" in repeat  # the engine answered the repeat with an id
    hydrated = fourth.body["messages"][-1]["content"][0]
    assert hydrated["type"] == "tool_result" and not hydrated.get("is_error")
    assert "def f199(x):" in hydrated["content"]
    figures = gateway.status()["sessions"]["11111111-2222-3333-4444-555555555555"]
    assert figures["requests"] == 3 and figures["upstream_calls"] == 4
    engine_status = gateway.core.engine.status()  # the engine heard the upstream's usage
    assert engine_status.last_call is not None and engine_status.cache_hit_rate > 0
    assert figures["hydrations"] == 1 and figures["hydration_errors"] == 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_client_without_a_read_gets_the_engine_tool(
    api: FakeMessagesAPI, client: anthropic.Anthropic, stream: bool
) -> None:
    """A client whose Read declares no `file_path` (its schema says nothing the gateway can
    fetch with): the gateway adds read_session_file after its tools in every request and
    answers its calls itself; the client never sees one."""
    read_tool = {**READ_TOOL, "input_schema": {"type": "object", "properties": {}}}
    _read_twice_then_hydrate(api, "app.py defines 200 helpers")
    answers = _conversation(client, stream, tools=[read_tool])
    assert answers[-1].content[0].text == "app.py defines 200 helpers"
    assert all(r.body["tools"] == [read_tool, READ_SESSION_FILE] for r in api.message_requests)
    asked = api.message_requests[3].body["messages"][-2]["content"]
    assert [b["name"] for b in asked if b["type"] == "tool_use"] == ["read_session_file"]
    seen = [b.name for a in answers for b in a.content if b.type == "tool_use"]
    assert seen == ["Read", "Read"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_fetch_beside_a_read_of_the_client_leaves_the_client_its_read(
    api: FakeMessagesAPI, client: anthropic.Anthropic, stream: bool
) -> None:
    """One answer calls Read twice: at a path of the engine's (the gateway's) and at a file
    (the client's). The client gets the text and its own Read, numbered as if the fetch had
    never been (streamed, the Reads wait for their input to tell which is which); the fetch
    is answered along with the client's result in its next request."""

    def fetch_and_read(request: RecordedRequest) -> Reply:
        fetch = {"file_path": f"{FETCH_ROOT}{referenced_ids(request)[-1]}"}
        real = {"file_path": "/w/util.py"}
        calls = (ToolCall("Read", fetch, "toolu_h"), ToolCall("Read", real, "toolu_3"))
        return Reply(text="Checking both.", tool_calls=calls)

    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_2"}]},
        fetch_and_read,
        "done",
    )
    answers = _conversation(client, stream)
    third = answers[2].content
    assert [b.type for b in third] == ["text", "tool_use"]
    assert (third[1].id, third[1].input) == ("toolu_3", {"file_path": "/w/util.py"})
    sent = api.message_requests[3].body["messages"]
    results = {b["tool_use_id"]: b for b in sent[-1]["content"] if b["type"] == "tool_result"}
    assert set(results) == {"toolu_h", "toolu_3"}
    assert "def f199(x):" in results["toolu_h"]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_model_that_keeps_fetching_answers_after_the_last_round(
    api: FakeMessagesAPI, client: anthropic.Anthropic, stream: bool
) -> None:
    """The gateway answers MAX_HYDRATION_ROUNDS hydration calls in a row for one request;
    the call after the last may call no tool, so the client gets an answer, not nothing."""
    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_2"}]},
        *[hydrate_first_reference] * MAX_HYDRATION_ROUNDS,
        "app.py defines 200 helpers",
    )
    answers = _conversation(client, stream)
    assert answers[-1].content[0].text == "app.py defines 200 helpers"
    rounds = api.message_requests[2:]
    assert len(rounds) == MAX_HYDRATION_ROUNDS + 1
    assert [r.body.get("tool_choice") for r in rounds] == [None] * MAX_HYDRATION_ROUNDS + [
        {"type": "none"}
    ]


def _follow_up(answers: list[Any]) -> list[dict[str, Any]]:
    """The conversation as the client sends it back after `answers`, and one more prompt."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What does app.py do?"}]
    for message in answers:
        content = [b.model_dump(exclude_none=True) for b in message.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if uses:
            messages.append({"role": "user", "content": [read_result(u["id"]) for u in uses]})
    messages.append({"role": "user", "content": "thanks; and f3?"})
    return messages


def test_the_merged_answer_comes_back_and_the_conversation_goes_on(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread
) -> None:
    _read_twice_then_hydrate(api, "first answer")
    answers = _conversation(client, stream=True)
    api.add_turns("f3 triples")
    final = client.messages.create(**ask(_follow_up(answers)))
    assert final.content[0].text == "f3 triples"
    sent = api.message_requests[-1].body["messages"]
    # the engine's copy still holds the hidden round: its call, and the answer it got
    uses = [b for m in sent if m["role"] == "assistant" for b in m["content"]]
    assert any(CLIENT_READ.asks(b) for b in uses)
    assert len(gateway.core.conversations.sessions()) == 1
    assert len(gateway.core.engine.conversations()) == 1  # no fork


@dataclass
class _Run:
    """One client session through a fresh gateway: what /ectx/status and the engine's
    status (the editor's, when the language server hosts the gateway) report, the engine's
    bills and its recorded-style twin's blocks, and what the upstream billed."""

    figures: dict[str, Any]
    status: EngineStatus
    ours: float
    twin: float
    twin_blocks: list[Any]
    upstream: float


def _run(start: Callable[..., FakeMessagesAPI], store: Path, middle: list[Any]) -> _Run:
    """Two reads, the `middle` turns, an answer; then one more prompt, answered."""
    api = start()
    reads = [
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": f"toolu_{n}"}]}
        for n in (1, 2)
    ]
    api.add_turns(*reads, *middle, "200 helpers", "f3")
    with (
        GatewayThread(api.base_url, store) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as client,
    ):
        answers = _conversation(client, stream=True)
        assert answers[-1].content[0].text == "200 helpers"
        client.messages.create(**ask(_follow_up(answers)))
        engine = gateway.core.engine
        (conv,) = engine.conversations()
        bills, thread = engine.conversation(conv).accounting, engine.conversation(conv).thread
        return _Run(
            gateway.status()["sessions"]["11111111-2222-3333-4444-555555555555"],
            engine.status(),
            bills.ours_billed,
            bills.baseline_billed,
            list(thread.baseline),
            billed(api.message_requests),
        )


THIRD_READ = ToolCall("Read", {"file_path": "/w/app.py"}, "toolu_3")


def _read_and_hydrate(request: RecordedRequest) -> Reply:
    """Claude Code's Read and a hydration call in one answer: the client sees the Read, and
    the hydrated content goes upstream with its result."""
    calls = hydrate_first_reference(request).tool_calls
    return Reply(tool_calls=(THIRD_READ, *calls))


@pytest.mark.parametrize(
    ("plain_turns", "hydrating_turns", "extra_calls"),
    [
        ([], [hydrate_first_reference], 1),
        ([Reply(tool_calls=(THIRD_READ,))], [_read_and_hydrate], 0),
    ],
    ids=["a-round-of-its-own", "with-the-clients-call"],
)
def test_a_hydration_round_trip_is_billed_to_the_engine_and_never_to_its_twin(
    fake_messages_api: Callable[..., FakeMessagesAPI],
    tmp_path: Path,
    plain_turns: list[Any],
    hydrating_turns: list[Any],
    extra_calls: int,
) -> None:
    """The same client requests, once with a hydration call the client never sees: the
    recorded-style twin prices what the client sent, so it is the same in both; the engine
    and the upstream pay for the hydration (a round of its own is one more upstream call);
    both reports say what it cost."""
    plain = _run(fake_messages_api, tmp_path / "plain", plain_turns)
    hydrated = _run(fake_messages_api, tmp_path / "hydrated", hydrating_turns)
    requests = plain.figures["requests"]
    assert plain.figures["upstream_calls"] == requests
    assert hydrated.figures["requests"] == requests
    assert hydrated.figures["upstream_calls"] == requests + extra_calls
    assert (hydrated.figures["hydrations"], hydrated.status.rehydrations) == (1, 1)
    assert plain.status.rehydrations == 0
    # the twin: not billed for an extra request, and the hydration's blocks are not in it
    assert hydrated.twin_blocks == plain.twin_blocks
    assert hydrated.twin == plain.twin
    trip = hydrated.ours - plain.ours  # what the hydration cost, in the engine's cache model
    assert trip > 0
    assert hydrated.status.saved_tokens == pytest.approx(plain.status.saved_tokens - trip)
    # /ectx/status: what the upstream billed, the hydration included, against the direct
    for run in (plain, hydrated):
        assert run.figures["billed_input_sent"] == pytest.approx(run.upstream, abs=0.1)
        assert run.figures["saved"] == pytest.approx(
            run.figures["billed_input_direct"] - run.figures["billed_input_sent"], abs=0.2
        )
    direct = hydrated.figures["billed_input_direct"]
    assert direct == pytest.approx(plain.figures["billed_input_direct"], rel=0.01)
    assert hydrated.figures["saved"] < plain.figures["saved"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("turn", "status", "kind"),
    [
        (rate_limited(retry_after=7), 429, anthropic.RateLimitError),
        (overloaded(retry_after=3), 529, anthropic.APIStatusError),
    ],
    ids=["429", "529"],
)
@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
def test_upstream_errors_reach_the_client_as_sent(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    stream: bool,
    turn: Any,
    status: int,
    kind: type[Exception],
    tools: list[Any],
) -> None:
    api.add_turns(turn)
    error = _created(client, tools, stream)
    assert isinstance(error, kind)
    assert error.status_code == status
    assert error.response.headers["retry-after"] == str(turn.retry_after)
    request_id = error.response.headers["request-id"]  # the upstream's, passed on
    assert error.body == {
        "type": "error",
        "error": {"type": turn.type, "message": turn.message},
        "request_id": request_id,
    }


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
def test_an_error_event_mid_stream_reaches_the_client(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread, tools: list[Any]
) -> None:
    """The call was answered with a 200: it counts as made, through the engine or not."""
    api.add_turns(overloaded(mid_stream=True))
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        client.messages.stream(**ask([{"role": "user", "content": "hi"}], tools=tools)) as s,
    ):
        s.get_final_message()
    assert _recorded(gateway, 1)["upstream_calls"] == 1


def test_a_dropped_stream_is_dropped_for_the_client(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    api.add_turns(Reply(text="partial " * 50, cut="drop"))
    received: list[str] = []
    with (
        pytest.raises((anthropic.APIConnectionError, httpx2.HTTPError)),
        client.messages.stream(**ask([{"role": "user", "content": "hi"}])) as s,
    ):
        received.extend(s.text_stream)
    assert received  # text before the drop arrived as it was sent


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
def test_a_stream_that_stalls_ends_with_an_error_that_says_so(
    api: FakeMessagesAPI, tmp_path: Path, tools: list[Any]
) -> None:
    api.add_turns(Reply(text="partial " * 50, cut="stall"))
    received: list[str] = []
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        with (
            pytest.raises(anthropic.APIStatusError, match="sent nothing for 1 s mid-answer") as e,
            sdk.messages.stream(**ask([{"role": "user", "content": "hi"}], tools=tools)) as s,
        ):
            received.extend(s.text_stream)
        assert e.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]
        assert received  # what came before the stall was passed on
        assert _recorded(gateway, 1)["upstream_calls"] == 1  # and it is billed


def _recorded(gateway: GatewayThread, requests: int) -> dict[str, Any]:
    """The status totals once the gateway has accounted `requests` client requests (it does
    so after the client went away)."""
    deadline = time.monotonic() + 30
    while gateway.status()["total"]["requests"] < requests and time.monotonic() < deadline:
        time.sleep(0.05)
    return dict(gateway.status()["total"])


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("who", ["client", "upstream"])
def test_a_stream_broken_off_is_still_billed_in_the_status(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    who: str,
    tools: list[Any],
) -> None:
    gate = threading.Event()
    text = "partial " * 50
    api.add_turns(Reply(text=text, gate=gate) if who == "client" else Reply(text=text, cut="drop"))
    body = ask([{"role": "user", "content": "hi"}], tools=tools)
    with (
        contextlib.suppress(anthropic.APIConnectionError, httpx2.HTTPError),
        client.messages.stream(**body) as s,
    ):
        next(iter(s.text_stream))  # the client walks away after its first text
    gate.set()
    total = _recorded(gateway, 1)
    assert total["upstream_calls"] == 1
    assert total["billed_input_sent"] == round(billed(api.message_requests), 1) > 0


@pytest.mark.parametrize(
    ("tools", "gone"),
    [
        ([READ_TOOL], aiohttp.ClientConnectionResetError("Cannot write to closing transport")),
        ([READ_TOOL], asyncio.CancelledError()),
        ([], aiohttp.ClientConnectionResetError("Cannot write to closing transport")),
    ],
    ids=["engine-left", "engine-cancelled", "passthrough-left"],
)
def test_a_client_gone_as_its_stream_closes_leaves_the_call_accounted(
    api: FakeMessagesAPI,
    gateway: GatewayThread,
    monkeypatch: pytest.MonkeyPatch,
    tools: list[Any],
    gone: BaseException,
) -> None:
    """The client goes exactly as the gateway ends its stream (aiohttp's error for a write to
    a closed connection, or the handler cancelled, as the gateway stopping does): the call's
    usage still reaches the status and the engine's ledger."""

    async def client_gone(response: web.StreamResponse, data: bytes = b"") -> None:
        raise gone

    api.add_turns("the whole answer")
    monkeypatch.setattr(web.StreamResponse, "write_eof", client_gone)
    body = ask([{"role": "user", "content": "hi"}], tools=tools, stream=True)
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with (
        contextlib.suppress(httpx2.HTTPError),
        httpx2.stream("POST", f"{gateway.base_url}/v1/messages", json=body, headers=headers) as s,
    ):
        assert "message_stop" in "".join(s.iter_text())  # everything but the stream's end
    total = _recorded(gateway, 1)
    assert (total["requests"], total["upstream_calls"]) == (1, 1)
    assert total["billed_input_sent"] == round(billed(api.message_requests), 1) > 0
    assert (gateway.core.engine.status().last_call is not None) == bool(tools)


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
def test_a_client_gone_before_its_stream_began_leaves_the_call_accounted(
    api: FakeMessagesAPI, gateway: GatewayThread, monkeypatch: pytest.MonkeyPatch, tools: list[Any]
) -> None:
    """The upstream answered with a 200, billed; the client left before the gateway could
    send it the stream's headers (aiohttp's error for a write to a closed connection)."""

    async def client_gone(response: web.StreamResponse, request: web.Request) -> None:
        raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")

    api.add_turns("an answer for nobody")
    monkeypatch.setattr(web.StreamResponse, "prepare", client_gone)
    body = ask([{"role": "user", "content": "hi"}], tools=tools, stream=True)
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with pytest.raises(httpx2.HTTPError):
        httpx2.post(f"{gateway.base_url}/v1/messages", json=body, headers=headers)
    total = _recorded(gateway, 1)
    assert (total["requests"], total["upstream_calls"]) == (1, 1)


def _message(usage: dict[str, Any], content: Any = None) -> bytes:
    content = [{"type": "text", "text": "odd"}] if content is None else content
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL}
    answer = {**body, "content": content, "stop_reason": "end_turn", "usage": usage}
    return json.dumps(answer).encode()


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize(
    "answer",
    [
        Raw(b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
        Raw(b'{"id": "msg_1", "type": "message", "content": [{"ty'),
        Raw(b'["not", "a", "message"]'),
        Raw(_message({"input_tokens": 10, "output_tokens": 2}, content="odd")),
        Raw(_message({"input_tokens": 10, "output_tokens": 2}, content=[1, "x"])),
    ],
    ids=["html", "json-invalid", "json-list", "content-a-string", "content-not-blocks"],
)
def test_an_answer_that_is_not_a_message_reaches_the_client_as_sent(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    answer: Raw,
    tools: list[Any],
) -> None:
    """What the client would have got from the upstream directly; the call was answered,
    so it counts as made (its usage unread)."""
    api.add_turns(answer, "the session goes on")
    body = ask([{"role": "user", "content": "hi"}], tools=tools)
    raw = client.messages.with_raw_response.create(**body)
    assert (raw.status_code, raw.http_response.content) == (answer.status, answer.body)
    assert raw.headers["content-type"] == answer.content_type
    message = client.messages.create(**ask([{"role": "user", "content": "hi"}]))
    assert message.content[0].text == "the session goes on"
    total = gateway.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (2, 2)


def _error(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


BROKEN_OFF: dict[str, Reply | Raw] = {
    "before-any-byte": Reply(text="never sent"),
    "mid-message": Raw(_message({"input_tokens": 10, "output_tokens": 2})),
    "mid-error": Raw(_error("overloaded_error", "Overloaded"), status=529),
}
"""Upstream answers a broken network cuts: before the status line (the call counts as not
made), after a 200's (it counts as made, its usage unread) or an error's (as not made)."""


def test_a_stopping_gateway_cuts_a_stalled_stream_and_keeps_its_account(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """Stopped while a stream has stalled, the gateway cancels it after STOP_SECONDS and
    leaves the upstream call before the fake gives the stall up (60 s; aiohttp's own wait,
    spent twice, had made such a stop take two minutes); the call is counted."""
    api.add_turns(replace(Reply(text="partial " * 50), cut="stall"))
    body = json.dumps(ask([{"role": "user", "content": "hi"}], tools=[READ_TOOL], stream=True))
    head = (
        "POST /v1/messages HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
        f"x-api-key: {KEY}\r\nanthropic-version: 2023-06-01\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    gateway = GatewayThread(api.base_url, tmp_path / "store", stall_timeout=3600)
    host, port = gateway.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as client:
        client.sendall(head.encode() + body.encode())
        received = b""
        while b"text_delta" not in received:  # its first text came; the rest stalls
            received += client.recv(65536) or pytest.fail("the stream ended")
        gateway.stop()
    (upstream_call,) = api.message_requests
    assert upstream_call.done.wait(timeout=120)
    assert upstream_call.left.is_set()  # left by the gateway, not given up by the fake
    total = gateway.core.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (1, 1)


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("where", list(BROKEN_OFF))
def test_an_answer_that_stalls_is_a_timeout_error_and_the_next_request_works(
    api: FakeMessagesAPI, tmp_path: Path, where: str, tools: list[Any]
) -> None:
    """Nothing from the upstream for the stall timeout, before its answer or in the middle
    of it: a 504 `timeout_error` that says so (the API's own shape for a request that timed
    out; the SDK and Claude Code retry it), not a dropped connection."""
    api.add_turns(replace(BROKEN_OFF[where], cut="stall"), "again")
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        error = _created(sdk, tools)
        assert error.status_code == 504
        assert error.body == {
            "type": "error",
            "error": {
                "type": "timeout_error",
                "message": f"ectx gateway: the upstream {api.base_url} sent nothing for 1 s; "
                "its answer is lost",
            },
        }
        message = sdk.messages.create(**ask([{"role": "user", "content": "hi"}], tools=tools))
        assert message.content[0].text == "again"
        total = gateway.status()["total"]
    answered = where == "mid-message"
    assert (total["requests"], total["upstream_calls"]) == (2, 1 + answered)


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_client_gone_while_the_upstream_stalls_closes_the_upstream_call(
    api: FakeMessagesAPI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
    tools: list[Any],
) -> None:
    """The client leaves while the upstream's answer has stalled: the gateway closes its
    upstream call then (the stall timeout here outlasts the test), and the call counts as
    billed, as one broken off does."""
    stalled = Reply(text="partial " * 50) if stream else BROKEN_OFF["mid-message"]
    api.add_turns(replace(stalled, cut="stall"))
    reading = threading.Event()
    read = aiohttp.ClientResponse.read

    async def reading_whole(response: aiohttp.ClientResponse) -> bytes:
        reading.set()  # the upstream's 200 came; the gateway waits for the rest
        return await read(response)

    monkeypatch.setattr(aiohttp.ClientResponse, "read", reading_whole)
    body = json.dumps(ask([{"role": "user", "content": "hi"}], tools=tools, stream=stream))
    head = (
        "POST /v1/messages HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
        f"x-api-key: {KEY}\r\nanthropic-version: 2023-06-01\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    with GatewayThread(api.base_url, tmp_path / "store", stall_timeout=3600) as gateway:
        host, port = gateway.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as client:
            client.sendall(head.encode() + body.encode())
            received = b""
            while stream and b"text_delta" not in received:  # its first text came
                received += client.recv(65536) or pytest.fail("the stream ended")
            assert stream or reading.wait(timeout=60)
        (upstream_call,) = api.message_requests
        assert upstream_call.done.wait(timeout=120)  # the fake gives up a stall after 60 s
        assert upstream_call.left.is_set()  # the gateway left it before that
        total = _recorded(gateway, 1)
    assert (total["requests"], total["upstream_calls"]) == (1, 1)


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("where", list(BROKEN_OFF))
def test_an_answer_dropped_before_its_end_is_an_api_error(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    where: str,
    tools: list[Any],
) -> None:
    api.add_turns(replace(BROKEN_OFF[where], cut="drop"), "again")
    error = _created(client, tools)
    assert error.status_code == 502
    assert error.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert f"ectx gateway: no answer from the upstream {api.base_url}" in error.message
    message = client.messages.create(**ask([{"role": "user", "content": "hi"}], tools=tools))
    assert message.content[0].text == "again"
    total = gateway.status()["total"]
    answered = where == "mid-message"
    assert (total["requests"], total["upstream_calls"]) == (2, 1 + answered)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize(
    "answer",
    [
        Raw(_error("api_error", "Internal server error"), status=500),
        Raw(b"<html><body>503 Service Unavailable</body></html>", 503, "text/html"),
        Raw(b"upstream connect error or disconnect/reset", 503, "text/plain"),
        Raw(b"", status=529),
    ],
    ids=["500-json", "503-html", "503-text", "529-empty"],
)
def test_an_error_status_reaches_the_client_as_sent_with_or_without_its_json(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    answer: Raw,
    tools: list[Any],
    stream: bool,
) -> None:
    """An error answer before any of a stream began, too; none counts as an upstream call
    (none is billed), and the next request goes through."""
    api.add_turns(answer, "again")
    http = _created(client, tools, stream)
    assert (http.status_code, http.response.content) == (answer.status, answer.body)
    message = client.messages.create(**ask([{"role": "user", "content": "hi"}], tools=tools))
    assert message.content[0].text == "again"
    total = gateway.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (2, 1)


def _events(
    usage: dict[str, Any],
    block: dict[str, Any] | None = None,
    delta: dict[str, Any] | None = None,
    stop: str = "end_turn",
) -> bytes:
    """One streamed answer of one block (a text "odd" unless told), as SSE bytes."""
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**start, "content": [], "usage": usage}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": block or {"type": "text", "text": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": delta or {"type": "text_delta", "text": "odd"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage},
        {"type": "message_stop"},
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


@pytest.mark.parametrize(
    "odd",
    [
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "no index"}},
        {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}},
        {"type": "content_block_start", "index": "one", "content_block": {"type": "text"}},
        {"type": 7, "index": 0},
    ],
    ids=["no-index", "never-started", "index-not-a-number", "type-not-a-string"],
)
def test_a_block_event_of_no_started_block_is_passed_on_as_sent(
    api: FakeMessagesAPI, gateway: GatewayThread, odd: dict[str, Any]
) -> None:
    """Another model's or a proxy's stream: the gateway broke the connection on it."""
    events = _events({"input_tokens": 10, "output_tokens": 2}).split(b"\n\n")
    odd_event = f"event: {odd['type']}\ndata: {json.dumps(odd)}".encode()
    api.add_turns(
        Raw(b"\n\n".join([*events[:3], odd_event, *events[3:]]), content_type="text/event-stream")
    )
    body = json.dumps(ask([{"role": "user", "content": "hi"}], stream=True)).encode()
    headers = {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    request = urllib.request.Request(gateway.base_url + "/v1/messages", body, headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        streamed = answer.read()
    assert odd_event in streamed and b'"text": "odd"' in streamed
    assert streamed.rstrip().endswith(b'data: {"type": "message_stop"}')


def test_a_tool_call_cut_by_max_tokens_streams_as_the_sdk_reads_it(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread
) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    cut = {"type": "input_json_delta", "partial_json": '{"file_path": "/src/app.py", "off'}
    usage = {"input_tokens": 900, "output_tokens": 12}
    api.add_turns(Raw(_events(usage, call, cut, "max_tokens"), content_type="text/event-stream"))
    api.add_turns("read it")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read app.py"}]
    with client.messages.stream(**ask(messages)) as s:
        answer = s.get_final_message()
    assert answer.stop_reason == "max_tokens"
    assert answer.content[0].input == {"file_path": "/src/app.py"}  # type: ignore[union-attr]
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in answer.content]},
        {"role": "user", "content": [read_result("toolu_1")]},
    ]
    with client.messages.stream(**ask(messages)) as s:
        assert s.get_final_text() == "read it"
    assert gateway.status()["total"]["requests"] == 2


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # the SDK's, on "lots"
@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_usage_that_cannot_be_read_costs_the_client_nothing(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    stream: bool,
    tools: list[Any],
) -> None:
    odd = {"input_tokens": "lots", "output_tokens": 3}
    answer = Raw(_events(odd), content_type="text/event-stream") if stream else Raw(_message(odd))
    api.add_turns(answer, "next")
    body = ask([{"role": "user", "content": "hi"}], tools=tools)
    if stream:
        with client.messages.stream(**body) as s:
            assert s.get_final_text() == "odd"
    else:
        assert client.messages.create(**body).content[0].text == "odd"
    message = client.messages.create(**ask([{"role": "user", "content": "hi"}]))
    assert message.content[0].text == "next"
    total = gateway.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (2, 2)


def test_count_tokens_and_other_paths_pass_through_unchanged(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    request: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "count me"}],
    }
    counted = client.messages.count_tokens(**request)
    assert counted.input_tokens > 0
    assert api.requests[0].path == "/v1/messages/count_tokens"
    assert api.requests[0].body == request
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nothing")
    assert api.requests[1].path == "/v1/models/claude-nothing"


def test_a_request_the_engine_cannot_hold_goes_as_it_came(
    api: FakeMessagesAPI, client: anthropic.Anthropic, caplog: pytest.LogCaptureFixture
) -> None:
    api.add_turns("a search result")
    found = {
        "type": "search_result",
        "source": "https://example.com/a",
        "title": "a",
        "content": [{"type": "text", "text": "what it found"}],
    }
    body = ask([{"role": "user", "content": [found]}])
    with caplog.at_level(logging.INFO, logger="ephemeral_context.gateway"):
        client.messages.create(**body)
    assert api.message_requests[0].body == body
    assert "search_result" in caplog.text
    assert KEY not in caplog.text and KEY[-8:] not in caplog.text


def _images(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The image blocks of a request's messages, in a tool result's content too."""
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    nested = [c for b in blocks if isinstance(b.get("content"), list) for c in b["content"]]
    return [b for b in blocks + nested if b.get("type") == "image"]


@pytest.mark.parametrize("where", ["prompt", "read"])
def test_an_image_goes_upstream_as_sent_while_the_reads_around_it_are_evicted(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread, where: str
) -> None:
    """A pasted image, or Claude Code's Read of a PNG (a tool result holding the image):
    the engine carries the conversation (nothing passes through) and sends the image
    byte for byte as the client did, but for the breakpoint it places itself, in every
    request, while the file reads around it are evicted at cold gaps (the engine's clock
    moved two hours each time); never a placeholder in its stead."""
    clock = Clock()
    gateway.core.engine.clock = clock
    shot = image()
    paths = ["/w/a.py", "/w/b.py", "/w/c.py"]
    if where == "read":
        paths.insert(0, "/w/shot.png")
    reads = [{"name": "Read", "input": {"file_path": p}, "id": f"toolu_{p[3]}"} for p in paths]
    api.add_turns(*[{"tool_use": [read]} for read in reads], "a login form and three modules")
    prompt: list[dict[str, Any]] = [
        {"type": "text", "text": "What do the screenshot and a-c show?"}
    ]
    if where == "prompt":
        prompt.append(shot)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for path in [*paths, None]:
        marked = [*messages[:-1], {"role": "user", "content": [*messages[-1]["content"]]}]
        last = marked[-1]["content"]
        last[-1] = {**last[-1], "cache_control": {"type": "ephemeral"}}  # as Claude Code marks
        answer = client.messages.create(**ask(marked))
        clock.advance(7200)
        if path is None:
            break
        messages.append({"role": "assistant", "content": [answer.content[0].model_dump()]})
        content: Any = [shot] if path.endswith(".png") else cat_n(APP.replace("f", path[3]))
        result = {"type": "tool_result", "tool_use_id": f"toolu_{path[3]}", "content": content}
        messages.append({"role": "user", "content": [result]})
    assert answer.content[0].text == "a login form and three modules"
    assert gateway.status()["total"]["passthrough"] == 0
    sent = [r.body for r in api.message_requests]
    carrying = sent[1:] if where == "read" else sent
    as_sent = json.dumps(shot)
    for body in carrying:
        (image_sent,) = _images(body)
        without = {k: v for k, v in image_sent.items() if k != "cache_control"}
        assert json.dumps(without) == as_sent
    assert "evicted" in request_text(api.message_requests[-1])


@pytest.mark.parametrize(
    "bad",
    [{"type": "text", "text": 5}, {"type": "tool_result", "tool_use_id": "toolu_1", "content": 5}],
)
def test_a_block_of_the_wrong_type_goes_as_it_came_and_the_api_refuses_it(
    api: FakeMessagesAPI, client: anthropic.Anthropic, bad: dict[str, Any]
) -> None:
    """A text that is no string, a result whose content is neither text nor a list: the API
    refuses them with a clear error, and the engine must not mend them into something it
    accepts (a number's text, an empty result) before sending."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read /a"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [read_result("toolu_1") if bad["type"] == "text" else bad]},
    ]
    if bad["type"] == "text":
        messages += [{"role": "assistant", "content": "read"}, {"role": "user", "content": [bad]}]
    body = ask(messages)
    with pytest.raises(anthropic.BadRequestError, match="valid"):
        client.with_options(max_retries=0).messages.create(**body)
    assert api.message_requests[0].body == body


def test_status_sums_sessions(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread
) -> None:
    api.add_turns("one", "two")
    client.messages.create(**ask([{"role": "user", "content": "hi"}]))
    plain: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "x"}],
    }
    client.messages.create(**plain)
    status = httpx2.get(f"{gateway.base_url}/ectx/status").json()
    sessions = status["sessions"]
    assert set(sessions) == {"11111111-2222-3333-4444-555555555555", "anonymous"}
    assert sessions["anonymous"]["passthrough"] == 1
    assert status["total"]["requests"] == 2
    for figures in sessions.values():
        used = api.message_requests
        assert figures["billed_input_sent"] > 0
        assert figures["saved"] == pytest.approx(
            figures["billed_input_direct"] - figures["billed_input_sent"], abs=0.2
        )
    assert len(used) == 2


def test_an_unknown_model_goes_as_it_came_before_the_engine_reads_it(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A model prices.py does not know (newer, or a typo): the upstream says what it says,
    and the conversation is not fed into the engine on every request only to fail."""
    api.add_turns(unknown_model("claude-nothing-9"))
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read /a"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [read_result("toolu_1")]},
    ]
    body = ask(messages, model="claude-nothing-9")
    with pytest.raises(anthropic.NotFoundError, match="claude-nothing-9"):
        client.messages.create(**body)
    assert api.message_requests[0].body == body
    assert gateway.core.engine.empty()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert gateway.status()["total"]["passthrough"] == 1


def test_an_engine_failure_forwards_the_request_as_it_came(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine bug")

    monkeypatch.setattr(gateway.core.engine, "build_request", broken)
    api.add_turns("still answered")
    body = ask([{"role": "user", "content": "hi"}])
    message = client.messages.create(**body)
    assert message.content[0].text == "still answered"
    assert api.message_requests[0].body == body
    assert "engine bug" in caplog.text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_failed_hydration_falls_back_to_the_request_as_it_came(
    api: FakeMessagesAPI,
    client: anthropic.Anthropic,
    gateway: GatewayThread,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
) -> None:
    """Streamed, the client had the answer's start: the answer to the request as it came
    goes on from there (it had ended empty, as if the model had said nothing)."""
    api.add_turns(
        Reply(tool_calls=(ToolCall("Read", {"file_path": f"{FETCH_ROOT}0123abcd"}),)),
        "direct answer",
    )
    original = gateway.core._build
    calls = []

    def second_build_fails(*args: Any) -> Any:
        calls.append(args)
        if len(calls) > 1:
            raise RuntimeError("engine bug")
        return original(*args)

    monkeypatch.setattr(gateway.core, "_build", second_build_fails)
    body = ask([{"role": "user", "content": "hi"}])
    message: Any
    if stream:
        with client.messages.stream(**body) as running:
            message = running.get_final_message()
        body["stream"] = True
    else:
        message = client.messages.create(**body)
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "direct answer"
    assert message.stop_reason == "end_turn"
    assert api.message_requests[-1].body == body
    total = gateway.status()["total"]  # both upstream calls were billed
    assert (total["requests"], total["upstream_calls"]) == (1, 2)
    assert total["billed_input_sent"] == round(billed(api.message_requests), 1)


def test_a_rewind_or_a_sub_agent_starts_another_conversation(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread
) -> None:
    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        "first",
        "rewound",
        "sub-agent",
    )
    first: list[dict[str, Any]] = [{"role": "user", "content": "What does app.py do?"}]
    answer = client.messages.create(**ask(first))
    read = [b.model_dump(exclude_none=True) for b in answer.content]
    grown = [*first, {"role": "assistant", "content": read}]
    grown.append({"role": "user", "content": [read_result("toolu_1")]})
    client.messages.create(**ask(grown))  # extends the conversation
    assert len(gateway.core.engine.conversations()) == 1
    client.messages.create(**ask([{"role": "user", "content": "Something else"}]))  # a rewind
    client.messages.create(**ask([{"role": "user", "content": "Sub-agent: survey"}]))
    assert len(gateway.core.engine.conversations()) == 3
    # the conversation that was extended kept its history: the read went in once
    assert "def f199(x):" in json.dumps(api.message_requests[1].body["messages"])
    assert len(api.message_requests[2].body["messages"]) == 1


def test_parallel_results_go_upstream_in_the_order_asked_and_all_cached(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    """Claude Code sends results as their tools finish and marks the last one sent; the API
    renders them in the order asked, so what it renders after that mark would be plain
    input. The gateway sends them in the order asked, its breakpoint on the last."""
    reads = [
        {"name": "Read", "input": {"file_path": f"/w/{name}.py"}, "id": f"toolu_{name}"}
        for name in ("big", "small")
    ]
    api.add_turns({"tool_use": reads}, "Both read.")
    first: list[dict[str, Any]] = [{"role": "user", "content": "Read both."}]
    answer = client.messages.create(**ask(first))
    uses = [b.model_dump(exclude_none=True) for b in answer.content]
    small = {"type": "tool_result", "tool_use_id": "toolu_small", "content": "Y = 2"}
    finished = [small, {**read_result("toolu_big"), "cache_control": {"type": "ephemeral"}}]
    grown = [*first, {"role": "assistant", "content": uses}, {"role": "user", "content": finished}]
    client.messages.create(**ask(grown))
    sent = api.message_requests[1]
    results = [
        b for m in sent.body["messages"] for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert [b["tool_use_id"] for b in results] == ["toolu_big", "toolu_small"]
    assert "cache_control" in results[-1]
    assert sent.usage is not None and sent.usage["input_tokens"] == 0


def test_a_rewound_prompt_forks_the_conversation_at_the_shared_messages(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread
) -> None:
    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        "It adds numbers.",
        "Done.",
        "Done again.",
    )
    first: list[dict[str, Any]] = [{"role": "user", "content": "What does app.py do?"}]
    answer = client.messages.create(**ask(first))
    read = [b.model_dump(exclude_none=True) for b in answer.content]
    grown = [*first, {"role": "assistant", "content": read}]
    grown.append({"role": "user", "content": [read_result("toolu_1")]})
    client.messages.create(**ask(grown))
    shared = [*grown, {"role": "assistant", "content": "It adds numbers."}]
    client.messages.create(**ask([*shared, {"role": "user", "content": "Rename f1"}]))
    client.messages.create(**ask([*shared, {"role": "user", "content": "Rename f2 instead"}]))

    assert len(gateway.core.engine.conversations()) == 2
    before, after = (api.message_requests[i].body["messages"] for i in (2, 3))

    def blocks(messages: list[dict[str, Any]]) -> list[Any]:
        return [
            {k: v for k, v in b.items() if k != "cache_control"}
            for m in messages
            for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])
        ]

    # the branch starts as the shared messages were sent, then the new prompt, nothing else
    assert blocks(after)[:-1] == blocks(before)[:-1]
    assert blocks(after)[-1] == {"type": "text", "text": "Rename f2 instead"}
    assert json.dumps(after).count('"tool_use_id": "toolu_1"') == 1


def test_a_lone_surrogate_passes_through_as_its_json_escape(
    api: FakeMessagesAPI, gateway: GatewayThread
) -> None:
    """JSON carries half a surrogate pair ("\\ud83d"), UTF-8 cannot: Claude Code's own
    JSON.stringify writes one as the escape, and the gateway answers the same way."""
    api.add_turns("half a pair: \ud83d, then more")
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out \ud83d put"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Read",
                    "input": {"file_path": "/w/a.py"},
                }
            ],
        },
        {"role": "user", "content": [result]},
    ]
    body = json.dumps(ask(messages, stream=True)).encode()  # ASCII: the surrogate escaped
    assert b"\\ud83d" in body
    headers = {
        "x-api-key": KEY,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
    }
    with httpx2.stream(
        "POST", f"{gateway.base_url}/v1/messages", content=body, headers=headers
    ) as r:
        assert r.status_code == 200
        raw = r.read()
    raw.decode("utf-8")  # strict: what the client reads is valid UTF-8
    deltas = [
        json.loads(line.removeprefix(b"data: "))["delta"]["text"]
        for line in raw.splitlines()
        if line.startswith(b"data: ") and b'"text_delta"' in line
    ]
    assert "".join(deltas) == "half a pair: \ud83d, then more"
    assert api.message_requests[0].body["messages"][2]["content"][0]["content"] == "out \ud83d put"


def test_a_lone_surrogate_in_an_event_the_gateway_rewrites_reaches_the_sdk(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    """Text before a hidden hydration call moves the next round's blocks up one index: the
    gateway writes those events itself, a lone surrogate in them as its JSON escape."""

    def look_then_hydrate(request: RecordedRequest) -> Reply:
        return replace(hydrate_first_reference(request), text="let me look")

    api.add_turns(
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_1"}]},
        {"tool_use": [{"name": "Read", "input": {"file_path": "/w/app.py"}, "id": "toolu_2"}]},
        look_then_hydrate,
        "half a pair: \ud83d, then more",
    )
    last = _conversation(client, stream=True)[-1]
    texts = [b.text for b in last.content]
    assert texts == ["let me look", "half a pair: \ud83d, then more"]


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize(("cut", "status"), [("stall", 504), ("drop", 502)])
def test_an_error_answer_broken_off_before_a_stream_began_is_an_error(
    api: FakeMessagesAPI, tmp_path: Path, tools: list[Any], cut: Cut, status: int
) -> None:
    api.add_turns(replace(BROKEN_OFF["mid-error"], cut=cut), "again")
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        assert _created(sdk, tools, stream=True).status_code == status
        with sdk.messages.stream(**ask([{"role": "user", "content": "hi"}], tools=tools)) as s:
            assert s.get_final_text() == "again"
        total = gateway.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (2, 1)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_answer_that_stalls_after_a_hydration_round_is_a_timeout_error(
    api: FakeMessagesAPI, tmp_path: Path, stream: bool
) -> None:
    """The rounds before it were billed and count; the stalled one counts once it was
    answered (a stream's 200), as every call does."""
    _read_twice_then_hydrate(api, Reply(text="never whole " * 20, cut="stall"))
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        with pytest.raises(anthropic.APIStatusError, match="sent nothing for 1 s") as raised:
            _conversation(sdk, stream)
        assert raised.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]
        api.add_turns("again")
        message = sdk.messages.create(**ask([{"role": "user", "content": "hi"}]))
        assert message.content[0].text == "again"
        figures = gateway.status()["sessions"]["11111111-2222-3333-4444-555555555555"]
    assert (figures["requests"], figures["hydrations"]) == (4, 1)
    assert figures["upstream_calls"] == 4 + stream


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_re_ask_refused_before_anything_was_shown_reaches_the_client_as_sent(
    api: FakeMessagesAPI, client: anthropic.Anthropic, gateway: GatewayThread, stream: bool
) -> None:
    """The answer's only call was a fetch, so the client was shown nothing: the re-ask's
    429 reaches it as the API sends one, status, retry-after and body, and it waits and
    retries as it would there (streamed, it had been an `error` event in a 200 stream)."""
    _read_twice_then_hydrate(api, rate_limited(retry_after=7))
    with pytest.raises(anthropic.RateLimitError) as raised:
        _conversation(client, stream)
    assert raised.value.status_code == 429
    assert raised.value.response.headers["retry-after"] == "7"
    assert raised.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    api.add_turns("again")
    message = client.messages.create(**ask([{"role": "user", "content": "hi"}]))
    assert message.content[0].text == "again"
    figures = gateway.status()["sessions"]["11111111-2222-3333-4444-555555555555"]
    assert (figures["requests"], figures["upstream_calls"], figures["hydrations"]) == (4, 4, 1)


def test_a_client_that_gives_up_first_leaves_the_call_accounted_and_the_gateway_serving(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """Its own timeout shorter than the gateway's stall timeout: the SDK's timeout error
    for the client; the gateway still ends the call and counts the request."""
    api.add_turns(Reply(text="never sent", cut="stall"), "again")
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        with pytest.raises(anthropic.APITimeoutError):
            sdk.messages.create(**ask([{"role": "user", "content": "hi"}]), timeout=0.2)
        assert _recorded(gateway, 1)["requests"] == 1
        message = sdk.messages.create(**ask([{"role": "user", "content": "hi"}]))
        assert message.content[0].text == "again"
        assert (gateway.status()["total"]["requests"], len(api.message_requests)) == (2, 2)


def test_a_client_gone_before_the_upstream_answered_ends_the_call_there(
    api: FakeMessagesAPI, gateway: GatewayThread
) -> None:
    """The client closed its connection while the upstream prepared its answer (a hydration
    call): the gateway ends that call and the request at once, and calls the upstream
    again for nobody (each call is billed)."""
    asked, accounted = threading.Event(), threading.Event()

    def fetch_once_accounted(request: RecordedRequest) -> Reply:
        asked.set()
        assert accounted.wait(timeout=120)  # no answer before the gateway is done with it
        return Reply(tool_calls=(ToolCall("Read", {"file_path": f"{FETCH_ROOT}0123abcd"}),))

    api.add_turns(fetch_once_accounted, "an answer for nobody")
    body = json.dumps(ask([{"role": "user", "content": "hi"}])).encode()
    host, port = gateway.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as connection:
        head = (
            f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nx-api-key: {KEY}\r\n"
            "anthropic-version: 2023-06-01\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        connection.sendall(head.encode() + body)
        assert asked.wait(timeout=30)  # the upstream has the request: the client leaves
    total = _recorded(gateway, 1)  # the upstream has not answered yet
    accounted.set()
    (unanswered,) = asyncio.run(api.wait_for_message_requests(1))
    assert unanswered.done.wait(timeout=30)
    assert (total["requests"], total["upstream_calls"]) == (1, 0)  # no 200: counted unmade
    assert len(api.message_requests) == 1


@pytest.mark.parametrize("tools", [[READ_TOOL], []], ids=["engine", "passthrough"])
@pytest.mark.parametrize("cut", [None, "stall", "drop"], ids=["whole", "stall", "drop"])
def test_a_streamed_request_answered_with_no_stream_gets_it_as_sent_or_an_error(
    api: FakeMessagesAPI, tmp_path: Path, tools: list[Any], cut: Any
) -> None:
    """A 200 that is no event stream (a captive portal's page): passed on whole, as sent;
    broken off before its end, the error a non-streamed answer gets."""
    page = Raw(b"<html><body>Sign in to this network</body></html>", 200, "text/html", cut)
    api.add_turns(page, "again")
    with (
        GatewayThread(api.base_url, tmp_path / "store", stall_timeout=1.0) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
    ):
        body = ask([{"role": "user", "content": "hi"}], tools=tools, stream=True)
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        answer = httpx2.post(f"{gateway.base_url}/v1/messages", json=body, headers=headers)
        if cut is None:
            assert (answer.status_code, answer.content) == (200, page.body)
            assert answer.headers["content-type"] == "text/html"
        else:
            kind = {"stall": (504, "timeout_error"), "drop": (502, "api_error")}[cut]
            assert (answer.status_code, answer.json()["error"]["type"]) == kind
        with sdk.messages.stream(**ask([{"role": "user", "content": "hi"}], tools=tools)) as s:
            assert s.get_final_text() == "again"
        total = gateway.status()["total"]
    assert (total["requests"], total["upstream_calls"]) == (2, 2)


def test_a_body_nested_too_deeply_to_parse_gets_the_upstreams_answer(
    api: FakeMessagesAPI, gateway: GatewayThread
) -> None:
    """JSON nested past Python's recursion limit is no request the engine reads: it goes
    upstream as it came and the upstream's refusal comes back as sent (it was a 500 the
    gateway made of its own traceback)."""
    body = b"[" * 100_000
    headers = {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    request = urllib.request.Request(gateway.base_url + "/v1/messages", body, headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["type"] == "invalid_request_error"
    assert api.message_requests[0].body == body.decode()
    assert gateway.status()["total"]["passthrough"] == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_system_messages_per_turn_control_goes_upstream_with_it(
    api: FakeMessagesAPI, client: anthropic.Anthropic, stream: bool
) -> None:
    """Claude Code 2.1.332 sets the turn's effort in a system message's own `output_config`,
    on one holding text (each turn's own, the same text or not) or, after a compaction, on
    one holding nothing else: all reach the upstream as sent (the first lost its control,
    the second was gone)."""
    api.add_turns("ok")
    listing = {"role": "system", "content": "A skill listing.", "output_config": {"effort": "low"}}
    again = {**listing, "output_config": {"effort": "high"}}
    control = {"role": "system", "content": [], "output_config": {"effort": "medium"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        listing,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "Go on."},
        again,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "And on."},
        control,
    ]
    body = {**ask(messages), "model": "claude-opus-4-8"}
    if stream:
        with client.messages.stream(**body) as running:
            running.get_final_message()
    else:
        client.messages.create(**body)
    sent = api.message_requests[0].body["messages"]
    roles = ["user", "system", "assistant", "user", "system", "assistant", "user", "system"]
    assert [m["role"] for m in sent] == roles
    assert (sent[1], sent[4], sent[-1]) == (listing, again, control)


@pytest.mark.parametrize("auth", ["x-api-key", "authorization"])
def test_an_upstream_urls_password_is_never_told_nor_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, auth: str
) -> None:
    """An upstream named with a proxy's basic auth (`--upstream https://user:pass@host`) is
    shown without them: in the error a client gets when it cannot be reached, and in the log
    (both had the password). A client's own Authorization goes as it came, without them
    (aiohttp refuses both: it was a 500 of the gateway's traceback)."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = f"http://ectx:pr0xy-pass@127.0.0.1:{port}"
    body = json.dumps(ask([{"role": "user", "content": "hi"}])).encode()
    headers = {auth: KEY if auth == "x-api-key" else f"Bearer {KEY}"}
    with (
        caplog.at_level(logging.INFO, logger="ephemeral_context.gateway"),
        GatewayThread(upstream, tmp_path / "store") as gateway,
        pytest.raises(urllib.error.HTTPError) as failed,
    ):
        request = urllib.request.Request(gateway.base_url + "/v1/messages", body, headers)
        urllib.request.urlopen(request, timeout=30)
    assert failed.value.code == 502
    told = json.loads(failed.value.read())["error"]["message"]
    assert f"the upstream http://127.0.0.1:{port} " in told
    assert "pr0xy-pass" not in told and "pr0xy-pass" not in caplog.text


def _answer_of(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    """The status and the error (or the content) a POST /v1/messages gets at `url`."""
    headers = {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    request = urllib.request.Request(url + "/v1/messages", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())["content"]
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())["error"]


HI = {"role": "user", "content": "hi"}
EMPTY_TEXT = {"type": "text", "text": ""}
HI_TEXT = {"type": "text", "text": "hi"}
MARK = {"type": "ephemeral"}
MARKED = [{"type": "text", "text": f"{n}", "cache_control": MARK} for n in range(4)]
PAGES = {
    "type": "document",
    "source": {
        "type": "content",
        "content": [{"type": "text", "text": "p", "cache_control": MARK}],
    },
}
"""A document whose content source marks a breakpoint: one of the four too."""
REFUSED: dict[str, list[Any]] = {
    "empty-message": [HI, {"role": "assistant", "content": "ok"}, {"role": "user", "content": []}],
    "empty-string": [{"role": "user", "content": ""}],
    "empty-text": [{"role": "user", "content": [HI_TEXT, EMPTY_TEXT]}],
    "five-breakpoints": [{"role": "user", "content": MARKED}],
    "five-breakpoints-one-inside-a-document": [{"role": "user", "content": [*MARKED[:3], PAGES]}],
    "not-an-object": [HI, "ok"],
    "cache-control-no-object": [{"role": "user", "content": [{**HI_TEXT, "cache_control": "yes"}]}],
}
"""Requests the API refuses that the engine would have sent mended (an empty message or
text block dropped, the client's breakpoints moved)."""


@pytest.mark.parametrize("messages", REFUSED.values(), ids=REFUSED.keys())
def test_a_request_the_api_refuses_gets_its_own_refusal(
    api: FakeMessagesAPI,
    gateway: GatewayThread,
    messages: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the gateway as without it: the API's status and error (the engine had sent
    some mended, answered 200, and one with no message left: another error)."""
    api.add_turns("never", "never")
    body = ask(messages)
    direct = _answer_of(api.base_url, body)
    assert direct[0] == 400
    assert _answer_of(gateway.base_url, body) == direct
    assert api.message_requests[1].body == body
    assert gateway.status()["total"]["passthrough"] == 1
    assert "Traceback" not in caplog.text


CALL = {"type": "tool_use", "id": "a", "name": "Read", "input": "x"}
ANSWERED = {"type": "tool_result", "tool_use_id": "a", "content": "x"}
BROKEN_TOOLS: dict[str, dict[str, Any]] = {
    "tools-of-numbers": {"tools": [1]},
    "tools-a-number": {"tools": 5},
    "tools-an-object": {"tools": {"Read": READ_TOOL}},
    "tool-input-a-string": {
        "messages": [
            HI,
            {"role": "assistant", "content": [CALL]},
            {"role": "user", "content": [ANSWERED]},
        ]
    },
}


@pytest.mark.parametrize("fields", BROKEN_TOOLS.values(), ids=BROKEN_TOOLS.keys())
def test_tools_or_a_tool_input_of_the_wrong_type_go_as_they_came_without_a_traceback(
    api: FakeMessagesAPI,
    gateway: GatewayThread,
    fields: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API's to judge: sent as they came, with one line in the log (each was an engine
    failure, its traceback logged as an error)."""
    api.add_turns("judged upstream")
    body = {**ask([HI]), **fields}
    _answer_of(gateway.base_url, body)
    assert api.message_requests[0].body == body
    assert gateway.status()["total"]["passthrough"] == 1
    assert "Traceback" not in caplog.text and "engine error" not in caplog.text


def test_a_tool_searchs_answer_goes_as_sent_and_the_session_through_the_engine(
    api: FakeMessagesAPI, gateway: GatewayThread
) -> None:
    """Claude Code 2.1.332 loads deferred tools with ToolSearch, whose result holds
    `tool_reference` items: it goes upstream as sent, request after request, and the session
    goes on through the engine (every later request of it had passed through unchanged)."""
    api.add_turns("loaded", "on")
    fetch = {"name": "WebFetch", "description": "Fetch.", "input_schema": {}, "defer_loading": True}
    search = {"name": "ToolSearch", "description": "Load tools.", "input_schema": {}}
    load = {"type": "tool_use", "id": "toolu_s", "name": "ToolSearch", "input": {"query": "web"}}
    loaded = {
        "type": "tool_result",
        "tool_use_id": "toolu_s",
        "content": [{"type": "tool_reference", "tool_name": "WebFetch"}],
    }
    messages: list[dict[str, Any]] = [
        HI,
        {"role": "assistant", "content": [load]},
        {"role": "user", "content": [loaded, {"type": "text", "text": "Tool loaded."}]},
    ]
    tools = [READ_TOOL, search, fetch]
    _answer_of(gateway.base_url, ask(messages, tools=tools))
    messages += [{"role": "assistant", "content": "loaded"}, {"role": "user", "content": "go on"}]
    _answer_of(gateway.base_url, ask(messages, tools=tools))
    for sent in api.message_requests:
        assert sent.body["messages"][2]["content"][0] == loaded
        assert sent.body["tools"][2] == fetch
    assert gateway.status()["total"]["passthrough"] == 0


def test_a_request_body_that_stalls_gets_a_timeout_and_the_gateway_goes_on(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """A client that sends its headers and part of its body, then nothing: its handler had
    waited for good; it gets the API's 408 `timeout_error`, and other requests are served."""
    api.add_turns("after")
    with GatewayThread(api.base_url, tmp_path / "store", stall_timeout=0.5) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=60) as stalled:
            stalled.sendall(
                b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\n"
                b"content-type: application/json\r\nx-api-key: " + KEY.encode() + b"\r\n"
                b"content-length: 1000\r\n\r\n" + b'{"model": "cl'
            )
            answer = stalled.recv(65536).decode()
        assert answer.startswith("HTTP/1.1 408"), answer
        error = json.loads(answer.split("\r\n\r\n", 1)[1])["error"]
        assert error["type"] == "timeout_error" and "stalled" in error["message"]
        with anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk:
            reply = sdk.messages.create(**ask([{"role": "user", "content": "hi"}]))
        assert reply.content[0].text == "after"


def test_a_body_over_the_gateways_limit_gets_the_apis_request_too_large(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """aiohttp's own refusal is plain text, which the SDK shows as a bare 413."""
    with (
        GatewayThread(api.base_url, tmp_path / "store", max_body_bytes=4096) as gateway,
        anthropic.Anthropic(api_key=KEY, base_url=gateway.base_url, max_retries=0) as sdk,
        pytest.raises(anthropic.APIStatusError) as refused,
    ):
        sdk.messages.create(**ask([{"role": "user", "content": "x" * 10_000}]))
    assert refused.value.status_code == 413
    assert refused.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    assert api.requests == []  # nothing went upstream
