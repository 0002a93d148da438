"""Headless Neovim (Debian's package, installed by tests/e2e/install-deps.sh) as a real
LSP client of `ectx serve`: open and edit a buffer, ask for status, run an ask against the
local Messages API (as a subprocess), and see the model's edit in the buffer.

Neovim is driven through pynvim; every wait is `vim.wait` on a condition (an event
arriving), never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.messages_api import fake_api_subprocess

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EDITORS_DOC = REPO / "docs" / "editors.md"
WAIT_MS = 60_000


def documented_module() -> str:
    """The Neovim 0.7 Lua module exactly as docs/editors.md shows it."""
    page = EDITORS_DOC.read_text(encoding="utf-8")
    section = page[page.index("### Neovim 0.7") :]
    start = section.index("```lua\n") + len("```lua\n")
    return section[start : section.index("```", start)]


@pytest.fixture
def nvim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Neovim listening on a socket (its process is ours to stop, unlike pynvim's child)."""
    if shutil.which("nvim") is None:
        pytest.skip("nvim is not installed (make e2e-deps installs Debian's neovim)")
    import pynvim

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    # the documented `cmd = { 'ectx', 'serve' }` finds the venv's console script
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    address = tmp_path / "nvim.sock"
    process = subprocess.Popen(
        ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "--listen", str(address)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        session = _attach(pynvim, address, process)
        try:
            yield session
        finally:
            _close(session)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _close(session: Any) -> None:
    """pynvim (0.6) closes its event loop before the socket transport has finished closing,
    which leaves an unclosed socket behind; let the loop finish the close first."""
    loop = session._session._async_session._msgpack_stream.loop
    if loop._transport is not None:
        loop._transport.close()
        loop._transport = None
        loop._loop.call_soon(loop._loop.stop)
        loop._loop.run_forever()  # one turn: the transport's close callbacks run
    session.close()


def _attach(pynvim: Any, address: Path, process: subprocess.Popen[bytes]) -> Any:
    """Attach once Neovim has created its socket (or fail if it exited instead)."""
    deadline = time.monotonic() + 30
    while not address.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"nvim did not start (exit code {process.poll()})")
        time.sleep(0.02)
    return pynvim.attach("socket", path=str(address))


def wait(nvim: Any, condition: str) -> None:
    """Block in Neovim until the Lua `condition` holds (events keep being processed)."""
    ok = nvim.exec_lua(f"return vim.wait({WAIT_MS}, function() return {condition} end, 20)")
    assert ok, f"timed out waiting for: {condition}"


def request(nvim: Any, method: str, params: dict[str, Any]) -> Any:
    code = """
    local method, params = ...
    local answers = vim.lsp.buf_request_sync(0, method, params, 60000)
    for _, answer in pairs(answers or {}) do return answer end
    return { err = { message = 'no answer' } }
    """
    answer = nvim.exec_lua(code, method, params)
    assert answer.get("err") is None, answer
    return answer["result"]


def test_neovim_status_edit_and_ask(nvim: Any, tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    source = root / "src" / "greet.py"
    source.write_text('def greet():\n    return "hello"\n', encoding="utf-8")
    script = [
        {"tool_use": [{"name": "read_file", "input": {"path": "src/greet.py"}}]},
        {
            "text": "Making it friendlier.",
            "tool_use": [
                {
                    "name": "edit_file",
                    "input": {
                        "path": "src/greet.py",
                        "old_string": 'return "hello"',
                        "new_string": 'return "hello, world"',
                    },
                }
            ],
        },
        "Done.",
    ]
    config_dir = tmp_path / "config"
    (config_dir / "lua").mkdir(parents=True)
    (config_dir / "lua" / "ectx.lua").write_text(documented_module(), encoding="utf-8")
    with fake_api_subprocess(script, tmp_path) as api:
        nvim.exec_lua(
            "local rtp, root, url = ...\n"
            "vim.opt.runtimepath:prepend(rtp)\n"
            "require('ectx').setup({ root = root, settings = { apiBaseUrl = url } })",
            str(config_dir),
            str(root),
            api.base_url,
        )
        nvim.command(f"edit {source}")
        wait(nvim, "require('ectx').client().initialized")
        wait(nvim, "require('ectx').usage ~= nil")  # didOpen reached the server

        # the user types: a comment above the function (an incremental didChange)
        nvim.current.buffer.append("# greeting helpers", 0)
        status = request(nvim, "ephemeralContext/status", {})
        assert status["openDocuments"] == 1 and status["positionEncoding"] == "utf-16"

        nvim.command("EctxPin")
        items = request(nvim, "ephemeralContext/items", {})["items"]
        assert [i["uri"] for i in items] == [source.as_uri()]
        text = request(nvim, "ephemeralContext/hydrate", {"id": items[0]["id"]})
        assert text["text"] == '# greeting helpers\ndef greet():\n    return "hello"\n'

        nvim.command("EctxAsk Make greet friendlier")
        wait(nvim, "require('ectx').result ~= nil")
        ask = nvim.exec_lua("return require('ectx').result")
        assert ask.get("err") is None, ask
        assert ask["result"]["text"] == "Done." and ask["result"]["edits"][0]["applied"]
        assert nvim.exec_lua("return require('ectx').answer") == "Making it friendlier.Done."

        # the model's edit is in the buffer (unsaved, undoable); the file on disk is as it was
        assert nvim.current.buffer[:] == [
            "# greeting helpers",
            "def greet():",
            '    return "hello, world"',
        ]
        assert nvim.eval("&modified") == 1
        assert 'return "hello"' in source.read_text(encoding="utf-8")
        nvim.command("undo")
        assert nvim.current.buffer[2] == '    return "hello"'

        # the model saw the pinned buffer (with the user's comment), not the disk
        assert "# greeting helpers" in json.dumps(api.requests()[0])
        wait(nvim, "require('ectx').usage.lastCall ~= nil")
        assert nvim.exec_lua("return require('ectx').usage.budget") == 150_000

        nvim.exec_lua("vim.lsp.stop_client(require('ectx').client_id)")
        wait(nvim, "require('ectx').client() == nil")
