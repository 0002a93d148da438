"""The local Messages API (tests/fakes) is test infrastructure, so it is tested itself.

Every test goes through real HTTP on 127.0.0.1, mostly with the real anthropic SDK, so
what passes here is what the agent loop will see.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import MessageParam, TextBlock, TextBlockParam
from ephemeral_context.request_view import request_from_messages_api

from tests.conftest import REPO_ROOT
from tests.fakes import (
    FakeMessagesAPI,
    FakeProcess,
    RecordedRequest,
    Reply,
    fake_api_subprocess,
    invalid_api_key,
    overloaded,
    rate_limited,
    refused,
    server_error,
    unknown_model,
)
from tests.fakes.messages_api import MAX_REQUEST_BYTES

MODEL = "claude-sonnet-4-6"  # not on the SDK's deprecation list (warnings are errors here)
Start = Callable[..., FakeMessagesAPI]
HI: list[MessageParam] = [{"role": "user", "content": "hi"}]


_OPEN_CLIENTS: list[anthropic.Anthropic] = []


def client(api: FakeMessagesAPI, **options: Any) -> anthropic.Anthropic:
    options.setdefault("api_key", "sk-test-0000")
    sdk = anthropic.Anthropic(base_url=api.base_url, **options)
    _OPEN_CLIENTS.append(sdk)
    return sdk


@pytest.fixture(autouse=True)
def close_clients() -> Iterator[None]:
    """SDK clients hold pooled sockets; an unclosed one is a ResourceWarning (an error here)."""
    yield
    while _OPEN_CLIENTS:
        _OPEN_CLIENTS.pop().close()


THINKING = {"type": "enabled", "budget_tokens": 1024}
WITH_THINKING = {"thinking": THINKING, "max_tokens": 2048}
"""Thinking enabled, and room for an answer beyond its budget."""
TOOL = {"name": "read_file", "input_schema": {"type": "object"}}


AUTH = {"x-api-key": "sk-test-0000", "anthropic-version": "2023-06-01"}
"""What the SDK sends with every request: a key and the API version."""


def post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
    """A raw POST, so the wire format is checked without the SDK in between."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


# ---------------------------------------------------------------------------------------------
# Round trips through the SDK


def test_create_round_trip_through_base_url(fake_messages_api: Start) -> None:
    api = fake_messages_api(["Hello from the script."])
    message = client(api, max_retries=0).messages.create(model=MODEL, max_tokens=64, messages=HI)
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Hello from the script."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert message.usage.output_tokens > 0
    sent = api.message_requests[0]
    assert sent.body == {"model": MODEL, "max_tokens": 64, "messages": HI}
    assert sent.headers["authorization"] == "Bearer sk-test-0000"
    assert "anthropic-version" in sent.headers
    assert api.remaining_turns == 0


def test_sdk_finds_the_fake_through_anthropic_base_url(
    fake_messages_api: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = fake_messages_api(["from the environment"])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-1111")
    with anthropic.Anthropic(max_retries=0) as sdk:  # base URL and key from the environment
        message = sdk.messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert message.content[0].text == "from the environment"  # type: ignore[union-attr]
    assert api.requests[0].headers["authorization"].endswith("sk-env-1111")


def test_both_auth_headers_and_any_version_are_accepted(fake_messages_api: Start) -> None:
    api = fake_messages_api(["one", "two"])
    body = {"model": MODEL, "max_tokens": 8, "messages": HI}
    url = api.base_url + "/v1/messages"
    status, _ = post(url, body, {"x-api-key": "k1", "anthropic-version": "2023-06-01"})
    assert status == 200
    status, _ = post(url, body, {"authorization": "Bearer k2", "anthropic-version": "2026-10-21"})
    assert status == 200
    status, raw = post(url, body, {"anthropic-version": "2023-06-01"})
    assert status == 401
    assert json.loads(raw)["error"]["type"] == "authentication_error"


def test_a_request_without_anthropic_version_is_refused(fake_messages_api: Start) -> None:
    """The API requires the header ("you must send an anthropic-version request header")."""
    api = fake_messages_api(["never sent"])
    body = {"model": MODEL, "max_tokens": 8, "messages": HI}
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        status, raw = post(api.base_url + path, body, {"x-api-key": "k"})
        assert status == 400
        error = json.loads(raw)["error"]
        assert error == {
            "type": "invalid_request_error",
            "message": "anthropic-version: header is required",
        }
    assert api.remaining_turns == 1


def test_stream_text_arrives_in_pieces(fake_messages_api: Start) -> None:
    text = "Streaming works when the text arrives in several deltas."
    api = fake_messages_api([text])
    with client(api).messages.stream(model=MODEL, max_tokens=64, messages=HI) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == text
    assert final.stop_reason == "end_turn"
    assert api.requests[0].body["stream"] is True


def test_sse_event_sequence_matches_the_api(fake_messages_api: Start) -> None:
    api = fake_messages_api(
        [
            {
                "text": "Let me read it.",
                "tool_use": [{"name": "read_file", "input": {"path": "a.py"}}],
            }
        ]
    )
    status, raw = post(
        api.base_url + "/v1/messages",
        {"model": MODEL, "max_tokens": 64, "messages": HI, "stream": True},
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    assert status == 200
    events = sse_events(raw)
    assert all(name == data["type"] for name, data in events)
    names = [name for name, _ in events]
    compact = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    assert compact == [
        "message_start", "ping",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} <= set(
        start["usage"]
    )
    tool_start = next(d for n, d in events if n == "content_block_start" and d["index"] == 1)
    assert tool_start["content_block"]["input"] == {}
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["index"] == 1
    )
    assert json.loads(partial) == {"path": "a.py"}
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 0


def test_tool_use_streams_through_the_sdk(fake_messages_api: Start) -> None:
    tool_input = {"path": "src/app.py", "offset": 10, "limit": 40, "note": "x" * 50}
    api = fake_messages_api(
        [{"tool_use": [{"name": "read_file", "input": tool_input, "id": "toolu_1"}]}]
    )
    with client(api).messages.stream(model=MODEL, max_tokens=64, messages=HI) as stream:
        kinds = {event.type for event in stream}
        final = stream.get_final_message()
    assert "input_json" in kinds
    assert final.stop_reason == "tool_use"
    block = final.content[-1]
    assert block.type == "tool_use" and block.id == "toolu_1" and block.name == "read_file"
    assert block.input == tool_input


async def test_async_client_create_and_stream(fake_messages_api: Start) -> None:
    api = fake_messages_api(["async create", "async stream"])
    async_client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url)
    created = await async_client.messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert created.content[0].text == "async create"  # type: ignore[union-attr]
    async with async_client.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
        text = "".join([piece async for piece in stream.text_stream])
    assert text == "async stream"
    await async_client.close()


async def test_wait_for_message_requests_until_recorded_or_timeout(
    fake_messages_api: Start,
) -> None:
    api = fake_messages_api(["one"])
    assert await api.wait_for_message_requests(1, timeout=0.01) == []
    body = {"model": MODEL, "max_tokens": 8, "messages": HI}
    status, _ = await asyncio.to_thread(post, f"{api.base_url}/v1/messages", body, AUTH)
    assert status == 200
    recorded = await api.wait_for_message_requests(1)
    assert [r.body["max_tokens"] for r in recorded] == [8]
    assert len(await api.wait_for_message_requests(2, timeout=0.01)) == 1


def test_turn_can_be_a_function_of_the_request(fake_messages_api: Start) -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply(text="you said: " + request.body["messages"][-1]["content"])

    api = fake_messages_api([echo])
    message = client(api).messages.create(
        model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "ping"}]
    )
    assert message.content[0].text == "you said: ping"  # type: ignore[union-attr]


def test_refusal_turn_sets_stop_reason(fake_messages_api: Start) -> None:
    api = fake_messages_api([{"refusal": "I can't help with that."}])
    message = client(api).messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert message.stop_reason == "refusal"


# ---------------------------------------------------------------------------------------------
# Usage from cache_sim


def cached_body(question: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 16,
        "system": [
            {
                "type": "text",
                "text": "Project rules. " * 400,
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": [{"role": "user", "content": question}],
        **extra,
    }


def test_repeated_prefix_with_cache_control_reads_from_cache(fake_messages_api: Start) -> None:
    api = fake_messages_api(["first", "second"])
    sdk = client(api)
    first = sdk.messages.create(**cached_body("What is rule 1?"))
    second = sdk.messages.create(**cached_body("And rule 2?"))
    system_tokens = request_from_messages_api(cached_body("x")).system[0].tokens
    assert system_tokens >= 1024
    assert first.usage.cache_creation_input_tokens == system_tokens
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == system_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert (
        second.usage.input_tokens
        == request_from_messages_api(cached_body("And rule 2?")).messages[0].tokens
    )
    assert api.requests[1].usage is not None
    assert api.requests[1].usage["cache_read_input_tokens"] == system_tokens


def test_streamed_usage_reports_cache_reads_too(fake_messages_api: Start) -> None:
    api = fake_messages_api(["a", "b"])
    sdk = client(api)
    sdk.messages.create(**cached_body("q1"))
    with sdk.messages.stream(**cached_body("q2")) as stream:
        final = stream.get_final_message()
    assert final.usage.cache_read_input_tokens and final.usage.cache_read_input_tokens >= 1024


def test_cache_expires_on_the_servers_clock(fake_messages_api: Start) -> None:
    now = [1000.0]
    api = fake_messages_api(["a", "b", "c"], clock=lambda: now[0])
    sdk = client(api)
    sdk.messages.create(**cached_body("q"))
    now[0] += 200
    assert sdk.messages.create(**cached_body("q")).usage.cache_read_input_tokens
    now[0] += 301
    late = sdk.messages.create(**cached_body("q"))
    assert late.usage.cache_read_input_tokens == 0
    assert late.usage.cache_creation_input_tokens


def test_automatic_top_level_cache_control(fake_messages_api: Start) -> None:
    api = fake_messages_api(["a", "b"])
    sdk = client(api)
    history: list[MessageParam] = [{"role": "user", "content": "long question " * 400}]
    first = sdk.messages.create(
        model=MODEL, max_tokens=8, messages=history, cache_control={"type": "ephemeral"}
    )
    history += [{"role": "assistant", "content": "answer"}, {"role": "user", "content": "more"}]
    second = sdk.messages.create(
        model=MODEL, max_tokens=8, messages=history, cache_control={"type": "ephemeral"}
    )
    written = first.usage.cache_creation_input_tokens
    assert written is not None and written > 0
    assert second.usage.cache_read_input_tokens == written


def test_count_tokens_matches_the_cache_models_view(fake_messages_api: Start) -> None:
    api = fake_messages_api()
    body = cached_body("how many?")
    del body["max_tokens"]
    counted = client(api).messages.count_tokens(**body)
    assert counted.input_tokens == request_from_messages_api(body).total_tokens
    assert api.requests[0].path == "/v1/messages/count_tokens"


# ---------------------------------------------------------------------------------------------
# Errors surface as the SDK's exception types


@pytest.mark.parametrize(
    ("turn", "exception"),
    [
        (rate_limited(), anthropic.RateLimitError),
        (overloaded(), anthropic.OverloadedError),
        (server_error(), anthropic.InternalServerError),
        (invalid_api_key(), anthropic.AuthenticationError),
        (unknown_model("claude-nope"), anthropic.NotFoundError),
        (refused(), anthropic.BadRequestError),
        ({"error": {"status": 403}}, anthropic.PermissionDeniedError),
    ],
)
def test_injected_errors_raise_sdk_exceptions(
    fake_messages_api: Start, turn: Any, exception: type[Exception]
) -> None:
    api = fake_messages_api([turn])
    with pytest.raises(exception) as caught:
        client(api, max_retries=0).messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert isinstance(caught.value, anthropic.APIStatusError)
    assert caught.value.request_id and caught.value.request_id.startswith("req_")


def test_retry_after_is_sent_and_the_sdk_retries(fake_messages_api: Start) -> None:
    api = fake_messages_api([rate_limited(0.01), overloaded(0.01), "finally"])
    message = client(api, max_retries=2).messages.create(model=MODEL, max_tokens=8, messages=HI)
    assert message.content[0].text == "finally"  # type: ignore[union-attr]
    assert [r.status for r in api.requests] == [429, 529, 200]
    assert [r.headers["x-stainless-retry-count"] for r in api.requests] == ["0", "1", "2"]


def test_configured_keys_reject_others_and_unknown_models_get_404(fake_messages_api: Start) -> None:
    api = fake_messages_api(["ok"], api_keys={"sk-good"})
    bad = client(api, api_key="sk-bad", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model=MODEL, max_tokens=8, messages=HI)
    good = client(api, api_key="sk-good", max_retries=0)
    with pytest.raises(anthropic.NotFoundError, match="gpt-4o"):
        good.messages.create(model="gpt-4o", max_tokens=8, messages=HI)
    assert good.messages.create(model=MODEL, max_tokens=8, messages=HI).content
    assert api.remaining_turns == 0


def test_error_event_in_the_middle_of_a_stream(fake_messages_api: Start) -> None:
    api = fake_messages_api([overloaded(mid_stream=True)])
    stream = client(api, max_retries=0).messages.stream(model=MODEL, max_tokens=8, messages=HI)
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"), stream as events:
        events.get_final_message()
    assert api.requests[0].status == 200


def test_bad_cache_control_is_a_400_and_keeps_the_turn(fake_messages_api: Start) -> None:
    api = fake_messages_api(["kept"])
    marked: list[TextBlockParam] = [
        {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
        for i in range(5)
    ]
    sdk = client(api, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        sdk.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": marked}]
        )
    assert api.remaining_turns == 1
    assert sdk.messages.create(model=MODEL, max_tokens=8, messages=HI).content


def test_a_breakpoint_inside_a_tool_result_is_one_of_the_four(fake_messages_api: Start) -> None:
    """The text of a tool result takes its own cache_control, counted as the API counts it:
    four marks around it make five."""
    api = fake_messages_api(["kept"])
    mark = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"rule {i}", "cache_control": mark} for i in range(3)]
    text = {"type": "text", "text": "file text", "cache_control": mark}
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_a", "content": [text]}
    messages = [*HI, tool_turn("toolu_a"), {"role": "user", "content": [result]}]
    body = {"model": MODEL, "max_tokens": 8, "system": system, "messages": messages}
    assert post(api.base_url + "/v1/messages/count_tokens", body, AUTH)[0] == 200
    status, answer = post(api.base_url + "/v1/messages", {**body, "cache_control": mark}, AUTH)
    assert status == 400 and "breakpoint slot" in json.loads(answer)["error"]["message"]
    result["cache_control"] = mark
    status, answer = post(api.base_url + "/v1/messages", body, AUTH)
    assert status == 400 and "Found 5" in json.loads(answer)["error"]["message"]
    assert api.remaining_turns == 1


def test_an_exhausted_script_is_a_clear_non_retried_error(fake_messages_api: Start) -> None:
    api = fake_messages_api([])
    with pytest.raises(anthropic.InternalServerError, match="no turn left"):
        client(api, max_retries=0).messages.create(model=MODEL, max_tokens=8, messages=HI)


def test_a_body_over_32_mb_gets_413_request_too_large(fake_messages_api: Start) -> None:
    """The errors page's size limit for the Messages and Token Counting APIs; the fake
    still serves the next request."""
    api = fake_messages_api(["after"])
    text = "x" * MAX_REQUEST_BYTES
    body = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": text}]}
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        status, raw = post(api.base_url + path, body, AUTH)
        assert status == 413
        assert json.loads(raw)["error"]["type"] == "request_too_large"
    assert post(api.base_url + "/v1/messages", {**body, "messages": HI}, AUTH)[0] == 200


def test_malformed_bodies_get_400_not_a_crash(fake_messages_api: Start) -> None:
    api = fake_messages_api(["still serving"])
    url = api.base_url + "/v1/messages"
    assert post(url, b"{not json", AUTH)[0] == 400
    assert post(url, {"model": MODEL, "max_tokens": 8}, AUTH)[0] == 400
    assert post(url, {"messages": HI, "max_tokens": 8}, AUTH)[0] == 400
    assert post(api.base_url + "/v1/elsewhere", {}, AUTH)[0] == 404
    assert post(url, {"model": MODEL, "max_tokens": 8, "messages": HI}, AUTH)[0] == 200


# ---------------------------------------------------------------------------------------------
# As a subprocess


@pytest.fixture
def fake_process(tmp_path: Path) -> Iterator[FakeProcess]:
    script = ["from a subprocess", {"tool_use": [{"name": "outline", "input": {"path": "x"}}]}]
    with fake_api_subprocess(script, tmp_path) as process:
        yield process


def test_subprocess_prints_its_url_and_records_requests(fake_process: FakeProcess) -> None:
    url, record = fake_process.base_url, fake_process.record
    assert url.startswith("http://127.0.0.1:")
    sdk = anthropic.Anthropic(api_key="sk-secret-9876", base_url=url, max_retries=0)
    _OPEN_CLIENTS.append(sdk)
    answer = sdk.messages.create(model=MODEL, max_tokens=8, messages=HI).content[0]
    assert isinstance(answer, TextBlock) and answer.text == "from a subprocess"
    with sdk.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
        assert stream.get_final_message().stop_reason == "tool_use"
    lines = fake_process.requests()
    assert [line["body"]["messages"] for line in lines] == [HI, HI]
    assert lines[1]["body"]["stream"] is True
    assert "sk-secret-9876" not in record.read_text()  # keys are redacted in the file
    assert lines[0]["headers"]["authorization"].endswith("9876>")


def test_subprocess_refuses_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('{"turns": [{"nothing": 1}]}')
    done = subprocess.run(
        [sys.executable, "-m", "tests.fakes.messages_api", "--script", str(script)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "a turn needs" in done.stderr


def test_max_tokens_cuts_the_answer_and_zero_prewarms(fake_messages_api: Start) -> None:
    long_text = "word " * 200
    api = fake_messages_api(
        [
            long_text,
            {"text": "x", "tool_use": [{"name": "big", "input": {"a": "y" * 400}}]},
            "unused",
        ]
    )
    sdk = client(api)
    cut = sdk.messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert cut.stop_reason == "max_tokens"
    assert cut.usage.output_tokens <= 10
    assert long_text.startswith(cut.content[0].text)  # type: ignore[union-attr]
    with sdk.messages.stream(model=MODEL, max_tokens=10, messages=HI) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "max_tokens"
    assert [b.type for b in streamed.content] == ["text"]  # the tool call did not fit
    warm = sdk.messages.create(**cached_body("warm", max_tokens=0))
    assert warm.content == [] and warm.stop_reason == "max_tokens"
    assert warm.usage.output_tokens == 0 and warm.usage.cache_creation_input_tokens >= 1024
    prewarm_stream = sdk.messages.stream(**cached_body("warm", max_tokens=0))
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"), prewarm_stream:
        pass


def test_a_streamed_request_can_be_refused_before_the_stream(fake_messages_api: Start) -> None:
    api = fake_messages_api([rate_limited()])
    stream = client(api, max_retries=0).messages.stream(model=MODEL, max_tokens=8, messages=HI)
    with pytest.raises(anthropic.RateLimitError), stream:
        pass
    assert api.requests[0].status == 429
    assert api.requests[0].headers.get("anthropic-version")


def tool_turn(tool_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_id, "name": "t", "input": {}}],
    }


NAMELESS_USE = {"role": "assistant", "content": [{"type": "tool_use", "name": "t", "input": {}}]}


def result(tool_id: str, content: Any = "ok") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": content}],
    }


@pytest.mark.parametrize(
    ("messages", "complaint"),
    [
        ([], "at least one message"),
        ([{"role": "assistant", "content": "hi"}], "first message"),
        ([{"role": "user", "content": ""}], "non-empty content"),
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "must be non-empty"),
        ([*HI, tool_turn("toolu_a"), *HI], "without `tool_result` blocks"),
        ([*HI, tool_turn("toolu_a"), result("toolu_b")], "unexpected `tool_use_id`"),
        ([{"role": "system", "content": "x"}], "role"),
        ([{"role": "user", "content": [{"type": "text", "text": 5}]}], "valid string"),
        ([*HI, tool_turn("toolu_a"), result("toolu_a", 5)], "valid list"),
        (
            [*HI, tool_turn("toolu_a"), result("toolu_a", [{"type": "text", "text": None}])],
            "valid string",
        ),
        (  # with no ids on either side the pair matched as "None"
            [*HI, NAMELESS_USE, {"role": "user", "content": [{"type": "tool_result"}]}],
            r"messages\.1\.content\.0\.tool_use\.id: Field required",
        ),
        (
            [*HI, tool_turn("toolu_a"), {"role": "user", "content": [{"type": "tool_result"}]}],
            r"messages\.2\.content\.0\.tool_result\.tool_use_id: Field required",
        ),
        ([*HI, tool_turn(7), result(7)], r"tool_use\.id: Input should be a valid string"),  # type: ignore[arg-type]
    ],
)
def test_conversations_the_api_rejects_are_rejected(
    fake_messages_api: Start, messages: list[dict[str, Any]], complaint: str
) -> None:
    api = fake_messages_api(["kept"])
    with pytest.raises(anthropic.BadRequestError, match=complaint):
        client(api, max_retries=0).messages.create(model=MODEL, max_tokens=8, messages=messages)  # type: ignore[arg-type]
    assert api.remaining_turns == 1


def test_a_well_formed_tool_loop_and_a_prefill_are_accepted(fake_messages_api: Start) -> None:
    api = fake_messages_api(["one", "two"])
    sdk = client(api, max_retries=0)
    loop = [*HI, tool_turn("toolu_a"), result("toolu_a")]
    assert sdk.messages.create(model=MODEL, max_tokens=8, messages=loop).content  # type: ignore[arg-type]
    prefill = [*HI, {"role": "assistant", "content": "Sure,"}]
    assert sdk.messages.create(model=MODEL, max_tokens=8, messages=prefill).content  # type: ignore[arg-type]


MID_SYSTEM_MODEL = "claude-opus-4-8"  # the first model that takes role "system" in messages
NOTE = {"role": "system", "content": "Available agent types: Explore, Plan."}


@pytest.mark.parametrize(
    ("model", "body", "complaint"),
    [
        (MODEL, {"messages": [*HI, NOTE]}, "not supported on this model"),
        (MID_SYSTEM_MODEL, {"messages": [NOTE, *HI]}, "first message"),
        (
            MID_SYSTEM_MODEL,
            {"messages": [*HI, {"role": "assistant", "content": "ok"}, NOTE]},
            "must follow a user turn",
        ),
        (
            MID_SYSTEM_MODEL,
            {"messages": [*HI, {"role": "system", "content": [{"type": "image"}]}]},
            "only hold text",
        ),
        (MID_SYSTEM_MODEL, {"messages": [*HI, {"role": "system", "content": ""}]}, "non-empty"),
        (MID_SYSTEM_MODEL, {"messages": HI, "thinking": {"type": "sometimes"}}, "thinking.type"),
        (
            MID_SYSTEM_MODEL,
            {"messages": HI, "thinking": {"type": "adaptive", "display": "hidden"}},
            "display",
        ),
        (
            MID_SYSTEM_MODEL,
            {"messages": HI, "thinking": {"type": "enabled", "budget_tokens": 10}},
            "budget_tokens",
        ),
        (MODEL, {"messages": HI, "system": [{"type": "text", "text": ""}]}, "non-empty"),
        (MODEL, {"messages": HI, "system": [{"type": "text", "text": 7}]}, "valid string"),
        (MODEL, {"messages": HI, "system": [{"type": "image", "source": {}}]}, "'text'"),
        (MODEL, {"messages": HI, "system": ["plain"]}, "'text'"),
        (MODEL, {"messages": HI, "tools": [TOOL, TOOL]}, "Tool names must be unique"),
        (
            MODEL,
            {"messages": HI, "tools": [TOOL, {**TOOL, "defer_loading": True}]},
            "Tool names must be unique",
        ),
        (MODEL, {"messages": HI, "stop_sequences": "END"}, "valid list"),
        (MODEL, {"messages": HI, "stop_sequences": ["END", 7]}, "stop_sequences.1"),
        (MODEL, {"messages": HI, "stop_sequences": ["", "\n"]}, "must be non-empty"),
        (MODEL, {"messages": HI, "stop_sequences": ["\n"]}, "must contain non-whitespace"),
        (MODEL, {"messages": HI, "stop_sequences": ["END", " \t"]}, "non-whitespace"),
        (MODEL, {"messages": HI, "temperature": 1.5}, "temperature"),
        (MODEL, {"messages": HI, "temperature": "warm"}, "temperature"),
        (MODEL, {"messages": HI, **WITH_THINKING, "temperature": 0.2}, "temperature"),
        (
            MODEL,
            {"messages": HI, **WITH_THINKING, "tools": [TOOL], "tool_choice": {"type": "any"}},
            "tool_choice forces tool use",
        ),
        (
            MODEL,
            {
                "messages": HI,
                **WITH_THINKING,
                "tools": [TOOL],
                "tool_choice": {"type": "tool", "name": "read_file"},
            },
            "tool_choice forces tool use",
        ),
    ],
)
def test_request_shapes_the_api_rejects_are_rejected(
    fake_messages_api: Start, model: str, body: dict[str, Any], complaint: str
) -> None:
    api = fake_messages_api(["kept"])
    status, answer = post(
        api.base_url + "/v1/messages",
        {"model": model, "max_tokens": 8, **body},
        AUTH,
    )
    assert status == 400 and complaint in json.loads(answer)["error"]["message"]
    assert api.remaining_turns == 1


@pytest.mark.parametrize(
    ("model", "max_tokens", "beta", "status", "complaint"),
    [
        (
            "claude-opus-4-5-20251101",
            128001,
            "",
            400,
            "max_tokens: 128001 > 64000, which is the maximum allowed number of output tokens "
            "for claude-opus-4-5-20251101",
        ),
        (MODEL, 128000, "", 200, ""),
        (MODEL, 128001, "", 400, "> 128000"),
        ("claude-3-7-sonnet-20250219", 128000, "", 400, "> 64000"),
        ("claude-3-7-sonnet-20250219", 128000, "output-128k-2025-02-19", 200, ""),
        (MODEL, True, "", 400, "valid integer"),
        (MODEL, "8", "", 400, "valid integer"),
    ],
)
def test_max_tokens_is_held_to_the_models_output_limit(
    fake_messages_api: Start, model: str, max_tokens: Any, beta: str, status: int, complaint: str
) -> None:
    """The API's own 400 for an Opus 4.5 request (anthropics/claude-code#24451); Sonnet
    3.7's 128K beta; a limit only for a model prices.toml knows (others are a 404)."""
    api = fake_messages_api(["ok"])
    headers = {**AUTH, "anthropic-beta": beta} if beta else AUTH
    body = {"model": model, "max_tokens": max_tokens, "messages": HI}
    answer_status, answer = post(api.base_url + "/v1/messages", body, headers)
    assert answer_status == status
    if complaint:
        assert complaint in json.loads(answer)["error"]["message"]


def test_a_thinking_budget_leaves_room_for_the_answer_unless_interleaved(
    fake_messages_api: Start,
) -> None:
    """ "budget_tokens must be set to a value less than max_tokens", except with interleaved
    thinking, where it spans the whole turn (extended thinking): under its beta, or with
    tools (later models interleave by default; the fake does not refuse what they take)."""
    api = fake_messages_api(["ok", "ok", "ok"])
    body = {"model": MODEL, "max_tokens": 1024, "messages": HI, "thinking": THINKING}
    status, answer = post(api.base_url + "/v1/messages", body, AUTH)
    assert status == 400
    assert "must be greater than `thinking.budget_tokens`" in json.loads(answer)["error"]["message"]
    interleaved = {**AUTH, "anthropic-beta": "interleaved-thinking-2025-05-14"}
    assert post(api.base_url + "/v1/messages", body, interleaved)[0] == 200
    assert post(api.base_url + "/v1/messages", {**body, "max_tokens": 1025}, AUTH)[0] == 200
    assert post(api.base_url + "/v1/messages/count_tokens", body, AUTH)[0] == 200
    tool = {"name": "look", "description": "d", "input_schema": {"type": "object"}}
    assert post(api.base_url + "/v1/messages", {**body, "tools": [tool]}, AUTH)[0] == 200


def test_stop_sequences_with_text_in_them_are_accepted(fake_messages_api: Start) -> None:
    """Only blank ones are refused: leading newlines and spaces are fine, and so are many."""
    api = fake_messages_api(["ok"])
    stops = ["\n\nHuman:", " END ", *(f"stop {n}" for n in range(12))]
    body = {"model": MODEL, "max_tokens": 8, "messages": HI, "stop_sequences": stops}
    assert post(api.base_url + "/v1/messages", body, AUTH)[0] == 200


def test_thinking_takes_temperature_one_and_tool_choices_that_force_nothing(
    fake_messages_api: Start,
) -> None:
    """What extended thinking allows: temperature 1, tool_choice auto or none; without
    thinking, any temperature from 0 to 1 and a forced tool."""
    api = fake_messages_api(["a", "b", "c", "d"])
    base = {"model": MODEL, "max_tokens": 2048, "messages": HI, "tools": [TOOL]}
    for extra in (
        {"thinking": THINKING, "temperature": 1, "tool_choice": {"type": "auto"}},
        {"thinking": THINKING, "tool_choice": {"type": "none"}},
        {"thinking": {"type": "disabled"}, "temperature": 0, "tool_choice": {"type": "any"}},
        {"temperature": 0.5, "tool_choice": {"type": "tool", "name": "read_file"}},
    ):
        assert post(api.base_url + "/v1/messages", {**base, **extra}, AUTH)[0] == 200, extra


def test_what_claude_code_sends_is_accepted(fake_messages_api: Start) -> None:
    """Role "system" after a user turn, adaptive thinking (its display omitted, as 2.1.332
    asks), context_management, output_config, and 2.1.332's per-turn control: a system
    message's own `output_config`, with nothing else in it after a compaction."""
    api = fake_messages_api(["one"])
    status, _ = post(
        api.base_url + "/v1/messages",
        {
            "model": MID_SYSTEM_MODEL,
            "max_tokens": 64000,
            "messages": [
                *HI,
                NOTE,
                tool_turn("toolu_a"),
                result("toolu_a"),
                {
                    "role": "system",
                    "content": [{"type": "text", "text": "A skill listing."}],
                    "output_config": {"effort": "medium"},
                },
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "Go on."},
                {"role": "system", "content": [], "output_config": {"effort": "medium"}},
            ],
            "thinking": {"type": "adaptive", "display": "omitted"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "output_config": {"effort": "high"},
        },
        AUTH,
    )
    assert status == 200


def test_the_updates_display_needs_its_beta(fake_messages_api: Start) -> None:
    """2.1.332 in stream-json mode asks for thinking "updates" with the beta that allows it."""
    api = fake_messages_api(["one"])
    body = {"model": MID_SYSTEM_MODEL, "max_tokens": 8, "messages": HI}
    body["thinking"] = {"type": "adaptive", "display": "updates"}
    key = AUTH
    assert post(api.base_url + "/v1/messages", body, key)[0] == 400
    beta = {**key, "anthropic-beta": "effort-2025-11-24, thinking-display-updates-2026-08-18"}
    assert post(api.base_url + "/v1/messages", body, beta)[0] == 200


def test_a_deferred_tool_is_billed_where_a_result_references_it(fake_messages_api: Start) -> None:
    """`defer_loading` keeps a tool out of the cached prefix (adding one keeps the cache);
    the `tool_reference` ToolSearch answers with bills its definition in the conversation,
    as Claude Code 2.1.332 loads tools (platform docs, "Tool use with prompt caching")."""
    fetch = {"name": "WebFetch", "description": "Fetch a page. " * 200, "input_schema": {}}
    search = {"name": "ToolSearch", "description": "Load tools.", "input_schema": {}}
    load = {"type": "tool_use", "id": "toolu_s", "name": "ToolSearch", "input": {"query": "x"}}
    reference = {"type": "tool_reference", "tool_name": "WebFetch"}
    loaded = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_s", "content": [reference]},
            {"type": "text", "text": "Tool loaded."},
        ],
    }
    before: dict[str, Any] = {
        "tools": [search],
        "messages": [*HI, {"role": "assistant", "content": [load]}],
    }
    after = {
        "tools": [search, {**fetch, "defer_loading": True}],
        "messages": [*before["messages"], loaded],
    }
    first, second = (request_from_messages_api(body) for body in (before, after))
    assert [t.key for t in second.tools] == [t.key for t in first.tools]
    billed = second.messages[-2].tokens
    assert billed >= request_from_messages_api({"tools": [fetch], "messages": HI}).tools[0].tokens
    api = fake_messages_api(["ok"])
    status, _ = post(
        api.base_url + "/v1/messages",
        {"model": MID_SYSTEM_MODEL, "max_tokens": 8, **after},
        AUTH,
    )
    assert status == 200


def test_a_gated_stream_lets_a_client_cancel_mid_answer(fake_messages_api: Start) -> None:
    gate = threading.Event()
    api = fake_messages_api(
        [Reply(text="first part, then much more text " * 20, gate=gate), "next"]
    )
    sdk = client(api, max_retries=0)
    with sdk.messages.stream(model=MODEL, max_tokens=500, messages=HI) as stream:
        first = next(event for event in stream if event.type == "text")
    assert first.text  # the stream was closed here, as a cancelled request closes it
    gate.set()
    record = api.message_requests[0]
    assert record.done.wait(10)
    assert record.completed is False
    # The server keeps serving after a client walked away.
    assert sdk.messages.create(model=MODEL, max_tokens=8, messages=HI).content
    assert api.message_requests[1].done.wait(10) and api.message_requests[1].completed


def test_delay_paces_the_stream_in_script_form(fake_messages_api: Start) -> None:
    api = fake_messages_api([{"text": "slow words", "delay": 0.01}])
    with client(api).messages.stream(model=MODEL, max_tokens=50, messages=HI) as stream:
        assert stream.get_final_message().content[0].text == "slow words"  # type: ignore[union-attr]


def test_concurrent_requests_each_get_their_own_turn(fake_messages_api: Start) -> None:
    answers = [f"answer {i}" for i in range(8)]
    api = fake_messages_api(answers)
    sdk = client(api, max_retries=0)
    texts: list[str] = []

    def ask() -> None:
        message = sdk.messages.create(model=MODEL, max_tokens=8, messages=HI)
        texts.append(message.content[0].text)  # type: ignore[union-attr]

    threads = [threading.Thread(target=ask) for _ in answers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(texts) == sorted(answers)
    assert len(api.message_requests) == 8


def test_a_cut_stream_drops_or_stalls_after_its_first_text(fake_messages_api: Start) -> None:
    """`"cut": "drop"` closes the connection mid-answer; `"stall"` holds it silent until the
    client walks away (a read timeout)."""
    api = fake_messages_api(
        [
            {"text": "partial answer, then more " * 10, "cut": "drop"},
            {"text": "partial answer, then more " * 10, "cut": "stall"},
            "whole",
        ]
    )
    sdk = client(api, max_retries=0)
    texts: list[str] = []
    # Mid-stream, the SDK up to 2.16 lets httpx2's own exceptions through; 2.17 wraps them as
    # its connection and timeout errors. model/client.py retries either form.
    with (
        pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)),
        sdk.messages.stream(model=MODEL, max_tokens=500, messages=HI) as stream,
    ):
        texts.extend(event.text for event in stream if event.type == "text")
    assert len(texts) == 1  # one delta, then the connection was gone
    impatient = client(api, max_retries=0, timeout=0.5)
    with (
        pytest.raises((httpx2.ReadTimeout, anthropic.APITimeoutError)),
        impatient.messages.stream(model=MODEL, max_tokens=500, messages=HI) as stream,
    ):
        texts.extend(event.text for event in stream if event.type == "text")
    assert len(texts) == 2
    records = api.message_requests
    assert records[1].done.wait(10) and not records[0].completed and not records[1].completed
    assert sdk.messages.create(model=MODEL, max_tokens=8, messages=HI).content
