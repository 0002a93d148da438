"""`ectx gateway` as a command: the URL on the first stdout line, loopback, the upstream chosen."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from ephemeral_context.cli import main
from ephemeral_context.gateway import ANTHROPIC_API, upstream_url
from ephemeral_context.store import Store, default_store_dir

from tests.claude_code import cat_n
from tests.fakes.messages_api import FakeMessagesAPI


def test_the_upstream_is_never_the_gateways_own_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8787")
    monkeypatch.delenv("ECTX_UPSTREAM_URL", raising=False)
    assert upstream_url(None) == ANTHROPIC_API
    monkeypatch.setenv("ECTX_UPSTREAM_URL", "http://upstream.example")
    assert upstream_url(None) == "http://upstream.example"
    assert upstream_url("http://given.example") == "http://given.example"


@contextlib.contextmanager
def gateway_command(api: FakeMessagesAPI) -> Iterator[str]:
    """`ectx gateway --port 0` in front of the fake, while the block runs; the first line
    it prints (its base URL)."""
    command = [sys.executable, "-m", "ephemeral_context", "gateway", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--upstream", api.base_url], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_port_0_prints_the_base_url_first_and_serves(api: FakeMessagesAPI) -> None:
    with gateway_command(api) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/ectx/status", timeout=30) as answer:
            status = json.loads(answer.read())
        assert status["total"]["requests"] == 0
        counted = urllib.request.Request(
            f"{url}/v1/messages/count_tokens",
            data=json.dumps(
                {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "hi"}]}
            ).encode(),
            headers={
                "x-api-key": "sk-ant-test-0000",
                "anthropic-version": "2023-06-01",
                "content-type": "application/json",
            },
        )
        with urllib.request.urlopen(counted, timeout=30) as answer:
            assert "input_tokens" in json.loads(answer.read())
        assert api.requests[0].path == "/v1/messages/count_tokens"


def test_a_port_already_taken_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["gateway", "--port", str(port), "--upstream", "http://127.0.0.1:9"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"ectx gateway: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        (["--port", "70000"], "argument --port: a port is a number from 0 to 65535, got '70000'"),
        (["--port", "-1"], "argument --port: a port is a number from 0 to 65535, got '-1'"),
        (["--port", "0", "--upstream", "api.example"], "the upstream is no http(s) URL"),
    ],
)
def test_a_port_or_upstream_that_cannot_be_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], arguments: list[str], told: str
) -> None:
    """(Each was a traceback: the socket's OverflowError, yarl's ValueError.)"""
    try:
        status = main(["gateway", *arguments])
    except SystemExit as exit:  # argparse's usage error
        status = int(str(exit.code))
    captured = capsys.readouterr()
    assert status in (1, 2) and captured.out == ""
    assert told in captured.err and "Traceback" not in captured.err


def test_a_read_of_a_link_to_a_secret_file_is_never_stored(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """Claude Code reads `notes.txt`, a link to `.env`, through `ectx gateway`: the gateway
    judges the file the link leads to, so the result goes upstream as sent and is never
    written to the store (the name checked was the link's alone)."""
    (tmp_path / ".env").write_text("password = hunter2\n", encoding="utf-8")
    (tmp_path / "notes.txt").symlink_to(".env")
    env = cat_n("".join(f"option_{n} = {n}\n" for n in range(300)) + "password = hunter2")
    path = str(tmp_path / "notes.txt")
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": path}}
    result = {"type": "tool_result", "tool_use_id": "r1", "content": env}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "tools": [{"name": "Read", "input_schema": {"type": "object", "properties": {}}}],
        "messages": [
            {"role": "user", "content": "read"},
            {"role": "assistant", "content": [read]},
            {"role": "user", "content": [result]},
        ],
    }
    api.add_turns("read it")
    with (
        gateway_command(api) as url,
        anthropic.Anthropic(api_key="sk-ant-test-0000", base_url=url, max_retries=0) as sdk,
    ):
        sdk.messages.create(**body)
    assert api.message_requests[0].body["messages"][-1]["content"][0]["content"] == env
    with Store(default_store_dir()) as store:
        assert not [e for e in store.entries() if "hunter2" in store.get(e.id).text]
