"""tokens.py: the offline estimate, its fitted constants, and the count_tokens path."""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

import anthropic
import pytest
from ephemeral_context import tokens
from ephemeral_context.replay.calibrate import fit_paths
from ephemeral_context.tokens import (
    BLOCK_OVERHEAD_TOKENS,
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    KINDS,
    PDF_PAGE_TOKENS,
    TOKENS_PER_OTHER_CHAR,
    TOKENS_PER_WIDE_CHAR,
    count_tokens,
    estimate_block_tokens,
    estimate_tokens,
    media_tokens,
    script_counts,
)

from tests.fakes import FakeMessagesAPI
from tests.transcripts import all_transcripts, shared

CODE = "def add(a: int, b: int) -> int:\n    return a + b\n" * 20


def test_estimate_is_characters_over_the_kind_ratio() -> None:
    assert estimate_tokens("", "prose") == 0
    for kind in KINDS:
        assert estimate_tokens("x" * 1000, kind) == math.ceil(1000 / CHARS_PER_TOKEN[kind])
    assert estimate_tokens(CODE, "no-such-kind") == estimate_tokens(CODE, "code")
    # denser kinds cost more tokens for the same characters
    assert estimate_tokens(CODE, "code") > estimate_tokens(CODE, "prose")


def test_block_estimate_adds_the_fixed_block_cost() -> None:
    assert estimate_block_tokens("", "json") == BLOCK_OVERHEAD_TOKENS
    assert (
        estimate_block_tokens(CODE, "code") == estimate_tokens(CODE, "code") + BLOCK_OVERHEAD_TOKENS
    )


def test_other_scripts_cost_per_character() -> None:
    chinese = "这个函数在请求失败时会重试三次" * 10
    assert script_counts(chinese) == (0, len(chinese), 0)
    assert estimate_tokens(chinese, "prose") == math.ceil(len(chinese) * TOKENS_PER_WIDE_CHAR)
    russian = "Функция повторяет запрос" * 10
    ascii_chars, wide, other = script_counts(russian)
    assert wide == 0 and ascii_chars == russian.count(" ")
    assert estimate_tokens(russian, "prose") == math.ceil(
        ascii_chars / CHARS_PER_TOKEN["prose"] + other * TOKENS_PER_OTHER_CHAR
    )
    # a Chinese sentence costs more than an English one of the same length
    assert estimate_tokens(chinese, "prose") > estimate_tokens("x" * len(chinese), "prose")


@pytest.mark.slow
def test_constants_are_the_fit_on_the_real_transcripts() -> None:
    """Re-running the fit on shared/corpus and the four traces gives the shipped constants."""
    fit = fit_paths([*sorted(shared("corpus").glob("*.jsonl")), *all_transcripts()])
    assert fit.steps >= 2400
    for kind in KINDS:
        assert fit.chars_per_token[kind] == pytest.approx(CHARS_PER_TOKEN[kind], abs=0.02)
    assert fit.tokens_per_char["wide"] == pytest.approx(TOKENS_PER_WIDE_CHAR, abs=0.01)
    assert fit.tokens_per_char["other"] == pytest.approx(TOKENS_PER_OTHER_CHAR, abs=0.01)
    assert fit.block_overhead == pytest.approx(BLOCK_OVERHEAD_TOKENS, abs=1)
    assert set(fit.script_error) >= {"ascii", "cjk"}


def test_count_tokens_without_a_key_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY"):
        count_tokens("hello", "claude-sonnet-4-5")


def test_count_tokens_asks_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the anthropic SDK, against the local Messages API (no real key exists here)."""
    with FakeMessagesAPI() as api:
        with anthropic.Anthropic(api_key="test-key", base_url=api.base_url) as client:
            assert count_tokens(CODE, "claude-sonnet-4-5", client) == estimate_tokens(CODE, "prose")
        # From the environment, as a user with a key would run it.
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        assert tokens.count_tokens("hello there", "claude-sonnet-4-5") == estimate_tokens(
            "hello there", "prose"
        )
        paths = [r.path for r in api.requests]
        assert paths == ["/v1/messages/count_tokens"] * 2
        assert api.requests[0].body["messages"] == [{"role": "user", "content": CODE}]


def image(header: bytes, media_type: str = "image/png") -> dict[str, Any]:
    """An image content block whose base64 data starts with `header` (the rest cut off)."""
    data = base64.b64encode(header + b"\0" * 64).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def png(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height)


def jpeg(width: int, height: int) -> bytes:
    """A JPEG whose frame header follows an APP1 (EXIF) segment of 40,000 bytes."""
    exif = b"\xff\xe1" + struct.pack(">H", 40_002) + b"E" * 40_000
    return b"\xff\xd8" + exif + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, height, width)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (png(200, 200), 54),  # the vision docs' examples: width x height / 750
        (png(1000, 1000), 1334),
        (png(1092, 1092), 1590),
        (png(906, 181), 219),  # a pasted screenshot of the corpus (was a flat 1,600)
        (png(2000, 500), 820),  # long edge scaled to 1,568: 1,568 x 392
        (png(3024, 1610), IMAGE_TOKENS),  # scaled down to about 1.15 megapixels
        (jpeg(1512, 771), 1555),  # the corpus's 1,512 x 771 screenshots
        (jpeg(640, 480), 410),
        (b"GIF89a" + struct.pack("<HH", 300, 150), 60),
        (
            b"RIFF\0\0\0\0WEBPVP8X"
            + b"\0" * 8
            + (299).to_bytes(3, "little")
            + (149).to_bytes(3, "little"),
            60,
        ),
        (b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f" + (299 | 149 << 14).to_bytes(4, "little"), 60),
    ],
)
def test_an_image_costs_its_pixels_as_the_api_scales_them(header: bytes, expected: int) -> None:
    assert media_tokens(image(header)) == expected


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
        image(b"not an image at all"),
        image(png(0, 10)),
        image(jpeg(640, 480)[:30_000]),  # cut before its frame header
        {"type": "image", "source": {"type": "base64", "data": "***not base64***"}},
        {"type": "image", "source": "x"},
        {"type": "document", "source": {"type": "base64", "data": "JVBERi0xLjQ="}},
    ],
)
def test_an_image_whose_size_cannot_be_read_costs_the_most_an_image_does(
    block: dict[str, Any],
) -> None:
    assert media_tokens(block) == IMAGE_TOKENS


def pdf(body: bytes) -> dict[str, Any]:
    data = base64.b64encode(b"%PDF-1.7\n" + body + b"\n%%EOF").decode()
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                           "data": data}}  # fmt: skip


@pytest.mark.parametrize(
    ("block", "pages"),
    [
        (pdf(b"1 0 obj << /Type /Pages /Kids [3 0 R] /Count 12 >> endobj"), 12),
        (pdf(b"<< /Type /Pages /Count 2 >> << /Type /Pages /Count 30 >>"), 30),  # the root's
        (pdf(b"<</Type/Page/Parent 1 0 R>> <</Type /Page>> <</Type/Page /Rotate 90>>"), 3),
    ],
)
def test_a_pdf_costs_its_pages(block: dict[str, Any], pages: int) -> None:
    assert media_tokens(block) == pages * PDF_PAGE_TOKENS


def test_a_plain_text_document_costs_its_text() -> None:
    text = "The quarterly figures, in words. " * 40
    block = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": text}}  # fmt: skip
    assert media_tokens(block) == estimate_tokens(text, "prose")
    assert media_tokens(block, lambda text, kind: len(text)) == len(text)
