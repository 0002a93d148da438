"""The Claude Code CLI as a real client of tests/fakes: scripted sessions with real transcripts.

Claude Code runs in print mode (`claude -p PROMPT`) against a local FakeMessagesAPI, with a
fresh temporary HOME, a dummy API key and its telemetry and other network traffic off
(../shared/recipes/claude-code-client.md). The script says what "the model" answers; Claude
Code runs the tools itself, so the transcript it writes under `$HOME/.claude/projects` is a
real one, and the fake keeps every request exactly as Claude Code sent it: the ground truth
a transcript reader is compared with.

The CLI comes from the npm registry through tests/e2e/install-claude-code.sh, each release
into `<dir>-<release>`, where `<dir>` is `$ECTX_CLAUDE_CODE_DIR` (default
`~/.cache/ectx-claude-code` of the real user: a test's own HOME is a temporary one). Beside
today's release go older ones, those that wrote ../shared/corpus and the sessions of other
users: the reader must reconstruct what each sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from tests.fakes import FakeMessagesAPI, RecordedRequest
from tests.fakes.messages_api import TurnSource

DUMMY_KEY = "sk-ant-test-000"
CURRENT_RELEASE = "2.1.332"
"""Today's release (Nov 2026): its attachment records hold the text and role they were sent
as, and it writes a log of its requests."""
INFERRED_RELEASE = "2.1.197"
"""The newest release here whose attachment records hold neither: the reader infers both
(role "system" for Opus 4.8 and later, since 2.1.154)."""
OLDER_RELEASE = "2.1.97"
"""Before role "system" attachments (2.1.154) and 1-hour caching by environment variable."""
SKILL_TOOL_RELEASE = "2.1.22"
"""The last release that lists skills in the Skill tool's description (much of the corpus)."""


def claude_code_dir(release: str = CURRENT_RELEASE) -> Path:
    """Where install-claude-code.sh puts this release of the CLI (`<dir>-<release>`)."""
    configured = os.environ.get("ECTX_CLAUDE_CODE_DIR")
    base = (
        Path(configured)
        if configured
        else Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "ectx-claude-code"
    )
    return base.with_name(f"{base.name}-{release}")


def claude_code_binary(release: str = CURRENT_RELEASE) -> Path | None:
    """The installed `claude` launcher, or None when that release is not installed."""
    binary = claude_code_dir(release) / "node_modules" / ".bin" / "claude"
    return binary if binary.exists() else None


class ReadNumbering(Enum):
    """How a release numbers the lines of a Read result (a template for one line)."""

    ARROW = "{n:6}\u2192{line}"
    """2.1.22 and the releases that wrote ../shared/corpus: padded to six places, an arrow."""
    TAB = "{n}\t{line}"
    """2.1.332 (checked with the real CLI against tests/fakes): the number, a tab."""


def cat_n(text: str, first: int = 1, numbering: ReadNumbering = ReadNumbering.TAB) -> str:
    """A Read result as Claude Code sends it: each line numbered from `first`."""
    lines = enumerate(text.split("\n"), first)
    return "\n".join(numbering.value.format(n=n, line=line) for n, line in lines)


@dataclass(frozen=True)
class ClaudeCodeRun:
    """One finished `claude -p` session: what it printed, wrote and sent."""

    returncode: int
    stdout: str
    stderr: str
    home: Path
    requests: list[RecordedRequest]
    """Every POST /v1/messages the fake received, in order, exactly as sent."""

    @property
    def projects(self) -> Path:
        return self.home / ".claude" / "projects"

    @property
    def transcripts(self) -> list[Path]:
        """The main session files (one per session), oldest first."""
        found = self.projects.glob("*/*.jsonl") if self.projects.is_dir() else []
        return sorted(found, key=lambda path: path.stat().st_mtime)

    @property
    def transcript(self) -> Path:
        """The session's transcript (the run must have written exactly one)."""
        transcripts = self.transcripts
        assert len(transcripts) == 1, f"expected one transcript, found {transcripts}"
        return transcripts[0]

    @property
    def subagent_transcripts(self) -> list[Path]:
        """Sub-agent files (`<session>/subagents/agent-*.jsonl`), in name order."""
        return sorted(self.projects.glob("*/*/subagents/agent-*.jsonl"))

    def bodies(self) -> list[Mapping[str, Any]]:
        """The request bodies, in the order they were sent."""
        return [request.body for request in self.requests]


class ClaudeCode:
    """Runs scripted Claude Code sessions in one test's temporary directory."""

    def __init__(self, binary: Path, root: Path, release: str = CURRENT_RELEASE) -> None:
        self.binary = binary
        self.release = release
        self.root = root
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self._runs = 0

    def run(
        self,
        prompt: str,
        script: Sequence[TurnSource] = (),
        *,
        api: FakeMessagesAPI | None = None,
        allowed_tools: Sequence[str] = ("Read",),
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        home: Path | None = None,
        timeout: float = 180,
        front: Callable[[str], AbstractContextManager[str]] | None = None,
    ) -> ClaudeCodeRun:
        """`claude -p PROMPT` in the workspace against a fake that answers from `script`.

        `home` continues an earlier run's HOME (for `--continue`); by default each run gets
        its own. The environment is built from scratch: nothing of the caller's leaks in.
        `front` puts something between Claude Code and the fake (`ectx gateway`): given the
        fake's URL, it yields the URL Claude Code is pointed at. `api` is a fake already
        serving, with the turns of every run that uses it (`script` stays empty), so that the
        runs share its cache as sessions share Anthropic's; the run's requests are those it
        received during the run.
        """
        if api is not None and script:
            raise ValueError("a shared fake answers from its own script: pass no script")
        home = self._home(home)
        with contextlib.ExitStack() as stack:
            if api is None:
                api = stack.enter_context(FakeMessagesAPI(script))
            before = len(api.message_requests)
            base_url = stack.enter_context(front(api.base_url)) if front else api.base_url
            completed = subprocess.run(
                [str(self.binary), "-p", prompt, *_allowed(allowed_tools), *args],
                cwd=self.workspace,
                env=_environment(home, base_url, env),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
            requests = api.message_requests[before:]
        return ClaudeCodeRun(
            completed.returncode, completed.stdout, completed.stderr, home, requests
        )

    def stream(
        self,
        prompts: Sequence[str],
        script: Sequence[TurnSource],
        *,
        interrupt_after_tool_result: bool = False,
        allowed_tools: Sequence[str] = ("Read",),
        args: Sequence[str] = (),
        home: Path | None = None,
        timeout: float = 180,
    ) -> ClaudeCodeRun:
        """One Claude Code process fed `prompts` a turn at a time, as an SDK client drives it
        (`--input-format stream-json`), each sent once the turn before has its result.

        With `interrupt_after_tool_result`, the first turn is interrupted (the SDK's
        `interrupt` control request) once the fake has the request that carries its first tool
        result, while that request waits for its answer (give that turn a `delay`). `home`
        is one with settings of its own (hooks, say); by default the run gets its own.
        """
        home = self._home(home)
        command = [str(self.binary), "-p", "--input-format", "stream-json"]
        command += ["--output-format", "stream-json", "--verbose", *_allowed(allowed_tools)]
        command += args
        with (
            FakeMessagesAPI(script) as api,
            subprocess.Popen(
                command,
                cwd=self.workspace,
                env=_environment(home, api.base_url, None),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ) as process,
        ):
            assert process.stdin is not None and process.stdout is not None
            shown: list[str] = []
            timer = threading.Timer(timeout, process.kill)
            timer.start()
            try:
                for turn, prompt in enumerate(prompts):
                    message = {"role": "user", "content": prompt}
                    _send(process.stdin, {"type": "user", "message": message})
                    for line in process.stdout:
                        shown.append(line)
                        event = json.loads(line)
                        if interrupt_after_tool_result and turn == 0 and _tool_result(event):
                            _wait_for_tool_result_request(api, timeout)
                            request = {"subtype": "interrupt"}
                            control = {"type": "control_request", "request_id": "stop"}
                            _send(process.stdin, {**control, "request": request})
                        if event.get("type") == "result":
                            break
                process.stdin.close()
                stderr = process.stderr.read() if process.stderr else ""
                returncode = process.wait()
            finally:
                timer.cancel()
            requests = api.message_requests
        return ClaudeCodeRun(returncode, "".join(shown), stderr, home, requests)

    def _home(self, home: Path | None) -> Path:
        """`home`, or this run's own new one."""
        self._runs += 1
        if home is None:
            home = self.root / f"home-{self._runs}"
            home.mkdir()
        return home


def _environment(home: Path, base_url: str, env: Mapping[str, str] | None) -> dict[str, str]:
    """Claude Code's environment, built from scratch: nothing of the caller's leaks in."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **(env or {}),
    }


def _allowed(tools: Sequence[str]) -> list[str]:
    return ["--allowedTools", ",".join(tools)] if tools else []


def _send(stream: IO[str], event: Mapping[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def _tool_result(event: Mapping[str, Any]) -> bool:
    """A stream-json event that reports a tool's result (Claude Code then sends it on)."""
    return event.get("type") == "user" and _carries_tool_result(event.get("message") or {})


def _carries_tool_result(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(item, Mapping) and item.get("type") == "tool_result" for item in content
    )


def _wait_for_tool_result_request(api: FakeMessagesAPI, timeout: float) -> None:
    """Until the fake has received a request whose last message carries a tool result (the
    fake records a request before it answers): what comes next happens while it waits."""
    deadline = time.monotonic() + timeout
    while not any(_carries_tool_result(r.body["messages"][-1]) for r in api.message_requests):
        if time.monotonic() > deadline:
            raise AssertionError("Claude Code never sent the request with the tool result")
        time.sleep(0.02)  # polling the fake's record, not a timed wait
