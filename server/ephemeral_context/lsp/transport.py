"""The stdio byte stream with a size limit, so one huge message cannot exhaust the server.

pygls reads `Content-Length` bytes into memory before looking at them. This wrapper hands
pygls the bytes of every message up to the limit unchanged; a larger body is read and thrown
away in chunks, and pygls receives a small stand-in message instead, which the protocol
answers with a JSON-RPC InvalidRequest error carrying the original id when it can be found
in the first bytes (clients write `id` before `params`).
"""

from __future__ import annotations

import json
import re
from typing import BinaryIO

from ephemeral_context.lsp.protocol import MsgId, oversized_stand_in

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_HEAD_BYTES = 64 * 1024
_CHUNK_BYTES = 1024 * 1024
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_METHOD = re.compile(rb'"method"\s*:\s*"([^"\\]{1,200})"')


class SizeLimitedReader:
    """A blocking reader with the `readline`/`read` pair pygls' stdin reader calls."""

    def __init__(self, raw: BinaryIO, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self._raw = raw
        self.max_message_bytes = max_message_bytes

    def readline(self) -> bytes:
        return self._raw.readline()

    def read(self, n: int) -> bytes:
        if n <= self.max_message_bytes:
            return self._raw.read(n)
        head = self._raw.read(min(n, _HEAD_BYTES))
        remaining = n - len(head)
        while remaining > 0:
            chunk = self._raw.read(min(remaining, _CHUNK_BYTES))
            if not chunk:
                return b""  # the client went away mid-message; pygls stops on an empty body
            remaining -= len(chunk)
        msg_id, method = peek_id_and_method(head)
        return oversized_stand_in(msg_id, method, n, self.max_message_bytes)


def peek_id_and_method(head: bytes) -> tuple[MsgId | None, str | None]:
    """The request id and method named in the first bytes of a message, when they appear there."""
    id_match = _ID.search(head)
    msg_id: MsgId | None = None
    if id_match:
        value = json.loads(id_match.group(1))
        msg_id = value if isinstance(value, int | str) else None
    method_match = _METHOD.search(head)
    method = method_match.group(1).decode("utf-8", "replace") if method_match else None
    return msg_id, method
