"""The real gateway in a thread of its own, for tests and benchmarks that drive it with
blocking clients (the anthropic SDK, the Claude Code CLI in a subprocess).

`GatewayThread(upstream, store_dir)` runs `ephemeral_context.gateway.Gateway` on its own event
loop with a fresh store; `.base_url` is where clients point, `.core` the engine side (its
status), `.stop()` ends it. Also: a Read result in Claude Code's cat -n form, scripted model
turns that hydrate an id their request carries, and the scripted Claude Code session the
e2e test and `make bench` run directly and through the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from ephemeral_context.cache_sim import usage_from_dict
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.context.fetching import route_for
from ephemeral_context.gateway import Gateway, GatewayCore
from ephemeral_context.gateway.server import MAX_BODY_BYTES, PLAN_SECONDS, STALL_TIMEOUT_S
from ephemeral_context.prices import priced
from ephemeral_context.store import Store

from tests.fakes.messages_api import RecordedRequest, Reply, ToolCall

REFERENCE = re.compile(r"\[\[[a-z_]+:([0-9a-f]{8,})\]\]")
Result = TypeVar("Result")


class GatewayThread:
    """`ectx gateway` on 127.0.0.1 (a free port), in a background thread."""

    def __init__(
        self,
        upstream: str,
        store_dir: Path,
        stall_timeout: float = STALL_TIMEOUT_S,
        plan_timeout: float = PLAN_SECONDS,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.store = Store(store_dir)
        self.core = GatewayCore(ContextEngine(self.store))
        self.gateway = Gateway(
            self.core,
            upstream,
            stall_timeout=stall_timeout,
            plan_timeout=plan_timeout,
            max_body_bytes=max_body_bytes,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.base_url = self._run(self.gateway.start("127.0.0.1", 0))

    def _run(self, coroutine: Coroutine[Any, Any, Result]) -> Result:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    def status(self) -> dict[str, Any]:
        """GET /ectx/status's JSON once the engine work asked so far is done (an answer the
        client has is accounted by then)."""
        if self._loop.is_closed():
            return self.core.status()
        return self._run(self.gateway.worker.call(self.core.status))

    def stop(self) -> None:
        self._run(self.gateway.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def request_text(request: RecordedRequest) -> str:
    """Every text a request's messages carry (tool results included), in order."""
    out: list[str] = []
    for message in request.body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            inner = block.get("content")
            if isinstance(inner, list):
                out += [str(c.get("text", "")) for c in inner]
            else:
                out.append(str(block.get("text") or inner or ""))
    return "\n".join(out)


def referenced_ids(request: RecordedRequest) -> list[str]:
    """The ids of every `[[kind:id]]` reference or placeholder a request carries, in order."""
    return REFERENCE.findall(request_text(request))


def hydrate_first_reference(request: RecordedRequest) -> Reply:
    """A model turn that asks for the last id referenced in its request, with the tool the
    request offers for it: the engine's own, else the client's Read at a path of the
    engine's (context/fetching.py)."""
    ids = referenced_ids(request)
    assert ids, "the request carries no [[kind:id]] reference to hydrate"
    route = route_for(request.body.get("tools") or [])
    return Reply(tool_calls=(ToolCall(route.tool, route.tool_input({"id": ids[-1]})),))


def gateway_front(
    store_dir: Path, started: list[GatewayThread]
) -> Callable[[str], AbstractContextManager[str]]:
    """A `front` for tests/claude_code.py: the fake's URL in, a fresh gateway's URL out;
    each gateway started is appended to `started` (for its status after the run)."""

    @contextlib.contextmanager
    def front(upstream: str) -> Iterator[str]:
        with GatewayThread(upstream, store_dir / f"store-{len(started)}") as running:
            started.append(running)
            yield running.base_url

    return front


# ---------------------------------------------------------------------------------------------
# The scripted Claude Code session (tests/claude_code.py runs it)

SESSION_TOOLS = ("Read", "Edit", "Bash", "Agent")
SESSION_PROMPT = "Survey this workspace."
SESSION_ANSWER = "Done: a.py edited; b and c are tables."


def _big_file(name: str, lines: int = 600) -> str:
    return "\n".join(
        f"def {name}_{i}(value):\n    return value * {i} + len('{name}')  # step {i}"
        for i in range(lines // 2)
    )


def _use(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": [{"name": name, "input": tool_input}]}


def hydrate_or_read(fallback: Path) -> Callable[[RecordedRequest], Reply]:
    """Ask for the last id the request carries; with none (sent directly), read a file."""

    def turn(request: RecordedRequest) -> Reply:
        if referenced_ids(request):
            return hydrate_first_reference(request)
        return Reply(tool_calls=(ToolCall("Read", {"file_path": str(fallback)}),))

    return turn


def claude_code_session(workspace: Path) -> list[Any]:
    """Write a.py, b.py, c.py (300 definitions each) into `workspace` and return the model's
    turns: many reads of the large files, range re-reads, an edit and a re-read, a long Bash
    output, a sub-agent that reads a file itself, and a turn that asks for an id."""
    a, b, c = (workspace / f"{n}.py" for n in "abc")
    for path in (a, b, c):
        path.write_text(_big_file(path.stem) + "\n", encoding="utf-8")
    # in the foreground: Claude Code 2.1.332 starts a sub-agent in the background unless told,
    # and its requests would race the main session's for the scripted turns
    agent = {"description": "Survey b", "prompt": f"Summarize {b}", "run_in_background": False}
    return [
        _use("Read", file_path=str(a)),
        _use("Read", file_path=str(b)),
        _use("Read", file_path=str(c)),
        _use("Read", file_path=str(a), offset=1, limit=40),  # a range of what it already saw
        _use("Edit", file_path=str(a), old_string="return value * 7 +", new_string="return 7 *"),
        _use("Read", file_path=str(a)),  # re-read after the edit
        _use("Bash", command="seq 1 3000", description="Print numbers"),
        _use("Read", file_path=str(b), offset=100, limit=60),
        _use("Agent", **agent, subagent_type="general-purpose"),
        _use("Read", file_path=str(b)),  # the sub-agent's own read
        "b.py is a table of multipliers.",  # the sub-agent's report
        _use("Read", file_path=str(c), offset=1, limit=30),
        hydrate_or_read(c),
        _use("Read", file_path=str(b), offset=1, limit=20),  # after the merged answer came back
        SESSION_ANSWER,
    ]


def billed(requests: list[RecordedRequest]) -> float:
    """What the upstream billed for these requests' input (base-input-token equivalents at
    each model's list prices, as the gateway's status counts them)."""
    return sum(
        priced(str(r.body["model"]), r.time).billed_input(usage_from_dict(r.usage))
        for r in requests
        if r.usage
    )
