"""One workspace's model side, wired once: the tool environment, the client and the loop
settings that every ask of that workspace shares.

The language server and `ectx ask` both build an `AskSession` from their settings and call
`ask`, so the two front ends cannot drift apart. The client is created on the first ask:
a missing API key is reported then, as a `ModelError`, not when the server starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror, without_lone_surrogates
from ephemeral_context.model.agent import AgentEvents, AgentResult, AgentSettings, run_agent
from ephemeral_context.model.client import ClientSettings, ModelClient
from ephemeral_context.model.edits import DiskEditApplier, EditApplier
from ephemeral_context.model.secrets import SecretPolicy, Workspace
from ephemeral_context.model.tools import SkillFolder, ToolEnv
from ephemeral_context.store import data_dir


@dataclass
class AskSession:
    """Tools, settings and a lazily created client for one workspace."""

    engine: ContextEngine
    env: ToolEnv
    settings: AgentSettings
    client_settings: ClientSettings
    _client: ModelClient | None = None

    @classmethod
    def create(
        cls,
        *,
        engine: ContextEngine,
        mirror: DocumentMirror,
        folders: Sequence[str | Path],
        model: str,
        max_steps: int = 20,
        subagent_steps: int = 8,
        secret_patterns: Sequence[str] = (),
        allow_secret_files: Sequence[str] = (),
        skills_directory: str | Path | None = None,
        memory_root: Path | None = None,
        applier: EditApplier | None = None,
        api_base_url: str | None = None,
        stall_timeout: float = 60.0,
    ) -> AskSession:
        """Everything from plain settings (the server's Options or the CLI's flags)."""
        workspace = Workspace.of(folders)
        env = ToolEnv(
            workspace=workspace,
            mirror=mirror,
            secrets=SecretPolicy.configured(
                secret_patterns, allow_secret_files, base=workspace.roots[0]
            ),
            applier=applier or DiskEditApplier(),
            engine=engine,
            skills=SkillFolder(Path(skills_directory).expanduser()) if skills_directory else None,
            memory_root=memory_root or data_dir() / "memories",
        )
        return cls(
            engine,
            env,
            AgentSettings(model=model, max_steps=max_steps, subagent_steps=subagent_steps),
            ClientSettings(base_url=api_base_url, stall_timeout=stall_timeout),
        )

    async def ask(
        self,
        prompt: str,
        conversation: str,
        events: AgentEvents | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AgentResult:
        """Run the loop for one prompt; `ModelError` says what went wrong with the API."""
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
