"""The document mirror: editor edits in three position encodings, disk reads, bad input."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import asdict
from pathlib import Path
from unittest.mock import patch

import pytest
import tree_sitter_python
from ephemeral_context.documents import (
    ByteEdit,
    Document,
    DocumentChange,
    DocumentMirror,
    LineIndex,
    OutOfSync,
    Position,
    PositionEncoding,
    Range,
    TextEdit,
    Unmirrored,
    UnmirroredReason,
    content_hash,
    normalize_uri,
    path_to_uri,
    uri_to_path,
)
from ephemeral_context.documents import lines as line_table
from ephemeral_context.documents import pieces as piece_table
from ephemeral_context.documents.positions import cp_to_units, units_to_cp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Parser

ENCODINGS: list[PositionEncoding] = ["utf-8", "utf-16", "utf-32"]
# Precomposed letter, combining mark, CJK, astral (emoji and a musical symbol), all line ends.
PIECES = ["a", "b", " ", "é", "e\u0301", "中", "文", "😀", "𝄞", "\n", "\r\n", "\r", "x\ty"]
SAMPLE = "a é e\u0301 中 😀 z\r\nline two 𝄞\rthree\n\nlast"


# -- a reference written independently of the code under test ------------------------------


def ref_lines(text: str) -> list[tuple[int, str]]:
    """(start offset, content without terminator) of each LSP line."""
    lines = []
    start = 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        lines.append((start, text[start : match.start()]))
        start = match.end()
    lines.append((start, text[start:]))
    return lines


def units(text: str, encoding: PositionEncoding) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def ref_position(text: str, offset: int, encoding: PositionEncoding) -> Position:
    line_no = 0
    for index, (start, _content) in enumerate(ref_lines(text)):
        if start <= offset:
            line_no = index
    start, _content = ref_lines(text)[line_no]
    return Position(line_no, units(text[start:offset], encoding))


def ref_point(data: bytes, byte: int) -> tuple[int, int]:
    """The LSP line and byte column: the parser reads a lone CR as LF, so rows are lines."""
    starts = [0, *(match.end() for match in re.finditer(rb"\r\n|\r|\n", data))]
    start = max(at for at in starts if at <= byte)
    return starts.index(start), byte - start


def as_parsed(data: bytes) -> bytes:
    """The bytes the parser reads: a lone CR as LF, so that its rows are the lines."""
    return re.sub(rb"\r(?!\n)", b"\n", data)


def legal_offset(text: str, offset: int) -> int:
    """LSP cannot address the gap inside a CRLF; step back to before the CR."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


def apply_bytes(data: bytes, edit: ByteEdit, inserted: bytes) -> bytes:
    return data[: edit.start_byte] + inserted + data[edit.old_end_byte :]


def iter_bytes(document: Document) -> list[bytes]:
    """The pieces as tree-sitter's read callback hands them out."""
    chunks, byte = [], 0
    while chunk := document.read_bytes_at(byte):
        chunks.append(chunk)
        byte += len(chunk)
    return chunks


def check_document(document: Document, reference: str) -> None:
    # Positions first, before .text/.data join the pieces and cache the result.
    for offset in range(len(reference) + 1):
        if legal_offset(reference, offset) == offset:
            assert document.position_at(offset) == ref_position(
                reference, offset, document.encoding
            )
    assert document.hash == content_hash(reference.encode("utf-8"))
    assert (document.length, document.size) == (len(reference), len(reference.encode()))
    assert document.text == reference
    assert document.data == reference.encode("utf-8")
    fresh = LineIndex.build(reference, reference.encode("utf-8"))
    assert document.lines.cp_starts.tolist() == fresh.cp_starts.tolist()
    assert document.lines.byte_starts.tolist() == fresh.byte_starts.tolist()
    assert document.line_count == len(ref_lines(reference))


# -- property tests -------------------------------------------------------------------------

texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@st.composite
def edit_scripts(draw: st.DrawFn) -> tuple[str, list[list[tuple[int, int, str]]]]:
    """An initial text and changes (each a list of edits in code points, applied in order)."""
    text = draw(texts)
    reference = text
    changes = []
    for _ in range(draw(st.integers(1, 6))):
        edits = []
        for _ in range(draw(st.integers(1, 3))):
            a = legal_offset(reference, draw(st.integers(0, len(reference))))
            b = legal_offset(reference, draw(st.integers(0, len(reference))))
            start, end = min(a, b), max(a, b)
            inserted = draw(texts) if draw(st.booleans()) else ""
            edits.append((start, end, inserted))
            reference = reference[:start] + inserted + reference[end:]
        changes.append(edits)
    return text, changes


@pytest.mark.parametrize("piece", [None, 3], ids=["one-piece", "3-char-pieces"])
@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=edit_scripts())
def test_random_edits_match_reference(
    encoding: PositionEncoding,
    piece: int | None,
    script: tuple[str, list[list[tuple[int, int, str]]]],
) -> None:
    """Edits in client units equal the reference.

    The second variant shrinks pieces to 3 characters and rebuilds the line table for any
    insertion over 2 characters, so both the piece list and the full rescan get exercised.
    """
    with (
        patch.object(piece_table, "_PIECE", piece or piece_table._PIECE),
        patch.object(line_table, "_REBUILD_ABOVE", 2 if piece else line_table._REBUILD_ABOVE),
    ):
        run_script(encoding, script)


def run_script(
    encoding: PositionEncoding, script: tuple[str, list[list[tuple[int, int, str]]]]
) -> None:
    text, changes = script
    mirror = DocumentMirror(position_encoding=encoding)
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    mirror.open("untitled:Untitled-1", "plaintext", 1, text)
    reference = text
    for version, edits in enumerate(changes, start=2):
        lsp_edits = []
        before = reference.encode("utf-8")
        inserted_bytes = []
        for start, end, inserted in edits:
            lsp_edits.append(
                TextEdit(
                    Range(
                        ref_position(reference, start, encoding),
                        ref_position(reference, end, encoding),
                    ),
                    inserted,
                )
            )
            reference = reference[:start] + inserted + reference[end:]
            inserted_bytes.append(inserted.encode("utf-8"))
        change = mirror.change("untitled:Untitled-1", version, lsp_edits)
        assert change is not None and change.new_version == version
        document = mirror.get("untitled:Untitled-1")
        assert isinstance(document, Document)
        check_document(document, reference)
        assert b"".join(iter_bytes(document)) == as_parsed(reference.encode("utf-8"))
        # The byte edits replay the change on the UTF-8 bytes, points included.
        data = before
        for byte_edit, new_bytes in zip(change.byte_edits, inserted_bytes, strict=True):
            assert byte_edit.start_point == ref_point(data, byte_edit.start_byte)
            assert byte_edit.old_end_point == ref_point(data, byte_edit.old_end_byte)
            data = apply_bytes(data, byte_edit, new_bytes)
            assert byte_edit.new_end_point == ref_point(data, byte_edit.new_end_byte)
        assert data == reference.encode("utf-8")
    assert [c.reason for c in seen] == ["open"] + ["edit"] * len(changes)


@pytest.mark.parametrize("encoding", ENCODINGS)
@given(text=texts)
def test_positions_round_trip(encoding: PositionEncoding, text: str) -> None:
    document = Document.create(
        "untitled:x", 1, text, language_id=None, source="editor", encoding=encoding
    )
    for offset in range(len(text) + 1):
        if legal_offset(text, offset) != offset:
            continue
        position = document.position_at(offset)
        assert position == ref_position(text, offset, encoding)
        assert document.offset_at(position) == offset
        byte = document.byte_at(offset)
        assert byte == len(text[:offset].encode("utf-8"))
        assert document.offset_of_byte(byte) == offset
        point = document.point_at_byte(byte)
        assert point == ref_point(document.data, byte)


@pytest.mark.parametrize(
    ("encoding", "code_points"),
    [("utf-16", [0, 1, 2, 2, 3, 3]), ("utf-8", [0, 1, 1, 1, 1, 2, 3, 3])],
)
def test_a_column_inside_a_character_and_past_the_line(
    encoding: PositionEncoding, code_points: list[int]
) -> None:
    """Inside a surrogate pair a UTF-16 column falls after it, a UTF-8 one inside a
    character before it; past the end, at the end (the codecs keep what the loop did)."""
    line = "a😀b"
    assert [units_to_cp(line, n, encoding) for n in range(len(code_points))] == code_points
    assert [cp_to_units(line, cp, encoding) for cp in range(4)] == (
        [0, 1, 3, 4] if encoding == "utf-16" else [0, 1, 5, 6]
    )


@pytest.mark.parametrize(
    ("start", "end", "text", "edit"),
    [
        (6, 12, "\nb = 3", ((0, 5), (1, 5), "\r\nb = 3")),  # starts between CR and LF
        (0, 6, "x", ((0, 0), (1, 0), "x\n")),  # ends between them
        (2, 3, "=", ((0, 2), (0, 3), "=")),  # elsewhere: as asked
    ],
)
def test_a_client_edit_never_splits_a_crlf(
    start: int, end: int, text: str, edit: tuple[tuple[int, int], tuple[int, int], str]
) -> None:
    """What the client applies gives the text asked for, though it cannot address the
    gap inside a CRLF."""
    document = Document.create(
        "untitled:d", 1, "a = 1\r\nb = 2\r\n", language_id=None, source="editor", encoding="utf-16"
    )
    where, replacement = document.client_edit(start, end, text)
    (start_line, start_char), (end_line, end_char), expected = edit
    assert where == Range(Position(start_line, start_char), Position(end_line, end_char))
    assert replacement == expected
    applied, _ = document.apply(TextEdit(where, replacement), 2)
    assert applied.text == document.text[:start] + text + document.text[end:]


# -- the editor ------------------------------------------------------------------------------


@pytest.mark.parametrize(("encoding", "character"), [("utf-8", 17), ("utf-16", 11), ("utf-32", 10)])
def test_sample_columns_per_encoding(encoding: PositionEncoding, character: int) -> None:
    """'a é e\u0301 中 😀' then ' z': the emoji ends at a different column in each encoding."""
    mirror = DocumentMirror(position_encoding=encoding)
    mirror.open("untitled:s", None, 1, SAMPLE)
    emoji_end = Position(0, character)
    change = mirror.change("untitled:s", 2, [TextEdit(Range(emoji_end, emoji_end), "!")])
    document = mirror.get("untitled:s")
    assert isinstance(document, Document)
    assert document.text.startswith("a é e\u0301 中 😀! z\r\n")
    assert change is not None
    assert change.byte_edits[0].start_byte == len("a é e\u0301 中 😀".encode())


def test_crlf_and_missing_final_newline_are_kept() -> None:
    mirror = DocumentMirror()
    text = "one\r\ntwo\r\nthree"
    mirror.open("untitled:c", None, 1, text)
    mirror.change("untitled:c", 2, [TextEdit(Range(Position(1, 3), Position(1, 3)), "!")])
    document = mirror.get("untitled:c")
    assert isinstance(document, Document)
    assert document.text == "one\r\ntwo!\r\nthree"
    assert document.line_text(1) == "two!"
    assert document.line_text(1, keep_end=True) == "two!\r\n"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_lone_surrogates_become_replacement_characters_in_place(
    encoding: PositionEncoding,
) -> None:
    """Half a pair cannot be UTF-8 encoded; U+FFFD takes its place and the same room in
    every encoding, so the editor's later positions still land where it meant."""
    mirror = DocumentMirror(position_encoding=encoding)
    mirror.open("untitled:s", None, 1, "a\ud83db\n")
    edit = TextEdit(Range(Position(0, 0), Position(0, 0)), "\udc00")
    mirror.change("untitled:s", 2, [edit])
    width = 3 if encoding == "utf-8" else 1  # of a lone surrogate, as the editor counts it
    at = Position(0, 2 * width + 2)  # after "?a?b"
    mirror.change("untitled:s", 3, [TextEdit(Range(at, at), "!")])
    document = mirror.get("untitled:s")
    assert isinstance(document, Document)
    assert document.text == "\ufffda\ufffdb!\n"
    document.text.encode("utf-8")  # strict: no surrogate left


def test_full_replacement_and_out_of_range_positions_clamp() -> None:
    mirror = DocumentMirror()
    mirror.open("untitled:f", None, 1, "abc\ndef")
    mirror.change("untitled:f", 2, [TextEdit(None, "new\ntext\n")])
    far = Position(99, 99)
    mirror.change("untitled:f", 3, [TextEdit(Range(Position(1, 99), far), "!")])
    document = mirror.get("untitled:f")
    assert isinstance(document, Document)
    assert document.text == "new\ntext!"
    assert document.version == 3


def test_an_unknown_uri_is_ignored_and_an_old_version_puts_it_out_of_sync(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Versions only grow; one that does not came out of order, so an edit applied before
    it was applied to the wrong text (v3 on v1's, v2 late): the mirror says it is out of
    sync rather than show a text the editor never had."""
    mirror = DocumentMirror()
    edit = [TextEdit(None, "x")]
    with caplog.at_level(logging.WARNING):
        assert mirror.change("untitled:nobody", 5, edit) is None
    assert "not open" in caplog.text
    mirror.open("untitled:v", None, 1, "hello\n")
    caplog.clear()
    at_start = Range(Position(0, 0), Position(0, 0))
    with caplog.at_level(logging.WARNING):
        assert mirror.change("untitled:v", 3, [TextEdit(at_start, "Y")]) is not None
        with pytest.raises(OutOfSync, match="version 2 after version 3"):
            mirror.change("untitled:v", 2, [TextEdit(at_start, "X")])
    assert "version 2 after version 3" in caplog.text
    lost = mirror.get("untitled:v")
    assert isinstance(lost, Unmirrored) and lost.reason is UnmirroredReason.OUT_OF_SYNC
    mirror.open("untitled:v", None, 4, "XYhello\n")  # the editor opens it again
    document = mirror.get("untitled:v")
    assert isinstance(document, Document) and document.text == "XYhello\n"


def test_a_range_that_ends_before_it_starts_puts_the_document_out_of_sync() -> None:
    """Neither an insertion at its start nor the swapped range is what the editor did for
    sure; the text it would give may be one the editor never had."""
    mirror = DocumentMirror()
    mirror.open("untitled:r", None, 1, "abc\ndef\n")
    backwards = Range(Position(1, 2), Position(0, 1))
    with pytest.raises(OutOfSync, match=r"ends \(0:1\) before it starts \(1:2\)"):
        mirror.change(
            "untitled:r",
            2,
            [TextEdit(Range(Position(0, 0), Position(0, 0)), "Y"), TextEdit(backwards, "X")],
        )
    lost = mirror.get("untitled:r")
    assert isinstance(lost, Unmirrored) and lost.reason is UnmirroredReason.OUT_OF_SYNC


def test_untitled_lives_in_memory_only_and_close_drops_it() -> None:
    mirror = DocumentMirror()
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    mirror.open("untitled:Untitled-2", "python", 1, "print(1)\n")
    mirror.close("untitled:Untitled-2")
    result = mirror.get("untitled:Untitled-2")
    assert isinstance(result, Unmirrored) and result.reason is UnmirroredReason.NOT_OPEN
    assert [(c.reason, c.old_version, c.new_version) for c in seen] == [
        ("open", None, 1),
        ("close", 1, None),
    ]


def test_oversize_and_nul_open_documents_are_not_mirrored() -> None:
    mirror = DocumentMirror(max_bytes=10)
    mirror.open("untitled:big", None, 1, "é" * 6)  # 12 bytes, 6 characters
    big = mirror.get("untitled:big")
    assert isinstance(big, Unmirrored) and big.reason is UnmirroredReason.TOO_LARGE
    mirror.open("untitled:nul", None, 1, "a\0b")
    nul = mirror.get("untitled:nul")
    assert isinstance(nul, Unmirrored) and nul.reason is UnmirroredReason.BINARY
    mirror.open("untitled:grows", None, 1, "small")
    assert mirror.change("untitled:grows", 2, [TextEdit(None, "x" * 11)]) is None
    grown = mirror.get("untitled:grows")
    assert isinstance(grown, Unmirrored) and grown.reason is UnmirroredReason.TOO_LARGE


def test_an_open_document_withheld_for_its_content_comes_back_once_it_fits() -> None:
    """Edits of a buffer over the size limit, or holding a NUL, still apply to its text:
    undoing the paste that made it so brings it back (it stayed unmirrored, silently,
    until the file was closed and opened again)."""
    mirror = DocumentMirror(max_bytes=10)
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    mirror.open("untitled:a", None, 1, "abc\n")
    pasted = TextEdit(Range(Position(0, 1), Position(0, 1)), "é" * 6 + "\n")
    assert mirror.change("untitled:a", 2, [pasted]) is None
    held = mirror.get("untitled:a")
    assert isinstance(held, Unmirrored) and held.reason is UnmirroredReason.TOO_LARGE
    typed = TextEdit(Range(Position(1, 0), Position(1, 0)), "!")  # still too large
    assert mirror.change("untitled:a", 3, [typed]) is None
    undo = TextEdit(Range(Position(0, 1), Position(1, 0)), "")
    change = mirror.change("untitled:a", 4, [undo])
    assert change is not None and (change.old_version, change.new_version) == (None, 4)
    back = mirror.get("untitled:a")
    assert isinstance(back, Document) and back.text == "a!bc\n" and back.version == 4
    mirror.change("untitled:a", 5, [TextEdit(Range(Position(0, 0), Position(0, 0)), "\0")])
    nul = mirror.get("untitled:a")
    assert isinstance(nul, Unmirrored) and nul.reason is UnmirroredReason.BINARY
    assert mirror.change("untitled:a", 6, [typed]) is None  # the NUL is still there
    mirror.change("untitled:a", 7, [TextEdit(Range(Position(0, 0), Position(0, 1)), "")])
    again = mirror.get("untitled:a")
    assert isinstance(again, Document) and again.text == "a!bc\n!"
    assert [(c.reason, c.old_version, c.new_version) for c in seen] == [
        ("open", None, 1),
        ("edit", 1, None),
        ("edit", None, 4),
        ("edit", 4, None),
        ("edit", None, 7),
    ]
    mirror.open("untitled:huge", None, 1, "x" * 81)  # over 8x the limit: not even kept
    assert mirror.change("untitled:huge", 2, [TextEdit(None, "small")]) is None
    huge = mirror.get("untitled:huge")
    assert isinstance(huge, Unmirrored) and huge.reason is UnmirroredReason.TOO_LARGE
    mirror.open("untitled:b", None, 1, "x" * 11)  # too large from the start: the same
    with pytest.raises(OutOfSync):  # a lost edit is lost for the held text too
        mirror.change("untitled:b", 1, [TextEdit(None, "small")])
    assert mirror.change("untitled:b", 2, [TextEdit(None, "small")]) is None
    lost = mirror.get("untitled:b")
    assert isinstance(lost, Unmirrored) and lost.reason is UnmirroredReason.OUT_OF_SYNC


def test_a_new_size_limit_applies_to_the_open_documents_at_once() -> None:
    """Raising maxFileBytes mirrors a buffer withheld as too large (it stayed refused until
    edited or reopened); lowering it withholds one over it."""
    mirror = DocumentMirror(max_bytes=10)
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    mirror.open("untitled:big", None, 1, "x" * 20)
    mirror.open("untitled:small", None, 1, "y" * 5)
    mirror.open("untitled:nul", None, 1, "x\0" * 10)
    mirror.set_max_bytes(30)
    big = mirror.get("untitled:big")
    assert isinstance(big, Document) and big.text == "x" * 20
    nul = mirror.get("untitled:nul")
    assert isinstance(nul, Unmirrored) and nul.reason is UnmirroredReason.BINARY
    mirror.set_max_bytes(4)
    assert all(isinstance(mirror.get(f"untitled:{n}"), Unmirrored) for n in ("big", "small"))
    assert [(c.uri, c.old_version, c.new_version) for c in seen[-3:]] == [
        ("untitled:big", None, 1),
        ("untitled:big", 1, None),
        ("untitled:small", 1, None),
    ]


def test_a_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    mirror = DocumentMirror()
    seen: list[str] = []

    def broken(change: DocumentChange) -> None:
        raise RuntimeError("listener bug")

    mirror.subscribe(broken)
    unsubscribe = mirror.subscribe(lambda change: seen.append(change.uri))
    with caplog.at_level(logging.ERROR):
        mirror.open("untitled:l", None, 1, "")
    assert seen == ["untitled:l"] and "listener failed" in caplog.text
    unsubscribe()
    mirror.change("untitled:l", 2, [TextEdit(None, "x")])
    assert seen == ["untitled:l"]


@pytest.mark.parametrize("end", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_byte_edits_drive_tree_sitter_incremental_parsing(end: str) -> None:
    """The syntax layer's use: tree.edit(ByteEdit) then reparse equals a fresh parse, and
    the tree's rows are the editor's lines, a lone CR's too (it was one row: the class on
    line 0)."""
    parser = Parser(Language(tree_sitter_python.language()))
    mirror = DocumentMirror()
    source = "def f(x):\n    return '中文'\n\nclass C:\n    pass\n".replace("\n", end)
    mirror.open("untitled:t.py", "python", 1, source)
    tree = parser.parse(as_parsed(source.encode()))
    change = mirror.change(
        "untitled:t.py",
        2,
        [
            TextEdit(Range(Position(1, 13), Position(1, 15)), "😀 ok"),
            TextEdit(Range(Position(3, 6), Position(3, 7)), "Renamed"),
        ],
    )
    assert change is not None
    for edit in change.byte_edits:
        tree.edit(**asdict(edit))
    document = mirror.get("untitled:t.py")
    assert isinstance(document, Document)
    incremental = parser.parse(document.read_bytes_at, tree)
    assert str(incremental.root_node) == str(parser.parse(as_parsed(document.data)).root_node)
    assert incremental.root_node.children[1].start_point == (3, 0)
    assert b"class Renamed" in document.data


# -- the disk ------------------------------------------------------------------------------


def age(path: Path, seconds: int = 60) -> None:
    """Move the mtime into the past, so the mirror trusts its stat (not racily clean)."""
    stamp = path.stat().st_mtime_ns - seconds * 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


def test_disk_file_is_read_once_and_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\r\n")
    age(path)
    mirror = DocumentMirror()
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    first = mirror.get_path(path)
    assert isinstance(first, Document) and first.source == "disk"
    assert first.text == "x = 1\r\n" and first.version == 0
    assert mirror.get_path(path) is first
    path.write_bytes(b"x = 22\n")
    second = mirror.get_path(path)
    assert isinstance(second, Document) and second.version == 1 and second.text == "x = 22\n"
    assert len(seen) == 1
    assert (seen[0].reason, seen[0].old_version, seen[0].new_version) == ("disk", 0, 1)
    assert seen[0].old_hash == first.hash and seen[0].new_hash == second.hash
    (full,) = seen[0].byte_edits
    assert (full.start_byte, full.old_end_byte, full.new_end_byte) == (0, 7, 7)


def test_same_size_same_mtime_rewrite_needs_mark_stale(tmp_path: Path) -> None:
    path = tmp_path / "b.txt"
    path.write_text("aaaa")
    age(path)
    mirror = DocumentMirror()
    first = mirror.get_path(path)
    stamp = path.stat().st_mtime_ns
    path.write_text("bbbb")
    os.utime(path, ns=(stamp, stamp))
    assert mirror.get_path(path) is first  # the stat cannot see it...
    mirror.mark_stale(path_to_uri(path))  # ...a watched-file event can
    fresh = mirror.get_path(path)
    assert isinstance(fresh, Document) and fresh.text == "bbbb" and fresh.version == 1


def test_recent_mtime_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "racy.txt"
    path.write_text("aaaa")
    mirror = DocumentMirror()
    mirror.get_path(path)
    stamp = path.stat().st_mtime_ns
    path.write_text("bbbb")
    os.utime(path, ns=(stamp, stamp))
    fresh = mirror.get_path(path)
    assert isinstance(fresh, Document) and fresh.text == "bbbb"


def test_a_file_with_a_byte_order_mark_reads_as_the_editor_sends_it(tmp_path: Path) -> None:
    """Editors drop a UTF-8 BOM from the text they show and send: the file read from disk
    is the same text, with the same hash, so opening and closing it changes nothing (the
    disk copy had a U+FEFF and another hash: the pin moved, the model saw a diff)."""
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    age(path)
    mirror = DocumentMirror()
    on_disk = mirror.get_path(path)
    assert isinstance(on_disk, Document) and on_disk.text == "x = 1\n"
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    mirror.open(path_to_uri(path), "python", 1, "x = 1\n")
    assert seen[-1].old_hash == seen[-1].new_hash == on_disk.hash
    mirror.close(path_to_uri(path))
    assert mirror.get_path(path) is on_disk


def test_touch_without_change_keeps_version(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("same")
    age(path, 120)
    mirror = DocumentMirror()
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    first = mirror.get_path(path)
    assert isinstance(first, Document)
    age(path, -60)
    again = mirror.get_path(path)
    assert isinstance(again, Document) and again.version == 0 and again.hash == first.hash
    assert seen == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\0\0\0", UnmirroredReason.BINARY),
        (b"caf\xe9 latin-1", UnmirroredReason.BINARY),
        (b"x" * 101, UnmirroredReason.TOO_LARGE),
    ],
)
def test_binary_and_oversize_files_get_a_reason(
    tmp_path: Path, content: bytes, reason: UnmirroredReason
) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(content)
    result = DocumentMirror(max_bytes=100).get_path(path)
    assert isinstance(result, Unmirrored) and result.reason is reason
    assert str(result).startswith(path_to_uri(path))


def test_deleted_file_and_directory(tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    path.write_text("here")
    mirror = DocumentMirror()
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    assert isinstance(mirror.get_path(path), Document)
    path.unlink()
    gone = mirror.get_path(path)
    assert isinstance(gone, Unmirrored) and gone.reason is UnmirroredReason.NOT_FOUND
    assert [(c.reason, c.new_version) for c in seen] == [("disk", None)]
    folder = mirror.get_path(tmp_path)
    assert isinstance(folder, Unmirrored) and folder.reason is UnmirroredReason.NOT_A_FILE


def test_open_document_wins_over_disk_until_closed(tmp_path: Path) -> None:
    path = tmp_path / "d.py"
    path.write_text("on disk\n")
    uri = path_to_uri(path)
    mirror = DocumentMirror()
    on_disk = mirror.get(uri)
    assert isinstance(on_disk, Document)
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    opened = mirror.open(uri, "python", 7, "in editor\n")
    assert opened is not None and mirror.get(uri) is opened and mirror.is_open(uri)
    assert (seen[0].old_version, seen[0].new_version, seen[0].reason) == (0, 7, "open")
    mirror.close(uri)
    back = mirror.get(uri)
    assert isinstance(back, Document) and back.text == "on disk\n" and back.source == "disk"


def test_file_uris_are_keyed_canonically(tmp_path: Path) -> None:
    path = tmp_path / "with space é.txt"
    path.write_text("x")
    mirror = DocumentMirror()
    loose = "file://" + str(path)  # unencoded, as some clients send it
    mirror.open(loose, None, 1, "from editor")
    assert normalize_uri(loose) == path_to_uri(path)
    document = mirror.get(path_to_uri(path))
    assert isinstance(document, Document) and document.text == "from editor"
    assert normalize_uri("file://localhost" + path.as_posix()) == path_to_uri(path)


def insert_at_start(text: str) -> TextEdit:
    return TextEdit(Range(Position(0, 0), Position(0, 0)), text)


def test_a_file_reached_by_links_is_one_document(tmp_path: Path) -> None:
    """A buffer opened by a linked folder's path, a link to the file, and the real path
    (the model's tools) are one document keyed by the real path; the editor is known by
    the name it used (a pin by another link is remembered while no buffer is open)."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.py").write_text("on disk\n")
    (tmp_path / "linked").symlink_to(real)
    (real / "alias.py").symlink_to("a.py")
    key, by_folder = path_to_uri(real / "a.py"), path_to_uri(tmp_path / "linked" / "a.py")
    by_alias = path_to_uri(real / "alias.py")
    mirror = DocumentMirror()
    seen: list[DocumentChange] = []
    mirror.subscribe(seen.append)
    opened = mirror.open(by_folder, "python", 1, "buffer\n")
    assert opened is not None and opened.uri == key
    mirror.change(by_folder, 2, [insert_at_start("# typed\n")])
    assert [mirror.get(uri) for uri in (key, by_alias)] == [mirror.get(by_folder)] * 2
    assert mirror.get_path(real / "a.py") is mirror.get(by_folder)
    assert {c.uri for c in seen} == {key} and mirror.is_open(by_alias)
    assert mirror.name(by_alias) == key and mirror.editor_uri(key) == by_folder  # the buffer
    mirror.close(by_folder)
    assert mirror.editor_uri(key) == by_alias and not mirror.is_open(key)
    back = mirror.get(by_folder)
    assert isinstance(back, Document) and (back.uri, back.text) == (key, "on disk\n")


def test_a_file_open_in_two_buffers_follows_the_one_opened_last(tmp_path: Path) -> None:
    """Two links to one file opened as two buffers: the mirror follows the buffer opened
    last (one text per file); the other's edits and close change nothing."""
    (tmp_path / "a.py").write_text("on disk\n")
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.symlink_to("a.py")
    two.symlink_to("a.py")
    mirror = DocumentMirror()
    mirror.open(path_to_uri(one), "python", 1, "first buffer\n")
    mirror.open(path_to_uri(two), "python", 1, "second buffer\n")
    assert mirror.change(path_to_uri(one), 2, [insert_at_start("# lost\n")]) is None
    mirror.close(path_to_uri(one))
    followed = mirror.get(path_to_uri(tmp_path / "a.py"))
    assert isinstance(followed, Document) and followed.text == "second buffer\n"
    assert mirror.editor_uri(followed.uri) == path_to_uri(two)
    mirror.close(path_to_uri(two))
    assert not mirror.is_open(followed.uri)


def test_an_open_buffer_keeps_its_file_when_its_link_is_changed(tmp_path: Path) -> None:
    """The link a buffer was opened by now leads elsewhere: its edits still apply to the
    file it was opened as (they were lost, the buffer no longer found)."""
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / "b.py").write_text("b\n")
    link = tmp_path / "link.py"
    link.symlink_to("a.py")
    mirror = DocumentMirror()
    mirror.open(path_to_uri(link), "python", 1, "a\n")
    link.unlink()
    link.symlink_to("b.py")
    change = mirror.change(path_to_uri(link), 2, [insert_at_start("# typed\n")])
    assert change is not None and change.uri == path_to_uri(tmp_path / "a.py")
    mirror.close(path_to_uri(link))
    assert not mirror.is_open(path_to_uri(tmp_path / "a.py"))


def test_a_file_on_another_host_is_not_the_local_file_of_its_path(tmp_path: Path) -> None:
    """file://server/share/a.py names a file on `server`: it was read as /share/a.py here."""
    (tmp_path / "a.py").write_text("local\n")
    remote = "file://server" + (tmp_path / "a.py").as_posix()
    assert uri_to_path(remote) is None and normalize_uri(remote) == remote
    mirror = DocumentMirror()
    unread = mirror.get(remote)
    assert isinstance(unread, Unmirrored) and unread.reason is UnmirroredReason.NOT_OPEN
    mirror.open(remote, None, 1, "remote buffer\n")
    opened = mirror.get(remote)
    assert isinstance(opened, Document) and opened.text == "remote buffer\n"


@pytest.mark.parametrize("uri", ["file:src/a.py", "file:../etc/passwd", "file://", "file:"])
def test_a_relative_file_uri_is_no_file_of_the_servers_working_folder(uri: str) -> None:
    """A file: URI names an absolute path: a relative one was read from wherever the server
    was started (`file:src/a.py` as $PWD/src/a.py, `file://` as $PWD itself)."""
    assert uri_to_path(uri) is None and normalize_uri(uri) == uri
    unread = DocumentMirror().get(uri)
    assert isinstance(unread, Unmirrored) and unread.reason is UnmirroredReason.NOT_OPEN


def test_a_nul_byte_in_a_file_uri_is_no_file_and_no_crash() -> None:
    """%00 decodes to a NUL, which no file name holds: the editor's buffer is mirrored,
    and the disk has no such file (os.stat raised ValueError out of the mirror)."""
    mirror = DocumentMirror()
    uri = "file:///tmp/a%00b.py"
    assert mirror.open(uri, "python", 1, "x = 1\n") is not None
    assert isinstance(mirror.get(uri), Document)
    mirror.close(uri)
    missing = mirror.get(uri)
    assert isinstance(missing, Unmirrored) and missing.reason is UnmirroredReason.NOT_FOUND


def test_a_lone_surrogate_in_a_file_uri_is_the_bytes_it_stands_for() -> None:
    """JSON can carry half a surrogate pair in a URI ("\\ud800"); no path can be encoded
    with it, so the URI is read as the UTF-8 bytes it would be written as, like its
    percent-encoded form, and names no file rather than failing every use."""
    loose, encoded = "file:///tmp/x\ud800.py", "file:///tmp/x%ED%A0%80.py"
    assert uri_to_path(loose) == uri_to_path(encoded)
    assert normalize_uri(loose) == encoded
    assert normalize_uri("file:///tmp/x\udce9.py") == "file:///tmp/x%E9.py"  # os.fsdecode's
    unmirrored = DocumentMirror().get(loose)
    assert isinstance(unmirrored, Unmirrored) and unmirrored.reason is UnmirroredReason.NOT_FOUND
