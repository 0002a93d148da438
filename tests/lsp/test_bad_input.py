"""Malformed JSON-RPC, unknown methods, huge messages and unknown URIs or ids: each gets a
JSON-RPC error (or, for notifications, is logged), and the server keeps serving.

These tests write raw frames (tests/lsp/raw_rpc.py): pytest-lsp only sends valid messages.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ephemeral_context.store import Store

from tests.lsp.raw_rpc import RawServer

LIMIT = 200_000


@pytest.fixture
def server(workspace: Path) -> Iterator[RawServer]:
    with RawServer.start("--max-message-bytes", str(LIMIT)) as raw:
        answer = raw.initialize(workspace.as_uri())
        assert "result" in answer
        yield raw


def still_serving(server: RawServer) -> None:
    answer = server.request("ephemeralContext/status", {})
    assert answer["result"]["budget"] > 0


def assert_out_of_sync_after_an_edit(server: RawServer, uri: str, version: int) -> None:
    """A later, valid didChange (to `version`) does not bring the document back: a pin of
    it still answers out-of-sync."""
    start = {"line": 0, "character": 0}
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": start, "end": start}, "text": "y"}],
        },
    )
    error = error_of(server.request("ephemeralContext/pin", {"uri": uri}))
    assert error["data"] == {"reason": "out-of-sync"}


def error_of(answer: dict[str, object]) -> dict[str, object]:
    """The error of a response, which names its request: `"id": null` when that id could
    not be read (JSON-RPC 2.0 has every response carry an id)."""
    error = answer.get("error")
    assert isinstance(error, dict) and "id" in answer, answer
    return error


def test_not_json(server: RawServer) -> None:
    server.send_body(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    error = error_of(server.response(None))
    assert error["code"] == -32700
    still_serving(server)


def test_not_utf8(server: RawServer) -> None:
    server.send_body(b'{"jsonrpc": "2.0", "id": 5, "method": "\xff\xfe"}')
    assert error_of(server.response(None))["code"] == -32700
    still_serving(server)


def test_json_nested_too_deeply_is_answered_as_not_json(server: RawServer) -> None:
    depth = 50_000  # past the parser's recursion limit: a RecursionError, not a ValueError
    server.send_body(b'{"jsonrpc": "2.0", "id": 6, "params": ' + b"[" * depth + b"]" * depth + b"}")
    error = error_of(server.response(None))
    assert error["code"] == -32700 and "recursion" in str(error["message"])
    still_serving(server)


@pytest.mark.parametrize(
    "body",
    [
        {"id": 41, "method": "ephemeralContext/status"},  # no "jsonrpc"
        {"jsonrpc": "1.0", "id": 41, "method": "ephemeralContext/status"},
        [{"jsonrpc": "2.0", "id": 41, "method": "ephemeralContext/status"}],  # a batch
        "just a string",
    ],
)
def test_not_a_request(server: RawServer, body: object) -> None:
    server.send_body(json.dumps(body).encode())
    msg_id = 41 if isinstance(body, dict) else None
    assert error_of(server.response(msg_id))["code"] == -32600
    still_serving(server)


def test_unknown_method(server: RawServer) -> None:
    answer = server.request("ephemeralContext/noSuchThing", {})
    assert error_of(answer)["code"] == -32601
    server.notify("ephemeralContext/noSuchNotification", {"x": 1})  # ignored, logged
    still_serving(server)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("ephemeralContext/pin", {}),
        ("ephemeralContext/pin", {"uri": 5}),
        ("ephemeralContext/hydrate", {"id": "x", "offset": "far"}),
        ("ephemeralContext/ask", {"conversationId": "c"}),
        ("ephemeralContext/drop", {"uri": "file:///a", "id": "b"}),
        ("ephemeralContext/drop", {}),
        ("workspace/executeCommand", {"command": "ectx.pin", "arguments": [{"nope": 1}]}),
        ("workspace/executeCommand", {"command": "ectx.nothing", "arguments": []}),
        ("workspace/executeCommand", {"command": "ectx.pin"}),  # arguments are optional
    ],
)
def test_wrong_params(server: RawServer, method: str, params: object) -> None:
    assert error_of(server.request(method, params))["code"] == -32602
    still_serving(server)


def test_a_command_without_params_needs_no_arguments(server: RawServer) -> None:
    answer = server.request("workspace/executeCommand", {"command": "ectx.status"})
    assert answer["result"]["budget"] > 0


def test_unknown_uris_and_ids(server: RawServer, workspace: Path) -> None:
    missing = (workspace / "no-such-file.py").as_uri()
    error = error_of(server.request("ephemeralContext/pin", {"uri": missing}))
    assert error["code"] == -32602 and error["data"] == {"reason": "not-found"}

    outside = error_of(server.request("ephemeralContext/pin", {"uri": "file:///etc/hostname"}))
    assert outside["data"] == {"reason": "outsideWorkspace"}

    loop = workspace / "loop.py"
    loop.symlink_to(loop)  # a link to itself: not outside the workspace, just unreadable
    looped = error_of(server.request("ephemeralContext/pin", {"uri": loop.as_uri()}))
    assert looped["data"] == {"reason": "unreadable"}
    assert "Symlink loop" in str(looped["message"])

    unknown = error_of(server.request("ephemeralContext/hydrate", {"id": "deadbeef"}))
    assert unknown["code"] == -32602 and unknown["data"] == {"reason": "unknown"}
    invalid = error_of(server.request("ephemeralContext/hydrate", {"id": "../../etc"}))
    assert invalid["data"] == {"reason": "invalid"}
    absurd = error_of(server.request("ephemeralContext/hydrate", {"id": "z" * 100_000}))
    assert absurd["data"] == {"reason": "invalid"} and len(str(absurd["message"])) < 200
    assert "(100,000 characters) is not a store id" in str(absurd["message"])

    unpinned = error_of(server.request("ephemeralContext/unpin", {"uri": missing}))
    assert unpinned["data"] == {"reason": "unknown"}

    # edits and closes of documents that were never opened are ignored
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": missing, "version": 3},
            "contentChanges": [{"text": "x"}],
        },
    )
    server.notify("textDocument/didClose", {"textDocument": {"uri": missing}})
    still_serving(server)


def test_answered_refusals_log_no_traceback(workspace: Path, tmp_path: Path) -> None:
    """A pin of a missing file and params of the wrong type are answered, not bugs: no
    ERROR traceback in the editor's log for them (pygls writes one for each)."""
    log_file = tmp_path / "server.log"
    command = [sys.executable, "-m", "ephemeral_context", "--log-file", str(log_file), "serve"]
    with RawServer.start(command=command) as raw:
        raw.initialize(workspace.as_uri())
        missing = {"uri": (workspace / "missing.py").as_uri()}
        assert error_of(raw.request("ephemeralContext/pin", missing))["code"] == -32602
        assert error_of(raw.request("ephemeralContext/pin", {"uri": 5}))["code"] == -32602
        assert raw.request("shutdown", None)["result"] is None
        raw.notify("exit", None)
        assert raw.wait() == 0
    assert log_file.read_text(encoding="utf-8") == ""


def test_a_huge_symbol_name_is_not_echoed_whole(server: RawServer, workspace: Path) -> None:
    """A 100,000-character symbol name (a paste gone wrong) gets a short error that says how
    long it was, not the name itself back in the editor's message."""
    module = workspace / "module.py"
    module.write_text("def run():\n    return 1\n", encoding="utf-8")
    params = {"uri": module.as_uri(), "symbol": "r" * 100_000}
    error = error_of(server.request("ephemeralContext/pin", params))
    assert error["code"] == -32602 and error["data"] == {"reason": "unknown"}
    assert "(100,000 characters)" in str(error["message"]) and len(str(error["message"])) < 300
    still_serving(server)


def test_a_uri_with_half_a_surrogate_pair(server: RawServer, workspace: Path) -> None:
    """Half a surrogate pair in a URI names no file: a clear not-found, not InternalError,
    and an editor's buffer under it is mirrored like any other."""
    uri = (workspace / "src").as_uri() + "/x\ud800.py"
    error = error_of(server.request("ephemeralContext/pin", {"uri": uri}))
    assert error["code"] == -32602 and error["data"] == {"reason": "not-found"}
    assert server.request("ephemeralContext/drop", {"uri": uri})["result"] == {"dropped": []}
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}},
    )
    item = server.request("ephemeralContext/pin", {"uri": uri})["result"]["item"]
    assert item["uri"].endswith("/src/x%ED%A0%80.py")


def test_secret_files_are_refused(server: RawServer, workspace: Path) -> None:
    env = workspace / ".env"
    env.write_text("TOKEN=abc\n", encoding="utf-8")
    error = error_of(server.request("ephemeralContext/pin", {"uri": env.as_uri()}))
    assert error["data"] == {"reason": "secret"}
    key = workspace / "deploy.py"
    key.write_text(
        "K = '''-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----'''\n"
    )
    error = error_of(server.request("ephemeralContext/pin", {"uri": key.as_uri()}))
    assert error["data"] == {"reason": "secret"}
    assert "MIIB" not in json.dumps(error)


def test_huge_request_and_notification(server: RawServer, workspace: Path) -> None:
    """Over the limit: the body is discarded, a request gets InvalidRequest with its id."""
    big = "x" * (LIMIT + 10)
    server.send(
        {"jsonrpc": "2.0", "id": 77, "method": "ephemeralContext/pin", "params": {"uri": big}}
    )
    error = error_of(server.response(77))
    assert error["code"] == -32600 and str(LIMIT) in str(error["message"])

    uri = (workspace / "big.py").as_uri()
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": big}},
    )
    still_serving(server)
    assert server.request("ephemeralContext/status", {})["result"]["openDocuments"] == 0


@pytest.mark.parametrize("msg_id", [b'"\\q"', b'"\xff"'], ids=["bad-escape", "not-utf8"])
def test_a_huge_message_whose_id_is_broken_too(server: RawServer, msg_id: bytes) -> None:
    """The id of a discarded message is read from its first bytes: one that is no JSON
    string leaves the stand-in without an id, and the server serving."""
    padding = b"x" * (LIMIT + 10)
    server.send_body(b'{"jsonrpc": "2.0", "id": %s, "params": "%s"}' % (msg_id, padding))
    still_serving(server)


def test_ask_without_api_key(server: RawServer) -> None:
    """No key in the environment: RequestFailed with a message that says what to do."""
    error = error_of(server.request("ephemeralContext/ask", {"prompt": "hello"}))
    assert error["code"] == -32803
    assert "ANTHROPIC_API_KEY" in str(error["message"])
    still_serving(server)


def test_replay_of_a_missing_file(server: RawServer, tmp_path: Path) -> None:
    error = error_of(
        server.request("ephemeralContext/replay", {"path": str(tmp_path / "none.jsonl")})
    )
    assert error["code"] == -32602
    still_serving(server)


def test_requests_before_initialize() -> None:
    with RawServer.start() as raw:
        assert error_of(raw.request("ephemeralContext/status", {}))["code"] == -32002
        assert error_of(raw.request("ephemeralContext/items", {}))["code"] == -32002
        assert "result" in raw.initialize()
        assert raw.request("ephemeralContext/status", {})["result"]["items"] == 0


def test_garbage_headers_are_skipped(server: RawServer) -> None:
    server.write(b"Hello there\r\nContent-Length: x\r\n\r\n")
    still_serving(server)


STATUS = b'{"jsonrpc": "2.0", "id": 90, "method": "ephemeralContext/status"}'


@pytest.mark.parametrize(
    "junk",
    [
        b"Content-Type: application/json\r\n\r\n" + STATUS,  # a header block without a length
        b"\x00\xff not a message at all\r\n\r\n",
    ],
    ids=["no-content-length", "garbage"],
)
def test_the_server_resynchronises_on_the_next_header(server: RawServer, junk: bytes) -> None:
    server.write(junk)
    still_serving(server)


def test_the_header_name_may_be_in_any_case(server: RawServer) -> None:
    server.write(b"content-length: %d\r\n\r\n" % len(STATUS) + STATUS)
    assert server.response(90)["result"]["budget"] > 0


def test_a_stalled_body_is_answered_and_discarded(workspace: Path) -> None:
    with RawServer.start("--body-timeout", "0.5") as server:
        server.initialize(workspace.as_uri())
        server.write(b'Content-Length: 80\r\n\r\n{"jsonrpc": "2.0", "id": 33, "method": "eph')
        error = error_of(server.response(33))
        assert error["code"] == -32600 and "stalled" in str(error["message"])
        server.write(b'emeralContext/status"}')  # the late rest is skipped, not taken as a header
        still_serving(server)


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("ephemeralContext/pin", {"uri": 123}, "uri"),
        ("ephemeralContext/pin", {"uri": "file:///a", "symbol": ["x"]}, "symbol"),
        ("ephemeralContext/ask", {"prompt": 5}, "prompt"),
        ("ephemeralContext/ask", {"prompt": "hi", "conversationId": 7}, "conversationId"),
        ("ephemeralContext/hydrate", {"id": "abc", "offset": "5"}, "offset"),
        ("ephemeralContext/hydrate", {"id": "abc", "limit": True}, "limit"),
        ("ephemeralContext/replay", {"path": None}, "path"),
        ("workspace/executeCommand", {"command": "ectx.pin", "arguments": [{"uri": 1}]}, "uri"),
    ],
)
def test_wrong_types_are_refused_naming_the_field(
    server: RawServer, method: str, params: object, field: str
) -> None:
    """No coercion: `123` is not the URI "123" and a numeric prompt never reaches the model."""
    error = error_of(server.request(method, params))
    assert error["code"] == -32602, error
    assert field in str(error["message"]), error
    still_serving(server)


def test_a_numeric_method_and_an_object_id_get_invalid_request(server: RawServer) -> None:
    server.send({"jsonrpc": "2.0", "id": 61, "method": 5, "params": {}})
    error = error_of(server.response(61))
    assert error["code"] == -32600 and "method" in str(error["message"])
    server.send({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ephemeralContext/status"})
    error = error_of(server.response(None))  # an id that is not one is answered with null
    assert error["code"] == -32600 and "id" in str(error["message"])
    server.send({"jsonrpc": "2.0", "id": [1], "method": 5})
    assert error_of(server.response(None))["code"] == -32600
    still_serving(server)


def test_a_change_with_negative_positions_takes_the_document_out_of_sync(
    server: RawServer, workspace: Path
) -> None:
    """The edit cannot be applied, and skipping it would leave the mirror wrong for every
    later edit; so the document is marked out of sync (the user is told) until the editor
    opens it again."""
    path = workspace / "src" / "app.py"
    uri = path.as_uri()
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "abc\n"}},
    )
    bad = {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": -2}}
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": bad, "text": "x"}],
        },
    )
    shown = server.next_notification("window/showMessage")
    message = shown["params"]["message"]
    assert "app.py" in message and "reopen" in message and "range.start" in message
    assert_out_of_sync_after_an_edit(server, uri, 3)
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 4, "text": "fresh\n"}},
    )
    item = server.request("ephemeralContext/pin", {"uri": uri})["result"]["item"]
    text = server.request("ephemeralContext/hydrate", {"id": item["id"]})["result"]["text"]
    assert text == "fresh\n"


def test_a_damaged_store_index_is_rebuilt_not_fatal(workspace: Path) -> None:
    """The store's index.sqlite3 overwritten (a bad copy, a full disk): the server still
    starts, and what the store held still hydrates by its id."""
    store = Path(os.environ["EPHEMERAL_CONTEXT_HOME"]) / "store"
    with Store(store) as before:
        kept = before.put("def kept():\n    return 1\n").id
    (store / "index.sqlite3").write_bytes(b"not a database " * 100)
    with RawServer.start() as server:
        assert "result" in server.initialize(workspace.as_uri())
        answer = server.request("ephemeralContext/hydrate", {"id": kept})
        assert answer["result"]["text"] == "def kept():\n    return 1\n"


def shown_messages(server: RawServer) -> list[str]:
    """The window/showMessage texts that arrived before the last response awaited."""
    shown = [n for n in server.notifications if n["method"] == "window/showMessage"]
    return [n["params"]["message"] for n in shown]


def open_and_change(
    server: RawServer, uri: str, change: dict[str, object], version: int = 6
) -> None:
    """didOpen "abc\\ndef\\n" at version 5, then one didChange to `version` with `change`."""
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 5, "text": "abc\ndef\n"}},
    )
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
    )


@pytest.mark.parametrize(
    ("version", "start", "end", "problem"),
    [
        (1, (0, 0), (0, 0), "version 1 after version 5"),  # a version going backwards
        (6, (1, 2), (0, 1), "ends (0:1) before it starts (1:2)"),  # start after end
    ],
    ids=["version-backwards", "range-backwards"],
)
def test_a_change_that_cannot_apply_as_sent_is_told_to_the_user(
    server: RawServer,
    workspace: Path,
    version: int,
    start: tuple[int, int],
    end: tuple[int, int],
    problem: str,
) -> None:
    """Applied anyway, the edit would leave the mirror with a text the editor never had
    (a reversed range read as an insertion); so the document goes out of sync, and the user
    hears it (window/showMessage, before the next answer) rather than only the log."""
    uri = (workspace / "src" / "app.py").as_uri()
    where = {
        "start": {"line": start[0], "character": start[1]},
        "end": {"line": end[0], "character": end[1]},
    }
    open_and_change(server, uri, {"range": where, "text": "X"}, version)
    error = error_of(server.request("ephemeralContext/pin", {"uri": uri}))
    assert error["data"] == {"reason": "out-of-sync"}
    assert problem in str(error["message"])
    (message,) = shown_messages(server)
    assert "app.py" in message and "reopen" in message and problem in message


def test_a_discarded_change_takes_its_document_out_of_sync(
    server: RawServer, workspace: Path
) -> None:
    """A didChange over --max-message-bytes is thrown away unread, like one that stalls:
    the edit is lost as surely as one that cannot be read, and later edits would apply to
    the wrong text."""
    uri = (workspace / "src" / "app.py").as_uri()
    open_and_change(server, uri, {"text": "x" * (LIMIT + 10)})
    assert_out_of_sync_after_an_edit(server, uri, 7)
    (message,) = shown_messages(server)
    assert "app.py" in message and "reopen" in message and str(LIMIT) in message


def test_a_change_that_is_not_json_takes_its_document_out_of_sync(
    server: RawServer, workspace: Path
) -> None:
    """A didChange whose text is not UTF-8 (a client that wrote Latin-1) is answered as not
    JSON, and its edit is lost like one that cannot be read."""
    uri = (workspace / "src" / "app.py").as_uri()
    open_and_change(server, uri, {"text": "ok"})
    change = {"textDocument": {"uri": uri, "version": 7}, "contentChanges": [{"text": "caf?"}]}
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": change})
    server.send_body(body.encode().replace(b"caf?", b"caf\xe9"))
    assert error_of(server.response(None))["code"] == -32700
    error = error_of(server.request("ephemeralContext/pin", {"uri": uri}))
    assert error["data"] == {"reason": "out-of-sync"}
    (message,) = shown_messages(server)
    assert "app.py" in message and "reopen" in message and "not valid JSON" in message


@pytest.mark.parametrize(
    "params",
    [
        {
            "contentChanges": [{"text": "x" * (LIMIT + 10)}],
            "textDocument": {"uri": "file:///past/the/first/bytes.py", "version": 2},
        },
        {"contentChanges": [{"text": "x"}], "textDocument": "a.py"},
        [{"text": "x"}],
    ],
    ids=["discarded-before-its-uri", "no-uri", "params-not-an-object"],
)
def test_a_lost_change_that_names_no_document_takes_every_open_one_out_of_sync(
    server: RawServer, workspace: Path, params: object
) -> None:
    """A didChange lost before its document's URI could be read (too long, and its text came
    first; or no URI at all) could have been to any open document: none can be trusted now."""
    uris = [(workspace / name).as_uri() for name in ("a.py", "b.py")]
    for uri in uris:
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "a\n"}},
        )
    server.notify("textDocument/didChange", params)
    for uri in uris:
        error = error_of(server.request("ephemeralContext/pin", {"uri": uri}))
        assert error["data"] == {"reason": "out-of-sync"}
    (message,) = shown_messages(server)
    assert "a.py" in message and "b.py" in message and "reopen" in message
