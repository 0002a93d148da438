"""The server's hydrate handler over a store another process holds locked: a clear request
failure (not InternalError with a traceback), and the next request works once the lock is
gone. In process, with the store's busy timeout shortened (not mocked); the real stdio
server's bad ids are in tests/lsp/test_bad_input.py."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pytest
from ephemeral_context.lsp import server
from ephemeral_context.lsp.protocol import HydrateParams
from ephemeral_context.store import Store
from pygls.exceptions import JsonRpcException


def test_a_busy_store_fails_one_hydrate_and_the_next_one_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server, "Store", functools.partial(Store, busy_timeout_ms=50))
    ls = server.EphemeralContextServer()
    ls.open_store()
    assert ls.store is not None
    entry = ls.store.put("kept before the lock")
    other = sqlite3.connect(Path(ls.store.root) / "index.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(JsonRpcException) as raised:
        server.hydrate(ls, HydrateParams(id=entry.id))
    assert raised.value.code == server.REQUEST_FAILED
    assert raised.value.message == (
        f"the store in {ls.store.root} is busy: another process holds its lock; retry in a moment"
    )
    other.execute("ROLLBACK")
    other.close()
    assert server.hydrate(ls, HydrateParams(id=entry.id)).text == "kept before the lock"
    ls.store.close()
