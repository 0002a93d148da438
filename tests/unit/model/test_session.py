"""`AskSession.create`, the one way both front ends build the model side: real SDK, real
HTTP to two local Messages APIs (tests/fakes), real engine and store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model.session import AskSession
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store

from tests.fakes.messages_api import FakeMessagesAPI

MODEL = "claude-sonnet-4-6"


async def test_a_new_session_keeps_the_client_only_while_it_reaches_the_same_api(
    tmp_path: Path,
    fake_messages_api: Callable[..., FakeMessagesAPI],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server builds a session per ask (folders and options may have changed); the
    client carries over unless the URL or the timeout changed, and then the next ask goes
    to the new URL."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-session-test-key")
    first_api, second_api = fake_messages_api(), fake_messages_api()
    first_api.add_turns("One.", "Two.")
    second_api.add_turns("Three.")
    (tmp_path / "project").mkdir()
    with Store(tmp_path / "store") as store:
        engine = ContextEngine(store)
        env = ToolEnv.configured(
            mirror=DocumentMirror(),
            folders=[tmp_path / "project"],
            engine=engine,
            memory_root=tmp_path / "memories",
        )

        def session(
            url: str, previous: AskSession | None = None, timeout: float = 60.0
        ) -> AskSession:
            return AskSession.create(
                engine=engine,
                env=env,
                model=MODEL,
                api_base_url=url,
                stall_timeout=timeout,
                previous=previous,
            )

        first = session(first_api.base_url)
        assert (await first.ask("one", "c-1")).text == "One."
        same = session(first_api.base_url, previous=first)
        assert same._client is first._client  # one connection pool, one retry count
        assert (await same.ask("two", "c-1")).text == "Two."
        assert session(first_api.base_url, previous=same, timeout=5.0)._client is None
        moved = session(second_api.base_url, previous=same)
        assert moved._client is None
        assert (await moved.ask("three", "c-1")).text == "Three."
        await same.close()
        await moved.close()
    assert len(first_api.message_requests) == 2 and len(second_api.message_requests) == 1
