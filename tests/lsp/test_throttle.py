"""The usage throttle on its own: no server, a real event loop, a counter and an event."""

from __future__ import annotations

import asyncio

from ephemeral_context.lsp.throttle import Throttle


async def test_first_poke_sends_at_once_and_bursts_collapse() -> None:
    sent: list[float] = []
    latest = {"value": 0}
    seen: list[int] = []
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def send() -> None:
        sent.append(loop.time())
        seen.append(latest["value"])
        if latest["value"] == 50:
            done.set()

    throttle = Throttle(send, interval_s=0.05)
    latest["value"] = 1
    throttle.poke()
    assert seen == [1]  # a quiet throttle sends immediately
    for value in range(2, 51):  # a burst inside the interval: one trailing send
        latest["value"] = value
        throttle.poke()
    await asyncio.wait_for(done.wait(), timeout=10)
    assert seen == [1, 50]  # the trailing send carries the latest state
    assert sent[1] - sent[0] >= 0.05 - 1e-3


async def test_cancel_drops_the_pending_send() -> None:
    calls: list[int] = []
    throttle = Throttle(lambda: calls.append(1), interval_s=0.05)
    throttle.poke()
    throttle.poke()  # pending
    throttle.cancel()
    fired = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, fired.set)
    await fired.wait()
    assert calls == [1]


async def test_zero_interval_sends_every_poke() -> None:
    calls: list[int] = []
    throttle = Throttle(lambda: calls.append(1), interval_s=0)
    for _ in range(5):
        throttle.poke()
    assert calls == [1] * 5
