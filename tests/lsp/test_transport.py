"""The size-limited stdio reader on its own, with in-memory streams."""

from __future__ import annotations

import io
import json

from ephemeral_context.lsp.protocol import OVERSIZED_METHOD
from ephemeral_context.lsp.transport import SizeLimitedReader, peek_id_and_method


def test_small_bodies_pass_unchanged() -> None:
    raw = io.BytesIO(b"Content-Length: 2\r\n\r\n{}rest")
    reader = SizeLimitedReader(raw, max_message_bytes=10)
    assert reader.readline() == b"Content-Length: 2\r\n"
    assert reader.readline() == b"\r\n"
    assert reader.read(2) == b"{}"
    assert raw.read() == b"rest"


def test_large_body_is_discarded_and_replaced() -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "ephemeralContext/pin", "params": {"uri": "x" * 5000}}
    ).encode()
    raw = io.BytesIO(body + b"NEXT")
    reader = SizeLimitedReader(raw, max_message_bytes=100)
    stand_in = json.loads(reader.read(len(body)))
    assert stand_in["method"] == OVERSIZED_METHOD and stand_in["id"] == 7
    assert stand_in["params"] == {
        "size": len(body),
        "limit": 100,
        "requestMethod": "ephemeralContext/pin",
    }
    assert raw.read() == b"NEXT"  # the stream stays in step for the next message


def test_truncated_large_body_ends_the_stream() -> None:
    reader = SizeLimitedReader(io.BytesIO(b"x" * 50), max_message_bytes=10)
    assert reader.read(1000) == b""


def test_peek() -> None:
    assert peek_id_and_method(b'{"jsonrpc":"2.0","id":"a\\"b","method":"m/x","params":') == (
        'a"b',
        "m/x",
    )
    assert peek_id_and_method(b'{"method": "textDocument/didOpen", "params": {') == (
        None,
        "textDocument/didOpen",
    )
