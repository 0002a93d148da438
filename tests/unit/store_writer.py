"""A writer process for the store's crash and concurrency tests (run as a script).

Usage: store_writer.py ROOT FIRST COUNT MIN_ID_LENGTH REPEAT [PAUSE_AT_FSYNC]

Puts `store_text(i, REPEAT)` for i in FIRST..FIRST+COUNT-1 and prints "OK ID I" after each put
has committed, so the parent knows exactly what must have survived. With PAUSE_AT_FSYNC = n,
the n-th fsync prints "PAUSED" and blocks on stdin forever: the parent then kills the process
at a known point inside a put (each new put fsyncs the blob, then its directory).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ephemeral_context.store import Store

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike


def store_text(index: int, repeat: int) -> str:
    """Deterministic, distinct, multi-byte content for entry `index`."""
    return f"entry {index} é中😀\r\n" * repeat


def pause_at_fsync(target: int) -> None:
    real_fsync = os.fsync
    count = 0

    def fsync(fd: FileDescriptorLike) -> None:
        nonlocal count
        count += 1
        if count == target:
            print("PAUSED", flush=True)
            sys.stdin.readline()
        real_fsync(fd)

    os.fsync = fsync


def main(argv: list[str]) -> int:
    root, first, count, min_id_length, repeat, *pause = argv
    if pause:
        pause_at_fsync(int(pause[0]))
    store = Store(root, min_id_length=int(min_id_length))
    for index in range(int(first), int(first) + int(count)):
        entry = store.put(store_text(index, int(repeat)), uri=f"file:///w/{index}.txt")
        print("OK", entry.id, index, flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
