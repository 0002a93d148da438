"""pytest-lsp fixtures: a real `ectx serve` subprocess over stdio, one per test.

The server inherits the temporary HOME and EPHEMERAL_CONTEXT_HOME of tests/conftest.py.
`editor` is parametrized over the captured capabilities of Neovim and VS Code, whose
position encodings differ (UTF-8 and UTF-16), so those tests run against both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.lsp_session import CLIENTS, SERVER_COMMAND, Editor


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project folder the server sees as its only workspace folder."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(
        "import os\n\n\nclass App:\n    def run(self) -> str:\n        return os.getcwd()\n",
        encoding="utf-8",
    )
    (root / "README.md").write_text("# Project\n\nA small sample.\n", encoding="utf-8")
    return root


# pytest-lsp's fixture decorator is unannotated
@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND))  # type: ignore[untyped-decorator]
async def lsp_process(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A running `ectx serve` subprocess with a pytest-lsp client attached (not initialized)."""
    yield


@pytest.fixture(params=CLIENTS)
async def editor(
    request: pytest.FixtureRequest, lsp_process: LanguageClient, workspace: Path
) -> AsyncIterator[Editor]:
    """An initialized session as Neovim or VS Code; shut down cleanly after the test."""
    editor = Editor(lsp_process)
    await editor.initialize(request.param, workspace)
    yield editor
    await lsp_process.shutdown_session()


@pytest.fixture
async def raw_editor(lsp_process: LanguageClient) -> AsyncIterator[Editor]:
    """An editor the test initializes itself, to choose options and capabilities."""
    editor = Editor(lsp_process)
    yield editor
    await lsp_process.shutdown_session()


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """An API key in the environment the server inherits (the local fake accepts any); use
    it with `pytest.mark.usefixtures`, which runs it before the server starts."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
