"""Images and documents in the engine: sent as the client sent them, never evicted.

A pasted screenshot (a user message's image block) and a Read of a PNG (a tool result whose
content list holds the image) go in as they came, but for their cache_control, sized as the
replay's reader sizes them (`tokens.media_tokens`); file reads around them are evicted at
cold gaps, the images never: nothing could bring one back.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest
from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput
from ephemeral_context.tokens import media_tokens

from tests.unit.context.context_helpers import MODEL, SYSTEM, Clock, source

TOOLS: list[dict[str, Any]] = [
    {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}
]


def png(width: int, height: int) -> str:
    """A real PNG of this size (one grey channel), base64: `media_tokens` reads its size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"".join(b"\x00" * (width + 1) for _ in range(height)))
    data = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )
    return base64.b64encode(data).decode()


def image(width: int = 600, height: int = 400) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png(width, height)},
    }


def _sent(engine: ContextEngine) -> list[dict[str, Any]]:
    """Every content block of the last request built, tool results' content items too."""
    built = engine.last_request("c")
    assert built is not None
    blocks = [b for m in built.kwargs["messages"] for b in m["content"]]
    return blocks + [
        item for b in blocks if isinstance(b.get("content"), list) for item in b["content"]
    ]


def test_images_go_as_sent_while_the_reads_around_them_are_evicted(
    engine: ContextEngine, clock: Clock
) -> None:
    pasted, shot = image(), image(300, 200)
    engine.add_user_text("c", "What do the screenshots and the files show?")
    engine.add_user_block("c", {**pasted, "cache_control": {"type": "ephemeral"}})
    engine.add_assistant_content(
        "c",
        [{"type": "tool_use", "id": "shot", "name": "Read", "input": {"file_path": "/w/s.png"}}],
    )
    caption = {"type": "text", "text": "the screenshot", "cache_control": {"type": "ephemeral"}}
    shown = engine.add_tool_result("c", ToolOutput("shot", "the screenshot", parts=[caption, shot]))
    assert shown == "the screenshot"
    thread = engine.conversation("c").thread
    assert thread[1].tokens == media_tokens(pasted) == 320  # 600 x 400 / 750
    assert thread[3].tokens == engine.state.count("the screenshot", "tool_output") + 80
    for n in range(4):
        use = {
            "type": "tool_use",
            "id": f"r{n}",
            "name": "Read",
            "input": {"file_path": f"/w/{n}.py"},
        }
        engine.add_assistant_content("c", [use])
        text = source(300, f"m{n}_")
        engine.add_tool_result(
            "c", ToolOutput(f"r{n}", text, BlockKind.FILE, uri=f"file:///w/{n}.py")
        )
        engine.build_request("c", MODEL, SYSTEM, TOOLS)
        clock.advance(7200)  # cold: consumed reads are evicted for free
    assert engine.events, "no read was evicted around the images"
    blocks = _sent(engine)
    assert [b for b in blocks if b.get("type") == "image"] == [pasted, shot]
    result = next(b for b in blocks if b.get("tool_use_id") == "shot")
    assert result["content"] == [{"type": "text", "text": "the screenshot"}, shot]
    assert not any(tb.evicted for tb in list(thread)[:4])


def test_no_breakpoint_a_client_set_inside_a_block_is_sent_on(engine: ContextEngine) -> None:
    """The engine places every breakpoint: a document's content source and a search
    result's text lose theirs too, which would otherwise make a fifth (a 400)."""
    mark = {"type": "ephemeral"}
    text = {"type": "text", "text": "page one", "cache_control": mark}
    source = {"type": "content", "content": [text]}
    document = {"type": "document", "source": source, "cache_control": mark}
    search = {"type": "search_result", "source": "s", "title": "t", "content": [text]}
    engine.add_user_text("c", "What do these say?")
    engine.add_user_block("c", document)
    engine.add_assistant_content(
        "c", [{"type": "tool_use", "id": "q", "name": "Read", "input": {"file_path": "/w/a"}}]
    )
    engine.add_tool_result("c", ToolOutput("q", "found", parts=[search, document]))
    engine.build_request("c", MODEL, SYSTEM, TOOLS)
    sent = [b for b in _sent(engine) if b.get("type") in ("document", "search_result")]
    assert len(sent) == 3
    assert "cache_control" not in repr(sent)
    assert sent[0]["source"]["content"] == [{"type": "text", "text": "page one"}]


def test_a_result_carrying_images_is_neither_a_read_nor_an_edit() -> None:
    for kind in (BlockKind.FILE, BlockKind.EDIT):
        with pytest.raises(ValueError, match="images"):
            ToolOutput("t", "", kind, uri="file:///w/s.png", parts=[image()])
