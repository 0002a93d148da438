"""Server-Sent Events read from an upstream's bytes, however its chunks fall."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from ephemeral_context.gateway.sse import Event, read_events

STREAM = (
    b'event: content_block_delta\r\ndata: {"type": "content_block_delta", "index": 0}\r\n\r\n'
    b'event: message_stop\r\ndata: {"type": "message_stop"}\r\n\r\n'
)


def events(chunks: Sequence[bytes]) -> list[Event]:
    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def read() -> list[Event]:
        return [event async for event in read_events(source())]

    return asyncio.run(read())


@pytest.mark.parametrize("at", range(1, len(STREAM)))
def test_crlf_events_split_anywhere_stay_apart(at: int) -> None:
    # A proxy's CRLF stream cut between the CR and LF of a blank line merged two events.
    found = events([STREAM[:at], STREAM[at:]])
    assert [(e.name, e.data["type"]) for e in found] == [
        ("content_block_delta", "content_block_delta"),
        ("message_stop", "message_stop"),
    ]
