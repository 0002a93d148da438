"""The one place that talks to the Anthropic Messages API: streaming, retries, clear errors.

The SDK's own retries are switched off so that one policy covers both failures the SDK sees
before the stream starts (429, 529, 5xx, timeouts, dropped connections) and those in the middle
of a stream, which the SDK never retries: error events, a dropped connection, a stall (no
byte for `stall_timeout` seconds; there the SDK up to 2.16 lets httpx's own exceptions
through, 2.17 wraps them as its connection and timeout errors: both are caught), and a stream
that ends before its `message_stop` or holds an event the SDK cannot read (a proxy's doing:
the SDK would hand back the half answer as if whole, or fail with its parser's error). Every
failure ends as a `ModelError` whose message tells the user what to do; the API key never
appears in a message or a log line.

API:
- `ModelClient`: streams one Messages API call at a time.
- `ClientSettings`: how to reach the API.
- `ModelError`: a call that failed for good; the message is for the user.
- `RetryPolicy`, `RetryNotice`, `parse_retry_after`: the one retry policy.
- `TextCallback`: how streamed text reaches the caller.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anthropic
import httpx2
from anthropic.lib.streaming import AsyncMessageStream, ParsedMessageStreamEvent
from anthropic.types import Message

from ephemeral_context.echo import quoted

log = logging.getLogger(__name__)

TextCallback = Callable[[str], None]
RetryCallback = Callable[["RetryNotice"], None]
Sleep = Callable[[float], Awaitable[None]]

ErrorKind = Literal[
    "missing_key",
    "invalid_key",
    "permission",
    "unknown_model",
    "refused",
    "too_large",
    "rate_limited",
    "overloaded",
    "server",
    "timeout",
    "connection",
]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRYABLE_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error", "timeout_error"})
PROMPT_TOO_LONG = "prompt is too long"
"""How the API's 400 says a request is over the model's context window."""
SECRET_MIN_CHARS = 12
"""A key shorter than this is a placeholder (a local proxy takes any): not scrubbed from
messages, where it would cut up every word that holds it."""
DETAIL_CHARS = 300
"""The most of a server's own words an error message quotes."""


class ModelError(Exception):
    """A model call that failed for good; `str(error)` is meant for the user."""

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


@dataclass(frozen=True)
class RetryNotice:
    """Told to the caller before each retry, so a UI can say why the answer pauses."""

    attempt: int
    delay: float
    reason: str
    restarts_text: bool = False
    """Text of the failed attempt was already streamed; the answer starts over."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; a server's retry-after wins when it gives one."""

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before attempt `attempt + 1` (attempt counts from 1)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * rng.random())


@dataclass(frozen=True)
class ClientSettings:
    """How to reach the API; the key comes from here or from ANTHROPIC_API_KEY."""

    api_key: str | None = None
    base_url: str | None = None
    stall_timeout: float = 60.0
    """Seconds without a byte (before or during the stream) after which an attempt is given
    up and retried; the API sends pings while it thinks, so silence this long is a fault."""
    connect_timeout: float = 10.0
    retry: RetryPolicy = RetryPolicy()


class _BrokenAnswer(Exception):
    """A stream that ended before its `message_stop`, or held an event the SDK cannot read:
    retried like a lost connection, never taken for a whole answer."""


async def _readable(
    stream: AsyncMessageStream[None],
) -> AsyncIterator[ParsedMessageStreamEvent[None]]:
    """The stream's events. Whatever the SDK raises reading one (JSON that does not parse,
    an event before message_start, a delta of no block) breaks the answer off; its API and
    transport errors pass as they are."""
    events = aiter(stream)
    while True:
        try:
            event = await anext(events)
        except StopAsyncIteration:
            return
        except (anthropic.APIError, httpx2.TransportError):
            raise
        except Exception as exc:
            raise _BrokenAnswer(f"it sent an event that cannot be read ({exc!r})") from None
        yield event


def _stalled(exc: BaseException) -> bool:
    """A timeout: before the stream (the SDK's) or in it (httpx's, passed through)."""
    return isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException)


def _reason(exc: BaseException) -> str:
    """Why an attempt that got no whole answer is retried, in a few words."""
    if _stalled(exc):
        return "stalled"
    return "answer broken off" if isinstance(exc, _BrokenAnswer) else "connection lost"


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date), else None."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _http_url(url: str) -> bool:
    """Whether `url` can reach an API at all: without a scheme (`localhost:8080`) every
    attempt fails before it leaves, and five of them said only "UnsupportedProtocol"."""
    try:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # `http://[bad`: an IPv6 host never closed
        return False


class ModelClient:
    """Streams one Messages API call at a time through AsyncAnthropic."""

    def __init__(
        self,
        settings: ClientSettings | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings or ClientSettings()
        # A key exported from a .env with CRLF line ends keeps its CR: no header may hold it.
        key = (self.settings.api_key or os.environ.get("ANTHROPIC_API_KEY") or "").strip()
        token = None if key else (os.environ.get("ANTHROPIC_AUTH_TOKEN") or "").strip()
        if not key and not token:
            raise ModelError(
                "missing_key",
                "No Anthropic API key: set the ANTHROPIC_API_KEY environment variable "
                "(or ANTHROPIC_AUTH_TOKEN) and start again.",
            )
        self._secret = key or token or ""
        base_url = self.settings.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if base_url is not None and not _http_url(base_url):
            raise ModelError(
                "connection",
                f"The API base URL {quoted(base_url)} is not an http:// or https:// URL; "
                "check ANTHROPIC_BASE_URL (or the apiBaseUrl setting).",
            )
        self._sdk = anthropic.AsyncAnthropic(
            api_key=key or None,
            auth_token=token or None,
            base_url=base_url,
            timeout=anthropic.Timeout(
                self.settings.stall_timeout, connect=self.settings.connect_timeout
            ),
            max_retries=0,
        )
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.retries = 0
        """Retries taken over this client's lifetime (status and tests read it)."""

    async def close(self) -> None:
        await self._sdk.close()

    async def stream(
        self,
        request: Mapping[str, Any],
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> Message:
        """One call, streamed: text deltas go to `on_text`, the final message is returned.

        A retry after some text was already streamed starts the answer again; `on_retry`
        lets the caller say so.
        """
        policy = self.settings.retry
        attempt = 1
        streamed = False

        def forward(text: str) -> None:
            nonlocal streamed
            streamed = True
            if on_text is not None:
                on_text(text)

        while True:
            streamed = False
            try:
                return await self._stream_once(request, forward)
            except anthropic.APIStatusError as exc:
                retryable = exc.status_code in RETRYABLE_STATUS or exc.type in RETRYABLE_TYPES
                if not retryable or attempt >= policy.max_attempts:
                    raise self._final_error(exc, request, attempt) from None
                retry_after = parse_retry_after(exc.response.headers)
                reason = f"{exc.status_code} {exc.type or 'error'}"
            except (anthropic.APIConnectionError, httpx2.TransportError, _BrokenAnswer) as exc:
                if attempt >= policy.max_attempts:
                    raise self._final_error(exc, request, attempt) from None
                retry_after = None
                reason = _reason(exc)
            delay = policy.delay(attempt, retry_after, self._rng)
            log.warning(
                "model call attempt %d failed (%s); retrying in %.2fs", attempt, reason, delay
            )
            if on_retry is not None:
                on_retry(RetryNotice(attempt, delay, reason, streamed))
            self.retries += 1
            attempt += 1
            await self._sleep(delay)

    async def _stream_once(
        self, request: Mapping[str, Any], on_text: TextCallback | None
    ) -> Message:
        async with self._sdk.messages.stream(**request) as stream:
            seen: set[str] = set()
            async for event in _readable(stream):
                if event.type == "text" and on_text is not None:
                    on_text(event.text)
                seen.add(event.type)
            if not {"message_start", "message_stop"} <= seen:
                raise _BrokenAnswer("it ended before its message_stop")
            message = await stream.get_final_message()
            if message.stop_reason is None:  # the API gives one in every message_delta
                raise _BrokenAnswer("it ended without its message_delta")
            return message

    def _final_error(
        self,
        exc: anthropic.APIError | httpx2.TransportError | _BrokenAnswer,
        request: Mapping[str, Any],
        attempts: int,
    ) -> ModelError:
        """Turns an SDK error into a message that says what went wrong and what to do."""
        tried = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
        if isinstance(exc, _BrokenAnswer):
            return ModelError(
                "connection",
                f"The Anthropic API's answer broke off{tried}: {self._detail(str(exc))}; "
                "check the network and any proxy in between.",
            )
        if _stalled(exc):
            return ModelError(
                "timeout",
                f"The Anthropic API sent nothing for {self.settings.stall_timeout:g}s{tried}; "
                "check the network, or allow longer silences (the stall timeout).",
            )
        if isinstance(exc, httpx2.TransportError):
            return ModelError(
                "connection",
                f"The connection to the Anthropic API broke mid-answer{tried}: "
                f"{self._detail(str(exc) or type(exc).__name__)}",
            )
        if not isinstance(exc, anthropic.APIStatusError):
            return ModelError("connection", f"Cannot reach the Anthropic API{tried}: {exc.message}")
        status = exc.status_code
        # An error event in a stream comes with the stream's 200 ("failed (200)" said
        # nothing): its type says what it was.
        code = f"{exc.type or 'an error'} mid-answer" if status == 200 else str(status)
        detail = self._detail(exc.api_message or exc.message)
        model = request.get("model", "?")
        kind: ErrorKind
        if status == 401:
            kind, text = (
                "invalid_key",
                "The Anthropic API rejected the API key (401); check ANTHROPIC_API_KEY.",
            )
        elif status == 403:
            kind, text = "permission", f"This API key may not use that (403): {detail}"
        elif status == 404:
            kind, text = (
                "unknown_model",
                f"Unknown model {model!r} (404): {detail}. Check the model setting.",
            )
        elif status == 413 or PROMPT_TOO_LONG in detail:  # every later call would fail alike
            kind, text = (
                "too_large",
                f"The request is too large for the API ({code}): {detail}; start a new "
                "conversation.",
            )
        elif status == 429 or exc.type == "rate_limit_error":
            kind, text = "rate_limited", f"Rate limited by the Anthropic API{tried}: {detail}"
        elif status == 529 or exc.type == "overloaded_error":
            kind, text = "overloaded", f"The Anthropic API is overloaded{tried}: {detail}"
        elif status >= 500 or exc.type == "api_error":
            kind, text = "server", f"The Anthropic API failed ({code}){tried}: {detail}"
        else:
            kind, text = "refused", f"The Anthropic API refused the request ({code}): {detail}"
        return ModelError(kind, text, status=status)

    def _detail(self, text: str) -> str:
        """What a server or the network said, fit for the user's one line: a proxy's HTML
        page folded and clipped; and, belt and braces, never the key, even if echoed."""
        secret = len(self._secret) >= SECRET_MIN_CHARS  # a local proxy's "x" or "dummy" is none
        scrubbed = text.replace(self._secret, "[redacted]") if secret else text
        line = " ".join(scrubbed.split())
        return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 1] + "…"
