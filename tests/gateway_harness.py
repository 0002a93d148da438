"""The real gateway in a thread of its own, for tests and benchmarks that drive it with
blocking clients (the anthropic SDK, the Claude Code CLI in a subprocess).

`GatewayThread(upstream, store_dir)` runs `ephemeral_context.gateway.Gateway` on its own event
loop with a fresh store; `.base_url` is where clients point, `.core` the engine side (its
status), `.stop()` ends it. Also: a Read result in Claude Code's cat -n form, and a scripted
model turn that hydrates the first `[[file:<id>]]` reference its request carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.gateway import Gateway, GatewayCore
from ephemeral_context.store import Store

from tests.fakes.messages_api import RecordedRequest, Reply, ToolCall

REFERENCE = re.compile(r"\[\[[a-z_]+:([0-9a-f]{8,})\]\]")


class GatewayThread:
    """`ectx gateway` on 127.0.0.1 (a free port), in a background thread."""

    def __init__(self, upstream: str, store_dir: Path) -> None:
        self.store = Store(store_dir)
        self.core = GatewayCore(ContextEngine(self.store))
        self.gateway = Gateway(self.core, upstream)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.base_url = self._run(self.gateway.start("127.0.0.1", 0))

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    def status(self) -> dict[str, Any]:
        """GET /ectx/status's JSON (read on the gateway's loop while it runs)."""
        if self._loop.is_closed():
            return self.core.status()
        return self._run(_call(self.core.status))

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


async def _call(function: Any) -> Any:
    return function()


def cat_n(text: str, first: int = 1) -> str:
    """A Read result as Claude Code shows it: each line numbered, an arrow, the line."""
    return "\n".join(f"{n:6}\u2192{line}" for n, line in enumerate(text.split("\n"), first))


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
    """A model turn that asks for the last id referenced in its request."""
    ids = referenced_ids(request)
    assert ids, "the request carries no [[kind:id]] reference to hydrate"
    return Reply(tool_calls=(ToolCall("read_session_file", {"id": ids[-1]}),))


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
