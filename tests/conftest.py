"""Shared fixtures: every test runs with a temporary HOME and store, never the real ones."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.claude_code import CURRENT_RELEASE, ClaudeCode, claude_code_binary
from tests.fakes import FakeMessagesAPI

REPO_ROOT = Path(__file__).resolve().parent.parent

settings.register_profile("untimed", deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""No example fails for its time (hypothesis's 200 ms deadline, its slow-generation check): a
loaded machine takes longer, and speed is for benchmarks, not tests."""
settings.register_profile("ci", settings.get_profile("untimed"), derandomize=True, database=None)
"""CI runs the same examples every time (.ci/run sets CI); a developer's run explores new ones
and keeps what fails in .hypothesis/."""
settings.load_profile("ci" if os.environ.get("CI") else "untimed")


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """No test may read or write the real home directory (~/.claude among others)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EPHEMERAL_CONTEXT_HOME", str(home / "ectx-data"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    yield home


@pytest.fixture
def fake_messages_api() -> Iterator[Callable[..., FakeMessagesAPI]]:
    """Start scripted local Messages APIs (tests/fakes: no API key exists here); all stop after."""
    started: list[FakeMessagesAPI] = []

    def start(script: Any = (), **options: Any) -> FakeMessagesAPI:
        api = FakeMessagesAPI(script, **options).start()
        started.append(api)
        return api

    yield start
    for api in started:
        api.stop()


@pytest.fixture
def api(fake_messages_api: Callable[..., FakeMessagesAPI]) -> FakeMessagesAPI:
    """One local Messages API with an empty script: the test adds the turns it needs."""
    return fake_messages_api()


@pytest.fixture
def claude_code(tmp_path: Path, request: pytest.FixtureRequest) -> ClaudeCode:
    """The real Claude Code CLI against tests/fakes, in this test's temporary directory
    (the current release, or the one a test names with `indirect=True`)."""
    release = getattr(request, "param", CURRENT_RELEASE)
    binary = claude_code_binary(release)
    if binary is None:
        pytest.skip(f"Claude Code {release} is not installed: run `make e2e-deps`")
    return ClaudeCode(binary, tmp_path / "claude-code", release)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/*.json from the current output instead of comparing",
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """End-to-end tests (real editors, Claude Code) run last in a serial run, after the cheap
    layers have passed. Under pytest-xdist (`make test`) they go first, as one group on one
    worker while the others take the rest: two editors at once on a 2-core machine would only
    make each slower and their waits flaky."""
    e2e_first = hasattr(config, "workerinput")  # set on xdist's workers, which collect
    items.sort(key=lambda item: (item.get_closest_marker("e2e") is not None) != e2e_first)
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("e2e"))
