"""The real document mirror drives IncrementalSyntax: its ByteEdits keep the outline exact.

Edits arrive as an editor sends them (UTF-16 line/character ranges, several per didChange,
non-ASCII text), go through documents.DocumentMirror, and the ByteEdits it reports are what
IncrementalSyntax applies.
"""

from __future__ import annotations

from pathlib import Path

from ephemeral_context.documents import Document, DocumentMirror, Position, Range, TextEdit
from ephemeral_context.syntax import IncrementalSyntax, outline_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "syntax" / "samples"
URI = "file:///work/inventory.py"
INSERTS = ["x", "é", "😀", "\n", "    ", "def g(self):\n        return 1\n    ", "#", "(", ")"]


def _utf16_position(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    units = len(text[line_start:offset].encode("utf-16-le")) // 2
    return Position(line, units)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mirror_byte_edits_keep_the_outline_equal_to_a_fresh_parse(data: st.DataObject) -> None:
    text = (SAMPLES / "inventory.py").read_text(encoding="utf-8")
    mirror = DocumentMirror()
    mirror.open(URI, "python", 1, text)
    syntax = IncrementalSyntax(text, "inventory.py", "python")
    for version in range(2, data.draw(st.integers(3, 6))):
        edits = []
        for _ in range(data.draw(st.integers(1, 3))):  # each applies to the text before it
            start = data.draw(st.integers(0, len(text)))
            end = min(len(text), start + data.draw(st.integers(0, 12)))
            insert = data.draw(st.sampled_from(INSERTS))
            span = Range(_utf16_position(text, start), _utf16_position(text, end))
            edits.append(TextEdit(span, insert))
            text = text[:start] + insert + text[end:]
        change = mirror.change(URI, version, edits)
        assert change is not None
        document = mirror.get(URI)
        assert isinstance(document, Document) and document.text == text
        syntax.apply(change.byte_edits, document.text)
        assert syntax.outline == outline_text(text, "inventory.py")
