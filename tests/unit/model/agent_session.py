"""One ask as a front end makes it, for the agent-loop tests: a workspace, the local
Messages API, an engine over a real store, and the tools."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.model.agent import AgentResult, AgentSettings, run_agent
from ephemeral_context.model.client import ModelClient
from ephemeral_context.model.tools import ToolEnv

from tests.fakes.messages_api import FakeMessagesAPI

MODEL = "claude-sonnet-4-6"


@dataclass
class Session:
    root: Path
    api: FakeMessagesAPI
    engine: ContextEngine
    client: ModelClient
    env: ToolEnv

    async def ask(
        self, prompt: str, max_steps: int = 10, subagent_steps: int = 8, **kwargs: Any
    ) -> AgentResult:
        return await run_agent(
            prompt,
            engine=self.engine,
            conversation="c-1",
            client=self.client,
            env=self.env,
            settings=AgentSettings(model=MODEL, max_steps=max_steps, subagent_steps=subagent_steps),
            **kwargs,
        )

    async def bodies(self, count: int) -> list[dict[str, Any]]:
        """The JSON of the first `count` model requests (waits for the fake to record them)."""
        recorded = await self.api.wait_for_message_requests(count)
        return [r.body for r in recorded[:count]]
