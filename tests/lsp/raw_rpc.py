"""A bare JSON-RPC peer for `ectx serve`: sends bytes no well-behaved client would send.

pytest-lsp's client only sends valid messages; malformed-input tests need to write raw
frames (bad JSON, wrong shapes, huge bodies) and read the raw answers. Over stdio
(`RawServer.start`) or TCP (`tcp_server` on the port the server itself picked and
announced, then `connect`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

SERVE = [sys.executable, "-m", "ephemeral_context", "serve"]
TIMEOUT_S = 60.0


class Outbox(Protocol):
    """Where frames are written: a subprocess's stdin, or a socket's file."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


class Inbox(Protocol):
    """Where the server's frames are read from: a subprocess's stdout, or a socket's file."""

    def readline(self) -> bytes: ...

    def read(self, size: int, /) -> bytes: ...


class RawServer:
    """A connection to a server (a subprocess's stdin/stdout, or a TCP socket's file) and a
    thread that parses whatever the server writes."""

    def __init__(self, outbox: Outbox, inbox: Inbox) -> None:
        self.outbox = outbox
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.arrivals: list[tuple[float, str | None]] = []
        """(time.perf_counter(), method) of every message read, for timing figures."""
        self.closed = threading.Event()
        """Set when the server closed its end."""
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, args=(inbox,), daemon=True).start()

    @classmethod
    @contextmanager
    def start(
        cls, *extra: str, env: dict[str, str] | None = None, command: Sequence[str] = SERVE
    ) -> Iterator[RawServer]:
        process = subprocess.Popen(
            [*command, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            server = cls(process.stdin, process.stdout)
            server.process = process
            yield server
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=TIMEOUT_S)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()

    process: subprocess.Popen[bytes]
    """The server subprocess (connections made by `start`)."""

    def _read(self, stdout: Inbox) -> None:
        try:
            self._read_messages(stdout)
        except (OSError, ValueError):
            pass  # the connection was closed under the reader
        finally:
            self.closed.set()

    def _read_messages(self, stdout: Inbox) -> None:
        while True:
            length = 0
            while True:
                line = stdout.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            message = json.loads(stdout.read(length))
            method = message.get("method") if isinstance(message, dict) else None
            self.arrivals.append((time.perf_counter(), method))
            self.messages.put(message)

    def write(self, data: bytes) -> None:
        """Raw bytes, framed or not."""
        self.outbox.write(data)
        self.outbox.flush()

    def send_body(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_body(json.dumps(message).encode())

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, msg_id: int | str | None = None) -> dict[str, Any]:
        """Send a request and return its response (server requests and notifications aside)."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.response(msg_id)

    def next_notification(self, method: str, timeout: float = TIMEOUT_S) -> dict[str, Any]:
        """Wait for the next notification of `method` (answering server requests meanwhile)."""
        while True:
            message = self.messages.get(timeout=timeout)
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("method") == method:
                return message
            elif "method" in message:
                self.notifications.append(message)

    def response(self, msg_id: int | str | None) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=TIMEOUT_S)
            if "method" in message:
                if "id" in message:  # a server->client request: answer it politely
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                else:
                    self.notifications.append(message)
                continue
            if message.get("id") == msg_id:
                return message

    def initialize(self, root_uri: str | None = None) -> dict[str, Any]:
        answer = self.request(
            "initialize", {"processId": None, "capabilities": {}, "rootUri": root_uri}
        )
        self.notify("initialized", {})
        return answer

    def wait(self) -> int:
        return self.process.wait(timeout=TIMEOUT_S)


@contextmanager
def tcp_server(*extra: str) -> Iterator[int]:
    """A `serve --tcp` on a free port of 127.0.0.1; yields the port it listens on."""
    command = [sys.executable, "-m", "ephemeral_context", "-v", "serve", "--tcp", "127.0.0.1:0"]
    process = subprocess.Popen(
        [*command, *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        port = None
        for line in process.stderr:
            if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
                port = int(found.group(1))
                break
        assert port is not None, "the server did not say where it listens"
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep draining
        yield port
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT_S)
        process.stderr.close()


@contextmanager
def connect(port: int) -> Iterator[RawServer]:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        stream = sock.makefile("rwb")
        try:
            yield RawServer(stream, stream)
        finally:
            with contextlib.suppress(OSError):  # wakes the reader thread, which holds the file
                sock.shutdown(socket.SHUT_RDWR)
            stream.close()
