"""Offline token estimates per content kind, fitted to the usage real transcripts record.

Claude's tokenizer is not available offline (and tiktoken, which downloads its encodings at
run time, counts for other models), so the estimate is ASCII characters divided by a ratio per
kind of content, a cost per character for CJK and for other non-ASCII scripts, plus a fixed
cost per content block. The constants are a least-squares fit
to the per-call input totals that Anthropic returned in real Claude Code sessions:
`ectx replay --fit-tokens PATH...` recomputes them (replay/calibrate.py) and
docs/cost-model.md ("Token estimate") records the fit and its error. When an API key is
present, `count_tokens` asks the Messages API's count_tokens endpoint instead.

API:
- `estimate_tokens(text, kind)`, `estimate_block_tokens(text, kind)`: the offline estimate.
- `count_tokens(...)`: exact counts from the API when a key is present.
- `media_tokens(block)`: an image's or document's tokens; `MEDIA_TYPES`: their block types.
- `KINDS`, `CHARS_PER_TOKEN`, `TOKENS_PER_WIDE_CHAR`, `TOKENS_PER_OTHER_CHAR`,
  `BLOCK_OVERHEAD_TOKENS`, `script_counts`: the fitted constants.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any

KINDS = ("prose", "thinking", "code", "json", "tool_output")
"""prose: what people and the model write; thinking: the model's thinking blocks; code: file
text (Read results); json: tool-use inputs; tool_output: command, search and other tool
output."""

CHARS_PER_TOKEN: dict[str, float] = {
    "prose": 4.23,
    "thinking": 3.69,
    "code": 2.98,
    "json": 3.32,
    "tool_output": 3.04,
}
"""For ASCII characters. Fitted on shared/corpus and shared/traces (2,406 call-to-call
steps, 65 transcripts, much of the corpus in Chinese), 2026-12-01."""

BLOCK_OVERHEAD_TOKENS = 48
"""Per content block: the block's framing plus the reminders Claude Code adds unrecorded."""


TOKENS_PER_WIDE_CHAR = 1.501
"""Per character of the CJK scripts (Han, kana, Hangul, full-width forms), whatever the kind."""

TOKENS_PER_OTHER_CHAR = 0.253
"""Per other non-ASCII character (Cyrillic, Greek, accented Latin, arrows, box drawing, emoji)."""

_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
)


def script_counts(text: str) -> tuple[int, int, int]:
    """(ASCII, CJK, other) characters of `text`: the estimate prices each script apart."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    if ascii_chars == len(text):
        return ascii_chars, 0, 0
    wide = len(_WIDE.findall(text))
    return ascii_chars, wide, len(text) - ascii_chars - wide


def estimate_tokens(text: str, kind: str = "code") -> int:
    """Tokens `text` is likely to cost on its own; unknown kinds count as code.

    ASCII characters count by the kind's ratio; CJK and other non-ASCII characters at their
    own per-character cost, since a tokenizer fitted on English splits them much finer.
    """
    if not text:
        return 0
    ascii_chars, wide, other = script_counts(text)
    ratio = CHARS_PER_TOKEN.get(kind, CHARS_PER_TOKEN["code"])
    return math.ceil(
        ascii_chars / ratio + wide * TOKENS_PER_WIDE_CHAR + other * TOKENS_PER_OTHER_CHAR
    )


def estimate_block_tokens(text: str, kind: str = "code") -> int:
    """Tokens one content block of a request costs: its text plus the per-block overhead."""
    return estimate_tokens(text, kind) + BLOCK_OVERHEAD_TOKENS


MEDIA_TYPES = frozenset({"image", "document"})
"""The content blocks `media_tokens` sizes: no text to estimate, a cost of their own."""
IMAGE_TOKENS = 1600
"""An image or document whose size cannot be read (a URL or Files API source, an unknown
format, a PDF whose pages cannot be counted): about the most one image costs once the API
has scaled it down."""
IMAGE_MAX_EDGE = 1568
"""Pixels: the API scales an image down until its long edge is within this..."""
PIXELS_PER_TOKEN = 750
"""...and its tokens, width x height / 750, are within IMAGE_TOKENS (the vision docs,
"Calculate image costs")."""
_IMAGE_HEAD_CHARS = 262_144
"""Base64 characters decoded to find an image's size: a JPEG's frame header may follow a
large EXIF or colour-profile segment; the other formats give it in their first bytes."""
PDF_PAGE_TOKENS = 2250
"""Per page of a PDF: the middle of the 1,500 to 3,000 tokens the PDF-support page says a
page typically costs ("Estimate your costs"; the text and the image of the page)."""


def media_tokens(block: Mapping[str, Any], count: Callable[[str, str], int] | None = None) -> int:
    """Tokens an image or document content block costs. An image: from the pixel size its
    base64 data declares (PNG, JPEG, GIF, WebP), scaled down as the API scales it (a
    906 x 181 screenshot costs 219, not 1,600). A base64 PDF: PDF_PAGE_TOKENS per page. A
    plain-text document: its text, by `count` (default `estimate_tokens`, "prose").
    IMAGE_TOKENS for what cannot be read."""
    source = block.get("source")
    data = source.get("data") if isinstance(source, Mapping) else None
    if not isinstance(source, Mapping) or not isinstance(data, str):
        return IMAGE_TOKENS
    if source.get("type") == "text":
        return (count or estimate_tokens)(data, "prose")
    if source.get("type") != "base64":
        return IMAGE_TOKENS
    if block.get("type") == "document":
        pages = _pdf_pages(_decoded(data))
        return pages * PDF_PAGE_TOKENS if pages else IMAGE_TOKENS
    size = _image_size(_decoded(data[:_IMAGE_HEAD_CHARS]))
    if size is None:
        return IMAGE_TOKENS
    width, height = size
    scale = min(1.0, IMAGE_MAX_EDGE / max(width, height))
    pixels = width * height * scale * scale
    return max(1, min(IMAGE_TOKENS, math.ceil(pixels / PIXELS_PER_TOKEN)))


def _decoded(data: str) -> bytes:
    """The bytes of base64 text (a prefix of it: whole 4-character groups); empty if not
    base64."""
    try:
        return base64.b64decode(data[: len(data) // 4 * 4])
    except (binascii.Error, ValueError):
        return b""


_PDF_COUNT = re.compile(rb"/Count\s+(\d+)")
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _pdf_pages(data: bytes) -> int | None:
    """Pages of a PDF: the page tree's largest /Count (its root's), else its page objects
    counted; None for what is no PDF, or whose page tree sits in compressed streams."""
    if not data.startswith(b"%PDF"):
        return None
    counts = [int(n) for n in _PDF_COUNT.findall(data)]
    return max(counts, default=0) or len(_PDF_PAGE.findall(data)) or None


def _image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from an image file's header, or None (unknown or cut short)."""
    size: tuple[int, int] | None = None
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        size = struct.unpack(">II", data[16:24])
    elif data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        size = struct.unpack("<HH", data[6:10])
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        size = _webp_size(data)
    elif data.startswith(b"\xff\xd8"):
        size = _jpeg_size(data)
    return size if size is not None and min(size) > 0 else None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


_JPEG_FRAMES = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
"""The start-of-frame markers, whose header holds the image's height and width."""


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
    return None


def count_tokens(text: str, model: str, client: Any | None = None) -> int:
    """Exact tokens of `text` sent as one user message, from the count_tokens endpoint.

    Needs ANTHROPIC_API_KEY (or a ready `anthropic.Anthropic` client, for instance one pointed
    at a local server); raises RuntimeError without either.
    """
    if client is None:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise RuntimeError("count_tokens needs ANTHROPIC_API_KEY; use estimate_tokens offline")
        import anthropic

        with anthropic.Anthropic() as own:  # closed after, not left to the garbage collector
            return count_tokens(text, model, own)
    result = client.messages.count_tokens(
        model=model, messages=[{"role": "user", "content": text or " "}]
    )
    return int(result.input_tokens)
