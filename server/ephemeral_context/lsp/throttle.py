"""Trailing-edge throttle for notifications: at most one send per interval, never a lost update.

The usage notification must follow every change, yet stay under about ten a second while
the user types. The first poke after a quiet interval sends at once; pokes inside the
interval schedule one send at its end, which computes the payload then, so the client
always ends up with the latest state.

API:
- `Throttle(send, interval_s)`: `poke()` asks for a send, `cancel()` drops a pending one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Throttle:
    """Calls `send` at most once per `interval_s`, and always once after the last `poke`."""

    def __init__(self, send: Callable[[], None], interval_s: float) -> None:
        self._send = send
        self.interval_s = interval_s
        self._last = float("-inf")
        self._pending: asyncio.TimerHandle | None = None

    def poke(self) -> None:
        """Ask for a send; needs a running event loop (the server's)."""
        if self._pending is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._last + self.interval_s - loop.time()
        if wait <= 0:
            self._fire()
        else:
            self._pending = loop.call_later(wait, self._fire)

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _fire(self) -> None:
        self._pending = None
        self._last = asyncio.get_running_loop().time()
        self._send()
