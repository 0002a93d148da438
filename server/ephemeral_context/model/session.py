"""One workspace's model side, wired once: the tool environment, the client and the loop
settings that every ask of that workspace shares.

The language server and `ectx ask` both build their tools with `ToolEnv.configured` and
their session with `AskSession.create` from their settings, then call `ask`, so the two
front ends cannot drift apart. An editor's pins (model/pins.py) follow their files at the
start of each ask, before the first request is built. The client is created on the first
ask: a missing API key is reported then, as a `ModelError`, not when the server starts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import without_lone_surrogates
from ephemeral_context.model.agent import AgentEvents, AgentResult, AgentSettings, run_agent
from ephemeral_context.model.client import ClientSettings, ModelClient
from ephemeral_context.model.pins import Pins
from ephemeral_context.model.tools import ToolEnv


@dataclass
class AskSession:
    """Tools, settings and a lazily created client for one workspace."""

    engine: ContextEngine
    env: ToolEnv
    settings: AgentSettings
    client_settings: ClientSettings
    pins: Pins | None = None
    """The editor's pins (the CLI has none)."""
    _client: ModelClient | None = None

    @classmethod
    def create(
        cls,
        *,
        engine: ContextEngine,
        env: ToolEnv,
        model: str,
        max_steps: int = 20,
        subagent_steps: int = 8,
        api_base_url: str | None = None,
        stall_timeout: float = 60.0,
        pins: Pins | None = None,
        previous: AskSession | None = None,
    ) -> AskSession:
        """A session from plain settings. The client of `previous` (a session these settings
        replace: folders, options or the engine changed) is kept when it reaches the same API
        the same way, so its connections and its retry count carry over."""
        client_settings = ClientSettings(base_url=api_base_url, stall_timeout=stall_timeout)
        kept = previous is not None and previous.client_settings == client_settings
        return cls(
            engine,
            env,
            AgentSettings(model=model, max_steps=max_steps, subagent_steps=subagent_steps),
            client_settings,
            pins,
            previous._client if kept and previous is not None else None,
        )

    async def ask(
        self,
        prompt: str,
        conversation: str,
        events: AgentEvents | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AgentResult:
        """Run the loop for one prompt, the pins as their files are now (`on_notice` hears
        of each pin released); `ModelError` says what went wrong with the API."""
        if self.pins is not None:
            for released in self.pins.follow(self.env):
                if events is not None and events.on_notice is not None:
                    events.on_notice(released)
        if self._client is None:
            self._client = ModelClient(self.client_settings)
        return await run_agent(
            without_lone_surrogates(prompt),
            engine=self.engine,
            conversation=conversation,
            client=self._client,
            env=self.env,
            settings=self.settings,
            events=events,
            cancel=cancel,
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
