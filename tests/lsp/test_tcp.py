"""`ectx serve --tcp` over real sockets: one client at a time, initialize before anything
else, and the same framing guards as stdio (size limit, resync, stalled bodies)."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.raw_rpc import TIMEOUT_S, RawServer, connect, tcp_server

LIMIT = 200_000


def still_serving(client: RawServer) -> None:
    assert client.request("ephemeralContext/status", {})["result"]["budget"] > 0


def test_one_client_at_a_time_and_initialize_first(workspace: Path, tmp_path: Path) -> None:
    with tcp_server() as port, connect(port) as editor:
        for method, params in (
            ("ephemeralContext/status", {}),
            ("ephemeralContext/replay", {"path": str(tmp_path)}),
            ("ephemeralContext/hydrate", {"id": "abcdef12"}),
        ):
            error = editor.request(method, params)["error"]
            assert error["code"] == -32002, (method, error)
        assert "result" in editor.initialize(workspace.as_uri())
        with connect(port) as intruder:
            refusal = intruder.response(None)["error"]
            assert refusal["code"] == -32600 and "one client at a time" in refusal["message"]
            intruder.send({"jsonrpc": "2.0", "id": 1, "method": "ephemeralContext/items"})
            assert intruder.closed.wait(TIMEOUT_S)  # the server hung up on it
        still_serving(editor)  # the editor's connection is still the one answered
        assert editor.request("initialize", {"capabilities": {}})["error"]["code"] == -32600


def test_framing_guards_hold_over_tcp(workspace: Path) -> None:
    with (
        tcp_server("--max-message-bytes", str(LIMIT), "--body-timeout", "0.5") as port,
        connect(port) as client,
    ):
        client.initialize(workspace.as_uri())
        big = "x" * (LIMIT + 10)
        client.send(
            {"jsonrpc": "2.0", "id": 7, "method": "ephemeralContext/pin", "params": {"uri": big}}
        )
        error = client.response(7)["error"]
        assert error["code"] == -32600 and str(LIMIT) in error["message"]

        # 1 GiB declared, a megabyte sent, then nothing: thrown away as it comes, not kept.
        client.write(
            b"Content-Length: 1073741824\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 8, ' + b" " * 2**20
        )
        error = client.response(8)["error"]
        assert error["code"] == -32600 and "exceeds the limit" in error["message"]

        client.write(
            b'content-length: 60\r\n\r\n{"jsonrpc": "2.0", "id": 9, "method": "ephemeralContext/s'
        )
        error = client.response(9)["error"]
        assert error["code"] == -32600 and "stalled" in error["message"]
        body = b'{"jsonrpc": "2.0", "id": 10, "method": "ephemeralContext/status"}'
        client.write(
            b"Content-Type: x\r\n\r\n{}" + b"content-length: %d\r\n\r\n" % len(body) + body
        )
        assert client.response(10)["result"]["budget"] > 0
