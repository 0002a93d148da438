"""Server-Sent Events as the Messages API streams them: parse, re-emit, rebuild the message.

`read_events` splits an upstream byte stream into events (the raw bytes kept, so an event
passed on is byte-for-byte what the upstream sent). `MessageBuilder` folds the events of one
answer back into its content blocks, as the SDK's accumulator does, so the gateway knows
what the model said (hydration calls included) without asking the upstream twice.

API:
- `read_events(chunks)`, `parse_event(...)`, `encode(name, data)`: events in and out.
- `MessageBuilder`: one streamed answer rebuilt into content blocks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jiter import from_json


@dataclass(frozen=True)
class Event:
    """One SSE event: its name, its JSON data (empty when not JSON) and its raw bytes."""

    name: str
    data: dict[str, Any]
    raw: bytes


def parse_event(raw: bytes) -> Event:
    name = ""
    data_lines: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data_lines.append(line[5:].removeprefix(" "))
    try:
        data = json.loads("\n".join(data_lines)) if data_lines else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return Event(name or str(data.get("type", "")), data, raw)


async def read_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[Event]:
    """Events from a byte stream; a trailing event without its blank line is still given.
    A chunk ending in the CR of a CRLF keeps it for the next one, so that a blank line split
    between two chunks still ends its event."""
    buffer = b""
    carry = b""
    async for chunk in chunks:
        data = carry + chunk
        carry = b"\r" if data.endswith(b"\r") else b""
        buffer += data[: len(data) - len(carry)].replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            raw, buffer = buffer.split(b"\n\n", 1)
            if raw.strip():
                yield parse_event(raw + b"\n\n")
    buffer += carry
    if buffer.strip():
        yield parse_event(buffer)


def encode(name: str, data: dict[str, Any]) -> bytes:
    """An event as the API frames it. A lone surrogate (JSON can carry one, UTF-8 cannot)
    goes out as its JSON escape, the way the API itself would write it."""
    text = f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    return text.encode("utf-8", "backslashreplace")


def _tool_input(text: str) -> Any:
    """A streamed tool input, read as the SDK reads it: JSON cut short (the answer reached
    max_tokens inside the call) gives what it holds so far."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return from_json(text.encode(), partial_mode=True)
    except ValueError:
        return {}


def block_index(data: Mapping[str, Any]) -> int | None:
    """A block event's index; None when it has none that is a whole number."""
    index = data.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else None


@dataclass
class MessageBuilder:
    """One streamed answer, rebuilt: content blocks by index, stop reason, usage."""

    message: dict[str, Any] = field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    partial_json: dict[int, str] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    complete: bool = False

    def apply(self, event: Event) -> None:
        data = event.data
        kind = str(data.get("type", event.name))
        if kind == "message_start":
            self.message = dict(data.get("message") or {})
            self.usage = dict(self.message.get("usage") or {})
        elif kind.startswith("content_block_"):
            self._block(kind, data)
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            self.stop_reason = delta.get("stop_reason", self.stop_reason)
            self.usage.update(data.get("usage") or {})
        elif kind == "message_stop":
            self.complete = True

    def _block(self, kind: str, data: dict[str, Any]) -> None:
        """A block event; one of no block this answer started (no index, or an index never
        started: a proxy's or another model's stream) has nothing to rebuild."""
        index = block_index(data)
        if index is None or (kind != "content_block_start" and index not in self.blocks):
            return
        if kind == "content_block_start":
            self.blocks[index] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(index, data.get("delta") or {})
        elif kind == "content_block_stop" and index in self.partial_json:
            self.blocks[index]["input"] = _tool_input(self.partial_json.pop(index))

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "input_json_delta":
            self.partial_json[index] = self.partial_json.get(index, "") + delta.get(
                "partial_json", ""
            )
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    @property
    def content(self) -> list[dict[str, Any]]:
        return [self.blocks[i] for i in sorted(self.blocks)]
