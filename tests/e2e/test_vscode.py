"""The VS Code extension in the real workbench: code-server 4.100.3 driven by headless Chromium.

The built .vsix (``make extension`` when missing or older than its sources) is installed into
code-server, which opens a temporary workspace whose settings point the extension at this
repository's Python and at the local fake Messages API (tests/fakes/messages_api.py, a real
HTTP server). extension/e2e/run.mjs then acts as a user: opens a file, adds it to the
context and edits it, watching the status bar change each time, opens Ask Claude (which must
explain the missing API key), sets the key, asks, and checks the streamed answer, the files
read, the edit applied in the open editor and the Context view. This test checks what run.mjs
observed and what the fake API recorded (the key reached the server through its environment).
Two more runs point the extension at no Python and at a Python without the server package.
Screenshots go to test-artifacts/ (gitignored).

code-server is cached outside the checkout (``$ECTX_CODE_SERVER_DIR``, default
``~/.cache/ectx-code-server`` of the real user: the test's own HOME is a temporary one) and
installed from scratch by tests/e2e/install-code-server.sh when absent.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.fakes.messages_api import fake_api_subprocess
from tests.transcripts import SUBAGENT, transcript

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
"""pytest's 300 s per test counts fixtures too: the first test also installs code-server and
builds the .vsix (over two minutes on a loaded machine), one installs the server's wheel with
pip from the index (run.mjs gives that alone 300 s); only a hang takes 900."""

EXTENSION_DIR = REPO_ROOT / "extension"
VSIX = EXTENSION_DIR / "ephemeral-context.vsix"
ARTIFACTS = REPO_ROOT / "test-artifacts"
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
API_KEY = "sk-ant-e2e-dummy-Q7x9"  # the fake records only the last 4 characters

APP_PY = '''"""A tiny app for the end-to-end test."""


class App:
    def run(self) -> str:
        return "running"
'''

SLOW_TEXT = "Here is a long explanation, word after word. " * 20

SCRIPT: list[Any] = [
    {
        "text": "Let me read app.py first.",
        "tool_use": [{"name": "read_file", "input": {"path": "app.py"}}],
    },
    {
        "text": "Renaming run to start.",
        "tool_use": [
            {
                "name": "edit_file",
                "input": {
                    "path": "app.py",
                    "old_string": "def run(self)",
                    "new_string": "def start(self)",
                },
            }
        ],
    },
    "Renamed App.run to App.start in app.py.",
    # The second prompt: a slow stream (one 12-character piece every 0.3 s) to cancel.
    {"text": SLOW_TEXT, "delay": 0.3},
]


def _code_server_dir() -> Path:
    configured = os.environ.get("ECTX_CODE_SERVER_DIR")
    if configured:
        return Path(configured)
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return real_home / ".cache" / "ectx-code-server"


@pytest.fixture(scope="module")
def code_server() -> Path:
    """The code-server launcher, installed into the cache when absent."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed: run `make e2e-deps`")
    root = _code_server_dir()
    env = {**os.environ, "ECTX_CODE_SERVER_DIR": str(root)}
    subprocess.run(
        ["bash", str(REPO_ROOT / "tests/e2e/install-code-server.sh")], check=True, env=env
    )
    return root / "node_modules" / ".bin" / "code-server"


def _newest_source_mtime() -> float:
    """The newest input of the .vsix: the extension's sources and the server its wheel carries."""
    sources = [EXTENSION_DIR / "package.json", EXTENSION_DIR / "package-lock.json"]
    sources.append(REPO_ROOT / "pyproject.toml")
    extension = [EXTENSION_DIR / "src", EXTENSION_DIR / "media"]
    for folder in [*extension, REPO_ROOT / "server", REPO_ROOT / "grammars"]:
        sources.extend(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return max(p.stat().st_mtime for p in sources)


@pytest.fixture(scope="module")
def vsix() -> Path:
    """The packaged extension, rebuilt with `make extension` when missing or stale."""
    if not VSIX.exists() or VSIX.stat().st_mtime < _newest_source_mtime():
        subprocess.run(["make", "extension"], cwd=REPO_ROOT, check=True)
    elif not (EXTENSION_DIR / "node_modules" / "playwright-core").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXTENSION_DIR, check=True)
    return VSIX


@pytest.fixture
def fake_api(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The local Messages API as a subprocess: (base URL, file of recorded requests)."""
    with fake_api_subprocess(SCRIPT, tmp_path, python=str(PYTHON)) as api:
        yield api.base_url, api.record


def _write_settings(user_data: Path, overrides: dict[str, Any]) -> None:
    settings = {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        "security.workspace.trust.enabled": False,
        "update.mode": "none",
        "editor.minimap.enabled": False,
        **overrides,
    }
    (user_data / "User").mkdir(parents=True, exist_ok=True)
    (user_data / "User" / "settings.json").write_text(
        json.dumps(settings, indent=2), encoding="utf-8"
    )


@pytest.fixture
def launch(
    tmp_path: Path, code_server: Path, vsix: Path
) -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
    """Starts code-server on a fresh workspace with the extension installed and these settings."""
    procs: list[tuple[subprocess.Popen[str], _Output]] = []

    def start(settings: dict[str, Any]) -> dict[str, Any]:
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        (workspace / "app.py").write_text(APP_PY, encoding="utf-8")
        user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
        _write_settings(
            user_data, {"ephemeralContext.dataDirectory": str(tmp_path / "ectx-data"), **settings}
        )
        base = [
            str(code_server),
            "--user-data-dir",
            str(user_data),
            "--extensions-dir",
            str(extensions),
        ]
        subprocess.run(
            [*base, "--install-extension", str(vsix)], check=True, capture_output=True, timeout=120
        )
        proc = subprocess.Popen(
            [
                *base,
                "--bind-addr",
                "127.0.0.1:0",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                str(workspace),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        output = _Output(proc, tmp_path / "code-server.log")
        procs.append((proc, output))
        url = output.address()
        return {"url": url, "workspace": workspace, "user_data": user_data}

    yield start
    for proc, output in procs:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        output.thread.join(timeout=30)  # it ends with the output; then the pipe can close
        assert proc.stdout is not None
        proc.stdout.close()


class _Output:
    """Copies code-server's output to a log file in a thread and notes the address it listens on."""

    PATTERN = re.compile(r"HTTP server listening on (http://127\.0\.0\.1:\d+)")

    def __init__(self, proc: subprocess.Popen[str], log_path: Path) -> None:
        self.proc, self.log_path = proc, log_path
        self.found: list[str] = []
        self.listening = threading.Event()
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        assert self.proc.stdout is not None
        with self.log_path.open("w") as log:
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                match = self.PATTERN.search(line)
                if match and not self.found:
                    self.found.append(match.group(1))
                    self.listening.set()
        self.listening.set()  # end of output: code-server exited

    def address(self) -> str:
        self.listening.wait(timeout=120)
        if not self.found:
            raise AssertionError(f"code-server did not start:\n{self.log_path.read_text()}")
        return self.found[0]


def _extension_logs(user_data: Path) -> str:
    """The extension's output channel (the server's log included), for failure messages."""
    logs = sorted(user_data.glob("logs/**/*Ephemeral Context*.log"))
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-6000:]}" for p in logs)


def _drive(workbench: dict[str, Any], tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """Runs extension/e2e/run.mjs against the workbench; returns what it observed."""
    config = {
        "url": workbench["url"],
        "workspace": str(workbench["workspace"]),
        "file": "app.py",
        "fileMarker": "class App",
        "artifactsDir": str(ARTIFACTS),
        "chromium": CHROMIUM,
        "timeoutMs": 60_000,
        **extra,
    }
    config_path = tmp_path / "e2e-config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    result = subprocess.run(
        ["node", str(EXTENSION_DIR / "e2e" / "run.mjs"), str(config_path)],
        cwd=EXTENSION_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(
            f"{result.stderr}\n{result.stdout}\n"
            f"extension log:\n{_extension_logs(workbench['user_data'])}",
            pytrace=False,
        )
    observed: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return observed


def test_extension_in_the_real_workbench(
    launch: Callable[[dict[str, Any]], dict[str, Any]], fake_api: tuple[str, Path], tmp_path: Path
) -> None:
    """Status bar, Ask Claude with streamed answer and applied edit, Context view, no-key notice."""
    api_url, record = fake_api
    workbench = launch(
        {"ephemeralContext.interpreter": [str(PYTHON)], "ephemeralContext.apiBaseUrl": api_url}
    )
    seen = _drive(
        workbench,
        tmp_path,
        typedText="# a note typed by the end-to-end test, long enough to change the token count",
        prompt="Rename App.run to App.start",
        apiKey=API_KEY,
        expectEdit="def start(self)",
        replayTranscript=str(transcript(SUBAGENT)),
        cancelPrompt="Explain the change at length",
    )

    # Status bar: tokens/budget, hit rate and dollars saved; the tooltip's breakdown.
    assert re.search(r"/150k · \d+% cached · \$\d", seen["statusAtStart"]), seen["statusAtStart"]
    assert "files in full" in seen["tooltip"] and "evicted" in seen["tooltip"]

    # No key yet: the panel explains how to set one.
    assert "Set API Key" in seen["noKeyNotice"]

    # The streamed answer, what the model read, and its edit applied in the open editor.
    assert "Renamed App.run to App.start in app.py." in seen["answer"]
    assert any("app.py" in read for read in seen["reads"]), seen["reads"]
    assert any("app.py" in edit for edit in seen["edits"]), seen["edits"]
    assert "def start(self)" in seen["editorAfterAsk"]
    assert "def run(self)" not in seen["editorAfterAsk"]
    assert "3 calls" in seen["doneStatus"], seen["doneStatus"]
    assert "def run(self)" in seen["editorAfterUndo"], "Undo reverts the model's edit"
    assert "a note typed by the end-to-end test" in seen["editorAfterUndo"], "and only that edit"

    # Cancel stops a streaming answer; the panel is ready for the next prompt.
    cancel = seen["cancel"]
    assert cancel["stillRunning"] and cancel["partial"]
    assert len(cancel["final"]) < len(SLOW_TEXT)
    assert cancel["status"].startswith("Cancelled.")
    assert cancel["promptEnabled"]

    # The Context view lists the file.
    assert any("app.py" in row for row in seen["contextRows"]), seen["contextRows"]
    # Pin and unpin from its context menu.
    assert any("app.py" in row and "pinned" in row for row in seen["contextBeforeAsk"])
    assert not any("pinned" in row for row in seen["afterUnpin"]), seen["afterUnpin"]
    assert any("app.py" in row for row in seen["afterUnpin"]), "unpin keeps the item"
    assert any("app.py" in row and "pinned" in row for row in seen["afterPin"]), seen["afterPin"]
    assert not any("app.py" in row and "full" in row for row in seen["afterDrop"])

    # The key set through the UI (SecretStorage) reached the server through its environment.
    requests = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    messages = [
        r
        for r in requests
        if r.get("path", "").startswith("/v1/messages") and "count_tokens" not in r["path"]
    ]
    assert len(messages) == 4, [r.get("path") for r in requests]
    redacted = f"<redacted …{API_KEY[-4:]}>"
    for request in messages:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert redacted in (headers.get("x-api-key"), headers.get("authorization")), headers

    # The edit went to the editor buffer (undoable), not behind its back to disk.
    assert "def run(self)" in (workbench["workspace"] / "app.py").read_text(encoding="utf-8")
    assert (ARTIFACTS / "vscode-e2e.png").stat().st_size > 10_000

    # Replay: the picked transcript's report, with one bar per strategy.
    replay = seen["replay"]
    assert replay["title"] == "Replay: 1 session"
    assert replay["bars"] == len(replay["strategies"]) >= 5
    assert "recorded" in replay["strategies"]

    # Last, so that everything above is checked even when it fails: the status bar's figure
    # moves when a file is added to the context and when that file is edited.
    assert seen["statusAfterAdd"] != seen["statusAtStart"], (
        "adding app.py to the context left the status bar at "
        f"{seen['statusAtStart']!r}: the server's contextTokens did not change"
    )
    assert seen["statusAfterEdit"] != seen["statusAfterAdd"], (
        f"editing app.py left the status bar at {seen['statusAfterAdd']!r}"
    )


def test_no_python_is_explained_and_never_blocks_the_editor(
    launch: Callable[[dict[str, Any]], dict[str, Any]], tmp_path: Path
) -> None:
    """A Python that cannot be run: a status-bar state and a notification; the editor works."""
    workbench = launch({"ephemeralContext.interpreter": [str(tmp_path / "no-such-python")]})
    seen = _drive(
        workbench,
        tmp_path,
        failure={
            "status": "Context: no Python",
            "toast": "Python could not be run",
            "screenshot": "vscode-no-python.png",
        },
    )
    assert "Context: no Python" in seen["status"]
    assert "Python could not be run" in seen["toast"]


def test_a_python_without_the_server_gets_the_bundled_wheel_in_a_private_venv(
    launch: Callable[[dict[str, Any]], dict[str, Any]], tmp_path: Path
) -> None:
    """A fresh venv's Python, nothing installed: the .vsix installs its own wheel and starts it.

    The wheel's dependencies come from the package index pip is configured with, as on a
    user's machine; the chosen Python itself is left as it was.
    """
    bare = tmp_path / "bare-python"
    base = shutil.which("python3") or "/usr/bin/python3"
    subprocess.run([base, "-m", "venv", str(bare)], check=True)
    python = bare / "bin" / "python"
    workbench = launch({"ephemeralContext.interpreter": [str(python)]})
    seen = _drive(
        workbench,
        tmp_path,
        timeoutMs=300_000,  # pip downloads the dependencies (numpy, tree-sitter grammars, ...)
        failure={
            "status": "Context: installing the server",
            "toast": "installing the server",
            "recovered": "cached",
            "screenshot": "vscode-install.png",
        },
    )
    assert "cached" in seen["recovered"]
    (venv,) = workbench["user_data"].glob("User/globalStorage/*/server-venv")
    where = "import ephemeral_context; print(ephemeral_context.__file__)"
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", where],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.startswith(str(venv)), installed.stdout  # the wheel, not this checkout
    assert (venv / ".ectx-installed").read_text().endswith(".whl")
    untouched = subprocess.run([str(python), "-c", "import ephemeral_context"], capture_output=True)
    assert untouched.returncode != 0


def test_a_crashing_server_is_restarted_with_backoff(
    launch: Callable[[dict[str, Any]], dict[str, Any]], tmp_path: Path
) -> None:
    """The server dies twice on start (1 s, then 2 s of backoff), then runs: usage comes back."""
    counter = tmp_path / "crashes"
    crashing_python = tmp_path / "crashing-python"
    crashing_python.write_text(
        "#!/bin/sh\n"
        "# The real Python, except that the first two server starts crash.\n"
        'case "$*" in *" serve"*)\n'
        f'  n=$(cat "{counter}" 2>/dev/null || echo 0)\n'
        f'  if [ "$n" -lt 2 ]; then echo $((n + 1)) > "{counter}"; '
        'echo "simulated crash $n" >&2; exit 3; fi;;\n'
        "esac\n"
        f'exec "{PYTHON}" "$@"\n',
        encoding="utf-8",
    )
    crashing_python.chmod(0o755)
    workbench = launch({"ephemeralContext.interpreter": [str(crashing_python)]})
    seen = _drive(
        workbench,
        tmp_path,
        failure={
            "status": "Context",
            "toast": "Restarting in 1 s (attempt 1)",
            "recovered": "cached",
            "screenshot": "vscode-crash-restart.png",
        },
    )
    assert "see the log" in seen["toast"]
    assert "cached" in seen["recovered"]
    assert counter.read_text().strip() == "2"
    log = _extension_logs(workbench["user_data"])
    assert "Restarting in 2 s (attempt 2)" in log, log
