"""The engine's pure block helpers: splicing a range read, shrinking an input, URIs and labels."""

from __future__ import annotations

import json

import pytest
from ephemeral_context.context.blocks import (
    SHRINK_KEEP_CHARS,
    as_dict,
    block_tokens,
    clip_tokens,
    input_text,
    label_of,
    readable,
    result_block,
    shrink_input,
    splice,
    uri_of,
)


def test_splice_replaces_the_lines_a_range_read_showed() -> None:
    text = "a\nb\nc\nd\n"
    assert splice(text, 2, "B\nC\n") == "a\nB\nC\nd\n"
    assert splice(text, 2, "B") == "a\nB\nc\nd\n"  # a last line without newline keeps one
    assert splice(text, 4, "D") == "a\nb\nc\nD"  # at the end it stays as read


def test_shrink_input_keeps_short_fields_and_one_reference_for_the_long_ones() -> None:
    long = "x" * (SHRINK_KEEP_CHARS + 1)
    shrunk = shrink_input({"path": "/a.py", "old": long, "new": long, "n": 3}, "[[input:ab]]")
    assert shrunk == {"path": "/a.py", "old": "[[input:ab]]", "n": 3}


def test_input_text_collects_every_string_in_order() -> None:
    tool_input = {"path": "/a.py", "edits": [{"old": "1", "new": "2"}], "n": 3}
    assert input_text(tool_input) == "/a.py\n1\n2"


def test_uri_and_label_round_trip_paths_and_keep_other_schemes() -> None:
    assert uri_of("/src/a.py") == "file:///src/a.py"
    assert label_of(uri_of("/src/a.py")) == "/src/a.py"
    assert uri_of("untitled://1") == "untitled://1"


def test_a_label_is_the_path_the_clients_tools_take_unless_a_byte_is_not_utf8() -> None:
    """Claude Code's Read takes a label as written: a Windows `build\\x86` folder stays
    (it had been shown `build\\x5cx86`); only a name the API cannot carry is escaped."""
    windows = "C:\\build\\x86\\main.c"
    assert label_of(uri_of(windows)) == windows
    assert label_of(uri_of("/w/caf\udce9\\x86.py")) == "/w/caf\\xe9\\x5cx86.py"


def test_result_block_marks_errors_only_when_there_is_one() -> None:
    assert "is_error" not in result_block("t1", "ok", False)
    assert result_block("t1", "boom", True)["is_error"] is True


def test_as_dict_takes_sdk_blocks_and_refuses_anything_else() -> None:
    class Sdk:
        def model_dump(self, exclude_none: bool) -> dict[str, str]:
            return {"type": "text", "text": "hi"}

    assert as_dict(Sdk()) == {"type": "text", "text": "hi"}
    with pytest.raises(TypeError):
        as_dict(42)


def test_block_tokens_counts_text_as_prose_and_tool_use_as_json() -> None:
    seen: list[tuple[str, str]] = []

    def count(text: str, kind: str) -> int:
        seen.append((text, kind))
        return len(text)

    assert block_tokens(count, {"type": "text", "text": "hello"}) == 5
    use = {"type": "tool_use", "name": "bash", "input": {"command": "ls"}}
    block_tokens(count, use)
    assert seen[-1] == (json.dumps({"name": "bash", "input": {"command": "ls"}}), "json")


def test_clip_tokens_cuts_long_text_with_an_ellipsis() -> None:
    assert clip_tokens("short", 10) == "short"
    clipped = clip_tokens("y" * 500, 20)
    assert len(clipped) == 60 and clipped.endswith("…")


def test_a_one_line_json_answer_is_read_with_its_strings_on_lines_of_their_own() -> None:
    body = "def f():\n    return 1"
    inner = json.dumps([{"name_path": "f", "body": body, "relative_path": "a.py"}])
    answer = json.dumps({"result": inner})
    assert readable(answer) == "\n".join([answer, "f", body, "a.py"])
    assert readable(json.dumps({"result": body})) == json.dumps({"result": body}) + "\n" + body
    lines = json.dumps({"result": ["first", 'a "quoted" word', "third"]})
    assert readable(lines) == f'{lines}\nfirst\na "quoted" word\nthird'
    deep = "[" * 5_000 + '"a\\nb"' + "]" * 5_000  # deeper than Python recurses
    assert readable(deep) in (deep, f"{deep}\na\nb")


@pytest.mark.parametrize(
    "text",
    [
        "plain output\nof two lines",
        '"one string"',
        "[1, 2.5, null, true]",
        '{\n  "pretty": "printed\\nJSON"\n}',
        '{"cut off": "in the mid\\ndle',
        "[" * 100_000 + "]" * 100_000,
        "",
    ],
)
def test_any_other_text_is_read_as_it_is(text: str) -> None:
    assert readable(text) is text
