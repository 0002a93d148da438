"""The framer on its own, fed bytes as a client (or an attacker) might write them."""

from __future__ import annotations

import json

import pytest
from ephemeral_context.lsp.protocol import DISCARDED_METHOD
from ephemeral_context.lsp.transport import Framer, peek_id_and_method, peek_uri


def frame(body: bytes, header: bytes = b"Content-Length") -> bytes:
    return header + b": %d\r\n\r\n" % len(body) + body


def messages(framer: Framer, *chunks: bytes) -> list[bytes]:
    found = []
    for chunk in chunks:
        framer.feed(chunk)
        while (body := framer.next_message()) is not None:
            found.append(body)
    return found


def test_bodies_pass_unchanged_whatever_the_split() -> None:
    data = frame(b'{"a": 1}') + b"Content-Type: x\r\n" + frame(b"[2]")[:-3] + frame(b"[2]")[-3:]
    for size in (1, 3, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert messages(Framer(), *chunks) == [b'{"a": 1}', b"[2]"]


def test_the_header_name_is_matched_in_any_case() -> None:
    data = frame(b"{}", b"content-length") + frame(b"[]", b"CONTENT-LENGTH")
    assert messages(Framer(), data) == [b"{}", b"[]"]


@pytest.mark.parametrize(
    "junk",
    [
        b'Content-Type: application/json\r\n\r\n{"no": "length"}',  # a block without one
        b"Content-Length: many\r\n\r\n{}",
        b"Content-Length: 0\r\n\r\n",
        b"\x00\xff garbage without any header at all " * 100,
    ],
)
def test_a_malformed_block_is_skipped_up_to_the_next_header(junk: bytes) -> None:
    assert messages(Framer(), junk + frame(b'{"ok": 1}')) == [b'{"ok": 1}']


def test_a_long_line_of_junk_is_skipped_in_linear_time() -> None:
    # Letters with no colon (a base64 blob, the tail of a stalled body): searched for a
    # header line anywhere, each 64 KiB chunk backtracked for minutes (about 6 on 2 cores).
    junk = b"X-Junk: " + b"QUJD" * 32 * 1024
    chunks = [junk[i : i + 65536] for i in range(0, len(junk), 65536)]
    assert messages(Framer(), *chunks, frame(b'{"ok": 1}')) == [b'{"ok": 1}']


def test_a_large_body_is_discarded_and_replaced() -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "ephemeralContext/pin", "params": {"uri": "x" * 5000}}
    ).encode()
    framer = Framer(max_message_bytes=100)
    data = frame(body) + frame(b"NEXT")
    stand_in, after = messages(framer, *(data[i : i + 999] for i in range(0, len(data), 999)))
    message = json.loads(stand_in)
    assert message["method"] == DISCARDED_METHOD and message["id"] == 7
    assert message["params"]["requestMethod"] == "ephemeralContext/pin"
    assert "exceeds the limit of 100 bytes" in message["params"]["reason"]
    assert after == b"NEXT"  # the stream stays in step for the next message


def test_a_stalled_body_is_discarded_and_a_late_rest_skipped() -> None:
    framer = Framer()
    body = b'{"jsonrpc": "2.0", "id": "s", "method": "m", "params": {"x": 1}}'
    assert messages(framer, frame(body)[:-10]) == []
    assert framer.in_body
    message = json.loads(framer.stalled(0.5))
    assert message["id"] == "s" and "stalled" in message["params"]["reason"]
    assert not framer.in_body
    assert messages(framer, body[-10:] + frame(b"{}")) == [b"{}"]


def test_a_stalled_oversized_body_reports_the_size() -> None:
    framer = Framer(max_message_bytes=10)
    assert (
        messages(framer, b"Content-Length: 1073741824\r\n\r\n" + b'{"id": 3, ' + b"x" * 5000) == []
    )
    message = json.loads(framer.stalled(1))
    assert message["id"] == 3 and "exceeds the limit of 10 bytes" in message["params"]["reason"]


def test_peek() -> None:
    assert peek_id_and_method(b'{"jsonrpc":"2.0","id":"a\\"b","method":"m/x","params":') == (
        'a"b',
        "m/x",
    )
    assert peek_id_and_method(b'{"method": "textDocument/didOpen", "params": {') == (
        None,
        "textDocument/didOpen",
    )


def test_peek_uri_finds_the_document_not_a_uri_in_the_text() -> None:
    change = {
        "contentChanges": [{"text": '{"uri": "file:///text"}'}],
        "textDocument": {"uri": "file:///a%20b.py"},
    }
    head = json.dumps({"method": "textDocument/didChange", "params": change}).encode()
    assert peek_uri(head) == "file:///a%20b.py"
    assert peek_uri(head[: head.index(b"textDocument")]) is None


@pytest.mark.parametrize("value", [b'"\\q"', b'"\xff"'], ids=["bad-escape", "not-utf8"])
def test_peek_skips_an_id_or_uri_that_is_no_json_string(value: bytes) -> None:
    head = b'{"id": %s, "method": "m/x", "params": {"uri": %s' % (value, value)
    assert peek_id_and_method(head) == (None, "m/x")
    assert peek_uri(head) is None
