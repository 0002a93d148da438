"""The transcript reader on every real transcript, on hand-written ones and on bad input."""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.claude_tools import tool_file_path
from ephemeral_context.prices import REFERENCE_MODEL, priced
from ephemeral_context.replay.feed import after_change
from ephemeral_context.replay.flow import (
    Block,
    FileChange,
    LineEdit,
    Message,
    Pattern,
    Replacement,
    Session,
)
from ephemeral_context.replay.reader import (
    AGENT_LISTING,
    CLEARED_RESULT,
    MAX_LINE_BYTES,
    SKILL_LISTING,
    UNECHOED_PROMPT,
    UNLINKED,
    TranscriptError,
    api_content_block,
    read_session,
    takes_system_messages,
)
from ephemeral_context.replay.strategies import STRATEGIES
from ephemeral_context.replay.tools import ToolCalls, activated_root, replaced_strings, whole_number
from ephemeral_context.tokens import estimate_block_tokens

from tests.transcripts import (
    DRMACIVER,
    HISTORY,
    NAMES,
    SUBAGENT,
    VIEWER,
    manifest_entry,
    transcript,
)
from tests.unit.replay.builder import Transcript, cat_n, text, tool_use


@pytest.mark.parametrize("name", NAMES)
def test_real_transcript_calls_and_usage_match_the_manifest(name: str) -> None:
    """Each call counted once (lines repeat message.id) and its usage summed once."""
    session = read_session(transcript(name))
    expected = manifest_entry(name)
    assert session.problems == []
    assert len(session.calls) == expected["llm_turns"]
    usage = [call.usage for call in session.calls]
    assert all(u is not None for u in usage)
    assert sum(u.input_tokens for u in usage if u) == expected["usage_sum"]["input_tokens"]
    assert (
        sum(u.cache_read_input_tokens for u in usage if u)
        == expected["usage_sum"]["cache_read_input_tokens"]
    )
    assert (
        sum(u.cache_creation_input_tokens for u in usage if u)
        == expected["usage_sum"]["cache_creation_input_tokens"]
    )
    starts = [call.started for call in session.calls]
    assert starts == sorted(starts)
    for call in session.calls:
        request = session.request(call)
        assert request[-1].role == "user"
        assert all(a.role != b.role for a, b in itertools.pairwise(request))


def test_compaction_starts_a_thread_with_the_summary_and_unrecorded_context() -> None:
    session = read_session(transcript(HISTORY))
    assert len(session.threads) == 2
    after = list(session.threads.values())[1]
    first = after.messages[0]
    assert first.blocks[0].text.startswith("This session is being continued")
    # The first call after the compaction read the prefix from a warm cache (16,658 tokens)
    # and carried ~65k tokens Claude Code re-attached without recording them.
    assert after.warm_tokens == 16_658
    assert after.prefix_tokens == 16_658
    assert after.hidden_tokens > 30_000
    assert session.models == ["claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"]


def test_inline_sidechains_become_their_own_threads() -> None:
    session = read_session(transcript(VIEWER))
    kinds = sorted(thread.prefix_key for thread in session.threads.values())
    assert kinds == ["agent"] * 5 + ["main"]


def test_read_and_edit_results_keep_their_meaning() -> None:
    session = read_session(transcript(HISTORY))
    blocks = [b for t in session.threads.values() for m in t.messages for b in m.blocks]
    views = [b.file_view for b in blocks if b.file_view is not None]
    changes = [b.file_change for b in blocks if b.file_change is not None]
    assert len(views) >= 15
    assert all(view.path.startswith("/") and view.content for view in views)
    assert len(changes) >= 10
    assert all(change.replacements and change.original for change in changes)


def hand_written(tmp_path: Path) -> Path:
    t = Transcript()
    t.user("fix the bug in app.py")
    t.assistant(
        [text("Reading it."), tool_use("t1", "Read", file_path="/w/app.py")],
        usage={"read": 9000, "write": 300},
    )
    t.tool_result("t1", cat_n("def f():\n    return 1"))
    t.assistant(
        [tool_use("t2", "Edit", file_path="/w/app.py", old_string="1", new_string="2")],
        usage={"read": 9300, "write": 80},
    )
    t.tool_result("t2", "The file /w/app.py has been updated successfully.")
    t.other("progress", data={"type": "hook_progress"})
    t.assistant([text("Done.")], usage={"read": 9380, "write": 60})
    return t.write(tmp_path / "session.jsonl")


def test_hand_written_session(tmp_path: Path) -> None:
    session = read_session(hand_written(tmp_path))
    assert session.problems == []
    assert [len(session.request(c)) for c in session.calls] == [1, 3, 5]
    read = session.request(session.calls[1])[-1].blocks[0]
    assert read.tool == "Read"
    assert read.file_view is not None
    assert read.file_view.content == "def f():\n    return 1"
    assert read.file_view.start_line == 1
    edit = session.request(session.calls[2])[-1].blocks[0]
    assert edit.file_change is not None
    assert edit.file_change.replacements == (Replacement("1", "2"),)
    # The first call read 9,000 tokens someone else had cached: the prefix is what it read.
    thread = session.threads[session.calls[0].thread]
    assert thread.warm_tokens == 9000
    assert thread.prefix_tokens == 9000


def test_a_pasted_screenshot_costs_its_pixels_in_a_prompt_and_in_a_tool_result(
    tmp_path: Path,
) -> None:
    """A 906 x 181 screenshot (a corpus session's) costs 219 tokens, not a flat 1,600: in a
    prompt and in what a Read of the image returns."""
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 906, 181) + b"\0" * 40
    source = {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(header).decode(),
    }
    t = Transcript()
    t.user([{"type": "image", "source": source}, {"type": "text", "text": "What is wrong here?"}])
    t.assistant([tool_use("r1", "Read", file_path="/w/shot.png")])
    t.tool_result("r1", "")  # replaced below by the image Claude Code sends
    t.assistant([text("The label overflows.")])
    lines = t.text().splitlines()
    record = json.loads(lines[2])
    record["message"]["content"][0]["content"] = [{"type": "image", "source": source}]
    lines[2] = json.dumps(record)
    path = tmp_path / "shot.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    session = read_session(path)
    assert session.problems == []
    blocks = {b.type: b for m in session.request(session.calls[1]) for b in m.blocks}
    assert blocks["image"].tokens == 219
    assert blocks["tool_result"].tokens - estimate_block_tokens("", "tool_output") == 219


def test_bad_lines_are_reported_with_file_and_line_and_skipped(tmp_path: Path) -> None:
    good = hand_written(tmp_path).read_text().splitlines()
    lines = [*good[:2], "this is not json", '{"type": "mystery", "uuid": "x"}', "[1, 2]", *good[2:]]
    lines.append('{"type": "user", "message": {"role": "us')  # truncated last line
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    session = read_session(path)
    assert len(session.calls) == 3
    assert [(p.line, p.message) for p in session.problems] == [
        (3, "not JSON 'Expecting value' (1 line); skipped"),
        (4, "unknown record type 'mystery' (1 line); skipped"),
        (5, "not a JSON object but 'list' (1 line); skipped"),
        (len(lines), "truncated last line (Unterminated string starting at); skipped"),
    ]
    assert all(p.path == str(path) for p in session.problems)


def test_a_log_mixed_into_a_transcript_is_one_note_not_a_line_each(tmp_path: Path) -> None:
    """Three thousand lines of another program's log: one note says how many, and a last
    line that ends as every line does is one of them, not a truncated record."""
    good = hand_written(tmp_path).read_text().splitlines()
    noise = [f"2026-12-06 INFO step {n}" for n in range(3000)]
    path = tmp_path / "noisy.jsonl"
    path.write_text("\n".join([*good[:2], *noise, *good[2:], "the end"]) + "\n")
    session = read_session(path)
    assert len(session.calls) == 3
    assert [(p.line, p.message) for p in session.problems] == [
        (3, "not JSON 'Extra data' (3000 lines), 'Expecting value' (1 line); skipped")
    ]


def test_a_line_nested_too_deeply_to_parse_is_skipped_not_the_file(tmp_path: Path) -> None:
    """A line nested deeper than Python's JSON parser goes (valid JSON all the same): one
    note, and the rest of the session replays."""
    good = hand_written(tmp_path).read_text().splitlines()
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([*good[:2], deep, *good[2:]]) + "\n")
    session = read_session(path)
    assert len(session.calls) == 3
    assert [(p.line, p.message) for p in session.problems] == [
        (3, "nested too deeply to parse; skipped")
    ]


def test_a_line_longer_than_any_request_is_skipped_a_piece_at_a_time(tmp_path: Path) -> None:
    """A file of NULs with no newline (a sparse file, a disk image named .jsonl) is read in
    pieces, never held whole: memory stays below the longest line taken, whatever its size."""
    good = hand_written(tmp_path).read_bytes()
    path = tmp_path / "sparse.jsonl"
    with path.open("wb") as stream:
        stream.truncate(4 * MAX_LINE_BYTES)  # a hole: no disk space, read as NULs
        stream.seek(0, os.SEEK_END)
        stream.write(b"\n" + good)
    tracemalloc.start()
    try:
        session = read_session(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_LINE_BYTES
    assert len(session.calls) == 3
    assert [(p.line, p.message) for p in session.problems] == [
        (1, "longer than 64 MiB, more than any request holds; skipped")
    ]


def test_timestamps_that_cannot_be_read_are_one_note_not_silence(tmp_path: Path) -> None:
    """A sent line's time that is no ISO 8601 date is taken as the line before's: the idle
    gaps there, which decide when the cache is cold, are a guess, and one note says so."""
    lines = [json.loads(line) for line in hand_written(tmp_path).read_text().splitlines()]
    lines[2]["timestamp"] = "yesterday at noon"
    lines[3]["timestamp"] = 1_767_225_600
    lines[4]["timestamp"] = "12/01/2026"
    path = tmp_path / "times.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = read_session(path)
    assert len(session.calls) == 3
    guess = "each taken as the line before's, so the cache's idle gaps there are a guess"
    assert [(p.line, p.message) for p in session.problems] == [
        (3, f"timestamps not ISO 8601 but 'str' (2 lines), 'int' (1 line); {guess}")
    ]


def test_bytes_that_are_not_utf8_are_replaced_with_a_note(tmp_path: Path) -> None:
    """A transcript damaged on disk (or written by a tool in another encoding) still
    replays every call; the bytes read as U+FFFD are not changed unsaid."""
    good = hand_written(tmp_path).read_bytes().splitlines(keepends=True)
    damaged = good[0].replace(b"fix the bug", b"fix the \xff\xfe bug")
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b"".join([damaged, *good[1:4], b"\xc3\n", *good[4:]]))
    session = read_session(path)
    assert len(session.calls) == 3
    assert "fix the \ufffd\ufffd bug" in session.request(session.calls[0])[0].blocks[0].text
    assert [(p.line, p.message) for p in session.problems] == [
        (
            1,
            "bytes not UTF-8: 'invalid start byte' (1 line), 'invalid continuation byte' (1 line);"
            " each read as U+FFFD",
        ),
        (5, "not JSON 'Expecting value' (1 line); skipped"),
    ]


def test_record_types_a_newer_claude_code_writes_get_one_note_per_file(tmp_path: Path) -> None:
    good = hand_written(tmp_path).read_text().splitlines()
    new = [json.dumps({"type": "turn-telemetry", "uuid": f"n{i}"}) for i in range(300)]
    path = tmp_path / "newer.jsonl"
    path.write_text("\n".join([*good[:2], *new, '{"type": 7}', *good[2:]]))
    session = read_session(path)
    assert len(session.calls) == 3
    assert [(p.line, p.message) for p in session.problems] == [
        (3, "unknown record types 'turn-telemetry' (300 lines), 7 (1 line); skipped")
    ]


def test_unknown_tools_get_one_note_per_session_and_their_results_still_count(
    tmp_path: Path,
) -> None:
    t = Transcript()
    t.user("go")
    t.assistant([tool_use("t1", "Teleport", where="mars")], usage={"write": 5000})
    t.tool_result("t1", "arrived")
    t.assistant([tool_use("t2", "Teleport", where="venus")], usage={"read": 5000, "write": 50})
    t.tool_result("t2", "arrived again")
    t.assistant([tool_use("t3", "Warp", factor=9)], usage={"read": 5050, "write": 40})
    t.tool_result("t3", "warped")
    t.assistant([text("ok")], usage={"read": 5090, "write": 40})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert [p.message for p in session.problems] == [
        "unknown tools 'Teleport' (2 uses), 'Warp' (1 use): results counted as plain tool output"
    ]
    assert session.request(session.calls[2])[-1].blocks[0].text == "arrived again"


def test_a_transcript_without_calls_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = (
        Transcript().user("hello").other("summary", summary="nothing").write(tmp_path / "e.jsonl")
    )
    session = read_session(path)
    assert session.calls == []
    assert [p.message for p in session.problems] == ["no API calls in this transcript"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_session(empty).calls == []


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match=r"missing\.jsonl: cannot read"):
        read_session(tmp_path / "missing.jsonl")
    with pytest.raises(TranscriptError, match="cannot read"):
        read_session(tmp_path)  # a folder


@pytest.mark.parametrize("hooks", [0, 3])
def test_stream_json_form(tmp_path: Path, hooks: int) -> None:
    """`claude -p --output-format stream-json`: no links, no times, sub-agent lines by parent id.
    The events of SessionStart hooks come before the init record (with three hooks it had
    been past the first five records, and the file was read as a transcript: no calls)."""

    def line(kind: str, content: object, parent: str | None, **extra: object) -> str:
        message: dict[str, object] = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": f"m{len(records)}", "model": "claude-sonnet-4-5", "usage": usage}
        return json.dumps({"type": kind, "message": message, "parent_tool_use_id": parent, **extra})

    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 500,
        "cache_read_input_tokens": 12000,
    }
    task = tool_use("t1", "Task", description="find", prompt="find the py files")
    records: list[str] = [
        json.dumps({"type": "system", "subtype": event, "hook_id": str(n), "session_id": "s"})
        for event in ("hook_started", "hook_response")
        for n in range(hooks)
    ]
    records.append(json.dumps({"type": "system", "subtype": "init", "session_id": "s"}))
    records.append(line("user", "list the python files", None))
    records.append(line("assistant", [task], None))
    records.append(line("user", "find the py files", "t1"))
    records.append(line("assistant", [text("a.py b.py")], "t1"))
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py b.py"}]
    records.append(line("user", result, None, tool_use_result={"status": "completed"}))
    records.append(line("assistant", [text("two files")], None))
    records.append(json.dumps({"type": "result", "num_turns": 2, "usage": usage}))
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(records) + "\n")
    session = read_session(path)
    assert session.problems == []
    first, task_first = f"main@{2 + 2 * hooks}", f"task:t1@{4 + 2 * hooks}"
    assert [(c.thread, len(session.request(c))) for c in session.calls] == [
        (first, 1),
        (task_first, 1),
        (first, 3),
    ]
    agent = session.threads[task_first]
    assert (agent.prefix_key, agent.task) == ("agent", "t1")
    assert session.calls[2].usage is not None
    assert session.calls[2].usage.cache_read_input_tokens == 12000


def test_stream_json_output_without_its_prompts_still_has_every_call(tmp_path: Path) -> None:
    """stream-json output echoes the person's prompts only with --replay-user-messages: the
    first response follows nothing and the next turn's follows the last answer (the first
    call had been dropped, and the two answers sent as one message). A placeholder stands
    for each prompt, with one note."""
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 0}

    def response(n: int, block: dict[str, Any]) -> str:
        message = {"id": f"m{n}", "role": "assistant", "model": "claude-sonnet-4-5"}
        return json.dumps(
            {"type": "assistant", "message": message | {"content": [block], "usage": usage}}
        )

    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]
    records = [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s"}),
        response(1, tool_use("t1", "Bash", command="ls")),
        json.dumps({"type": "user", "message": {"role": "user", "content": result}}),
        response(2, text("one file")),
        json.dumps({"type": "result", "num_turns": 2}),
        response(3, text("still one")),  # the second turn, after a prompt not echoed
    ]
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(records) + "\n")
    session = read_session(path)
    requests = [session.request(call) for call in session.calls]
    assert [[m.role for m in request] for request in requests] == [
        ["user"],
        ["user", "assistant", "user"],
        ["user", "assistant", "user", "assistant", "user"],
    ]
    assert requests[2][-1].blocks[0].text == UNECHOED_PROMPT
    assert [(p.line, p.message.split(";")[0]) for p in session.problems] == [
        (2, "stream-json responses with no prompt before them, in thread 'main' (2 lines)")
    ]


def test_subagent_file_without_tool_use_results_parses_read_text() -> None:
    """agent-*.jsonl files carry no toolUseResult: Read views come from the cat -n text."""
    session = read_session(transcript(SUBAGENT))
    (thread,) = session.threads.values()
    assert thread.prefix_key == "agent"
    views = [b.file_view for m in thread.messages for b in m.blocks if b.file_view is not None]
    assert len(views) >= 15
    for view in views:
        assert "\u2192" not in view.content.split("\n")[0]
        assert "<system-reminder>" not in view.content
        assert view.num_lines == view.content.count("\n") + 1


def test_inline_subagents_are_tied_to_their_task_calls() -> None:
    session = read_session(transcript(VIEWER))
    agents = [t for t in session.threads.values() if t.prefix_key == "agent"]
    assert all(t.task is not None and t.task.startswith("toolu_") for t in agents)
    assert len({t.task for t in agents}) == 5


def test_a_resent_edited_message_forks_a_thread(tmp_path: Path) -> None:
    """The user edits their last prompt and re-sends: two branches from one root."""
    t = Transcript()
    t.user("write hello.py")
    t.assistant([text("Which greeting?")], usage={"write": 5000})
    branch = t.parent
    t.user("say hello")
    t.assistant([text("Done.")], usage={"read": 5000, "write": 20})
    t.parent = branch
    t.user("say hi instead")
    t.assistant([text("Done, with hi.")], usage={"read": 5000, "write": 22})
    session = read_session(t.write(tmp_path / "fork.jsonl"))
    assert len(session.threads) == 2
    first, second = session.threads.values()
    assert second.id == f"{first.id}#1"
    assert [m.blocks[0].text for m in session.request(session.calls[2])] == [
        "write hello.py",
        "Which greeting?",
        "say hi instead",
    ]
    assert session.calls[1].thread == first.id and session.calls[2].thread == second.id


def test_synthetic_messages_are_not_calls_and_unknown_models_take_the_reference_price(
    tmp_path: Path,
) -> None:
    t = Transcript(model="acme-large-2")
    t.user("hi")
    t.assistant([text("API Error: overloaded")], usage={}, model="<synthetic>")
    t.user("hi again")
    t.assistant([text("hello")], usage={"write": 3000})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 1
    request = session.request(session.calls[0])
    assert [b.text for m in request for b in m.blocks] == ["hi", "hi again"]
    assert [p.message for p in session.problems] == [
        f"no list price for model 'acme-large-2': its calls are priced as {REFERENCE_MODEL}"
    ]
    (call,) = STRATEGIES["recorded"].replay(session).calls
    assert call.price.rates == priced(REFERENCE_MODEL, call.started).rates
    assert not call.price.known


def test_a_synthetic_answer_that_is_no_error_is_sent_but_is_no_call(tmp_path: Path) -> None:
    """After a compaction Claude Code answers "No response requested." itself and sends it on."""
    t = Transcript()
    t.user("Continue from where you left off.")
    t.assistant([text("No response requested.")], usage={}, model="<synthetic>")
    t.lines[-1]["isApiErrorMessage"] = False
    t.user("and now?").assistant([text("hello")], usage={"write": 3000})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 1
    assert [m.role for m in session.request(session.calls[0])] == ["user", "assistant", "user"]


def test_a_version_with_digits_int_does_not_take_is_no_release(tmp_path: Path) -> None:
    """ "2.1.²" is digits to str.isdigit, not to int(): the session had been lost to a
    ValueError; such a version is no release number, as "2.1.x" is."""
    t = Transcript()
    t.user("hi").assistant([text("hello")], usage={"write": 3000})
    t.lines[-1]["version"] = "2.1.\u00b2"
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 1


def test_an_unknown_content_block_type_is_one_note_not_one_a_line(tmp_path: Path) -> None:
    """A newer Claude Code's new block in every response: one note with how many lines, as
    for unknown record types (it was a note for each line); so are records without message
    content."""
    t = Transcript()
    for n in range(30):
        t.user(f"question {n}")
        t.assistant([{"type": "citation_set", "items": []}, text("one")], usage={"write": 3000})
    t.lines.extend({"type": "user", "uuid": f"u{n}", "message": None} for n in range(5))
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 30
    assert [(p.line, p.message) for p in session.problems] == [
        (91, "record without message content, of type 'user' (5 lines); skipped"),
        (2, "unknown content block type 'citation_set' (30 lines); skipped"),
    ]


def test_a_file_without_parent_links_is_read_in_file_order(tmp_path: Path) -> None:
    """An export that drops every parentUuid: each line follows the one before it (every
    response had followed nothing, and the file gave no calls)."""
    t = Transcript()
    t.user("read it")
    t.assistant([tool_use("t1", "Read", file_path="/a.py")], usage={"write": 4000})
    t.tool_result("t1", cat_n("x = 1"))
    t.assistant([text("ok")], usage={"read": 4000, "write": 50})
    linked = read_session(t.write(tmp_path / "linked.jsonl"))
    for line in t.lines:
        line["parentUuid"] = None
    unlinked = read_session(t.write(tmp_path / "unlinked.jsonl"))
    assert [[m.blocks for m in unlinked.request(c)] for c in unlinked.calls] == [
        [m.blocks for m in linked.request(c)] for c in linked.calls
    ]
    assert [(p.line, p.message) for p in unlinked.problems] == [(2, UNLINKED)]


def test_fields_of_the_wrong_shape_are_reported_not_raised(tmp_path: Path) -> None:
    t = Transcript()
    t.user("read it")
    t.assistant([tool_use("t1", "Read", file_path="/a.py")], usage={"write": 4000})
    t.tool_result("t1", cat_n("x = 1"), {"file": {"content": "x = 1", "startLine": "first"}})
    t.assistant([text("ok")], usage={"read": 4000, "write": 50})
    t.user("thanks")
    t.assistant([text("welcome")], usage={"read": 4050, "write": 20})
    t.lines[5]["message"]["usage"]["cache_creation"] = "lots"  # not an object
    session = read_session(t.write(tmp_path / "odd.jsonl"))
    problems = [(p.line, re.split(r" ['\"(]", p.message)[0]) for p in session.problems]
    assert problems == [(6, "unreadable usage"), (3, "malformed Read result")]
    assert len(session.calls) == 3  # the response with unreadable usage is a call all the same
    assert session.calls[2].usage is None
    result = session.request(session.calls[1])[-1].blocks[0]
    assert result.file_view is not None and result.file_view.content == "x = 1"


def test_usage_past_every_context_window_is_unreadable(tmp_path: Path) -> None:
    """A count no request can have (1e12: a float in JSON) would size the anchored blocks
    and every strategy's requests; the call replays unrecorded instead, with a note."""
    t = Transcript()
    t.user("hi").assistant([text("hello")], usage={"write": 3000})
    t.user("and?").assistant([text("so")], usage={"read": 3000, "write": 40})
    t.lines[3]["message"]["usage"]["input_tokens"] = 1e12
    session = read_session(t.write(tmp_path / "s.jsonl"))
    (problem,) = session.problems
    assert problem.message.startswith("unreadable usage ")
    assert session.calls[1].usage is None
    assert max(b.tokens for m in session.request(session.calls[1]) for b in m.blocks) < 100


@pytest.mark.parametrize("field", ["input_tokens", "cache_creation_input_tokens", "output_tokens"])
def test_a_count_too_large_for_a_float_is_unreadable_usage(tmp_path: Path, field: str) -> None:
    """1e400 is valid JSON that reads as an infinite float, which no count can be taken as:
    that call replays unrecorded, with a note; the session is read (it was an error)."""
    t = Transcript()
    t.user("hi").assistant([text("hello")], usage={"write": 3000})
    t.user("and?").assistant([text("so")], usage={"read": 3000, "write": 40})
    t.lines[3]["message"]["usage"][field] = 987654321
    path = t.write(tmp_path / "s.jsonl")
    path.write_text(path.read_text().replace("987654321", "1e400"))
    session = read_session(path)
    (problem,) = session.problems
    assert problem.message.startswith("unreadable usage ")
    assert len(session.calls) == 2 and session.calls[1].usage is None


def test_usage_unreadable_in_every_response_is_one_note_not_one_a_line(tmp_path: Path) -> None:
    """Usage every response records the same wrong way (counts as words): one note with how
    many lines, not a note for each line of each response."""
    t = Transcript()
    for n in range(30):
        t.user(f"question {n}").assistant([text("one"), text("two")], usage={"write": 3000})
    for line in t.lines:
        if line["type"] == "assistant":
            line["message"]["usage"]["output_tokens"] = "many"
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert len(session.calls) == 30
    error = "invalid literal for int() with base 10: 'many'"
    assert [(p.line, p.message) for p in session.problems] == [
        (2, f"unreadable usage {error!r} (60 lines); those calls replay as unrecorded")
    ]


def test_a_line_written_twice_is_read_once(tmp_path: Path) -> None:
    """Every line twice (a file merged with a copy of itself): the same calls, requests and
    responses as the file once (each response had carried its blocks twice), and one note."""
    t = Transcript()
    t.user("read it")
    t.assistant([text("reading"), tool_use("t1", "Read", file_path="/a.py")], usage={"write": 4000})
    t.tool_result("t1", cat_n("x = 1"))
    t.assistant([text("ok")], usage={"read": 4000, "write": 50})
    once = read_session(t.write(tmp_path / "once.jsonl"))
    t.lines = [line for line in t.lines for _ in range(2)]
    twice = read_session(t.write(tmp_path / "twice.jsonl"))

    def blocks(session: Session) -> list[Any]:  # the line numbers aside
        return [
            ([m.blocks for m in session.request(c)], c.response.blocks, c.usage)
            for c in session.calls
        ]

    assert blocks(twice) == blocks(once)
    assert [(p.line, p.message) for p in twice.problems] == [
        (
            2,
            "the uuid of an earlier line again, on lines of types 'user' (2 lines), "
            "'assistant' (3 lines); skipped: each uuid is read from its first line",
        )
    ]


def test_tool_use_ids_a_model_reuses_in_each_response_are_told_apart(tmp_path: Path) -> None:
    """A model behind a gateway that numbers its tool calls anew in each response (call_0 in
    every one): each result still answers its own call, as with unique ids, and the
    strategies that clear results by id clear the same ones (clear-tool-uses had cleared
    none: the id of the newest uses, which it keeps, was every result's)."""

    def session(ids: list[str]) -> Session:
        t = Transcript()
        t.user("look around")
        for n, use_id in enumerate(ids):
            t.assistant([tool_use(use_id, "Bash", command=f"ls {n}")], usage={})
            t.tool_result(use_id, f"file {n}\n" * 4000)
        t.assistant([text("done")], usage={})
        return read_session(t.write(tmp_path / f"{ids[-1]}.jsonl"))

    unique = session([f"toolu_{n}" for n in range(12)])
    reused = session(["call_0"] * 12)
    request = reused.request(reused.calls[-1])
    uses = [b.tool_use_id for m in request for b in m.blocks if b.type == "tool_use"]
    results = [b.tool_use_id for m in request for b in m.blocks if b.type == "tool_result"]
    assert len(set(uses)) == 12 and results == uses
    for name in ("clear-tool-uses", "clear-at-least", "recorded"):
        strategy = STRATEGIES[name]
        assert strategy.replay(reused).billed_input == strategy.replay(unique).billed_input


def test_random_damage_to_a_real_transcript_never_raises(tmp_path: Path) -> None:
    """Any field of any line replaced by a value of another type: problems, never a crash."""
    import random

    source = transcript(DRMACIVER)
    lines = source.read_text(encoding="utf-8").splitlines()
    odd_values: list[object] = [None, 7, -1, "text", [], {}, [1, "x"], {"type": 3}, 1.5, True]
    rng = random.Random(20261130)

    def damage(value: object) -> object:
        if isinstance(value, dict) and value and rng.random() < 0.7:
            key = rng.choice(list(value))
            return {**value, key: damage(value[key])}
        if isinstance(value, list) and value and rng.random() < 0.7:
            i = rng.randrange(len(value))
            return [*value[:i], damage(value[i]), *value[i + 1 :]]
        return rng.choice(odd_values)

    for attempt in range(150):
        damaged = list(lines)
        for _ in range(3):
            i = rng.randrange(len(damaged))
            damaged[i] = json.dumps(damage(json.loads(damaged[i])))
        path = tmp_path / f"damaged-{attempt}.jsonl"
        path.write_text("\n".join(damaged), encoding="utf-8")
        session = read_session(path)
        STRATEGIES["recorded"].replay(session)


def listing(*names: str) -> dict[str, object]:
    lines = [f"- {name}: does {name} things" for name in names]
    return {"type": "agent_listing_delta", "addedLines": lines, "showConcurrencyNote": False}


def test_attachments_are_system_messages_for_models_that_take_them(tmp_path: Path) -> None:
    """Opus 4.8 gets an attachment as a role "system" message right after the prompt."""
    t = Transcript(model="claude-opus-4-8")
    t.user("go").other("attachment", attachment=listing("Explore"))
    t.assistant([text("ok")], usage={"write": 5000})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    request = session.request(session.calls[0])
    assert [m.role for m in request] == ["user", "system"]
    assert request[1].blocks[0].text == AGENT_LISTING + "- Explore: does Explore things"


@pytest.mark.parametrize(("version", "marked"), [("2.1.197", False), ("2.1.212", True)])
def test_a_trailing_system_message_carries_the_breakpoint_from_2_1_212(
    tmp_path: Path, version: str, marked: bool
) -> None:
    """2.1.154 to 2.1.211 mark the prompt and send the system message after it as plain
    input (which then sizes it); later releases mark the system message."""
    t = Transcript(model="claude-opus-4-8")
    t.user("go").other("attachment", attachment=listing("Explore"))
    t.assistant([text("ok")], usage={"input": 0 if marked else 30, "write": 5000}, version=version)
    session = read_session(t.write(tmp_path / "s.jsonl"))
    system = session.request(session.calls[0])[-1]
    assert system.role == "system" and system.carries_mark is marked
    if not marked:
        assert system.tokens == 30
    [call] = STRATEGIES["recorded"].replay(session).calls
    assert call.usage.input_tokens == (0 if marked else 30)


def test_attachments_go_before_the_prompt_as_reminders_for_other_models(tmp_path: Path) -> None:
    """Older models: system-reminder text moved up past the prompt, not past a tool result;
    after a result sent as a string, into its text (Claude Code joins them: its sources from
    2.1.22 on, and tests/e2e)."""
    t = Transcript()
    t.user("go").other("attachment", attachment=listing("Explore"))
    t.other("attachment", attachment={"type": "skill_listing", "content": "- review: reviews"})
    t.assistant([tool_use("t1", "Bash", command="ls")], usage={"write": 5000})
    t.tool_result("t1", "a.py")
    t.other("attachment", attachment={"type": "queued_command", "prompt": "and then?"})
    t.assistant([text("ok")], usage={"read": 5000, "write": 30})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    first, _, last = session.request(session.calls[1])
    assert [b.text.split("\n")[1][:12] for b in first.blocks[:2]] == [
        AGENT_LISTING[:12],
        SKILL_LISTING[:12],
    ]
    assert first.blocks[0].text.startswith("<system-reminder>\n")
    assert first.blocks[2].text == "go"
    assert [b.type for b in last.blocks] == ["tool_result"]
    assert last.blocks[0].text == "a.py\n\n<system-reminder>\nand then?\n</system-reminder>"


def reminder(body: str) -> str:
    return f"<system-reminder>\n{body}\n</system-reminder>"


def test_hooks_are_sent_as_claude_code_sends_them(tmp_path: Path) -> None:
    """2.1.22 to 2.1.197 record hooks without their text as sent: a prompt hook's output goes
    as "<event> hook success: ...", added context as "<name> hook additional context: ...",
    a PostToolUse formatter's stdout and a permission decision not at all (their sources and
    runs against tests/fakes). Every string field had been sent, the command included."""
    t = Transcript()
    hook = {"hookName": "UserPromptSubmit", "hookEvent": "UserPromptSubmit", "toolUseID": "u1"}
    t.user("go").other(
        "attachment",
        attachment={"type": "hook_success", "content": "be brief", "command": "echo", **hook},
    )
    read = tool_use("t1", "Read", file_path="/a.py")
    t.assistant([read], usage={"write": 5000}, version="2.1.197")
    t.tool_result("t1", "1\tx = 1")
    post = {"hookName": "PostToolUse:Read", "hookEvent": "PostToolUse", "toolUseID": "t1"}
    t.other("attachment", attachment={"type": "hook_success", "content": "1\n2\n3", **post})
    t.other(
        "attachment", attachment={"type": "hook_additional_context", "content": ["NOTE"], **post}
    )
    t.other("attachment", attachment={"type": "hook_permission_decision", "decision": "allow"})
    t.other("attachment", attachment={"type": "command_permissions", "allowedTools": ["Bash"]})
    t.assistant([text("ok")], usage={"read": 5000, "write": 30}, version="2.1.197")
    session = read_session(t.write(tmp_path / "s.jsonl"))
    first, _, last = session.request(session.calls[1])
    assert reminder("UserPromptSubmit hook success: be brief") in [b.text for b in first.blocks]
    assert [b.text for b in last.blocks[1:]] == [
        reminder("PostToolUse:Read hook additional context: NOTE")
    ]


def post_tool_hook_turns(version: str) -> Transcript:
    """Opus 4.8 reads a file (a PostToolUse hook adds context, the Read a note of its own,
    another attachment follows), answers, and is asked again."""
    t = Transcript(model="claude-opus-4-8")
    t.user("go")
    t.assistant([tool_use("t1", "Read", file_path="/a.py")], usage={"write": 5000}, version=version)
    t.tool_result("t1", "1\tx = 1")
    post = {"hookName": "PostToolUse:Read", "hookEvent": "PostToolUse", "toolUseID": "t1"}
    t.other(
        "attachment", attachment={"type": "hook_additional_context", "content": ["NOTE"], **post}
    )
    t.user([text("Read also: a note")], isMeta=True)
    t.other("attachment", attachment={"type": "queued_command", "prompt": "and then?"})
    t.assistant([text("ok")], usage={"read": 5000, "write": 30}, version=version)
    t.user("again")
    t.assistant([text("ok")], usage={"read": 5030, "write": 30}, version=version)
    return t


NOTE = "PostToolUse:Read hook additional context: NOTE"


@pytest.mark.parametrize(("version", "loop"), [("2.1.197", True), ("2.1.332", False)])
def test_a_tools_hook_context_is_a_reminder_until_the_next_prompt(
    tmp_path: Path, version: str, loop: bool
) -> None:
    """2.1.197 (its query loop) sends what a tool's hook adds as a reminder after the result
    for the rest of the turn (a note the tool adds does not end it), and as a system message
    once a new prompt rebuilds the conversation from the record; an attachment no tool made
    is a system message in both. 2.1.332 keeps the attachment: a system message throughout."""
    t = post_tool_hook_turns(version)
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    *_, result, system = session.request(session.calls[1])
    hook = [reminder(NOTE)] if loop else []
    assert [b.text for b in result.blocks] == ["1\tx = 1", *hook, "Read also: a note"]
    assert system.role == "system"
    assert [b.text for b in system.blocks] == ([] if loop else [NOTE]) + ["and then?"]
    *_, result, system, _, prompt = session.request(session.calls[2])
    assert [b.text for b in result.blocks] == ["1\tx = 1", "Read also: a note"]
    assert system.role == "system" and [b.text for b in system.blocks] == [NOTE, "and then?"]
    assert [b.text for b in prompt.blocks] == ["again"]


def pre_tool_hook_turns(model: str, version: str) -> Transcript:
    """A Read whose PreToolUse hook adds context, as Claude Code records it: linked to the
    response that asked for the Read, and the result linked to that response too, past it."""
    t = Transcript(model=model)
    t.user("go")
    t.assistant([tool_use("t1", "Read", file_path="/a.py")], usage={"write": 5000}, version=version)
    asked = t.parent
    pre = {"hookName": "PreToolUse:Read", "hookEvent": "PreToolUse", "toolUseID": "t1"}
    t.other("attachment", attachment={"type": "hook_success", "content": "", **pre})
    t.other("attachment", attachment={"type": "hook_additional_context", "content": ["PRE"], **pre})
    t.parent = asked
    t.tool_result("t1", "1\tx = 1")
    t.assistant([text("ok")], usage={"read": 5000, "write": 30}, version=version)
    t.user("again")
    t.assistant([text("ok")], usage={"read": 5030, "write": 30}, version=version)
    return t


PRE = "PreToolUse:Read hook additional context: PRE"


@pytest.mark.parametrize(
    ("model", "version", "later"),
    [
        ("claude-sonnet-4-6", "2.1.97", "user"),
        ("claude-sonnet-4-6", "2.1.197", "user"),
        ("claude-opus-4-8", "2.1.197", "system"),
    ],
)
def test_a_tools_pre_hook_context_follows_its_result(
    tmp_path: Path, model: str, version: str, later: str
) -> None:
    """What a PreToolUse hook adds is off the chain (the result links past it) and is sent
    after the result: a reminder while the turn runs, and in the next turn a reminder, or a
    system message for a model that takes them (2.1.97 and 2.1.197 in one process)."""
    session = read_session(pre_tool_hook_turns(model, version).write(tmp_path / "s.jsonl"))
    assert session.problems == []
    *_, result = session.request(session.calls[1])
    assert [b.type for b in result.blocks] == ["tool_result", "text"]
    assert result.blocks[1].text == reminder(PRE)
    request = session.request(session.calls[2])
    assert [b.text for b in request[-1].blocks] == ["again"]
    if later == "system":
        *_, result, added, _, _ = request
        assert [b.type for b in result.blocks] == ["tool_result"]
        assert added.role == "system" and [b.text for b in added.blocks] == [PRE]
    else:
        *_, result, _, _ = request
        assert [b.text for b in result.blocks] == ["1\tx = 1", reminder(PRE)]


def recorded_session(model: str, tmp_path: Path) -> Transcript:
    """What 2.1.332 writes: attachments with the text they were sent as and the role asked
    for, some with none (not sent), a request log and running totals (bookkeeping)."""
    t = Transcript(model=model)

    def attached(kind: str, body: str, role: str = "system", **extra: object) -> None:
        rendered = [{"content": reminder(body)}]
        t.other(
            "attachment", attachment={"type": kind}, rendered=rendered, renderedRole=role, **extra
        )

    t.user("go")
    attached("environment", "# Environment")
    attached("agent_listing_delta", AGENT_LISTING + "- Explore: explores")
    t.other("attachment", attachment={"type": "prompt_snapshot", "systemPrompt": ["You are."]})
    attached("remote_session_change", "Attribution", "user", renderedBesideToolResult=True)
    t.other("api-request", id="r1", params={"model": model}, keep=0, tail=["h1"])
    t.other("api-request-blob", hash="h1", message={"role": "user", "content": "go"})
    t.other("tools-used", tools=["Bash"])
    t.assistant([tool_use("t1", "Bash", command="ls")], usage={"write": 5000}, version="2.1.332")
    t.tool_result("t1", "a.py\n")
    attached("nested_memory", "Contents of CLAUDE.md", "user")
    attached("total_tokens_reminder", "<total_tokens>9 left</total_tokens>")
    t.assistant([text("ok")], usage={"read": 5000, "write": 30}, version="2.1.332")
    t.other("cost-state", totalCostUSD=0.01)
    return t


def test_recorded_attachments_go_as_recorded_for_a_model_that_takes_system_messages(
    tmp_path: Path,
) -> None:
    """2.1.332 on Opus: system attachments joined in one system message without their
    tags, the user one before the prompt, the user one after a result beside it."""
    t = recorded_session("claude-opus-5-5", tmp_path)
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    prompt, system, _, result, after = session.request(session.calls[1])
    assert [b.text for b in prompt.blocks] == [reminder("Attribution"), "go"]
    assert system.role == "system"
    assert [b.text for b in system.blocks] == [
        "# Environment",
        AGENT_LISTING + "- Explore: explores",
    ]
    assert [b.type for b in result.blocks] == ["tool_result", "text"]
    assert result.blocks[1].text == reminder("Contents of CLAUDE.md")
    assert after.role == "system"
    assert [b.text for b in after.blocks] == ["<total_tokens>9 left</total_tokens>"]


def test_recorded_attachments_ride_in_the_result_for_other_models(tmp_path: Path) -> None:
    """2.1.332 on Sonnet 4.6: every attachment a reminder in the user message; after a tool
    result appended to its text (its trailing space dropped), unless recorded beside it."""
    t = recorded_session("claude-sonnet-4-6", tmp_path)
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    prompt, _, result = session.request(session.calls[1])
    assert [b.text for b in prompt.blocks] == [
        reminder("# Environment"),
        reminder(AGENT_LISTING + "- Explore: explores"),
        reminder("Attribution"),
        "go",
    ]
    [block] = result.blocks
    parts = [
        "a.py",
        reminder("Contents of CLAUDE.md"),
        reminder("<total_tokens>9 left</total_tokens>"),
    ]
    assert block.text == "\n\n".join(parts)


def test_a_tool_search_result_is_sent_with_its_note(tmp_path: Path) -> None:
    """ToolSearch answers with tool references; Claude Code adds "Tool loaded." (2.1.332)."""
    t = Transcript(model="claude-opus-5-5")
    t.user("go")
    t.assistant([tool_use("t1", "ToolSearch", query="select:WebFetch")], usage={"write": 5000})
    reference = [{"type": "tool_reference", "tool_name": "WebFetch"}]
    t.user([{"type": "tool_result", "tool_use_id": "t1", "content": reference}])
    t.assistant([text("ok")], usage={"read": 5000, "write": 30})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    last = session.request(session.calls[1])[-1]
    assert [(b.type, b.text) for b in last.blocks] == [
        ("tool_result", ""),
        ("text", "Tool loaded."),
    ]


def test_metadata_records_are_passed_over_quietly(tmp_path: Path) -> None:
    t = Transcript()
    t.other("queue-operation", operation="enqueue", content="go")
    t.user("go")
    t.other("custom-title", customTitle="My session")
    t.other("agent-name", agentName="helper")
    t.other("pr-link", url="https://example.invalid/pr/1")
    t.assistant([text("ok")], usage={"write": 5000})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == [] and len(session.calls) == 1


def test_a_threads_calls_follow_the_chain_when_the_clock_goes_back(tmp_path: Path) -> None:
    t = Transcript()
    t.user("one").assistant([text("a")], usage={"write": 5000})
    t.wait(-3600).user("two").assistant([text("b")], usage={"read": 5000, "write": 20})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert [c.n_messages for c in session.calls] == [1, 3]
    assert session.calls[1].started >= session.calls[0].started
    (note,) = session.problems  # the gap the cache model sees there is a guess: say so
    assert note.line == session.calls[1].line
    assert "the clock goes back 35" in note.message and "a guess" in note.message


def test_a_branch_follows_the_call_it_branches_from_when_its_clock_is_earlier(
    tmp_path: Path,
) -> None:
    """Found by `python -m tests.property.fuzz generated`: a rewind's branch stamped an hour
    before the calls it continues came first, so the engine took its whole history in at
    once, none of it yet shown to the model and so none of it evictable (172K tokens past the
    150K budget)."""
    t = Transcript()
    t.user("one").assistant([text("a")], usage={"write": 5000})
    answered = t.parent
    t.user("two").assistant([text("b")], usage={"read": 5000, "write": 20})
    t.parent = answered  # the person rewound to the first answer and wrote another prompt
    t.wait(-3600).user("three").assistant([text("c")], usage={"read": 5000, "write": 30})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    first, branch, second = session.calls
    assert (first.n_messages, branch.n_messages, second.n_messages) == (1, 3, 3)
    assert branch.thread != first.thread == second.thread
    assert branch.started >= first.started
    (note,) = session.problems
    assert note.line == branch.line and "the clock goes back" in note.message


def test_read_results_with_tab_numbering_are_file_views(tmp_path: Path) -> None:
    """Claude Code 2.1.x numbers Read lines with a tab; sub-agent files keep only that text."""
    t = Transcript()
    t.user("read it").assistant(
        [tool_use("t1", "Read", file_path="/w/a.py")], usage={"write": 5000}
    )
    t.tool_result("t1", "1\tdef f():\n2\t    return 1\n")
    t.assistant([text("ok")], usage={"read": 5000, "write": 30})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    view = session.request(session.calls[1])[-1].blocks[0].file_view
    assert view is not None and view.content == "def f():\n    return 1"


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "odd.jsonl"
    if kind == "fifo":
        os.mkfifo(path)  # opening it would wait for a writer forever
    elif kind == "folder":
        path.mkdir()
    else:
        path = Path("/dev/zero")  # endless: would grow without bound
    with pytest.raises(TranscriptError, match="not a regular file"):
        read_session(path)


def test_a_sub_agent_file_names_its_parent_session(tmp_path: Path) -> None:
    main = Transcript().user("go").assistant([text("ok")], usage={"write": 5000})
    parent = main.write(tmp_path / "s1.jsonl")
    folder = tmp_path / "s1" / "subagents"
    folder.mkdir(parents=True)
    agent = Transcript(sidechain=True).user("look").assistant([text("ok")], usage={"write": 900})
    assert read_session(agent.write(folder / "agent-a1.jsonl")).parent == str(parent)
    assert read_session(parent).parent is None


def test_a_compaction_keeps_its_preserved_messages_and_re_attached_files(tmp_path: Path) -> None:
    """After the summary come the messages the compaction kept, then the files re-attached."""
    t = Transcript()
    t.user("what is in a.py?").assistant([text("x = 1")], usage={"write": 5000})
    kept = t.lines[-1]["uuid"]
    t.parent = None
    t.other("system", subtype="compact_boundary", content="Conversation compacted")
    summary = t.lines[-1]
    t.user("This session is being continued ...", isCompactSummary=True)
    summary["compactMetadata"] = {
        "preservedMessages": {"anchorUuid": t.lines[-1]["uuid"], "uuids": [kept]}
    }
    file = {"filePath": "/w/a.py", "content": "x = 1\n", "startLine": 1}
    t.other("attachment", attachment={"type": "file", "content": {"type": "text", "file": file}})
    t.user("and now?").assistant([text("still 1")], usage={"write": 300})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    request = session.request(session.calls[-1])
    assert [m.role for m in request] == ["user", "assistant", "user"]
    assert request[1].blocks[0].text == "x = 1"
    reattached = request[2].blocks[0].text
    assert reattached.startswith("<system-reminder>\nCalled the Read tool")
    assert "Result of calling the Read tool:\n1\tx = 1\n2\t" in reattached
    assert request[2].blocks[1].text == "and now?"


def _parallel_bash_request(tmp_path: Path, written: tuple[str, str]) -> list[Message]:
    """The last request of a session with two parallel Bash calls (t1: `ls a` -> a.txt,
    t2: `ls b` -> b.txt) whose results were written in the order `written`, each linked to
    its own tool_use line, as Claude Code writes them."""
    t = Transcript()
    t.user("read both")
    t.assistant([tool_use("t1", "Bash", command="ls a"), tool_use("t2", "Bash", command="ls b")])
    uses = {"t1": t.lines[-2]["uuid"], "t2": t.lines[-1]["uuid"]}
    for tool_use_id in written:
        t.parent = uses[tool_use_id]
        t.tool_result(tool_use_id, {"t1": "a.txt", "t2": "b.txt"}[tool_use_id])
    t.assistant([text("two files")])
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    return list(session.request(session.calls[-1]))


def test_parallel_tool_results_off_the_chain_are_sent_with_the_last(tmp_path: Path) -> None:
    """Claude Code links each parallel result to its own tool_use line and goes on from the
    last result: the request still carries every result, after both tool uses."""
    request = _parallel_bash_request(tmp_path, written=("t1", "t2"))
    assert [m.role for m in request] == ["user", "assistant", "user"]
    assert [b.text for b in request[2].blocks] == ["a.txt", "b.txt"]


def test_a_parallel_tool_use_off_the_chain_joins_its_message(tmp_path: Path) -> None:
    """When the first tool's result is written last, the chain goes through it and misses
    the second tool use and its result: both were sent (in the order written, Claude Code's
    breakpoint on the last), and the API renders them in the order of their tool uses."""
    request = _parallel_bash_request(tmp_path, written=("t2", "t1"))
    assert [m.role for m in request] == ["user", "assistant", "user"]
    assert [b.tool_use_id for b in request[1].blocks] == ["t1", "t2"]
    assert [b.text for b in request[2].blocks] == ["a.txt", "b.txt"]
    assert request[2].marked == 0


def test_a_parallel_tool_use_behind_a_progress_record_joins_its_message(tmp_path: Path) -> None:
    """Sub-agents write a progress record after each tool use, and the next tool use of the
    response links to it: the reader looks past records that are not sent."""
    t = Transcript()
    t.user("read both")
    t.assistant([tool_use("t1", "Bash", command="ls a")], message_id="msg_r")
    first = t.lines[-1]["uuid"]
    t.other("progress", data={"type": "hook_progress"})
    t.assistant([tool_use("t2", "Bash", command="ls b")], message_id="msg_r")
    second = t.lines[-1]["uuid"]
    t.parent = second
    t.tool_result("t2", "b.txt")
    t.parent = first
    t.tool_result("t1", "a.txt")
    t.assistant([text("two files")])
    session = read_session(t.write(tmp_path / "s.jsonl"))
    request = session.request(session.calls[-1])
    assert [b.tool_use_id for b in request[1].blocks] == ["t1", "t2"]
    assert [b.text for b in request[2].blocks] == ["a.txt", "b.txt"]
    assert request[2].marked == 0


def test_a_microcompaction_clears_its_tool_results_in_every_later_request(
    tmp_path: Path,
) -> None:
    """Claude Code sends the results it cleared as a stub from the boundary on; the calls
    before keep the originals, and the cache breaks at the first cleared result."""
    t = Transcript()
    t.user("look at both logs")
    t.assistant([tool_use("t1", "Bash", command="cat a.log")], usage={"write": 6000})
    t.tool_result("t1", "a " * 4000)
    t.assistant([tool_use("t2", "Bash", command="cat b.log")], usage={"read": 6000, "write": 2000})
    t.tool_result("t2", "b " * 500)
    t.assistant([text("both read")], usage={"read": 8000, "write": 500})
    t.other(
        "system",
        subtype="microcompact_boundary",
        content="Context microcompacted",
        microcompactMetadata={"trigger": "auto", "compactedToolIds": ["t1"]},
    )
    t.user("and now?").assistant([text("done")], usage={"read": 2000, "write": 1000})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    assert session.problems == []
    before, after = session.request(session.calls[2]), session.request(session.calls[3])
    results = [b for m in after for b in m.blocks if b.type == "tool_result"]
    assert [b.text for b in results] == [CLEARED_RESULT, "b " * 500]
    assert before[2].blocks[0].text == "a " * 4000
    assert session.calls[3].thread != session.calls[2].thread

    calls = STRATEGIES["recorded"].replay(session).calls
    assert calls[3].usage.cache_read_input_tokens < calls[2].usage.cache_read_input_tokens


def test_a_sub_agent_is_tied_to_its_task_behind_the_reminders_before_its_prompt(
    tmp_path: Path,
) -> None:
    t = Transcript()
    t.user("look around")
    t.assistant([tool_use("t1", "Agent", prompt="find the py files")], usage={"write": 5000})
    side = Transcript(sidechain=True, _ids=t._ids, lines=t.lines, seconds=t.seconds)
    side.user("find the py files")
    side.other("attachment", attachment={"type": "skill_listing", "content": "- review: reviews"})
    side.assistant([text("a.py")], usage={"write": 900})
    t.seconds = side.seconds
    t.tool_result("t1", "a.py").assistant([text("one file")], usage={"read": 5000, "write": 9})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    (agent,) = [thread for thread in session.threads.values() if thread.prefix_key == "agent"]
    assert agent.messages[0].blocks[0].text.startswith("<system-reminder>")
    assert agent.task == "t1"


@pytest.mark.parametrize(
    ("model", "version", "system"),
    [
        ("claude-opus-4-8", "2.1.154", True),
        ("claude-opus-4-8", "2.1.153", False),
        ("claude-opus-4-8", "2.1.97", False),
        ("claude-opus-4-8", None, True),
        ("claude-opus-4-8", "next", True),
        ("claude-sonnet-4-6", "2.1.197", False),
    ],
)
def test_system_messages_need_opus_4_8_and_a_release_that_sends_them(
    model: str, version: str | None, system: bool
) -> None:
    """A missing or unreadable version is taken as a recent release."""
    assert takes_system_messages(model, version) is system


def tool_results(session: Session) -> dict[str | None, Block]:
    """The session's tool results by tool_use id."""
    return {
        b.tool_use_id: b
        for thread in session.threads.values()
        for m in thread.messages
        for b in m.blocks
        if b.type == "tool_result"
    }


BRIDGE_REMINDER = (
    "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it looks"
    " malicious.\n</system-reminder>"
)


def test_zeds_bridge_tools_read_and_change_files_as_the_built_ins_do(tmp_path: Path) -> None:
    """Zed runs Claude Code with its own file tools (`mcp__acp__Read`, `Edit`, `Write`; the
    editor answers): a Read returns the lines as they are, from `offset`, then a reminder;
    nothing structured is recorded. Their results mean what the built-ins' do."""
    source = "".join(f"line {n}\n" for n in range(1, 61))
    t = Transcript()
    t.user("tidy app.js")
    t.assistant([tool_use("r1", "mcp__acp__Read", file_path="/w/app.js")])
    t.tool_result("r1", source + BRIDGE_REMINDER)
    t.assistant([tool_use("r2", "mcp__acp__Read", file_path="/w/app.js", offset=40, limit=3)])
    t.tool_result("r2", "line 40\nline 41\nline 42" + BRIDGE_REMINDER)
    t.assistant([tool_use("r4", "mcp__acp__Read", file_path="/w/app.js", limit=2)])
    t.tool_result("r4", "line 1\nline 2" + BRIDGE_REMINDER)
    t.assistant([tool_use("r5", "mcp__acp__Read", file_path="/w/new.js", limit=200)])
    t.tool_result("r5", "x = 1" + BRIDGE_REMINDER)
    t.assistant([tool_use("r3", "mcp__acp__Read", file_path="/w/gone.js")])
    t.tool_result("r3", 'Reading file failed: {"code":-32002,"message":"Resource not found"}')
    edit_input = {"old_string": "line 7", "new_string": "seven"}
    t.assistant([tool_use("e1", "mcp__acp__Edit", file_path="/w/app.js", **edit_input)])
    t.tool_result("e1", "--- /w/app.js\n+++ /w/app.js\n@@ -7 +7 @@\n-line 7\n+seven")
    t.assistant([tool_use("w1", "mcp__acp__Write", file_path="/w/new.js", content="x = 1\n")])
    t.tool_result("w1", "")
    t.assistant([text("Done.")])
    session = read_session(t.write(tmp_path / "zed.jsonl"))
    blocks = tool_results(session)
    whole, part, failed = blocks["r1"].file_view, blocks["r2"].file_view, blocks["r3"].file_view
    assert whole is not None and whole.content == source.removesuffix("\n")
    assert whole.start_line == 1 and whole.num_lines == 60
    assert part is not None and part.content == "line 40\nline 41\nline 42"
    assert part.start_line == 40 and part.num_lines == 3
    assert failed is None and blocks["r3"].kind == "tool_output"
    assert whole.whole_file and not part.whole_file
    # A read that returned all its limit allowed may have stopped short of the end.
    limited, short = blocks["r4"].file_view, blocks["r5"].file_view
    assert limited is not None and not limited.whole_file
    assert short is not None and short.whole_file
    edit, write = blocks["e1"].file_change, blocks["w1"].file_change
    assert edit is not None and edit.replacements == (Replacement("line 7", "seven"),)
    assert write is not None and write.content == "x = 1\n" and write.path == "/w/new.js"
    assert blocks["r1"].tool == "mcp__acp__Read"  # sent under its own name


@pytest.mark.parametrize(
    "answer",
    [
        'Writing file failed: {"code":-32603,"message":"Internal error","data":"invalid path"}',
        "The user has left the building",
    ],
)
def test_a_bridge_write_the_editor_refused_changes_no_file(tmp_path: Path, answer: str) -> None:
    """The bridge's first releases answered a Write the editor refused, or one sent after
    its session ended, as plain text, not `is_error` (claude-code-acp's mcp-server.ts):
    nothing was written, so the tracker must not take the content as the file."""
    t = Transcript()
    t.user("save it")
    t.assistant([tool_use("w1", "mcp__acp__Write", file_path="/w/new.js", content="x = 1\n")])
    t.tool_result("w1", answer)
    t.assistant([tool_use("w2", "mcp__acp__Write", file_path="/w/new.js", content="x = 2\n")])
    t.tool_result("w2", "")
    t.assistant([text("Done.")])
    blocks = tool_results(read_session(t.write(tmp_path / "zed.jsonl")))
    assert blocks["w1"].file_change is None
    written = blocks["w2"].file_change
    assert written is not None and written.content == "x = 2\n"


def test_the_gateway_reads_a_bridge_read_in_a_request_as_a_file_read() -> None:
    """`ectx gateway` sees requests, not transcripts: the same block reader gives a bridge
    Read's result its file view there too."""
    calls = ToolCalls()
    read = {"file_path": "/w/a.py"}
    api_content_block(
        {"type": "tool_use", "id": "r1", "name": "mcp__acp__Read", "input": read}, calls
    )
    result = {
        "type": "tool_result",
        "tool_use_id": "r1",
        "content": [{"type": "text", "text": "x = 1\ny = 2" + BRIDGE_REMINDER}],
    }
    block, problems = api_content_block(result, calls)
    assert problems == [] and block is not None and block.file_view is not None
    assert block.file_view.content == "x = 1\ny = 2" and block.file_view.path == "/w/a.py"


def serena(result: str) -> str:
    """A Serena tool's result as Claude Code records and sends it (structured content)."""
    return json.dumps({"result": result})


SERENA = "mcp__plugin_serena_serena__"
ACTIVATED = "The project with name 'shop' at /w/shop is activated.\nProgramming languages: vue"


def test_serenas_file_tools_read_and_write_files_under_the_project_it_activated(
    tmp_path: Path,
) -> None:
    """Serena's `read_file` returns lines from a 0-based `start_line` to an inclusive
    `end_line` as `{"result": ...}` JSON, its paths relative to the project it activated
    (the working directory until it names one); `limit` is not its parameter. Its errors,
    and answers too long to show, are plain outputs."""
    source = "\n".join(f"line {n}" for n in range(1, 41))
    t = Transcript()
    t.user("tidy the store")
    t.assistant([tool_use("r0", SERENA + "read_file", relative_path="src/a.js")])
    t.tool_result("r0", serena("Error: No active project. Ask the user to provide the path"))
    t.assistant([tool_use("w0", SERENA + "create_text_file", relative_path="a.js", content="")])
    t.tool_result("w0", serena("Error: No active project. Ask the user to provide the path"))
    t.assistant([tool_use("p1", SERENA + "activate_project", project="shop")])
    t.tool_result("p1", serena(ACTIVATED))
    t.assistant([tool_use("r1", SERENA + "read_file", relative_path="src/a.js", limit=5)])
    t.tool_result("r1", serena(source))
    t.assistant(
        [
            tool_use(
                "r2", "mcp__serena__read_file", relative_path="src/a.js", start_line=9, end_line=11
            )
        ]
    )
    t.tool_result("r2", serena("line 10\nline 11\nline 12"))
    t.assistant([tool_use("r4", SERENA + "read_file", relative_path="src/a.js", end_line=1)])
    t.tool_result("r4", serena("line 1\nline 2"))
    t.assistant([tool_use("r3", SERENA + "read_file", relative_path="big.json")])
    t.tool_result("r3", serena("The answer is too long (912345 characters)."))
    t.assistant(
        [tool_use("w1", SERENA + "create_text_file", relative_path="src/b.js", content="b = 2\n")]
    )
    t.tool_result("w1", serena("File created: src/b.js."))
    for key, start in (("r5", "9"), ("r6", "\u00b2")):  # as pydantic reads it; not a number
        read = tool_use(key, SERENA + "read_file", relative_path="src/a.js", start_line=start)
        t.assistant([read])
        t.tool_result(key, serena("line 10\nline 11"))
    t.assistant([text("Done.")])
    session = read_session(t.write(tmp_path / "serena.jsonl"))
    blocks = tool_results(session)
    texted = blocks["r5"].file_view
    assert texted is not None and texted.start_line == 10 and not texted.whole_file
    assert blocks["r6"].file_view is None  # where its lines go is unknown
    whole, part = blocks["r1"].file_view, blocks["r2"].file_view
    assert whole is not None and whole.content == source and whole.path == "/w/shop/src/a.js"
    assert whole.whole_file and whole.num_lines == 40
    assert part is not None and part.content == "line 10\nline 11\nline 12"
    assert part.start_line == 10 and part.num_lines == 3 and not part.whole_file
    head = blocks["r4"].file_view  # from the first line, but cut by its end_line
    assert head is not None and head.start_line == 1 and not head.whole_file
    # Serena answers its errors (no `is_error`): nothing was read, nothing written.
    assert blocks["r0"].file_view is None and blocks["r3"].file_view is None
    assert blocks["w0"].file_change is None
    write = blocks["w1"].file_change
    assert write is not None and write.content == "b = 2\n" and write.path == "/w/shop/src/b.js"
    assert blocks["r1"].tool == SERENA + "read_file"  # sent under its own name


def test_a_serena_literal_replacement_is_an_edit_of_the_file_it_names(tmp_path: Path) -> None:
    """`replace_content` in literal mode changes the file under the project root (every
    occurrence when it allows several, as Serena reads `"true"` too); in regex mode it
    replaces a pattern's matches; when it fails, it is an output."""
    t = Transcript()
    t.user("tidy")
    t.assistant([tool_use("p1", SERENA + "activate_project", project="shop")])
    t.tool_result("p1", serena(ACTIVATED))
    calls = {
        "e1": {"needle": "a = 1", "repl": "a = 2", "mode": "literal"},
        "e2": {"needle": "b", "repl": "c", "mode": "literal", "allow_multiple_occurrences": "true"},
        "e3": {"needle": "a.*?2", "repl": "a = 3", "mode": "regex"},
        "e4": {"needle": "zzz", "repl": "y", "mode": "literal"},
    }
    for use, literal in calls.items():
        t.assistant(
            [tool_use(use, SERENA + "replace_content", relative_path="src/a.py", **literal)]
        )
        failed = "Error executing tool: No matches of search expression found"
        t.tool_result(use, serena(failed if use == "e4" else "OK"))
    t.assistant([text("Done.")])
    blocks = tool_results(read_session(t.write(tmp_path / "replace.jsonl")))
    first, every = blocks["e1"].file_change, blocks["e2"].file_change
    assert first is not None and first.path == "/w/shop/src/a.py"
    assert first.replacements == (Replacement("a = 1", "a = 2"),)
    assert every is not None and every.replacements == (Replacement("b", "c", True),)
    regex = FileChange("/w/shop/src/a.py", pattern=Pattern("a.*?2", "a = 3"))
    assert blocks["e3"].file_change == regex and blocks["e4"].file_change is None


def test_serenas_line_and_symbol_edits_are_changes_of_the_file_they_name(
    tmp_path: Path,
) -> None:
    """Line edits count lines from 0 (`end_line` inclusive; pydantic reads a string of
    digits as the number); a symbol edit says which definition, not what the file holds;
    a rename may change any file."""
    t = Transcript()
    t.user("tidy")
    t.assistant([tool_use("p1", SERENA + "activate_project", project="shop")])
    t.tool_result("p1", serena(ACTIVATED))
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "d": ("delete_lines", {"start_line": 3, "end_line": "4"}),
        "r": ("replace_lines", {"start_line": 0, "end_line": 0, "content": "a\nb"}),
        "i": ("insert_at_line", {"line": 7, "content": "c\n"}),
        "x": ("insert_at_line", {"line": -1, "content": "c\n"}),
        "s": ("replace_symbol_body", {"name_path": "Cart/total", "body": "return 0"}),
        "a": ("insert_after_symbol", {"name_path": "Cart", "body": "x = 1"}),
        "n": ("rename_symbol", {"name_path": "Cart", "new_name": "Basket"}),
    }
    for use, (tool, tool_input) in calls.items():
        t.assistant([tool_use(use, SERENA + tool, relative_path="src/a.py", **tool_input)])
        t.tool_result(use, serena("OK"))
    t.assistant([text("Done.")])
    blocks = tool_results(read_session(t.write(tmp_path / "lines.jsonl")))
    path = "/w/shop/src/a.py"
    assert blocks["d"].file_change == FileChange(path, lines=LineEdit(4, 2))
    assert blocks["r"].file_change == FileChange(path, lines=LineEdit(1, 1, ("a", "b")))
    assert blocks["i"].file_change == FileChange(path, lines=LineEdit(8, 0, ("c",)))
    assert blocks["x"].file_change == FileChange(path)  # what it did is unsaid
    assert blocks["s"].file_change == FileChange(path, symbol="Cart/total")
    assert blocks["a"].file_change == FileChange(path)
    assert blocks["n"].file_change == FileChange(path, elsewhere=True)


def test_serenas_paths_are_under_the_working_directory_until_a_project_is_activated(
    tmp_path: Path,
) -> None:
    """(Its answer here is plain text, not structured content, as another release or
    client may send it: read as it is.)"""
    t = Transcript()
    t.user("read it")
    t.assistant([tool_use("r1", SERENA + "read_file", relative_path="src/a.js")])
    t.tool_result("r1", "a = 1\nb = 2")
    t.assistant([text("Done.")])
    path = t.write(tmp_path / "s.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**line, "cwd": "/w/here"}) + "\n" for line in lines))
    view = tool_results(read_session(path))["r1"].file_view
    assert view is not None and view.path == "/w/here/src/a.js"
    assert view.content == "a = 1\nb = 2" and view.whole_file


@pytest.mark.parametrize(
    "answer",
    [
        "The project with name 'shop' at /w/shop is activated.\nProgramming languages: vue",
        "Created and activated a new project with name 'shop' at /w/shop. You can now use",
        "Activated existing project with name shop at /w/shop, language: typescript",
    ],
)
def test_serenas_activations_name_the_root_in_each_releases_words(answer: str) -> None:
    assert activated_root(answer) == "/w/shop"
    assert activated_root("Error: No active project.") is None


def test_serenas_paths_under_a_windows_root_are_joined_by_windows_rules() -> None:
    root = activated_root("The project with name 'shop' at C:\\Users\\me\\shop is activated.")
    assert root == "C:\\Users\\me\\shop"
    assert tool_file_path({"relative_path": "src/a.js"}, root) == "C:\\Users\\me\\shop\\src\\a.js"
    unc = tool_file_path({"relative_path": "a.js"}, "\\\\host\\share\\shop")
    assert unc == "\\\\host\\share\\shop\\a.js"
    assert tool_file_path({"relative_path": "./src/../a.js"}, "/w/shop") == "/w/shop/a.js"


def test_the_gateway_resolves_serenas_paths_under_the_project_it_activated() -> None:
    """The activation a gateway's conversation carries names the root, and a branch copies
    the calls under the root it gives."""
    calls = ToolCalls()
    for item in (
        {"type": "tool_use", "id": "p1", "name": SERENA + "activate_project", "input": {}},
        {"type": "tool_result", "tool_use_id": "p1", "content": serena(ACTIVATED)},
        {
            "type": "tool_use",
            "id": "r1",
            "name": SERENA + "read_file",
            "input": {"relative_path": "src/a.js"},
        },
    ):
        api_content_block(item, calls)
    fork = calls.branch(calls.project_root)
    result = {"type": "tool_result", "tool_use_id": "r1", "content": serena("a = 1")}
    block, problems = api_content_block(result, fork)
    assert problems == [] and block is not None and block.file_view is not None
    assert block.file_view.path == "/w/shop/src/a.js" and block.file_view.content == "a = 1"
    fork.uses.clear()
    assert "r1" in calls.uses


def test_an_edit_that_replaces_all_changes_every_occurrence(tmp_path: Path) -> None:
    """`replace_all` (an Edit's, or one of a MultiEdit's edits) replaces every occurrence;
    without it, only the first."""
    source = "a = x\nb = x\nc = y\nd = y\n"
    t = Transcript()
    t.user("rename")
    t.assistant(
        [
            tool_use(
                "e1", "Edit", file_path="/w/a.py", old_string="x", new_string="z", replace_all=True
            )
        ]
    )
    t.tool_result("e1", "The file /w/a.py has been updated.", {"originalFile": source})
    edits = [
        {"old_string": "y", "new_string": "w", "replace_all": True},
        {"old_string": "a = z", "new_string": "a = 0"},
    ]
    t.assistant([tool_use("e2", "MultiEdit", file_path="/w/a.py", edits=edits)])
    after = source.replace("x", "z")
    t.tool_result("e2", "Applied 2 edits.", {"originalFile": None, "originalFileContents": after})
    t.assistant([tool_use("e3", "Edit", file_path="/w/a.py", old_string="w", new_string="v")])
    last = "a = 0\nb = z\nc = w\nd = w\n"
    t.tool_result("e3", "The file /w/a.py has been updated.", {"originalFile": last})
    t.assistant([text("Done.")])
    blocks = tool_results(read_session(t.write(tmp_path / "all.jsonl")))
    changes = [blocks[i].file_change for i in ("e1", "e2", "e3")]
    assert all(change is not None for change in changes)
    assert [after_change(change) for change in changes if change is not None] == [
        "a = z\nb = z\nc = y\nd = y\n",
        last,
        "a = 0\nb = z\nc = v\nd = w\n",
    ]


def test_a_serena_edit_call_names_its_file_as_its_result_does(tmp_path: Path) -> None:
    """The tool_use carries the file resolved under the project in effect when it was made,
    so `ours` looks for a needle in that file's copies, not under a relative path."""
    t = Transcript()
    t.user("tidy")
    t.assistant([tool_use("p1", SERENA + "activate_project", project="shop")])
    t.tool_result("p1", serena(ACTIVATED))
    literal = {"needle": "a = 1", "repl": "a = 2", "mode": "literal"}
    t.assistant([tool_use("e1", SERENA + "replace_content", relative_path="src/a.py", **literal)])
    t.tool_result("e1", serena("OK"))
    t.assistant([text("Done.")])
    session = read_session(t.write(tmp_path / "replace.jsonl"))
    calls = [
        b for th in session.threads.values() for m in th.messages for b in m.blocks
        if b.type == "tool_use"
    ]  # fmt: skip
    assert [b.path for b in calls] == [None, "/w/shop/src/a.py"]
    change = tool_results(session)["e1"].file_change
    assert change is not None and change.path == "/w/shop/src/a.py"


@pytest.mark.parametrize(
    ("name", "tool_input", "result"),
    [
        ("MultiEdit", {"file_path": "/w/a.py", "edits": 5}, None),
        ("MultiEdit", {"file_path": "/w/a.py", "edits": [{"old_string": None}, 7]}, None),
        ("Edit", {"file_path": "/w/a.py", "old_string": None, "new_string": {}}, None),
        (
            "Edit",
            {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"},
            {"originalFile": 5},
        ),
        ("MultiEdit", {"file_path": "/w/a.py", "edits": []}, {"originalFileContents": []}),
    ],
)
def test_an_edit_with_fields_of_the_wrong_type_replays_under_every_strategy(
    tmp_path: Path, name: str, tool_input: dict[str, Any], result: Any
) -> None:
    """A transcript is untrusted: an edit's strings, edits or recorded original of another
    type are taken as absent (a `None` old string is not the needle "None"), and no
    strategy fails on them (an `edits` that is not a list names no edit)."""
    t = Transcript()
    t.user("edit it")
    t.assistant([tool_use("r1", "Read", file_path="/w/a.py")])
    t.tool_result("r1", cat_n("x = None\nz = 1"))
    t.assistant([tool_use("e1", name, **tool_input)])
    t.tool_result("e1", "The file has been updated.", result)
    t.assistant([text("Done.")])
    session = read_session(t.write(tmp_path / "odd.jsonl"))
    change = tool_results(session)["e1"].file_change  # None: no edit it names is readable
    assert change is None or change.original is None
    assert change is None or all(
        r.old in ("", "x") and r.new in ("", "y") for r in change.replacements
    )
    replayed = {name: strategy.replay(session) for name, strategy in STRATEGIES.items()}
    assert all(len(result.calls) == 3 for result in replayed.values())
    assert replayed["ours"].rehydrations == 0


@pytest.mark.parametrize(
    ("flag", "every"),
    [(True, True), ("true", True), ("True", True), ("yes", True), (1, True), ("on", True),
     (False, False), ("false", False), (0, False), ("no", False), (None, False), (2, False)],
)  # fmt: skip
def test_serenas_several_occurrences_flag_is_read_as_pydantic_reads_it(
    flag: Any, every: bool
) -> None:
    literal = {"needle": "b", "repl": "c", "mode": "literal", "allow_multiple_occurrences": flag}
    assert replaced_strings(SERENA + "replace_content", literal) == [Replacement("b", "c", every)]


@pytest.mark.parametrize(
    ("value", "number"),
    [("12", 12), (" +7 ", 7), ("1_000", 1000), ("3.0", 3), ("0" * 18 + "1", 1), (12, 12),
     (True, 1), (3.0, 3), (3.5, None), ("\u00b2", None),
     pytest.param("9" * 5000, None, id="5000 digits"),
     pytest.param(10**4000, None, id="an int of 4001 digits"),
     ("-1", None), (-1, None), (float("inf"), None), (None, None), ([3], None)],
)  # fmt: skip
def test_a_line_number_is_read_as_pydantic_reads_it_or_not_at_all(
    value: object, number: int | None
) -> None:
    """A superscript two is a digit to `str.isdigit` and not to `int`: it had crashed the
    whole session's replay, as had 5,000 digits, as text or as a number (a line number
    printed past `int`'s 4,300 digits)."""
    assert whole_number(value) == number


@pytest.mark.timeout(20)
def test_a_hook_line_that_names_itself_as_parent_is_read_once(tmp_path: Path) -> None:
    """A damaged transcript whose PreToolUse attachment comes again with itself as parent:
    the walk down from the response meets it once (it went round for ever)."""
    t = pre_tool_hook_turns("claude-sonnet-4-6", "2.1.97")
    added = next(line for line in t.lines if line.get("attachment", {}).get("content") == ["PRE"])
    at = t.lines.index(added)
    t.lines.insert(at + 1, {**added, "parentUuid": added["uuid"]})
    session = read_session(t.write(tmp_path / "s.jsonl"))
    *_, result = session.request(session.calls[1])
    assert [b.text for b in result.blocks[1:]].count(reminder(PRE)) == 1
