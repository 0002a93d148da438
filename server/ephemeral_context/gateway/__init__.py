"""`ectx gateway`: the context engine on live Claude Code traffic.

Claude Code honours `ANTHROPIC_BASE_URL`; pointed at this gateway, each of its Messages API
requests goes through the same ContextEngine the replay measures (core.py), upstream to
Anthropic (or `--upstream`), and back, with the hydration tool answered here (server.py).

API:
- `run_gateway(...)`: `ectx gateway`, served until interrupted.
- `host_gateway(...)`: the gateway inside a running event loop (`ectx serve --gateway`).
- `upstream_url(...)`: where requests go upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from typing import TextIO

from yarl import URL

from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.documents import followed_path
from ephemeral_context.gateway.core import GatewayCore
from ephemeral_context.gateway.server import ANTHROPIC_API, Gateway
from ephemeral_context.model.secrets import SecretPolicy

__all__ = [
    "ANTHROPIC_API",
    "Gateway",
    "GatewayCore",
    "host_gateway",
    "run_gateway",
    "upstream_url",
]

log = logging.getLogger(__name__)


def upstream_url(given: str | None) -> str:
    """--upstream, else $ECTX_UPSTREAM_URL, else Anthropic's API. Never ANTHROPIC_BASE_URL:
    in a shell set up for Claude Code that names this gateway itself."""
    return given or os.environ.get("ECTX_UPSTREAM_URL") or ANTHROPIC_API


async def host_gateway(
    engine: ContextEngine,
    port: int,
    on_update: Callable[[], None] | None = None,
    before_plan: Callable[[], None] | None = None,
    secrets: Callable[[], SecretPolicy] = SecretPolicy,
) -> Gateway:
    """The gateway on 127.0.0.1:port inside a running event loop (`ectx serve --gateway`),
    over the caller's engine, so its status (the editor's status bar) counts these sessions;
    the engine work stays on this loop, where the editor's handlers use the same engine
    (`before_plan`: the editor's pins brought up to date before each request it plans;
    `secrets`: the editor's secret settings as they are now)."""
    core = GatewayCore(engine, before_plan=before_plan, secrets=secrets)
    gateway = Gateway(core, upstream_url(None), on_update, engine_thread=False)
    url = await gateway.start("127.0.0.1", port)
    log.info("ectx gateway on %s, upstream %s", url, gateway.shown_upstream)
    return gateway


def run_gateway(host: str, port: int, upstream: str, out: TextIO = sys.stdout) -> int:
    """Serve until interrupted; the first line on `out` is the base URL. 1, with one line on
    stderr, when it cannot listen on host:port (the port taken, say by another gateway) or
    the upstream is no http(s) URL."""
    from ephemeral_context.store import Store, default_store_dir

    parsed = URL(upstream)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        print(f"ectx gateway: the upstream is no http(s) URL: {upstream!r}", file=sys.stderr)
        return 1

    async def main() -> int:
        with Store(default_store_dir()) as store:
            engine = ContextEngine(store, EngineConfig(follow_path=followed_path))
            gateway = Gateway(GatewayCore(engine), upstream)
            try:
                url = await gateway.start(host, port)
            except OSError as error:
                print(f"ectx gateway: cannot listen on {host}:{port}: {error}", file=sys.stderr)
                return 1
            print(url, file=out, flush=True)
            log.info("ectx gateway on %s, upstream %s", url, gateway.shown_upstream)
            try:
                await asyncio.Event().wait()
            finally:
                await gateway.stop()
        return 0

    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(main())
    return 0
