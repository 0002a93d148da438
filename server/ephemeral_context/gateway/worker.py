"""Where the gateway runs the context engine: one thread of its own, or the event loop.

Feeding a conversation, building its request and encoding it take seconds for a 30 MB body;
on the event loop that would hold up every other session's stream. So `ectx gateway` does
all engine work (parsing a body included) on one worker thread, one job at a time in the
order asked: the engine's state needs no locks, and its calls keep their order. The thread
is a daemon: engine work that never ends (server.py gives up on it after `plan_timeout`)
holds up the work asked after it, never the process's exit (a ThreadPoolExecutor's thread
is joined at exit).

Hosted in the editor's server (`ectx serve --gateway`), the engine is the one the LSP
handlers touch on the same event loop, unlocked; there the work stays on that loop
(`own_thread` off), serialised with the handlers by the loop itself, at the old cost to the
streams' latency (a worker thread would race the handlers unless every one of them went
through it too).

API:
- `EngineWorker`: `call` a function, `wait` for a coroutine function, `close`.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, ParamSpec, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")


class _DaemonThread:
    """One daemon thread running the calls submitted to it, in order."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None]
        self._jobs = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, work: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
    ) -> Future[Result]:
        future: Future[Result] = Future()
        self._jobs.put((functools.partial(work, *args, **kwargs), future))
        return future

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            work, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = work()
            except BaseException as error:  # the caller's to see, as a pool would hand it
                future.set_exception(error)
            else:
                future.set_result(result)

    def shutdown(self) -> None:
        """Once the calls submitted so far are done, the thread ends."""
        self._jobs.put(None)
        self._thread.join()


class EngineWorker:
    """Runs the gateway's engine work in order: on its own thread, or on the caller's loop."""

    def __init__(self, own_thread: bool = True) -> None:
        self._pool = _DaemonThread("ectx-engine") if own_thread else None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The worker thread's own loop, for engine work that is a coroutine (a hydration)."""

    async def call(
        self, work: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
    ) -> Result:
        """`work(*args)` once the work asked before it is done. Shielded: work once asked
        always runs (an account must be kept when the client walks away)."""
        if self._pool is None:
            return work(*args, **kwargs)
        return await asyncio.shield(asyncio.wrap_future(self._pool.submit(work, *args, **kwargs)))

    async def wait(
        self,
        work: Callable[Params, Awaitable[Result]],
        *args: Params.args,
        **kwargs: Params.kwargs,
    ) -> Result:
        """`await work(*args)`, run to its end before any other engine work starts. Shielded
        like `call`: a client gone must not cut a hydration short, its conversation half fed
        (hosted, the work then runs on as a task of its own, beside its caller's account)."""
        if self._pool is None:
            return await asyncio.shield(work(*args, **kwargs))
        return await self.call(lambda: self._own_loop().run_until_complete(work(*args, **kwargs)))

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    async def close(self) -> None:
        """Once the work asked so far is done: the thread and its loop end."""
        if self._pool is not None:
            await self.call(self._close_loop)
            await asyncio.to_thread(self._pool.shutdown)

    def _close_loop(self) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()
            self._loop = None
