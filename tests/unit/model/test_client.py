"""The model client against the local Messages API: the real SDK speaking real HTTP.

Only `sleep` is replaced (a recorder that does not wait), so retry tests count the delays
the client chose without spending them; the requests themselves really happen.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from ephemeral_context.model.client import (
    ClientSettings,
    ModelClient,
    ModelError,
    RetryNotice,
    RetryPolicy,
    parse_retry_after,
)

from tests.fakes.messages_api import (
    ApiError,
    FakeMessagesAPI,
    Raw,
    RecordedRequest,
    invalid_api_key,
    message_start,
    overloaded,
    rate_limited,
    refused,
    server_error,
    sse,
    unknown_model,
)

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test-" + "k" * 24
SSE = "text/event-stream"


def request(text: str = "hello") -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}


class Sleeps:
    """Records each backoff delay instead of waiting it out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


Factory = Callable[..., ModelClient]


@pytest.fixture
async def make_client(api: FakeMessagesAPI) -> AsyncIterator[Factory]:
    """Clients on the fake API, closed after the test (no socket left behind)."""
    made: list[ModelClient] = []

    def factory(sleeps: Sleeps | None = None, **settings: Any) -> ModelClient:
        settings.setdefault("base_url", api.base_url)
        client = ModelClient(
            ClientSettings(api_key=KEY, **settings), sleep=sleeps or Sleeps(), rng=random.Random(7)
        )
        made.append(client)
        return client

    yield factory
    for client in made:
        await client.close()


async def test_streams_text_deltas_and_returns_the_message(
    api: FakeMessagesAPI, make_client: Factory
) -> None:
    api.add_turns("The quick brown fox jumps over the lazy dog.")
    client = make_client()
    pieces: list[str] = []
    message = await client.stream(request(), on_text=pieces.append)
    assert len(pieces) > 1
    assert "".join(pieces) == "The quick brown fox jumps over the lazy dog."
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0
    sent = (await api.wait_for_message_requests(1))[0]
    assert sent.body["stream"] is True
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    await client.close()


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (rate_limited(0.01), "429 rate_limit_error"),
        (overloaded(0.01), "529 overloaded_error"),
        (server_error(None), "500 api_error"),
        (overloaded(None, mid_stream=True), "200 overloaded_error"),
    ],
)
async def test_retries_then_succeeds(
    api: FakeMessagesAPI, make_client: Factory, error: ApiError, reason: str
) -> None:
    api.add_turns(error, error, "finally")
    sleeps = Sleeps()
    notices: list[RetryNotice] = []
    client = make_client(sleeps)
    message = await client.stream(request(), on_retry=notices.append)
    assert message.content[0].type == "text" and message.content[0].text == "finally"
    assert client.retries == 2
    assert len(await api.wait_for_message_requests(3)) == 3
    assert [n.attempt for n in notices] == [1, 2]
    assert all(n.reason == reason for n in notices)
    assert not any(n.restarts_text for n in notices)  # nothing was streamed before the errors
    if error.retry_after is not None:
        assert sleeps.delays == [error.retry_after, error.retry_after]
    else:  # exponential backoff with jitter: attempt n waits within [b*2^(n-1)/2, b*2^(n-1)]
        assert 0.25 <= sleeps.delays[0] <= 0.5
        assert 0.5 <= sleeps.delays[1] <= 1.0


async def test_gives_up_after_the_attempt_bound(api: FakeMessagesAPI, make_client: Factory) -> None:
    api.add_turns(*[overloaded(None)] * 3)
    sleeps = Sleeps()
    client = make_client(sleeps, retry=RetryPolicy(max_attempts=3))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert caught.value.kind == "overloaded"
    assert "gave up after 3 attempts" in str(caught.value)
    assert len(await api.wait_for_message_requests(3)) == 3
    assert len(sleeps.delays) == 2
    assert sleeps.delays[1] > sleeps.delays[0] * 0.9


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (invalid_api_key(), "invalid_key", "rejected the API key"),
        (unknown_model("claude-nope"), "unknown_model", "Unknown model"),
        (refused("max_tokens: must be at least 1"), "refused", "refused the request"),
        (ApiError(403, "permission_error", "not allowed"), "permission", "403"),
    ],
)
async def test_client_errors_fail_at_once_with_clear_messages(
    api: FakeMessagesAPI, make_client: Factory, error: ApiError, kind: str, words: str
) -> None:
    api.add_turns(error)
    client = make_client()
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert caught.value.kind == kind
    assert words in str(caught.value)
    assert client.retries == 0
    assert len(await api.wait_for_message_requests(1)) == 1


async def test_unknown_model_is_named(api: FakeMessagesAPI, make_client: Factory) -> None:
    client = make_client()
    with pytest.raises(ModelError) as caught:
        await client.stream({**request(), "model": "claude-does-not-exist"})
    assert caught.value.kind == "unknown_model"
    assert "'claude-does-not-exist'" in str(caught.value)


async def test_the_key_is_never_in_messages_or_logs(
    api: FakeMessagesAPI, make_client: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    echoing = ApiError(401, "authentication_error", f"invalid x-api-key {KEY}")
    api.add_turns(overloaded(0.0), echoing)
    client = make_client()
    with caplog.at_level(logging.DEBUG), pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert KEY not in str(caught.value)
    assert KEY not in caplog.text
    assert "retrying" in caplog.text


@pytest.mark.parametrize("written", [KEY + "\r", KEY + "\n", f" {KEY} "])
async def test_a_key_with_a_line_end_or_spaces_around_it_works(
    fake_messages_api: Callable[..., FakeMessagesAPI],
    monkeypatch: pytest.MonkeyPatch,
    written: str,
) -> None:
    """`export ANTHROPIC_API_KEY=...` from a .env with CRLF line ends keeps the CR: the
    header was refused before it left (h11), and five attempts ended as 'Cannot reach the
    Anthropic API ... LocalProtocolError'."""
    api = fake_messages_api(["ok"], api_keys={KEY})
    monkeypatch.setenv("ANTHROPIC_API_KEY", written)
    client = ModelClient(ClientSettings(base_url=api.base_url), sleep=Sleeps())
    try:
        message = await client.stream(request())
    finally:
        await client.close()
    assert message.content[0].text == "ok"  # type: ignore[union-attr]
    assert client.retries == 0


def test_missing_key_is_a_clear_error() -> None:
    with pytest.raises(ModelError) as caught:
        ModelClient(ClientSettings(base_url="http://127.0.0.1:9"))
    assert caught.value.kind == "missing_key"
    assert "ANTHROPIC_API_KEY" in str(caught.value)


async def test_key_from_the_environment(
    api: FakeMessagesAPI, make_client: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.add_turns("ok")
    client = ModelClient(sleep=Sleeps())
    await client.stream(request())
    await client.close()
    assert KEY in (await api.wait_for_message_requests(1))[0].headers.get("authorization", "")


async def test_timeout_is_retried_then_reported(api: FakeMessagesAPI, make_client: Factory) -> None:
    release = threading.Event()

    def stall(_: RecordedRequest) -> str:
        release.wait(10)
        return "too late"

    api.add_turns(stall, stall)
    client = make_client(stall_timeout=0.3, retry=RetryPolicy(max_attempts=2))
    try:
        with pytest.raises(ModelError) as caught:
            await client.stream(request())
    finally:
        release.set()
    assert caught.value.kind == "timeout"
    assert "0.3s" in str(caught.value)
    assert client.retries == 1


async def test_connection_refused_is_reported(api: FakeMessagesAPI, make_client: Factory) -> None:
    url = api.base_url
    api.stop()
    client = make_client(base_url=url, retry=RetryPolicy(max_attempts=2))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert caught.value.kind == "connection"
    assert "Cannot reach" in str(caught.value)


async def test_cancelling_the_task_stops_the_call(
    api: FakeMessagesAPI, make_client: Factory
) -> None:
    started, release = threading.Event(), threading.Event()

    def hold(_: RecordedRequest) -> str:
        started.set()
        release.wait(10)
        return "never read"

    api.add_turns(hold)
    client = make_client()
    task = asyncio.create_task(client.stream(request()))
    try:
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        release.set()
    assert client.retries == 0


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_is_capped_and_backoff_grows() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, max_retry_after=60.0)
    rng = random.Random(1)
    assert policy.delay(1, 600.0, rng) == 60.0
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0]
    for attempt, ceiling in enumerate(ceilings, start=1):
        delay = policy.delay(attempt, None, rng)
        assert ceiling / 2 <= delay <= ceiling


@pytest.mark.parametrize("cut", ["drop", "stall"])
async def test_a_stream_broken_mid_answer_is_retried_and_restarts_the_text(
    api: FakeMessagesAPI, make_client: Factory, cut: str
) -> None:
    """A connection that drops after the first text delta, or goes silent for the stall
    timeout, is retried like any lost connection; the caller hears the answer starts over."""
    api.add_turns({"text": "a partial answer that breaks " * 4, "cut": cut}, "The whole answer.")
    client = make_client(stall_timeout=2.0)
    texts: list[str] = []
    notices: list[RetryNotice] = []
    message = await client.stream(request(), texts.append, notices.append)
    assert message.content[0].text == "The whole answer."  # type: ignore[union-attr]
    assert [(n.reason, n.restarts_text) for n in notices] == [
        ("connection lost" if cut == "drop" else "stalled", True)
    ]
    assert texts[-1] and "".join(texts).endswith("The whole answer.")
    assert client.retries == 1


async def test_a_stream_that_keeps_stalling_ends_as_a_clear_error(
    api: FakeMessagesAPI, make_client: Factory
) -> None:
    api.add_turns(*({"text": "starts, then nothing " * 4, "cut": "stall"} for _ in range(2)))
    client = make_client(stall_timeout=0.3, retry=RetryPolicy(max_attempts=2))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert caught.value.kind == "timeout"
    assert "nothing for 0.3s" in str(caught.value) and "2 attempts" in str(caught.value)


TEXT_START = {
    "type": "content_block_start",
    "index": 0,
    "content_block": {"type": "text", "text": ""},
}
HALF = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}}
NOT_JSON = b"event: content_block_delta\ndata: {not json\n\n"
BROKEN_ANSWERS = {
    "no-message-stop": Raw(sse(message_start()), content_type=SSE),
    "no-stop-mid-text": Raw(sse(message_start(), TEXT_START, HALF), content_type=SSE),
    "empty": Raw(b"", content_type=SSE),
    "not-json": Raw(sse(message_start(), TEXT_START, NOT_JSON), content_type=SSE),
    "delta-of-no-block": Raw(
        sse(message_start(), HALF, {"type": "message_stop"}), content_type=SSE
    ),
    "no-message-start": Raw(sse(TEXT_START, HALF, {"type": "message_stop"}), content_type=SSE),
    "json-not-a-stream": Raw(b'{"type": "message"}'),
    "no-message-delta": Raw(sse(message_start(), {"type": "message_stop"}), content_type=SSE),
}
"""200 answers to a stream that are not whole: what a proxy that ends or mangles a stream
sends (the SDK hands back the half answer as if whole, or fails with its parser's error)."""


@pytest.mark.parametrize("answer", list(BROKEN_ANSWERS.values()), ids=list(BROKEN_ANSWERS))
async def test_an_answer_not_whole_is_retried_never_taken_for_the_answer(
    api: FakeMessagesAPI, make_client: Factory, answer: Raw
) -> None:
    api.add_turns(answer, "The whole answer.")
    client = make_client()
    notices: list[RetryNotice] = []
    message = await client.stream(request(), on_retry=notices.append)
    assert message.content[0].text == "The whole answer."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert [n.reason for n in notices] == ["answer broken off"]


async def test_an_answer_never_whole_ends_as_a_clear_error(
    api: FakeMessagesAPI, make_client: Factory
) -> None:
    api.add_turns(BROKEN_ANSWERS["no-stop-mid-text"], BROKEN_ANSWERS["not-json"])
    client = make_client(retry=RetryPolicy(max_attempts=2))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert caught.value.kind == "connection"
    assert str(caught.value).startswith("The Anthropic API's answer broke off (gave up after 2")
    assert "cannot be read" in str(caught.value)


@pytest.mark.parametrize("status", [400, 502])
async def test_an_error_page_is_quoted_on_one_short_line(
    api: FakeMessagesAPI, make_client: Factory, status: int
) -> None:
    """A proxy's HTML page instead of the API's JSON error: the message stays one line."""
    rows = b"<p>The upstream is unreachable.</p>\n" * 2000
    page = (
        b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n" + rows + b"</body></html>"
    )
    api.add_turns(Raw(page, status=status, content_type="text/html"))
    client = make_client(retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400
    assert "<title>502 Bad Gateway</title>" in message and message.endswith("…")


@pytest.mark.parametrize("url", ["localhost:8080", "api.example.com", "ftp://x", "http://[bad"])
def test_a_base_url_that_cannot_reach_an_api_is_a_clear_error_at_once(url: str) -> None:
    """Without a scheme every attempt failed before it left; five of them, with backoff,
    ended as 'Cannot reach the Anthropic API ... UnsupportedProtocol'."""
    with pytest.raises(ModelError) as caught:
        ModelClient(ClientSettings(api_key=KEY, base_url=url))
    assert "is not an http:// or https:// URL" in str(caught.value)
    assert "ANTHROPIC_BASE_URL" in str(caught.value)


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ApiError(500, "api_error", "Internal server error", mid_stream=True), "failed (api_error"),
        (ApiError(400, "invalid_request_error", "bad", mid_stream=True), "(invalid_request_error"),
    ],
)
async def test_an_error_event_mid_answer_is_named_by_its_type_not_by_200(
    api: FakeMessagesAPI, make_client: Factory, error: ApiError, said: str
) -> None:
    """The stream's status is 200: 'The Anthropic API failed (200)' read as a success."""
    api.add_turns(error, error)
    client = make_client(retry=RetryPolicy(max_attempts=2))
    with pytest.raises(ModelError) as caught:
        await client.stream(request())
    assert said in str(caught.value) and "(200)" not in str(caught.value)


@pytest.mark.parametrize(
    "error",
    [
        refused("prompt is too long: 210000 tokens > 200000 maximum"),
        ApiError(413, "request_too_large", "Request exceeds the maximum allowed number of bytes"),
    ],
)
async def test_a_request_too_large_says_what_to_do(
    api: FakeMessagesAPI, make_client: Factory, error: ApiError
) -> None:
    """Every later call of the conversation fails alike: the message says how out."""
    api.add_turns(error)
    with pytest.raises(ModelError) as caught:
        await make_client().stream(request())
    assert caught.value.kind == "too_large"
    assert "start a new conversation" in str(caught.value)


async def test_a_placeholder_key_does_not_cut_up_the_message(
    fake_messages_api: Callable[..., FakeMessagesAPI],
) -> None:
    """A local proxy takes any key ('x', 'dummy'): scrubbing 'x' from the error made
    'maximum' read 'ma[redacted]imum'."""
    api = fake_messages_api([refused("max_tokens: 90000 > 64000, the maximum allowed")])
    client = ModelClient(ClientSettings(api_key="x", base_url=api.base_url), sleep=Sleeps())
    try:
        with pytest.raises(ModelError) as caught:
            await client.stream(request())
    finally:
        await client.close()
    assert "64000, the maximum allowed" in str(caught.value)
