"""Message framing and the message loop for stdio and TCP: only well-formed frames reach the
protocol, so no client can wedge, flood or stall the server.

pygls' own loop (`pygls.io_.run_async`) matches `Content-Length: N` exactly and reads N bytes
into memory before looking at them: a header in another case, a header block without one, or
a body that never comes leaves it waiting forever, and over TCP nothing limits N. Here
`Framer` parses the raw bytes itself and `FramedReader` returns one body per message:
- headers are matched in any case; bytes that are not a header block with a Content-Length
  (a malformed block, the tail of a discarded body) are skipped, and logged, up to the next
  `Content-Length:`;
- a body over the limit is read and thrown away in chunks, and a body that stalls (no byte
  for `body_timeout` seconds once its header has arrived) is thrown away too; the protocol
  then gets a small stand-in message instead, which it answers with InvalidRequest carrying
  the original id when it appears in the first bytes (clients write `id` before `params`);
  a lost didChange names its document, which then goes out of sync.

The loop is ours rather than pygls' `start_io`/`start_tcp` (whose TCP reader cannot be
replaced): it uses only pygls' public API, `protocol.set_writer`, `structure_message`,
`handle_message`, `report_server_error` and `shutdown`, and keeps its own listener.

API:
- `serve_stdio(server, reader)`, `serve_tcp(server, host, port, ...)`: framed JSON-RPC with size
  and stall limits; `Framer` (the framing state machine), `peek_id_and_method`, `peek_uri`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import select
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from ephemeral_context.lsp.protocol import MsgId, discarded_stand_in

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_BODY_TIMEOUT_S = 30.0
_HEAD_BYTES = 64 * 1024
_READ_BYTES = 64 * 1024
_MAX_HEADER_BYTES = 8 * 1024
_NAME = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_VALUE = re.compile(rb"[ \t]*(\d{1,18})[ \t]*\r?\n")
_END = re.compile(rb"\r?\n\r?\n")
_HEADER_LINE = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:[^\r\n]*\r?\n")
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_METHOD = re.compile(rb'"method"\s*:\s*"([^"\\]{1,200})"')
_URI = re.compile(rb'"uri"\s*:\s*("(?:[^"\\]|\\.){1,4096}")')

Receive = Callable[[float | None], Awaitable[bytes | None]]
"""Reads the next bytes: b"" at the end of the stream, None when `timeout` seconds passed."""


class Framer:
    """Bytes in, message bodies out (sans I/O): the header parser, size guard and resync."""

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()
        self._length: int | None = None
        """The declared length of the body being read; None between messages."""
        self._head = bytearray()
        self._skipped = 0
        """Bytes of an oversized body thrown away so far."""

    @property
    def in_body(self) -> bool:
        """A header arrived and its body is still being read (the stall timeout applies)."""
        return self._length is not None

    def feed(self, data: bytes) -> None:
        if self._length is not None and self._length > self.max_message_bytes:
            self._discard_some(data)
        else:
            self._buffer += data

    def next_message(self) -> bytes | None:
        """The next complete body (or a stand-in for one discarded), if the bytes fed hold it."""
        while True:
            if self._length is None and not self._read_header():
                return None
            assert self._length is not None
            if self._length > self.max_message_bytes:
                if self._buffer:
                    data = bytes(self._buffer)
                    self._buffer.clear()
                    self._discard_some(data)
                if self._skipped < self._length:
                    return None
                return self._stand_in(
                    f"exceeds the limit of {self.max_message_bytes} bytes", self._length
                )
            if len(self._buffer) < self._length:
                return None
            body = bytes(self._buffer[: self._length])
            del self._buffer[: self._length]
            self._length = None
            return body

    def stalled(self, seconds: float) -> bytes:
        """Give up on the body being read: what arrived is thrown away (a late rest is
        skipped as garbage up to the next header) and a stand-in says why."""
        assert self._length is not None
        if self._length <= self.max_message_bytes:
            self._head = self._buffer[:_HEAD_BYTES]
            self._skipped = len(self._buffer)
            self._buffer.clear()
        length, arrived = self._length, self._skipped
        if length > self.max_message_bytes:
            why = f"exceeds the limit of {self.max_message_bytes} bytes"
        else:
            why = f"stalled: {arrived} of {length} bytes arrived, then nothing for {seconds:g} s"
        return self._stand_in(why, length)

    def _read_header(self) -> bool:
        """Consume one header block with a valid Content-Length; False if more bytes are needed."""
        while True:
            name = _NAME.search(self._buffer)
            if name is None:
                keep = len(b"content-length:") - 1
                self._skip(max(0, len(self._buffer) - keep))
                return False
            self._skip(name.start())
            name_end = name.end() - name.start()
            end = _END.search(self._buffer, name_end)
            if end is None:
                if len(self._buffer) <= _MAX_HEADER_BYTES:
                    return False
                self._skip(name_end)  # a header block that never ends is not one
                continue
            value = _VALUE.match(self._buffer, name_end)
            if value is None or int(value.group(1)) == 0:
                header = bytes(self._buffer[: min(end.start(), 200)])
                log.warning("malformed header %r: skipped", header)
                del self._buffer[:name_end]
                continue
            self._length = int(value.group(1))
            del self._buffer[: end.end()]
            self._head.clear()
            self._skipped = 0
            return True

    def _skip(self, count: int) -> None:
        """Drop bytes before a header; only what is not a header line is worth a warning."""
        if count <= 0:
            return
        dropped = bytes(self._buffer[:count])
        del self._buffer[:count]
        # Line by line: the pattern anchored at each line's start stays linear on a line of
        # megabytes (searching it anywhere backtracks quadratically).
        lines = dropped.splitlines(keepends=True)
        garbage = b"".join(line for line in lines if not _HEADER_LINE.fullmatch(line)).strip()
        if garbage:
            log.warning(
                "skipped %d bytes that are not a message (%r...)", len(garbage), garbage[:80]
            )

    def _discard_some(self, data: bytes) -> None:
        """Part of an oversized body: keep its first bytes (for the id), count the rest."""
        assert self._length is not None
        take = min(len(data), self._length - self._skipped)
        if len(self._head) < _HEAD_BYTES:
            self._head += data[: min(take, _HEAD_BYTES - len(self._head))]
        self._skipped += take
        if take < len(data):
            self._buffer += data[take:]  # the next message already began

    def _stand_in(self, why: str, length: int) -> bytes:
        head = bytes(self._head)
        msg_id, method = peek_id_and_method(head)
        self._length = None
        self._head.clear()
        self._skipped = 0
        return discarded_stand_in(
            msg_id, method, peek_uri(head), f"message of {length} bytes {why}"
        )


class FramedReader:
    """One message body at a time from what `receive` returns, through a `Framer`; a body
    that stalls for `body_timeout` seconds becomes its stand-in."""

    def __init__(
        self,
        receive: Receive,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
    ) -> None:
        self._receive = receive
        self._framer = Framer(max_message_bytes)
        self.body_timeout = body_timeout

    async def next_body(self) -> bytes | None:
        """The next body or stand-in; None at the end of the stream."""
        while (body := self._framer.next_message()) is None:
            timeout = self.body_timeout if self._framer.in_body else None
            data = await self._receive(timeout)
            if data is None:
                body = self._framer.stalled(self.body_timeout)
                log.warning("discarded a message whose body stalled")
                return body
            if not data:
                return None
            self._framer.feed(data)
        return body


def stdin_receiver(fd: int, executor: Executor) -> Receive:
    """Reads of a file descriptor in a worker thread; the timeout needs `select`, which
    works on pipes only on POSIX (elsewhere a stalled body waits)."""

    def read(timeout: float | None) -> bytes | None:
        if timeout is not None and os.name == "posix":
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
        return os.read(fd, _READ_BYTES)

    async def receive(timeout: float | None) -> bytes | None:
        return await asyncio.get_running_loop().run_in_executor(executor, read, timeout)

    return receive


def stream_receiver(reader: asyncio.StreamReader) -> Receive:
    """Reads of an asyncio stream (a TCP connection); a reset ends it like a close."""

    async def receive(timeout: float | None) -> bytes | None:
        try:
            return await asyncio.wait_for(reader.read(_READ_BYTES), timeout)
        except TimeoutError:
            return None
        except ConnectionError:
            return b""

    return receive


def peek_id_and_method(head: bytes) -> tuple[MsgId | None, str | None]:
    """The request id and method named in the first bytes of a message, when they appear there."""
    value = _peek_json(_ID, head)
    msg_id = value if isinstance(value, int | str) else None
    method_match = _METHOD.search(head)
    method = method_match.group(1).decode("utf-8", "replace") if method_match else None
    return msg_id, method


def peek_uri(head: bytes) -> str | None:
    """The first URI named in the first bytes of a message: a didChange's document (a URI
    inside the text of a change is escaped, so it never matches)."""
    value = _peek_json(_URI, head)
    return value if isinstance(value, str) else None


def _peek_json(pattern: re.Pattern[bytes], head: bytes) -> object:
    """The JSON value `pattern`'s group holds in `head`, or None: these are the first bytes
    of a message that is too large, stalled or not JSON, so the value may be broken too
    (a bad escape, bytes that are not UTF-8)."""
    found = pattern.search(head)
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


def serve_stdio(server: LanguageServer, reader: FramedReader) -> None:
    """Serve stdin and stdout until `exit` or the end of stdin (what pygls' start_io does)."""
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(_run(server, reader))
    except BrokenPipeError:
        log.error("the client went away; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]


def serve_tcp(
    server: LanguageServer,
    host: str,
    port: int,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT_S,
) -> None:
    """One client at a time: the first connection is the session (it ends when that client
    goes), a second one while it lasts is told so and closed, and never takes over the replies."""
    serving: list[asyncio.StreamWriter] = []
    listening: list[asyncio.Server] = []

    async def connection(stream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if serving:
            log.warning("refused a connection from %s: a client is already connected", peer)
            writer.write(_frame(_ONE_CLIENT))
            await writer.drain()
            writer.close()
            return
        serving.append(writer)
        log.info("client connected from %s", peer)
        server.protocol.set_writer(writer)
        reader = FramedReader(stream_receiver(stream), max_message_bytes, body_timeout)
        await _run(server, reader)
        log.info("client %s went away; shutting down", peer)
        server.shutdown()  # type: ignore[no-untyped-call]
        listening[0].close()

    async def listen() -> None:
        listener = await asyncio.start_server(connection, host, port)
        listening.append(listener)
        for sock in listener.sockets:
            log.info("listening on %s:%d", *sock.getsockname()[:2])
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(asyncio.CancelledError):  # closing the listener ends serve_forever
        asyncio.run(listen())


async def _run(server: LanguageServer, reader: FramedReader) -> None:
    """pygls' message loop (`pygls.io_.run_async`) over our framed bodies: each is parsed
    and handed to the protocol; an error in one is reported and the loop goes on."""
    protocol = server.protocol
    while (body := await reader.next_body()) is not None:
        try:
            protocol.handle_message(_parse(body, protocol.structure_message))
        except Exception as exc:
            log.exception("unable to handle a message")
            server.report_server_error(exc, JsonRpcException)


def _parse(body: bytes, structure: Callable[[dict[str, Any]], Any]) -> Any:
    """The message in `body`; one that is not JSON (or not UTF-8, or nested too deeply
    for the parser) is replaced by a stand-in naming what its first bytes show."""
    try:
        return json.loads(body, object_hook=structure)
    except (ValueError, RecursionError) as error:
        log.warning("unparsable message: %s", error)
        head = body[:_HEAD_BYTES]
        _, method = peek_id_and_method(head)
        reason = f"message is not valid JSON: {error}"
        stand_in = discarded_stand_in(None, method, peek_uri(head), reason, unparsable=True)
        return json.loads(stand_in, object_hook=structure)


_ONE_CLIENT = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {
        "code": -32600,
        "message": "ectx serve --tcp serves one client at a time, and another is connected",
    },
}


def _frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
