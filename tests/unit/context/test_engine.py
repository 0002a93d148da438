"""Engine behaviour a user sees: references, notes, limits, hydration and its errors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anthropic
import pytest
from ephemeral_context.cache_sim import Usage
from ephemeral_context.context.conversation import Conversation
from ephemeral_context.context.engine import (
    BlockKind,
    ContextEngine,
    EngineConfig,
    Need,
    ToolOutput,
    UnknownItem,
)
from ephemeral_context.context.ledger import LedgerLimits
from ephemeral_context.documents import DocumentMirror, Position, Range, TextEdit
from ephemeral_context.prices import priced
from ephemeral_context.store import (
    ExpiredId,
    InvalidRange,
    OffsetPastEnd,
    Store,
    StoreError,
    UnknownId,
)

from tests.fakes.messages_api import request_problem
from tests.unit.context.context_helpers import (
    SYSTEM,
    Clock,
    Driver,
    grow_a_file_in_the_segment,
    source,
)


@dataclass
class _Edit:
    """An edit as documents.ByteEdit gives it: points are (row, byte column) tuples."""

    row: int

    @property
    def start_point(self) -> tuple[int, int]:
        return (self.row, 0)

    @property
    def new_end_point(self) -> tuple[int, int]:
        return (self.row, 1)


@dataclass
class _Change:
    uri: str
    old_version: int | None
    new_version: int | None
    byte_edits: tuple[_Edit, ...]
    old_hash: str | None = "old"
    new_hash: str | None = "new"
    reason: str = "edit"


def test_external_change_becomes_one_note_before_the_next_call(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    d.read("/a.py", source(10))
    engine.note_document_change(_Change("file:///a.py", 3, 4, (_Edit(4),)))
    engine.note_document_change(_Change("file:///a.py", 4, 5, (_Edit(6),)))
    engine.note_document_change(_Change("file:///unseen.py", 1, 2, ()))
    d.call()
    notes = [t for t in repr(d.requests[-1]).split("'text': ")[1:] if "outside this" in t]
    assert len(notes) == 1 and "a.py" in notes[0] and "v4 -> v5" in notes[0]
    assert "unseen.py" not in repr(d.requests[-1])


def test_the_note_of_an_edit_in_the_editor_says_which_lines(engine: ContextEngine) -> None:
    """The mirror's change (its points are plain tuples) gives the note its lines: the
    user typed two lines after line 3 (the note said only the versions)."""
    mirror = DocumentMirror()
    mirror.subscribe(engine.note_document_change)
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    d.read("/a.py", source(10))
    mirror.open("file:///a.py", "python", 1, source(10))
    where = Position(3, 0)
    mirror.change("file:///a.py", 2, [TextEdit(Range(where, where), "x = 1\ny = 2\n")])
    d.call()
    assert "a.py changed outside this conversation (v1 -> v2, lines 4-6)" in repr(d.requests[-1])


def test_a_file_deleted_on_disk_drops_out_with_a_note(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    d.read("/gone.py", source(10))
    item_id = next(i.id for i in engine.items() if i.uri == "file:///gone.py")
    engine.note_document_change(_Change("file:///gone.py", 1, None, (), "h", None, "close"))
    d.call()
    assert "was deleted" not in repr(d.requests[-1])  # closing a buffer is no change
    engine.note_document_change(_Change("file:///gone.py", 1, None, (), "h", None, "disk"))
    d.call()
    assert "gone.py was deleted" in repr(d.requests[-1])
    assert all(i.state == "evicted" for i in engine.items() if i.uri == "file:///gone.py")
    assert engine.read_session_file(item_id).text == source(10)  # still hydratable


def test_hydrate_gives_the_current_version_and_clear_errors(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    first = source(10)
    d.read("/a.py", first)
    old_id = next(i.id for i in engine.items() if i.uri == "file:///a.py")
    d.call()
    d.read("/a.py", source(12))
    assert engine.read_session_file(old_id).text == first
    assert engine.hydrate(old_id).text == source(12)
    part = engine.hydrate(old_id, offset=4, limit=10)
    assert part.text == source(12)[4:14] and part.total_length == len(source(12))
    with pytest.raises(UnknownId):
        engine.read_session_file("deadbeef")
    with pytest.raises(StoreError) as info:
        engine.hydrate("not an id!")
    assert str(info.value)


def test_hydrate_gives_the_buffer_with_the_stores_range_rule(engine: ContextEngine) -> None:
    """With the mirror, a file item's id gives the editor's buffer (newer than any version
    recorded); past its end is refused as the store refuses it."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    d.read("/a.py", source(10))
    item_id = next(i.id for i in engine.items() if i.uri == "file:///a.py")
    mirror = DocumentMirror()
    mirror.open("file:///a.py", "python", 7, source(11))
    now = engine.hydrate(item_id, mirror=mirror)
    assert (now.text, now.version, now.uri) == (source(11), 7, "file:///a.py")
    part = engine.hydrate(item_id, offset=3, limit=5, mirror=mirror)
    assert (part.text, part.offset, part.total_length) == (source(11)[3:8], 3, len(source(11)))
    with pytest.raises(OffsetPastEnd):
        engine.hydrate(item_id, offset=len(source(11)), mirror=mirror)
    with pytest.raises(InvalidRange):
        engine.hydrate(item_id, limit=-1, mirror=mirror)
    assert engine.hydrate(item_id).text == source(10)  # without it: the version recorded


def test_cold_cache_consolidation_evicts_consumed_output_reversibly(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "run the tests")
    for step in range(30):
        d.call()
        d.bash(f"FAILED test_{step}\n" * 300)
        clock.advance(20)
    assert all(not e.cold for e in engine.events)  # warm: only what the gate allowed
    clock.advance(2 * 3600)
    d.call()
    event = engine.events[-1]
    assert event.cold and event.tokens_reprocessed == 0 and event.tokens_freed > 0
    evicted = [i for i in engine.items() if i.state == "evicted"]
    assert len(evicted) == 29  # every consumed output; the unanswered last one stays
    assert "FAILED test_0" in engine.read_session_file(evicted[0].id).text
    last = repr(d.requests[-1])
    assert "FAILED test_0\\n" not in last and "FAILED test_29\\n" in last


def test_limits_demote_least_recently_used_files_pinned_exempt(store: Store, clock: Clock) -> None:
    engine = ContextEngine(store, EngineConfig(limits=LedgerLimits(max_files=2)), clock=clock)
    d = Driver(engine)
    engine.add_user_text("c", "go")
    engine.pin("file:///pinned.py", source(5, "p"))
    for name in ("a", "b", "c"):
        d.call()
        d.read(f"/{name}.py", source(5, name))
    states = {i.uri: i for i in engine.items() if i.kind == "file"}
    assert states["file:///pinned.py"].state == "full" and states["file:///pinned.py"].pinned
    assert states["file:///a.py"].state == "reference"
    assert states["file:///c.py"].state == "full"
    d.call()  # the demoted file's copy leaves the context; the pinned one stays
    last = repr(d.requests[-1])
    assert "def af4(x)" not in last and "def pf4(x)" in last and "def cf4(x)" in last
    assert engine.events[-1].reason == "over the ledger limits"


def test_binary_and_oversize_files_become_references(store: Store, clock: Clock) -> None:
    engine = ContextEngine(
        store, EngineConfig(limits=LedgerLimits(max_file_bytes=1000)), clock=clock
    )
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    assert "binary content" in d.read("/img.bin", "PNG\0\0\0data")
    assert "over the per-file limit" in d.read("/big.py", source(100))


def test_status_reports_savings_against_the_recorded_style_baseline(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    text = source(80)
    for _ in range(10):
        d.call()
        d.read("/a.py", text)
        clock.advance(10)
    d.call()
    status = engine.status()
    assert status.saved_tokens > 0 and status.saved_usd > 0
    assert 0 < status.cache_hit_rate <= 1
    assert status.context_tokens > 0
    assert repr(d.requests[-1]).count("def f79(x)") == 1  # ten reads, one copy


def test_record_usage_takes_the_sdk_object_and_the_dict_alike(engine: ContextEngine) -> None:
    engine.add_user_text("c", "go")
    Driver(engine).call()
    sdk = anthropic.types.Usage(
        input_tokens=10,
        output_tokens=5,
        cache_creation_input_tokens=300,
        cache_read_input_tokens=700,
        cache_creation=anthropic.types.CacheCreation(
            ephemeral_5m_input_tokens=200, ephemeral_1h_input_tokens=100
        ),
    )
    engine.record_usage("c", sdk)
    assert engine.status("c").last_call == Usage(10, 300, 700, 200, 100)
    engine.record_usage("c", {"input_tokens": 1, "cache_creation_input_tokens": 4})
    assert engine.status("c").last_call == Usage(1, 4, 0, 4, 0)
    assert engine.status("c").cache_hit_rate == pytest.approx(700 / 1015)


def test_requests_stay_within_the_context_budget(store: Store, clock: Clock) -> None:
    engine = ContextEngine(store, EngineConfig(context_budget=20_000), clock=clock)
    d = Driver(engine)
    engine.add_user_text("c", "go")
    for step in range(40):
        d.call()
        d.bash(f"line {step} of a long log\n" * 150)
        clock.advance(5)
    d.call()
    built = engine.last_request("c")
    assert built is not None and built.total_tokens <= 20_000
    assert any(e.reason == "over the context budget" for e in engine.events)


def test_requests_stay_within_a_context_window_smaller_than_the_budget(
    store: Store, clock: Clock
) -> None:
    """A budget set for a 1M-token model, then a call to a 200K one: the window bounds the
    request (the engine sent 219,748 tokens, which the API refuses outright)."""
    engine = ContextEngine(store, EngineConfig(context_budget=500_000), clock=clock)
    d = Driver(engine)
    engine.add_user_text("c", "go")
    for i in range(12):
        d.read(f"/f{i}.py", source(1500, f"m{i}_"))
        engine.build_request("c", "claude-opus-4-6", SYSTEM)
        built = engine.last_request("c")
        assert built is not None and built.total_tokens <= priced("claude-opus-4-6").context_window
        engine.add_assistant_content("c", [{"type": "text", "text": "read"}])
        engine.add_user_text("c", "next")
        clock.advance(30)
    assert any(e.reason == "over the context budget" for e in engine.events)


def test_a_conversation_at_its_budget_keeps_its_prefix_from_call_to_call(
    store: Store, clock: Clock
) -> None:
    """Once the budget is reached every call cuts again; the newest consumed content goes
    (the shortest rewrite), so each request starts as the one before did up to the newest
    content it still shows. Oldest first, each cut rewrote from the oldest content left."""
    engine = ContextEngine(store, EngineConfig(context_budget=20_000), clock=clock)
    d = Driver(engine)
    engine.add_user_text("c", "go")
    kept = sent = seen = 0
    for step in range(40):
        d.call()
        d.bash(f"line {step} of a long log\n" * 150)
        clock.advance(5)
        if any(e.reason == "over the context budget" for e in engine.events[seen:]):
            before, after = d.requests[-2]["messages"], d.requests[-1]["messages"]
            kept += next(
                i for i, pair in enumerate(zip(before, after, strict=False)) if pair[0] != pair[1]
            )
            sent += len(before)
        seen = len(engine.events)
    assert sent and 5 * kept >= 4 * sent  # oldest first: about half (674 of 1,296 messages)


def test_a_long_untouched_file_is_demoted_to_its_synopsis_when_cold(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    for _ in range(3):  # in active use: read on consecutive calls
        d.call()
        d.read("/old.py", source(80, "old_"))
    clock.advance(7200)  # first cold gap: the file moves into the segment, whole
    d.call()
    system = [b["text"] for b in d.requests[-1]["system"]]
    assert any("def old_f79(x):" in t for t in system)
    for step in range(40):  # other work; /new.py is touched every few calls
        d.read("/new.py", source(5, f"n{step}_")) if step % 3 == 0 else d.bash("ok\n")
        clock.advance(10)
        d.call()
    clock.advance(7200)  # second cold gap: /old.py is long untouched
    d.call()
    system = [b["text"] for b in d.requests[-1]["system"]]
    old = [t for t in system if 'path="/old.py"' in t]
    assert len(old) == 1 and 'shown="synopsis"' in old[0]
    assert "old_f79" in old[0] and "return x + 79" not in old[0]
    assert [i.state for i in engine.items() if i.uri == "file:///old.py"] == ["synopsis"]


def _read_once(engine: ContextEngine) -> tuple[Driver, Conversation, str]:
    """A conversation that has read /a.py (40 definitions) once: the driver, it, the text."""
    d = Driver(engine)
    c = engine.conversation("c")
    engine.add_user_text("c", "go")
    d.call()
    text = source(40)
    d.read("/a.py", text)
    return d, c, text


def test_a_cold_gap_leaves_a_file_read_once_in_the_thread_when_its_move_outgrows_the_twin(
    engine: ContextEngine, clock: Clock
) -> None:
    """Read once, then edited: the segment's entry and the reference left in its place
    weigh more than the one copy they replace, and nothing else made room, so moving it
    would put the request over its recorded twin, which the next warm call pays for with
    a forced cut. The file stays where it is (f3a77928ed, docs/cost-model.md)."""
    d, c, text = _read_once(engine)
    for k in range(3):  # in use, so the cost gate keeps the read
        d.call()
        text = text.replace(f"return x + {k}\n", f"return x - {k}\n")
        tool_id = d.tool("edit_file", {"path": "/a.py", "old": f"x + {k}", "new": f"x - {k}"})
        engine.add_tool_result(
            "c", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///a.py", content=text)
        )
        clock.advance(10)
    d.call()
    engine.add_assistant_content("c", [{"type": "text", "text": "done"}])
    clock.advance(7200)  # cold: the segment is rebuilt
    for _ in range(2):
        d.call()
        built = engine.last_request("c")
        assert built is not None
        assert built.total_tokens <= built.head_tokens + sum(b.tokens for b in c.thread.baseline)
        assert not c.segment and "def f39(x):" in repr(d.requests[-1]["messages"])
        engine.add_user_text("c", "more")
        clock.advance(5)
    assert not engine.events


@pytest.mark.parametrize("grown_by", [50, 80])
def test_a_segment_file_that_grew_keeps_the_request_within_its_twin(
    engine: ContextEngine, clock: Clock, grown_by: int
) -> None:
    """A file moved into the segment at one cold gap grows by more than the thread holds
    about it (a change the thread never showed); at the next cold gap its current version
    does not fit within the recorded-style twin. By 50 definitions its synopsis does and
    takes its place; by 80 not even that, so it leaves the segment and its reference says
    so. Either way its whole text is one fetch away by its id."""
    d = grow_a_file_in_the_segment(engine, clock, grown_by)
    c = engine.conversation("c")
    (entry,) = c.segment
    engine.add_assistant_content("c", [{"type": "text", "text": "done"}])
    clock.advance(7200)  # cold again: the segment is rebuilt from the grown file
    for _ in range(2):
        d.call()
        built = engine.last_request("c")
        assert built is not None
        assert built.total_tokens <= built.head_tokens + sum(b.tokens for b in c.thread.baseline)
        engine.add_user_text("c", "more")
        clock.advance(5)
    if grown_by == 50:
        (shown,) = c.segment
        assert 'shown="synopsis' in shown.text and "function g49" in shown.text
        item_id = shown.item_id
    else:
        assert not c.segment
        assert "/a.py: evicted from the file segment." in repr(d.requests[-1])
        item_id = entry.item_id
    assert f"def g{grown_by - 1}(x):\n    return x * {grown_by - 1}" in engine.hydrate(item_id).text


def test_pin_a_symbol_shows_only_that_definition(engine: ContextEngine) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    info = engine.pin("file:///lib.py", source(30, "lib_"), symbol="lib_f7")
    assert info.pinned and info.state == "partial"
    d.call()
    last = repr(d.requests[-1])
    assert "lib.py::lib_f7" in last and "return x + 7" in last and "def lib_f8" not in last
    with pytest.raises(UnknownItem, match="did you mean"):
        engine.pin("file:///lib.py", source(30, "lib_"), symbol="lib_f7x")
    assert not engine.unpin("file:///lib.py").pinned


def test_a_range_read_diffs_against_the_same_lines_and_keeps_the_view_current(
    engine: ContextEngine,
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    text = source(60)
    d.call()
    d.read("/a.py", text)
    lines = text.splitlines(keepends=True)
    changed = "".join(lines[10:50]).replace("x + 7\n", "x - 7\n").replace("x + 8\n", "x - 8\n")
    d.call()
    shown = d.read_range("/a.py", changed, 11)
    assert "diff against what you saw" in shown and "+    return x - 7" in shown
    whole_now = "".join(lines[:10]) + changed + "".join(lines[50:])
    d.call()
    assert d.read("/a.py", whole_now).startswith("unchanged since")


def test_a_range_read_without_its_last_line_break_is_the_same_lines(
    engine: ContextEngine,
) -> None:
    """A Read of a range ends at its last line's end, where the whole file has a line
    break: the same lines are unchanged (found by the fuzz command: a diff of that line
    break went out, larger than the range itself)."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    text = source(60)
    d.call()
    d.read("/a.py", text)
    part = "".join(text.splitlines(keepends=True)[20:26]).removesuffix("\n")
    d.call()
    assert d.read_range("/a.py", part, 21).startswith("unchanged since")


def test_a_diff_larger_than_the_read_it_replaces_is_not_sent(engine: ContextEngine) -> None:
    """A diff is sent only when, with the words that frame it, it is smaller than the
    answer as the client sent it."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    for n in (12, 40):  # one line changed in the middle: its diff is larger framed, then not
        lines = [f"value_{i} = {i}\n" for i in range(n)]
        d.call()
        d.read(f"/{n}.py", "".join(lines))
        lines[n // 2] = lines[n // 2].replace(" = ", " == ")
        d.call()
        shown = d.read(f"/{n}.py", "".join(lines))
        assert ("diff against what you saw" in shown) == (n == 40)


def test_an_edit_after_a_range_read_does_not_count_as_seeing_the_whole_file(
    engine: ContextEngine,
) -> None:
    """The model read 20 lines and edited one of them: it has not seen the rest, so a Read
    of the whole file shows it, where taking the edit's whole text as the model's view had
    answered `unchanged since` with a file it never saw (and a later Edit elsewhere in it
    had fetched the current version back, a round trip for text the recorded conversation
    never showed: the request over its recorded-style twin)."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    text = source(60)
    lines = text.splitlines(keepends=True)
    d.call()
    d.read_range("/a.py", "".join(lines[20:40]), 21)
    d.call()
    edited = text.replace("x + 25\n", "x - 25\n")
    tool_id = d.tool("edit_file", {"path": "/a.py", "old": "x + 25", "new": "x - 25"})
    engine.add_tool_result(
        "c", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///a.py", content=edited)
    )
    d.call()
    assert d.read("/a.py", edited) == edited


def test_a_copy_a_new_read_refers_to_stays_visible_in_that_call(
    engine: ContextEngine, clock: Clock
) -> None:
    """A Read answered `unchanged since [[file:...]]` points the model at its earlier copy,
    so the build that sends that answer keeps the copy: a cold cut had evicted it in the
    same request, and the model had to fetch it back at once (found by the fuzz command)."""
    d = Driver(engine)
    engine.add_user_text("c", "look at a.py")
    part = "".join(source(60).splitlines(keepends=True)[20:40])
    d.call()
    d.read_range("/a.py", part, 21)
    for step in range(6):
        d.call()
        d.bash(f"check {step}: ok\n" * 40)
        clock.advance(10)
    clock.advance(7200)  # cold: the consumed outputs go
    assert d.read_range("/a.py", part, 21).startswith("unchanged since")
    d.call()
    c = engine.conversation("c")
    assert any(tb.evicted and "check 0" in tb.text for tb in c.thread)
    copy = next(tb for tb in c.thread if tb.text == part)
    assert not copy.evicted
    assert engine.rehydrate("c", [Need(None, (part,))]) is None


def test_an_expired_id_says_how_to_get_the_text_again(tmp_path: Path, clock: Clock) -> None:
    with Store(tmp_path / "short", ttl_seconds=60, clock=clock) as store:
        engine = ContextEngine(store, EngineConfig(), clock=clock)
        d = Driver(engine)
        engine.add_user_text("c", "go")
        d.call()
        d.read("/a.py", source(5))
        item_id = next(i.id for i in engine.items() if i.uri == "file:///a.py")
        clock.advance(3600)
        with pytest.raises(ExpiredId, match=r"re-read file:///a.py"):
            engine.read_session_file(item_id)


def test_a_demoted_file_keeps_the_definitions_the_conversation_edited(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "go")
    text = source(80, "old_")
    for _ in range(3):
        d.call()
        d.read("/old.py", text)
    edited = text.replace("return x + 79\n", "return x - 79\n")
    tool_id = d.tool("edit_file", {"path": "/old.py", "old": "x + 79", "new": "return x - 79"})
    engine.add_tool_result(
        "c", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///old.py", content=edited)
    )
    d.call()
    clock.advance(7200)
    d.call()
    for step in range(40):
        d.read("/new.py", source(5, f"n{step}_")) if step % 3 == 0 else d.bash("ok\n")
        clock.advance(10)
        d.call()
    clock.advance(7200)
    d.call()
    old = [b["text"] for b in d.requests[-1]["system"] if 'path="/old.py"' in b["text"]]
    assert len(old) == 1 and 'shown="synopsis+symbols"' in old[0]
    assert "return x - 79" in old[0] and "return x + 78" not in old[0]
    assert [i.state for i in engine.items() if i.uri == "file:///old.py"][-1] == "partial"


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ("Write", "file_path"),
        ("mcp__acp__Write", "file_path"),  # claude-code-acp, late 2025 on
        ("mcp__acp__write", "abs_path"),  # its first releases
    ],
)
def test_a_write_through_zeds_bridge_is_the_files_new_version(
    engine: ContextEngine, tool: str, field: str
) -> None:
    """The bridge's Write writes the file as the built-in does (replay/tools.py, BRIDGE_TOOLS,
    as the replay's reader reads it): reading the file back is a reference to what the
    model wrote, not a second copy."""
    d = Driver(engine)
    engine.add_user_text("c", "write it")
    d.call()
    content = source(30)
    written = d.tool(tool, {field: "/w.py", "content": content})
    engine.add_tool_result("c", ToolOutput(written, "File written"))
    d.call()
    assert d.read("/w.py", content).startswith("unchanged since")


def test_the_latest_response_and_what_follows_it_are_never_evicted(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "write the modules")
    for step in range(40):
        d.call()
        d.tool("Write", {"file_path": f"/m{step}.py", "content": source(20, f"w{step}_")})
        d.tool("Write", {"file_path": f"/n{step}.py", "content": source(20, f"x{step}_")})
        engine.add_tool_result("c", ToolOutput(f"toolu_{d.n - 1}", "File created"))
        engine.add_tool_result("c", ToolOutput(f"toolu_{d.n}", "File created"))
        clock.advance(7200 if step % 10 == 9 else 15)
        d.call()
        last_response = [m for m in d.requests[-1]["messages"] if m["role"] == "assistant"][-1]
        assert f"def x{step}_f19(x)" in repr(last_response)
        assert f"def w{step}_f19(x)" in repr(last_response)
    assert any(e.item_ids for e in engine.events)  # older Write inputs did go


@pytest.mark.parametrize("text", ["", " \n\t"])
def test_an_empty_skill_or_memory_adds_nothing_the_api_would_refuse(
    engine: ContextEngine, text: str
) -> None:
    """An empty text block is refused by the API, and it stayed in every later request."""
    engine.add_user_text("c", "go")
    engine.add_user_content("c", text, kind="skill", name="blank")
    engine.add_user_content("c", text, kind="memory")
    built = engine.build_request("c", "claude-sonnet-4-6", SYSTEM)
    assert request_problem(built) is None
    assert [i.kind for i in engine.items()] == []


def test_max_tokens_stays_within_the_models_output_limit(engine: ContextEngine) -> None:
    """The configured 8,192 is more than Claude 3 Haiku may answer (4,096): a request the
    API refuses; a model that takes more keeps the configured figure."""
    engine.add_user_text("c", "go")
    small = engine.build_request("c", "claude-3-haiku-20240307", SYSTEM)
    assert small["max_tokens"] == 4096 and request_problem(small) is None
    assert engine.build_request("c", "claude-sonnet-4-6", SYSTEM)["max_tokens"] == 8192


def test_looking_at_an_unknown_conversation_leaves_the_engine_empty(
    engine: ContextEngine,
) -> None:
    """A status read (the status bar's, before any ask) created the conversation, and the
    LSP takes a new data directory without a restart only while the engine is empty."""
    assert engine.position("c") == 0 and engine.file_views("c") == []
    assert engine.last_request("c") is None and engine.status("c").context_tokens == 0
    assert engine.empty() and engine.conversations() == []
