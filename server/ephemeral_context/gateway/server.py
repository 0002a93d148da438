"""The HTTP side of `ectx gateway`: a local Messages API in front of the real one (aiohttp).

`POST /v1/messages` goes through the engine (core.py); `GET /ectx/status` reports the
savings; every other request (count_tokens, models, ...) and every request the engine cannot
handle is forwarded unchanged, its answer back unchanged (a stream as it comes, any other
answer once the whole of it came). The client's headers (its API key or OAuth token, beta
flags, versions) go to the upstream with each request and nowhere else: nothing here logs,
stores or writes them. The engine's work (parsing a body, preparing it, encoding what goes
upstream, answering hydration calls, accounting) runs where worker.py says: on a thread of its
own, so a big request holds up no other session's stream; the status is read from the snapshot
the last accounting left, so it waits for none of that work.

Answers: upstream errors reach the client as the upstream sent them (status, headers, body;
an `error` event inside a stream), and so does an answer that is not a message (a proxy's
HTML page, JSON that is not a message, a message whose content is no list of blocks). An
answer the upstream drops before any of it was passed on, or no answer, is a 502
`api_error`; one it stalls (no byte for `stall_timeout` seconds, before its status line or
mid-body) a 504 `timeout_error` that says so, the API's own answer to a request that timed
out. Usage whose counts cannot be read leaves that call uncounted, never the client without
its answer. Streamed text is passed on as it arrives, each event byte-for-byte unless it has
to be renumbered. When the model calls the hydration tool, the client never sees that call:
the gateway answers it and asks the upstream again, and the next answer's blocks continue
the same message (one `message_start`, later blocks numbered on, one `message_delta` whose
output tokens add up the rounds); a stream pauses for the length of one more upstream call.
A stream the upstream drops is dropped for the client too; one that stalls ends with an
`error` event that says so. The stream to the client begins with the first event it has to
show (its message_start held, pings dropped till then), so a round of fetches only leaves it
unbegun: a re-ask that fails then answers the client as a failed first call would (a 429
with its retry-after), not as an `error` event in a 200. A call counts in the status as made
(billed) once the upstream answered it with a 200, however its answer ended (an `error`
event in its stream included), even when the client walked away from it or the gateway
stopped mid-answer: a request is accounted once its answer ended, whatever ended it. A
client that walks away is noticed at once, not at the next write to it: its handler is
cancelled (aiohttp's handler cancellation), which closes the upstream call it waits on (a
stalled one would stay open for the stall timeout); engine work once asked runs to its end
all the same (worker.py). One gone before its request was prepared is not counted: nothing
went upstream for it. Engine work that takes longer than `plan_timeout` leaves its request
to go upstream unchanged, and every request after it until that work is done (a stuck engine
stops no session); those are accounted once the engine is free.

API:
- `Gateway`: the aiohttp application and its upstream client session.
- `ANTHROPIC_API`: the default upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ephemeral_context.cache_sim import usage_from_dict
from ephemeral_context.context.fetching import OWN_TOOL, FetchRoute
from ephemeral_context.gateway.core import (
    MAX_HYDRATION_ROUNDS,
    GatewayCore,
    Passthrough,
    Plan,
    hydration_calls,
    visible,
)
from ephemeral_context.gateway.sse import (
    MessageBuilder,
    block_index,
    encode,
    parse_event,
    read_events,
)
from ephemeral_context.gateway.worker import EngineWorker

log = logging.getLogger(__name__)

STOP_SECONDS = 5.0
"""How long a stopping gateway may take with answers in flight: half of it to let them
run, half for them to end once cancelled (their accounts are kept all the same);
aiohttp's default of 60 s, spent twice, had made a stop with one stalled stream take two
minutes."""

PLAN_SECONDS = 60.0
"""How long a request waits for the engine to prepare it (a 15 MB body takes about 3 s)
before it goes upstream unchanged: a stuck engine must not stop every session with it."""

ANTHROPIC_API = "https://api.anthropic.com"
MAX_BODY_BYTES = 256 * 1024 * 1024
"""The largest request body taken: past the API's 32 MB, since the engine may send a request
smaller than the client's (references instead of copies)."""

STALL_TIMEOUT_S = 600.0
"""Seconds without a byte from the upstream after which its answer has stalled (the
anthropic SDK's own default timeout; a live stream sends pings long before)."""

_NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
        "accept-encoding",
        "content-encoding",
    }
)
"""Hop-by-hop headers, and encodings: aiohttp negotiates and decodes its own."""

UPSTREAM_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError)


def _forwarded(headers: Mapping[str, str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in _NOT_FORWARDED)


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """An upstream body as a JSON object; None when it is not one (an HTML error page)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _readable_message(answer: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """A message the engine can read: its content none, or a list of blocks."""
    if answer is None or answer.get("type") != "message":
        return False
    content = answer.get("content")
    return content is None or (
        isinstance(content, list) and all(isinstance(b, dict) for b in content)
    )


def _readable_usage(usage: Any) -> dict[str, Any]:
    """An answer's usage when its counts can be read, else {} (the call stays unrecorded):
    an odd figure must not cost the client its answer."""
    if not isinstance(usage, dict):
        return {}
    try:
        usage_from_dict(usage)
    except (ValueError, TypeError, AttributeError) as error:
        log.warning("an upstream answer's usage cannot be read (%s); not counted", error)
        return {}
    return usage


def _usage_of(raw: bytes, content_type: str) -> dict[str, Any]:
    """The usage in an answer the gateway passed on unchanged (JSON or SSE); {} for none."""
    if "event-stream" in content_type:
        builder = MessageBuilder()
        for chunk in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
            if chunk.strip():
                event = parse_event(chunk)
                if event.data.get("type") in ("message_start", "message_delta"):
                    builder.apply(event)
        return _readable_usage(builder.usage)
    return _readable_usage((_json_object(raw) or {}).get("usage"))


def _as_sent(upstream: aiohttp.ClientResponse, body: bytes) -> web.Response:
    """An upstream answer read whole, passed on as it came."""
    return web.Response(
        status=upstream.status,
        reason=upstream.reason,
        body=body,
        headers=_forwarded(upstream.headers),
    )


def _encoded(body: Mapping[str, Any]) -> bytes:
    """A request body as aiohttp's `json=` would send it."""
    return json.dumps(body).encode()


def _error_body(kind: str, message: str) -> dict[str, Any]:
    """The API's own error shape."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def _error_event(status: int, raw: bytes) -> bytes:
    """An upstream error answer, after the stream began, as the API's own `error` event."""
    body = _json_object(raw)
    if body is None or body.get("type") != "error":
        body = _error_body("api_error", f"{status} {raw.decode('utf-8', 'replace')[:500]}")
    return encode("error", body)


class Gateway:
    """The aiohttp application and its one upstream client session."""

    def __init__(
        self,
        core: GatewayCore,
        upstream: str = ANTHROPIC_API,
        on_update: Callable[[], None] | None = None,
        stall_timeout: float = STALL_TIMEOUT_S,
        engine_thread: bool = True,
        plan_timeout: float = PLAN_SECONDS,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.core = core
        self.max_body_bytes = max_body_bytes
        self.worker = EngineWorker(engine_thread)
        """Where the engine runs: its own thread, unless hosted by the editor's server
        (`engine_thread` off; worker.py says why)."""
        self.upstream = upstream.rstrip("/")
        url = URL(self.upstream)
        credentials = url.absolute and (url.user is not None or url.password is not None)
        self.shown_upstream = str(url.with_user(None)) if credentials else self.upstream
        """The upstream as messages and logs name it: without the user and password of a
        URL that carries them (a proxy's basic auth)."""
        self.on_update = on_update
        self.stall_timeout = stall_timeout
        self.plan_timeout = plan_timeout
        self._late: set[asyncio.Task[None]] = set()
        """Engine work given up on (past `plan_timeout`) and not done yet: while there is
        any, the engine is stuck and requests pass it by."""
        self._accounts: set[asyncio.Task[None]] = set()
        """Accounts left to the engine's thread for when it is free again."""
        self._client: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    # ------------------------------------------------------------------ lifecycle

    def application(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/ectx/status", self._status)
        app.router.add_route("*", "/{tail:.*}", self._passthrough)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 8787) -> str:
        """Listen on host:port (0: a free port); returns the base URL. Raises OSError when it
        cannot listen there (the port taken), with nothing left open."""
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.stall_timeout)
        )
        # a client gone cancels its handler, and with it the upstream call it waits on
        self._runner = web.AppRunner(
            self.application(),
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=STOP_SECONDS / 2,  # spent twice: before and after cancelling
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError:
            await self.stop()
            raise
        bound_host, bound_port = self._runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
        return f"http://{shown}:{bound_port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._late:  # what the engine was asked may never end: its accounts are lost
            log.warning("gateway: stopped with the engine stuck; accounts since then lost")
            for task in (*self._late, *self._accounts):
                task.cancel()
        else:
            await self.worker.close()  # after the handlers: their last accounts are kept
        if self._client is not None:
            await self._client.close()

    @property
    def client(self) -> aiohttp.ClientSession:
        assert self._client is not None, "Gateway.start() first"
        return self._client

    @property
    def engine_stuck(self) -> bool:
        """Engine work ran past `plan_timeout` and is not done: requests pass it by."""
        return bool(self._late)

    def _url(self, request: web.Request) -> str:
        """Where the request goes upstream. A user and password in the upstream URL go only
        with a request that carries no Authorization of its own: the client's, the API's,
        goes as it came (aiohttp refuses both, which had made the request a 500)."""
        base = self.shown_upstream if "authorization" in request.headers else self.upstream
        return base + request.rel_url.path_qs

    def _updated(self) -> None:
        if self.on_update is not None:
            try:
                self.on_update()
            except Exception:
                log.exception("status listener failed")

    # ------------------------------------------------------------------ routes

    async def _status(self, request: web.Request) -> web.Response:
        """The savings as of the last request accounted: never behind a big request's
        engine work."""
        return web.json_response(self.core.status())

    async def _body(self, request: web.Request) -> bytes:
        """The request's body (aiohttp's read, its size limit kept); a client whose body
        makes no progress for `stall_timeout` seconds gets a 408 `timeout_error` that says
        so (its handler had waited for good); one over `max_body_bytes` the API's 413
        `request_too_large`."""
        read = asyncio.ensure_future(request.read())
        try:
            received = -1
            while not (await asyncio.wait({read}, timeout=self.stall_timeout))[0]:
                if request.content.total_bytes == received:
                    stalled = f"the request body stalled: nothing came for {self.stall_timeout:g} s"
                    raise web.HTTPRequestTimeout(
                        text=json.dumps(_error_body("timeout_error", stalled)),
                        content_type="application/json",
                    )
                received = request.content.total_bytes
            return read.result()
        except web.HTTPRequestEntityTooLarge as refused:  # aiohttp's is plain text
            raise web.HTTPRequestEntityTooLarge(
                max_size=self.max_body_bytes,
                actual_size=request.content.total_bytes,
                text=json.dumps(_error_body("request_too_large", refused.text or refused.reason)),
                content_type="application/json",
            ) from None
        finally:
            read.cancel()  # the handler left early: the read goes with it

    async def _passthrough(self, request: web.Request) -> web.StreamResponse:
        return await self._forward(request, await self._body(request))

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        raw = await self._body(request)
        plan = await self._prepared(raw, request.headers)
        rounds = _Rounds(plan.route) if isinstance(plan, Plan) else _Rounds()
        try:
            if isinstance(plan, Passthrough):
                log.info("POST /v1/messages passed through unchanged: %s", plan.reason)
                return await self._forward(request, raw, rounds)
            if plan.client.get("stream"):
                return await self._stream(request, plan, rounds)
            return await self._json(request, plan, raw, rounds)
        finally:  # however the answer ended (the client gone, the handler cancelled)
            if self._late:  # accounted once the engine is free, not before the answer
                task = asyncio.ensure_future(self._record(plan, rounds))
                self._accounts.add(task)
                task.add_done_callback(self._accounts.discard)
            else:
                await self._record(plan, rounds)

    async def _prepared(self, raw: bytes, headers: Mapping[str, str]) -> Plan | Passthrough:
        """The engine's plan for a request, unless the engine is stuck: this request's work
        or an earlier one's took longer than `plan_timeout`. Then it goes unchanged, and so
        does every request until that work is done; a plan made too late is dropped with
        its thread (`GatewayCore.abandon`), whose next request starts a new one. Hosted on
        the editor's loop the work cannot be waited for this way (worker.py)."""
        if self._late:
            return Passthrough("the engine is still busy with an earlier request")
        job = asyncio.ensure_future(self.worker.call(self._plan, raw, headers))
        try:
            done, _ = await asyncio.wait({job}, timeout=self.plan_timeout)
        except asyncio.CancelledError:  # the client gone: the plan, once made, goes nowhere
            task = asyncio.ensure_future(self._release_when_done(job))
            self._accounts.add(task)
            task.add_done_callback(self._accounts.discard)
            raise
        if done:
            return job.result()
        late = asyncio.ensure_future(self._drop_when_done(job))
        self._late.add(late)
        late.add_done_callback(self._late.discard)
        reason = f"the engine took more than {self.plan_timeout:g} s to prepare it"
        log.warning("gateway: %s; forwarded unchanged", reason)
        return Passthrough(reason)

    async def _drop_when_done(self, job: asyncio.Future[Plan | Passthrough]) -> None:
        """Once late engine work is done, drop the plan it made (nothing sent it), before
        any other request reaches the engine."""
        plan = await job
        if isinstance(plan, Plan):
            await self.worker.call(self.core.abandon, plan)

    async def _release_when_done(self, job: asyncio.Future[Plan | Passthrough]) -> None:
        """A plan made for a client gone meanwhile is never sent nor accounted: once made,
        its thread is released (`GatewayCore.release`)."""
        plan = await job
        if isinstance(plan, Plan):
            await self.worker.call(self.core.release, plan)

    def _plan(self, raw: bytes, headers: Mapping[str, str]) -> Plan | Passthrough:
        """The client's body parsed and prepared (engine work: a big body takes seconds)."""
        try:
            client: Any = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
            client = None
        try:
            return self.core.prepare(client, headers)
        except Exception as error:  # fail open: a gateway must never break the session
            log.exception("gateway: preparing a request failed; forwarded unchanged")
            return Passthrough(f"gateway error: {error!r}")

    async def _record(self, plan: Plan | Passthrough, rounds: _Rounds) -> None:
        """Account one client request: every upstream call made for it was billed."""
        if isinstance(plan, Passthrough):
            await self.worker.call(self.core.record, plan.session, plan.pricing, rounds.billed())
        else:
            usages = rounds.billed()
            await self.worker.call(
                self.core.record, plan.thread.session, plan.pricing, usages, plan
            )
        self._updated()

    # ------------------------------------------------------------------ unchanged

    async def _forward(
        self, request: web.Request, raw: bytes, rounds: _Rounds | None = None
    ) -> web.StreamResponse:
        """The client's request as it came, the upstream's answer back unchanged (a stream
        as it comes, any other answer once whole). A 200 adds its usage to `rounds` ({}
        unreadable), however its answer ended."""
        try:
            upstream = await self.client.request(
                request.method, self._url(request), data=raw, headers=_forwarded(request.headers)
            )
        except UPSTREAM_ERRORS as error:
            return self._no_answer(error)
        seen = bytearray()
        content_type = upstream.headers.get("content-type", "")
        try:
            async with upstream:
                if "event-stream" not in content_type:
                    try:
                        seen += await upstream.read()
                    except UPSTREAM_ERRORS as error:  # broken off: its usage unread
                        return self._no_answer(error)
                    return _as_sent(upstream, bytes(seen))
                response = web.StreamResponse(
                    status=upstream.status,
                    reason=upstream.reason,
                    headers=_forwarded(upstream.headers),
                )
                await response.prepare(request)
                try:
                    async for chunk in upstream.content.iter_any():
                        seen += chunk
                        await response.write(chunk)
                    await response.write_eof()
                except UPSTREAM_ERRORS as error:  # dropped, stalled, or the client gone
                    await self._broken_off(request, response, error)
                return response
        finally:
            if rounds is not None and upstream.status == 200:  # from then on it was billed
                rounds.add(_usage_of(bytes(seen), content_type), [])

    def _failure(self, error: BaseException, *, mid_answer: bool) -> tuple[int, dict[str, Any]]:
        """A failed upstream call as the API's own error: one that stalled (no byte for the
        stall timeout) a 504 `timeout_error` that says so, as the API answers a request
        that timed out (the SDK and Claude Code retry both); any other a 502 `api_error`."""
        if isinstance(error, aiohttp.SocketTimeoutError):
            lost = (
                " mid-answer; the answer is cut off here" if mid_answer else "; its answer is lost"
            )
            message = (
                f"ectx gateway: the upstream {self.shown_upstream} sent nothing for "
                f"{self.stall_timeout:g} s{lost}"
            )
            status, body = 504, _error_body("timeout_error", message)
        else:
            shown = self.shown_upstream
            message = f"ectx gateway: no answer from the upstream {shown} ({error!r})"
            status, body = 502, _error_body("api_error", message)
        log.warning("%s", message)
        return status, body

    def _no_answer(self, error: BaseException) -> web.Response:
        """The upstream could not be reached, dropped or stalled before any of its answer
        was passed on: the error, before anything else reached the client."""
        status, body = self._failure(error, mid_answer=False)
        return web.json_response(body, status=status)

    @staticmethod
    def _drop(request: web.Request) -> None:
        """The upstream dropped the stream: drop the client's connection the same way."""
        if request.transport is not None:
            request.transport.close()

    async def _broken_off(
        self, request: web.Request, response: web.StreamResponse, error: BaseException
    ) -> None:
        """A stream broken off mid-answer: one that stalled ends with an `error` event that
        says so (a dropped connection would only look like a network fault); dropped, or
        left by the client, it is dropped."""
        if not isinstance(error, aiohttp.SocketTimeoutError):
            self._drop(request)
            return
        _, body = self._failure(error, mid_answer=True)
        with contextlib.suppress(*UPSTREAM_ERRORS, ConnectionError):
            await response.write(encode("error", body))
            await response.write_eof()

    async def _post(self, request: web.Request, plan: Plan) -> aiohttp.ClientResponse:
        """The plan's next upstream call (its body encoded where the engine runs: megabytes)."""
        data = await self.worker.call(_encoded, plan.body)
        headers = _forwarded(request.headers)
        headers["content-type"] = "application/json"
        return await self.client.post(self._url(request), data=data, headers=headers)

    # ------------------------------------------------------------------ through the engine

    async def _json(
        self, request: web.Request, plan: Plan, raw: bytes, rounds: _Rounds
    ) -> web.StreamResponse:
        while True:
            try:
                upstream = await self._post(request, plan)
            except UPSTREAM_ERRORS as error:
                return self._no_answer(error)
            async with upstream:
                try:
                    body = await self._read_whole(upstream, rounds)
                except UPSTREAM_ERRORS as error:  # broken off: nothing reached the client
                    return self._no_answer(error)
                answer = _json_object(body)
                if upstream.status != 200 or not _readable_message(answer):
                    return await self._as_sent_whole(upstream, rounds, None, body)
                headers = _forwarded(upstream.headers)
            content = list(answer.get("content") or [])
            rounds.add(answer.get("usage"), content)
            if self._hydrate_again(request, plan, content, answer.get("stop_reason")):
                if await self.worker.wait(self.core.answer_hydrations, plan, content):
                    continue
                log.warning("POST /v1/messages: hydration failed; forwarded unchanged instead")
                return await self._forward(request, raw, rounds)
            await self.worker.wait(self.core.finish, plan, rounds.shown, content)
            answer["content"] = rounds.shown
            answer["usage"] = {**rounds.usages[-1], "output_tokens": rounds.output}
            answer["stop_reason"] = self._stop_reason(plan, content, answer.get("stop_reason"))
            return web.Response(body=json.dumps(answer).encode(), headers=headers)

    @staticmethod
    def _hydrate_again(
        request: web.Request, plan: Plan, content: list[dict[str, Any]], stop: Any
    ) -> bool:
        """The answer called only the hydration tool: the gateway answers and asks again,
        unless the client is gone (another call would be billed for nobody)."""
        own_calls = any(b.get("type") == "tool_use" for b in visible(content, plan.route))
        transport = request.transport
        return (
            stop == "tool_use"
            and bool(hydration_calls(content, plan.route))
            and not own_calls
            and plan.rounds < MAX_HYDRATION_ROUNDS
            and transport is not None
            and not transport.is_closing()
        )

    @staticmethod
    def _stop_reason(plan: Plan, content: list[dict[str, Any]], stop: Any) -> Any:
        """A last round whose only calls are hydration calls ends the turn for the client."""
        own = visible(content, plan.route)
        if stop == "tool_use" and not any(b.get("type") == "tool_use" for b in own):
            return "end_turn"
        return stop

    async def _failed(
        self, response: web.StreamResponse | None, error: BaseException
    ) -> web.StreamResponse:
        """A call failed before any of its answer was passed on: the error as the client's
        answer, or, once the stream to the client began (an earlier round), as its last
        event."""
        if response is None or not response.prepared:
            return self._no_answer(error)
        await response.write(encode("error", self._failure(error, mid_answer=True)[1]))
        await response.write_eof()
        return response

    @staticmethod
    async def _read_whole(upstream: aiohttp.ClientResponse, rounds: _Rounds) -> bytes:
        """An answer read whole. A 200's call counts as billed (its usage unread) however
        the reading ends: broken off, stalled, or the client gone (its handler cancelled)."""
        if upstream.status == 200:
            rounds.reading = MessageBuilder()
        return await upstream.read()

    async def _as_sent_whole(
        self,
        upstream: aiohttp.ClientResponse,
        rounds: _Rounds,
        response: web.StreamResponse | None,
        raw: bytes,
    ) -> web.StreamResponse:
        """An answer read whole that is no message the engine reads (an error, a proxy's
        page): passed on as sent, or, once the stream to the client began, as its `error`
        event; a 200's call counts as billed (its usage when readable)."""
        if upstream.status == 200:
            rounds.add(_usage_of(raw, upstream.headers.get("content-type", "")), [])
        if response is None or not response.prepared:
            return _as_sent(upstream, raw)
        await response.write(_error_event(upstream.status, raw))
        await response.write_eof()
        return response

    async def _stream(
        self, request: web.Request, plan: Plan, rounds: _Rounds
    ) -> web.StreamResponse:
        client: _ClientStream | None = None
        while True:
            response = client.response if client is not None else None
            try:
                upstream = await self._post(request, plan)
            except UPSTREAM_ERRORS as error:
                return await self._failed(response, error)
            async with upstream:
                content_type = upstream.headers.get("content-type", "")
                if upstream.status != 200 or "event-stream" not in content_type:
                    try:  # an error, or no stream (a proxy's page): read whole
                        raw = await self._read_whole(upstream, rounds)
                    except UPSTREAM_ERRORS as error:
                        return await self._failed(response, error)
                    return await self._as_sent_whole(upstream, rounds, response, raw)
                if client is None:  # the first round's headers; later rounds go on
                    client = _ClientStream(request, _forwarded(upstream.headers))
                relay = _Relay(
                    client, plan.route, first=not rounds.usages, offset=len(rounds.shown)
                )
                rounds.reading = relay.builder  # a 200: billed, however its answer ends
                try:
                    async for event in read_events(upstream.content.iter_any()):
                        if not await relay.pass_on(event):
                            await client.end()  # the upstream's error event, passed on
                            return client.response
                except UPSTREAM_ERRORS as error:  # dropped, stalled, or the client gone
                    if not client.response.prepared:  # nothing shown yet: the API's error
                        return self._no_answer(error)
                    await self._broken_off(request, client.response, error)
                    return client.response
            builder = relay.builder
            content = builder.content
            rounds.add(builder.usage, content)
            if not builder.complete:  # ended without message_stop: end it the same way
                await client.end()
                return client.response
            if self._hydrate_again(request, plan, content, builder.stop_reason):
                if not await self.worker.wait(self.core.answer_hydrations, plan, content):
                    log.warning("POST /v1/messages: hydration failed; its answer goes on unchanged")
                    plan.body, plan.rounds = dict(plan.client), MAX_HYDRATION_ROUNDS
                continue
            await self.worker.wait(self.core.finish, plan, rounds.shown, content)
            await relay.close(rounds.output, self._stop_reason(plan, content, builder.stop_reason))
            return client.response


@dataclass
class _Rounds:
    """The upstream answers given for one client request so far."""

    route: FetchRoute = OWN_TOOL
    """Which of their calls are the gateway's (a passed-through answer has none)."""
    shown: list[dict[str, Any]] = field(default_factory=list)
    """Their blocks as the client sees them, merged."""
    usages: list[dict[str, Any]] = field(default_factory=list)
    output: int = 0
    reading: MessageBuilder | None = None
    """The answer being read now (a 200, so billed), until it is added: a stream's events
    so far, or nothing yet for one read whole."""

    def add(self, raw_usage: Any, content: list[dict[str, Any]]) -> None:
        usage = _readable_usage(raw_usage)
        self.usages.append(usage)
        self.output += int(usage.get("output_tokens") or 0)
        self.shown += visible(content, self.route)
        self.reading = None

    def billed(self) -> list[dict[str, Any]]:
        """Every upstream call's usage ({} unreadable), the one still read included."""
        if self.reading is None:
            return list(self.usages)
        return [*self.usages, _readable_usage(self.reading.usage)]


class _ClientStream:
    """The stream to the client, begun once it has something to show: until then the first
    round's message_start waits and pings go nowhere, so an upstream that fails before any
    of the answer was shown (the re-ask after a round of fetches only, refused with a 429)
    still answers the client as the API answers, its status, headers and body."""

    def __init__(self, request: web.Request, headers: CIMultiDict[str]) -> None:
        self.request = request
        self.response = web.StreamResponse(headers=headers)
        self.start = b""

    async def write(self, data: bytes) -> None:
        if not self.response.prepared:
            await self.response.prepare(self.request)
            await self.response.write(self.start)
        await self.response.write(data)

    async def end(self) -> None:
        await self.write(b"")
        await self.response.write_eof()


class _Relay:
    """One upstream stream passed on to the client: the hydration calls left out, blocks
    renumbered after earlier rounds, the closing events held until the gateway knows whether
    another round follows. A call of the client's Read waits for its input before it goes
    on (its path says whether it is the gateway's: context/fetching.py)."""

    def __init__(
        self, client: _ClientStream, route: FetchRoute, *, first: bool, offset: int
    ) -> None:
        self.client = client
        self.route = route
        self.first = first
        self.offset = offset
        self.builder = MessageBuilder()
        self.index: dict[int, int] = {}
        self.hidden: set[int] = set()
        self.waiting: dict[int, list[Any]] = {}
        """The events so far of blocks whose input decides whether they are hidden."""
        self.held: list[Any] = []

    async def pass_on(self, event: Any) -> bool:
        """Pass one event on (or hold it); False after an `error` event."""
        self.builder.apply(event)
        data = event.data
        kind = str(data.get("type", event.name))
        if kind == "message_start":
            if self.first:
                self.client.start = event.raw
        elif kind == "ping" and not self.client.response.prepared:
            pass  # a keep-alive for a stream not begun
        elif kind.startswith("content_block_"):
            await self._block_event(kind, event)
        elif kind in ("message_delta", "message_stop"):
            self.held.append(event)
        else:
            await self.client.write(event.raw)
            if kind == "error":
                return False
        return True

    async def _block_event(self, kind: str, event: Any) -> None:
        data = event.data
        index = block_index(data)
        known = (self.index, self.hidden, self.waiting)
        if index is None or (kind != "content_block_start" and all(index not in k for k in known)):
            await self.client.write(event.raw)  # of no block it started: passed on as sent
            return
        if kind == "content_block_start":
            block = data.get("content_block") or {}
            if self.route.asks(block):
                self.hidden.add(index)
            elif self.route.undecided(block):
                self.waiting[index] = []
            else:
                self.index[index] = self.offset + len(self.index)
        if index in self.waiting:
            self.waiting[index].append(event)
            if kind != "content_block_stop":
                return
            if self.route.asks(self.builder.blocks.get(index, {})):
                del self.waiting[index]
                self.hidden.add(index)
                return
            self.index[index] = self.offset + len(self.index)
            for waited in self.waiting.pop(index):
                await self._write(index, waited)
            return
        if index in self.hidden:
            return
        await self._write(index, event)

    async def _write(self, index: int, event: Any) -> None:
        """A block's event under the block's index as the client numbers it."""
        new_index = self.index[index]
        if new_index == index:
            await self.client.write(event.raw)
        else:
            await self.client.write(encode(event.name, {**event.data, "index": new_index}))

    async def close(self, output_tokens: int, stop_reason: Any) -> None:
        """The held message_delta (output tokens of every round, the client's stop reason)
        and message_stop, then the end of the stream."""
        for event in self.held:
            data = event.data
            if data.get("type") == "message_delta":
                delta = {**(data.get("delta") or {}), "stop_reason": stop_reason}
                usage = {**(data.get("usage") or {}), "output_tokens": output_tokens}
                changed = {**data, "delta": delta, "usage": usage}
                same = changed == data
                await self.client.write(event.raw if same else encode(event.name, changed))
            else:
                await self.client.write(event.raw)
        await self.client.end()
