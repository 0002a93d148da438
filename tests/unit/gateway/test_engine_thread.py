"""`ectx gateway` under load: one request's engine work holds up no other session's stream.

Real HTTP on both sides (tests/fakes upstream), with the engine's `prepare` held on a
threading.Event for one session: the other session's stream must go on meanwhile.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.gateway import Gateway, GatewayCore
from ephemeral_context.gateway.conversations import session_of
from ephemeral_context.gateway.core import Passthrough, Plan
from ephemeral_context.gateway.worker import EngineWorker
from ephemeral_context.store import Store

from tests.fakes.messages_api import FakeMessagesAPI, Reply
from tests.gateway_harness import GatewayThread
from tests.unit.gateway.test_sdk import KEY, ask

HELD, STREAMING = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
TIMEOUT = httpx2.Timeout(60.0)
"""Only a bound on a hang: a client's default 5 s read timeout could fire on a busy machine."""


def _body(session: str, stream: bool) -> dict[str, Any]:
    user_id = json.dumps({"session_id": session})
    return ask([{"role": "user", "content": "hi"}], stream=stream, metadata={"user_id": user_id})


def _event_names(lines: Iterator[str]) -> Iterator[str]:
    return (line.removeprefix("event: ") for line in lines if line.startswith("event: "))


def test_a_request_whose_engine_work_is_held_holds_up_no_other_stream(
    api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    api.add_turns(Reply(text="streamed " * 40, gate=gate), "the held one's answer")
    entered, release, held_too_long = threading.Event(), threading.Event(), threading.Event()
    with GatewayThread(api.base_url, tmp_path / "store") as gateway:
        prepare = gateway.core.prepare

        def held(client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
            if session_of(client, headers) == HELD:
                entered.set()
                if not release.wait(timeout=30):  # on the event loop it would stop every stream
                    held_too_long.set()
            return prepare(client, headers)

        monkeypatch.setattr(gateway.core, "prepare", held)
        url, first = f"{gateway.base_url}/v1/messages", _body(STREAMING, True)
        with (
            ThreadPoolExecutor(1) as other,
            httpx2.stream("POST", url, json=first, headers=HEADERS, timeout=TIMEOUT) as streaming,
        ):
            events = _event_names(streaming.iter_lines())
            assert "content_block_delta" in events  # the stream began; the upstream holds it
            answer = other.submit(
                httpx2.post, url, json=_body(HELD, False), headers=HEADERS, timeout=TIMEOUT
            )
            assert entered.wait(timeout=30)  # the other session's engine work is under way
            gate.set()
            block = list(itertools.takewhile(lambda name: name != "content_block_stop", events))
            assert not held_too_long.is_set()  # the stream went on while that work was held
            assert block.count("content_block_delta") > 1
            release.set()
            assert list(events)[-1] == "message_stop"
            assert answer.result().json()["content"][0]["text"] == "the held one's answer"


def test_the_status_answers_while_a_request_is_prepared(
    api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /ectx/status reads the savings as last accounted; it does not wait for a request
    whose engine work is under way."""
    api.add_turns("the first answer", "the held one's answer")
    entered, release, held_too_long = threading.Event(), threading.Event(), threading.Event()
    with GatewayThread(api.base_url, tmp_path / "store") as gateway:
        url = f"{gateway.base_url}/v1/messages"
        httpx2.post(url, json=_body(STREAMING, False), headers=HEADERS, timeout=TIMEOUT)
        prepare = gateway.core.prepare

        def held(client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
            entered.set()
            if not release.wait(timeout=30):  # behind this, the status would wait it out
                held_too_long.set()
            return prepare(client, headers)

        monkeypatch.setattr(gateway.core, "prepare", held)
        with ThreadPoolExecutor(1) as other:
            answer = other.submit(
                httpx2.post, url, json=_body(HELD, False), headers=HEADERS, timeout=TIMEOUT
            )
            assert entered.wait(timeout=30)
            status = httpx2.get(f"{gateway.base_url}/ectx/status", timeout=TIMEOUT).json()
            assert not held_too_long.is_set()  # it answered while the request was held
            release.set()
            assert answer.result().json()["content"][0]["text"] == "the held one's answer"
        assert status["total"]["requests"] == 1  # the first request, accounted before
        assert gateway.status()["total"]["requests"] == 2


async def test_the_engine_runs_on_one_thread_of_its_own_or_hosted_on_the_loop() -> None:
    """`ectx gateway` runs all engine work on one worker thread; hosted by the editor's
    server, on the loop its handlers share (they touch the same engine, unlocked)."""
    own, hosted = EngineWorker(), EngineWorker(own_thread=False)
    try:
        threads = {await own.call(threading.get_ident) for _ in range(3)}
        threads.add(await own.wait(_thread_of_coroutine))
        assert len(threads) == 1 and threading.get_ident() not in threads
        assert await hosted.call(threading.get_ident) == threading.get_ident()
        assert await hosted.wait(_thread_of_coroutine) == threading.get_ident()
    finally:
        await own.close()
        await hosted.close()


NEVER_ENDING = """
import asyncio, threading
from ephemeral_context.gateway.worker import EngineWorker

async def main() -> None:
    worker = EngineWorker()
    started = threading.Event()
    never = threading.Event()
    asyncio.ensure_future(worker.call(lambda: (started.set(), never.wait())))
    await asyncio.to_thread(started.wait, 30)
    print("engine work under way", flush=True)

asyncio.run(main())
"""


def test_engine_work_that_never_ends_holds_up_no_exit() -> None:
    """`ectx gateway` stopped with its engine stuck (server.py stops without waiting for
    it) must still exit: the engine's thread is a daemon (a pool's thread is joined at
    exit, and this process had hung there). The timeout bounds a hang, nothing else."""
    done = subprocess.run(
        [sys.executable, "-c", NEVER_ENDING], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "engine work under way\n"


async def _thread_of_coroutine() -> int:
    return threading.get_ident()


@pytest.mark.parametrize("own_thread", [True, False], ids=["own-thread", "hosted"])
async def test_engine_work_runs_to_its_end_when_its_caller_is_cancelled(own_thread: bool) -> None:
    """A client gone cancels its handler; a hydration under way must not stop half done."""
    worker = EngineWorker(own_thread)
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    async def hydration() -> None:
        entered.set()
        await asyncio.to_thread(release.wait, 30)
        finished.set()

    try:
        caller = asyncio.create_task(worker.wait(hydration))
        assert await asyncio.to_thread(entered.wait, 30)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        release.set()
        assert await asyncio.to_thread(finished.wait, 30)
    finally:
        release.set()
        await worker.close()


def test_a_stuck_engine_lets_every_request_through_unchanged_until_it_is_free(
    api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session's engine work hangs past the plan timeout: that request, and another
    session's while the work is still going, go upstream as the clients sent them and are
    answered at once (the second did not queue behind the stuck work). Once the work is
    done, the plan it made late is dropped with its thread, both answers are accounted as
    passed through, and the engine prepares requests again."""
    api.add_turns("the held one's answer", "the other's answer", "through the engine")
    release = threading.Event()
    with GatewayThread(api.base_url, tmp_path / "store", plan_timeout=0.5) as gateway:
        prepare = gateway.core.prepare

        def held(client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
            if session_of(client, headers) == HELD:
                release.wait(timeout=30)
            return prepare(client, headers)

        monkeypatch.setattr(gateway.core, "prepare", held)
        url = f"{gateway.base_url}/v1/messages"
        sent = [_body(HELD, False), _body(STREAMING, False)]
        answers = [httpx2.post(url, json=b, headers=HEADERS, timeout=TIMEOUT) for b in sent]
        assert not release.is_set()  # both answered while the engine was still stuck
        assert [a.json()["content"][0]["text"] for a in answers] == [
            "the held one's answer",
            "the other's answer",
        ]
        assert [r.body for r in api.message_requests] == sent  # unchanged
        assert gateway.gateway.engine_stuck
        release.set()
        deadline = time.monotonic() + 30
        while gateway.gateway.engine_stuck and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gateway.status()["total"]["passthrough"] == 2
        assert gateway.core.engine.conversations() == []  # the late plan's thread went
        again = httpx2.post(url, json=_body(STREAMING, False), headers=HEADERS, timeout=TIMEOUT)
        assert again.json()["content"][0]["text"] == "through the engine"
        assert api.message_requests[-1].body != _body(STREAMING, False)
        assert gateway.status()["total"]["passthrough"] == 2


def test_a_gateway_stops_with_its_engine_stuck(
    api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop does not wait for engine work that may never end (it had waited for ever)."""
    api.add_turns("the held one's answer")
    release = threading.Event()
    gateway = GatewayThread(api.base_url, tmp_path / "store", plan_timeout=0.5)
    try:
        prepare = gateway.core.prepare

        def held(client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
            release.wait(timeout=120)  # past the harness's wait for the stop
            return prepare(client, headers)

        monkeypatch.setattr(gateway.core, "prepare", held)
        url = f"{gateway.base_url}/v1/messages"
        answer = httpx2.post(url, json=_body(HELD, False), headers=HEADERS, timeout=TIMEOUT)
        assert answer.json()["content"][0]["text"] == "the held one's answer"
        assert gateway.gateway.engine_stuck
        gateway.stop()  # within the harness's 60 s, while the work is still held
        assert not release.is_set()
    finally:
        release.set()


async def test_a_plan_made_for_a_client_gone_meanwhile_holds_no_conversation(
    tmp_path: Path,
) -> None:
    """The client went while its request was prepared (its handler cancelled): the plan
    made after that is never sent nor accounted, so its conversation is not kept as one a
    request still goes on in (it would never be dropped)."""
    store = Store(tmp_path / "store")
    core = GatewayCore(ContextEngine(store))
    gateway = Gateway(core)
    entered, release = threading.Event(), threading.Event()
    prepare, made = core.prepare, []

    def held(client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
        entered.set()
        release.wait(timeout=30)
        made.append(prepare(client, headers))
        return made[-1]

    core.prepare = held  # type: ignore[method-assign]
    try:
        raw = json.dumps(_body(HELD, False)).encode()
        handler = asyncio.create_task(gateway._prepared(raw, HEADERS))
        assert await asyncio.to_thread(entered.wait, 30)
        handler.cancel()
        with pytest.raises(asyncio.CancelledError):
            await handler
        release.set()
        await gateway.worker.call(lambda: None)  # the plan is made by then
        await asyncio.gather(*gateway._accounts)  # and what its making left to do, done
        [plan] = made
        assert isinstance(plan, Plan) and plan.thread.requests == 0
    finally:
        release.set()
        await gateway.worker.close()
        store.close()
