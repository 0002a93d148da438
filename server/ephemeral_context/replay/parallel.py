"""Independent jobs side by side in worker processes, losing none when a worker dies.

A replay over a folder is one job per transcript (reading it, every strategy), each on its
own and CPU-bound, so the cores the machine has replay that many files at once. A worker is
a fresh interpreter running this module (`python -m`), never a fork: the language server
replays from a thread, and a forked copy of a threaded process can hang on a lock another
thread held; nor multiprocessing's spawn, which runs the parent's main script again in each
worker (a script read from stdin, or one without a main guard, kills every worker). Each
worker gets one job at a time over its own socket, so a worker that dies (killed, out of
memory, a crash in a C extension) takes only its job down: that job runs once more in a
fresh worker, and is lost only if that one dies too. (concurrent.futures' pool breaks as a
whole when one worker dies, and Python 3.11's can hang while it cleans up.)

API:
- `run_in_workers(job, items, workers, done)` -> a `Batch`: per item the job's result or
  `Lost` (in the order of the items), and which items ran a second time.
- `available_cores()`: the cores this process may run on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

DIED = "the worker process replaying it died (killed, or out of memory), twice"


@dataclass(frozen=True)
class Lost:
    """A job that gave no result, and why."""

    reason: str


@dataclass
class Batch(Generic[Result]):
    """What the jobs gave, in the order of their items."""

    results: list[Result | Lost]
    rerun: list[int] = field(default_factory=list)
    """The items whose first worker process died under them."""


def available_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    pipe: Connection
    index: int = -1
    """The item it works on (-1: idle)."""


def run_in_workers(
    job: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    done: Callable[[int], None] | None = None,
) -> Batch[Result]:
    """`job` on every item in up to `workers` processes; `done(index)` as each item ends.

    `job` must be picklable (a module-level function, or a partial of one) and so must items
    and results. Items are handed out in the order given (put the longest first to keep the
    workers even).
    """
    waiting = deque(range(len(items)))
    results: list[Result | Lost | None] = [None] * len(items)
    rerun: list[int] = []
    busy: dict[Connection, _Worker] = {}
    idle: list[_Worker] = []

    def finish(index: int, result: Result | Lost) -> None:
        results[index] = result
        if done is not None:
            done(index)

    def died(worker: _Worker) -> None:
        """Its item runs once more in a fresh worker, or is lost if it had."""
        _stop(worker)
        if worker.index in rerun:
            finish(worker.index, Lost(DIED))
        else:
            rerun.append(worker.index)
            waiting.append(worker.index)

    try:
        while waiting or busy:
            while waiting and len(busy) < max(1, workers):
                worker = idle.pop() if idle else _start(job)
                worker.index = waiting.popleft()
                try:
                    worker.pipe.send(items[worker.index])
                except OSError:  # it had died already
                    died(worker)
                    continue
                busy[worker.pipe] = worker
            for ready in wait(list(busy)):  # an answer, or the end of a worker that died
                assert isinstance(ready, Connection)
                worker = busy.pop(ready)
                try:
                    answer = worker.pipe.recv()
                except (EOFError, OSError):
                    died(worker)
                    continue
                finish(worker.index, answer)
                idle.append(worker)
    finally:  # all done, or interrupted (Ctrl-C): a busy worker is not waited for
        for worker in busy.values():
            worker.process.kill()
        for worker in [*busy.values(), *idle]:
            _stop(worker)
    finished = [r for r in results if r is not None]
    assert len(finished) == len(items)  # every item ends: its result, or Lost
    return Batch(finished, rerun=sorted(rerun))


def _start(job: Callable[[Any], Any]) -> _Worker:
    """A fresh interpreter serving `job`, importing from where this process imports (its
    `sys.path` as it is now, which may hold more than its environment says)."""
    ours, theirs = socket.socketpair()
    path = os.pathsep.join(entry or os.getcwd() for entry in sys.path)
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": path},
        )
    pipe = Connection(ours.detach())
    with contextlib.suppress(OSError):  # dead at once: sending it its first item says so
        pipe.send(job)
    return _Worker(process, pipe)


def _stop(worker: _Worker) -> None:
    """Ask it to end; a worker that does not (busy, stuck) is killed."""
    with contextlib.suppress(OSError):  # already gone
        worker.pipe.send(None)
    worker.pipe.close()
    try:
        worker.process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()


def serve(pipe: Connection) -> None:
    """A worker's life: the job, then items in and results out, until None or the parent
    is gone. Ctrl-C is the parent's to handle (it stops the workers), not each worker's
    traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job = _received(pipe)
    while (item := _received(pipe)) is not None:
        try:
            answer = job(item)
            pipe.send(answer)
        except (EOFError, OSError):
            return
        except Exception as error:  # the job failed, or its result would not pickle
            pipe.send(Lost(f"{type(error).__name__}: {error}"))


def _received(pipe: Connection) -> Any:
    """The next message, None once the parent has gone."""
    try:
        return pipe.recv()
    except (EOFError, OSError):
        return None


if __name__ == "__main__":
    from ephemeral_context.replay.parallel import serve as serve_imported

    serve_imported(Connection(int(sys.argv[1])))  # the module under its own name
