"""`ectx ask` as a user runs it: a real subprocess, talking HTTP to the local Messages API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ephemeral_context.cli import main

from tests.fakes.messages_api import FakeMessagesAPI, Raw, message_start, refused, sse
from tests.unit.model.test_client import HALF, TEXT_START

KEY = "sk-ant-cli-test-" + "q" * 20


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text('def target():\n    return "old"\n')
    return root


def ectx(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ephemeral_context", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(api_keys={KEY}) as fake:
        yield fake


def environment(api: FakeMessagesAPI, key: str | None = KEY) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["ANTHROPIC_BASE_URL"] = api.base_url
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    return env


def test_ask_streams_the_answer_and_edits_the_file(api: FakeMessagesAPI, project: Path) -> None:
    edit = {"path": "app.py", "old_string": '"old"', "new_string": '"new"'}
    api.add_turns(
        {"tool_use": [{"name": "read_file", "input": {"path": "app.py"}}]},
        {"text": "Editing.", "tool_use": [{"name": "edit_file", "input": edit}]},
        "Done.",
    )
    run = ectx("ask", "make it new", "--workspace", str(project), env=environment(api))
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Editing.\nDone.\n"
    assert "→ read_file app.py" in run.stderr and "→ edit_file app.py" in run.stderr
    assert "[end_turn: 3 model calls" in run.stderr and "1 edit(s)" in run.stderr
    assert (project / "app.py").read_text() == 'def target():\n    return "new"\n'


def test_allow_secret_names_a_file_from_the_current_folder(
    api: FakeMessagesAPI, project: Path
) -> None:
    """Like `--workspace`, `--allow-secret` is a path as the shell gives it: run from a
    subfolder, it allows that folder's file, not the one at the same place under the
    workspace."""
    (project / "api" / "config").mkdir(parents=True)
    (project / "api" / "config" / ".env").write_text("ALLOWED=yes\n")
    (project / "config").mkdir()
    (project / "config" / ".env").write_text("DB=hunter2\n")
    reads = [
        {"name": "read_file", "input": {"path": p}} for p in ("config/.env", "api/config/.env")
    ]
    api.add_turns({"tool_use": reads}, "Done.")
    run = ectx(
        "ask", "read both", "--workspace", "..", "--allow-secret", "config/.env",
        env=environment(api), cwd=project / "api",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    sent = json.dumps(api.message_requests[-1].body)
    assert "hunter2" not in sent and "ALLOWED=yes" in sent


def test_a_sub_agent_shows_on_stderr_and_stays_out_of_the_answer(
    api: FakeMessagesAPI, project: Path
) -> None:
    api.add_turns(
        {
            "tool_use": [
                {"name": "delegate", "input": {"task": "What does target return?\nBe brief."}}
            ]
        },
        {"tool_use": [{"name": "read_file", "input": {"path": "app.py"}}]},
        "Sub-agent: it returns old.",
        "It returns old.",
    )
    run = ectx("ask", "what does target return", "--workspace", str(project), env=environment(api))
    assert run.returncode == 0, run.stderr
    assert run.stdout == "It returns old.\n"
    assert "→ delegate What does target return?\n  ↳ sub-1: read_file app.py\n" in run.stderr
    assert "  ↳ sub-1: reported\n" in run.stderr
    assert "[end_turn: 2 model calls" in run.stderr and "(with 2 sub-agent calls)" in run.stderr


def in_process(
    args: list[str],
    api: FakeMessagesAPI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    key: str | None = KEY,
) -> tuple[int, str, str]:
    """The same `ectx` entry point without the start-up cost of a new interpreter."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    if key is not None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_missing_key_is_a_clear_error(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = in_process(
        ["ask", "hi", "--workspace", str(project)], api, monkeypatch, capsys, None
    )
    assert code == 1
    assert "No Anthropic API key" in err and "ANTHROPIC_API_KEY" in err
    assert api.message_requests == []


def test_invalid_key_is_rejected_without_echoing_it(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wrong = "sk-ant-wrong-" + "w" * 20
    code, out, err = in_process(
        ["ask", "hi", "--workspace", str(project)], api, monkeypatch, capsys, wrong
    )
    assert code == 1
    assert "rejected the API key" in err
    assert wrong not in err + out


def test_unknown_model_is_named(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["ask", "hi", "--workspace", str(project), "--model", "gpt-4"]
    code, _, err = in_process(args, api, monkeypatch, capsys)
    assert code == 1
    assert "Unknown model 'gpt-4'" in err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["ask", "hi", "--workspace", "/no/such/folder"], "is not a folder"),
        (["ask", "   ", "--workspace", "."], "prompt is empty"),
        (["ask", "hi", "--max-steps", "0"], "at least 1"),
    ],
)
def test_bad_arguments(
    api: FakeMessagesAPI,
    args: list[str],
    words: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = in_process(args, api, monkeypatch, capsys)
    assert code == 2
    assert words in err


def test_a_broken_stream_is_retried_and_stdout_holds_the_final_answer_only(
    api: FakeMessagesAPI, project: Path
) -> None:
    api.add_turns(
        {"text": "A first try that breaks off " * 3, "cut": "drop"},
        {"text": "A second try that goes silent " * 3, "cut": "stall"},
        "The final answer.",
    )
    args = ("ask", "hi", "--workspace", str(project), "--stall-timeout", "2")
    run = ectx(*args, env=environment(api))
    assert run.returncode == 0, run.stderr
    assert run.stdout == "The final answer.\n"  # nothing of the broken tries
    assert "[connection lost; retrying" in run.stderr and "[stalled; retrying" in run.stderr


def test_a_stream_that_keeps_stalling_ends_with_a_message_and_exit_1(
    api: FakeMessagesAPI, project: Path
) -> None:
    api.add_turns(*({"text": "Starts, then nothing " * 3, "cut": "stall"} for _ in range(5)))
    run = ectx(
        "ask", "hi", "--workspace", str(project), "--stall-timeout", "0.3", env=environment(api)
    )
    assert run.returncode == 1
    assert (
        "ectx ask: The Anthropic API sent nothing for 0.3s (gave up after 5 attempts)" in run.stderr
    )
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_an_answer_that_never_ends_whole_is_one_line_and_exit_1(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stream a proxy ends before its message_stop, every time: not an answer."""
    half = sse(message_start(), TEXT_START, HALF)
    api.add_turns(*(Raw(half, content_type="text/event-stream") for _ in range(5)))
    code, out, err = in_process(
        ["ask", "hi", "--workspace", str(project)], api, monkeypatch, capsys
    )
    assert code == 1
    (line,) = [line for line in err.splitlines() if line.startswith("ectx ask:")]
    assert line.startswith("ectx ask: The Anthropic API's answer broke off (gave up after 5")
    assert "Traceback" not in err and "Half" not in out


def test_an_error_after_some_of_the_answer_starts_a_line_of_its_own(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a terminal stdout and stderr share the screen: the error must not follow the
    answer's last words on their line."""
    api.add_turns(
        {"text": "Reading.", "tool_use": [{"name": "read_file", "input": {"path": "app.py"}}]},
        refused("max_tokens: must be at least 1"),
    )
    code, out, err = in_process(
        ["ask", "hi", "--workspace", str(project)], api, monkeypatch, capsys
    )
    assert code == 1
    assert out == "Reading.\n"
    assert err.splitlines()[-1].startswith("ectx ask: The Anthropic API refused the request (400)")


ESCAPES = "\x1b]0;owned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J"
"""A new window title, the clipboard (OSC 52), a cleared screen."""


def test_escape_sequences_in_a_tool_call_are_shown_not_obeyed(
    api: FakeMessagesAPI,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file the model read can steer it into writing escape sequences: the call's line
    on stderr (a terminal, as a rule) must not hand them to the terminal."""
    args = ["ask", "hi", "--workspace", str(project)]
    api.add_turns({"tool_use": [{"name": "read_file", "input": {"path": ESCAPES}}]}, "ok")
    code, _, err = in_process(args, api, monkeypatch, capsys)
    assert code == 0
    assert "\x1b" not in err and "\x07" not in err
    assert "→ read_file \\x1b]0;owned\\x07" in err
    api.add_turns(refused(f"bad request {ESCAPES}"))
    code, _, err = in_process(args, api, monkeypatch, capsys)
    assert code == 1 and "\x1b" not in err and "bad request \\x1b]0;owned" in err


def test_escape_sequences_in_the_answer_reach_a_terminal_as_text(
    api: FakeMessagesAPI, project: Path
) -> None:
    """On a terminal (a real pty) the answer's control characters are shown escaped."""
    api.add_turns(f"Title {ESCAPES}done.\tTabbed.")
    leader, follower = os.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "ephemeral_context", "ask", "hi", "--workspace", str(project)],
        env=environment(api),
        stdout=follower,
        stderr=subprocess.PIPE,
    ) as run:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            shown += chunk
        assert run.wait(timeout=120) == 0
    os.close(leader)
    answer = shown.decode()
    assert "\x1b" not in answer and "\x07" not in answer
    assert "Title \\x1b]0;owned\\x07" in answer and "done.\tTabbed." in answer


def test_an_answer_stopped_before_its_end_exits_3(api: FakeMessagesAPI, project: Path) -> None:
    """`ectx ask ... && git commit` went on after an unfinished answer (exit 0): --max-steps
    reached or a refusal now exits 3, the summary saying why; a finished answer exits 0."""
    read = {"tool_use": [{"name": "read_file", "input": {"path": "app.py"}}]}
    api.add_turns(read, read)
    args = ("ask", "look twice", "--workspace", str(project), "--max-steps", "2")
    run = ectx(*args, env=environment(api))
    assert run.returncode == 3, run.stderr
    assert "[max_steps: 2 model calls" in run.stderr
    api.add_turns({"refusal": "I will not."})
    run = ectx("ask", "do it", "--workspace", str(project), env=environment(api))
    assert run.returncode == 3 and "[refusal: 1 model calls" in run.stderr
    api.add_turns("Done.")
    assert ectx("ask", "hi", "--workspace", str(project), env=environment(api)).returncode == 0
