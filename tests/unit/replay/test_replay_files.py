"""FileTracker: what a session knows of each file after reads, edits, writes and outside changes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ephemeral_context.replay import flow
from ephemeral_context.replay.files import FileTracker
from ephemeral_context.replay.flow import Block, FileChange, FileView, Replacement
from ephemeral_context.replay.tools import serena_change


def read(path: str, content: str, start: int = 1, total: int | None = None) -> Block:
    lines = content.count("\n") + 1
    view = FileView(path, content, start, lines, total)
    return Block(hash((path, content, start)), "tool_result", content, 10, file_view=view)


def change(
    path: str,
    replacements: tuple[tuple[str, str] | tuple[str, str, bool], ...] = (),
    content: str | None = None,
    original: str | None = None,
) -> Block:
    made = FileChange(path, tuple(Replacement(*r) for r in replacements), content, original)
    return Block(hash((path, str(made))), "tool_result", "ok", 5, file_change=made)


def test_rereading_the_same_text_changes_nothing() -> None:
    files = FileTracker()
    first = files.apply(read("/a.py", "x = 1\ny = 2"))
    assert first is not None and (first.how, first.changed) == ("read", True)
    key = files.key("/a.py")
    again = files.apply(read("/a.py", "x = 1\ny = 2"))
    assert again is not None and (again.how, again.changed) == ("read", False)
    assert files.key("/a.py") == key


def test_partial_reads_add_up_and_a_reread_inside_them_is_unchanged() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "one\ntwo", start=1, total=4))
    update = files.apply(read("/a.py", "three\nfour", start=3, total=4))
    assert update is not None and update.changed and update.replaced_tokens == 0
    assert files.files["/a.py"].text == "one\ntwo\nthree\nfour"
    inside = files.apply(read("/a.py", "two\nthree", start=2, total=4))
    assert inside is not None and not inside.changed


def test_the_models_edits_apply_to_the_known_text_and_lose_nothing() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "def f():\n    return 1"))
    update = files.apply(change("/a.py", replacements=(("return 1", "return 2"),)))
    assert update is not None and (update.how, update.replaced_tokens) == ("edit", 0)
    assert files.files["/a.py"].text == "def f():\n    return 2"
    # A reread of the edited text is not news.
    again = files.apply(read("/a.py", "def f():\n    return 2"))
    assert again is not None and not again.changed


def test_an_edit_that_replaces_all_changes_every_known_occurrence() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "a = x\nb = x"))
    files.apply(change("/a.py", replacements=(("x", "y", True),)))
    assert files.files["/a.py"].text == "a = y\nb = y"


def test_an_edit_of_a_range_read_without_the_original_stays_at_its_lines() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "l50\nl51 = x\nl52", start=50, total=60))
    files.apply(change("/a.py", replacements=(("l51 = x", "l51 = y"),)))
    assert files.files["/a.py"].lines == {50: "l50", 51: "l51 = y", 52: "l52"}
    again = files.apply(read("/a.py", "l50\nl51 = y\nl52", start=50, total=60))
    assert again is not None and not again.changed


def test_an_empty_old_string_replaced_everywhere_is_put_first_once() -> None:
    assert Replacement("", "N", True).apply("ab") == "Nab"


def test_an_edit_with_the_recorded_original_knows_the_whole_file() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "b = 2", start=2, total=3))
    files.apply(change("/a.py", replacements=(("b = 2", "b = 3"),), original="a = 1\nb = 2\nc = 3"))
    assert files.files["/a.py"].text == "a = 1\nb = 3\nc = 3"


def test_a_write_over_known_text_and_an_outside_change_lose_the_old_version() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "old text"))
    old = files.tokens("/a.py")
    write = files.apply(change("/a.py", content="new text"))
    assert write is not None and (write.how, write.replaced_tokens) == ("write", old)
    outside = files.apply(read("/a.py", "formatted text"))
    assert outside is not None and outside.how == "external" and outside.replaced_tokens > 0
    assert files.files["/a.py"].text == "formatted text"


def test_blocks_without_file_meaning_are_ignored() -> None:
    assert FileTracker().apply(Block(1, "text", "hello", 3)) is None


def repeat(files: FileTracker, block: Block) -> bool:
    update = files.apply(block)
    assert update is not None
    return update.repeat


def test_repeat_is_claude_codes_rule_same_lines_same_text_no_edit_between() -> None:
    files = FileTracker()
    assert not repeat(files, read("/a.py", "a\nb\nc", total=3))
    assert repeat(files, read("/a.py", "a\nb\nc", total=3))
    # Lines inside the last view are not the same Read: no stub.
    assert not repeat(files, read("/a.py", "b", start=2, total=3))
    files.apply(read("/a.py", "a\nb\nc", total=3))
    files.apply(change("/a.py", replacements=(("b", "B"),)))
    assert not repeat(files, read("/a.py", "a\nB\nc", total=3))


@pytest.mark.parametrize("tool", ["mcp__acp__Read", "mcp__plugin_serena_serena__read_file"])
def test_a_read_through_another_tool_is_never_claude_codes_repeat(tool: str) -> None:
    """The file-unchanged stub is Claude Code's own Read tool's; the editor answers a bridge
    Read (`mcp__acp__Read`), and Serena its `read_file`, in full every time."""
    files = FileTracker()
    first = replace(read("/a.py", "a\nb\nc", total=3), tool=tool)
    assert not repeat(files, first)
    assert not repeat(files, first)


def test_an_edit_between_two_ranges_read_moves_the_later_one_by_what_it_added() -> None:
    """Without the original, each range read is edited where it is: the ranges are not
    one text, and the lines after an edit move by the lines it added."""
    files = FileTracker()
    files.apply(read("/a.py", "l1\nl2", start=1, total=60))
    files.apply(read("/a.py", "l50\nl51", start=50, total=60))
    update = files.apply(change("/a.py", replacements=(("l1", "l1\nnew\nnew\nnew"),)))
    assert update is not None and update.how == "edit"
    assert files.files["/a.py"].lines == {
        1: "l1", 2: "new", 3: "new", 4: "new", 5: "l2", 53: "l50", 54: "l51"
    }  # fmt: skip
    again = files.apply(read("/a.py", "l50\nl51", start=53, total=63))
    assert again is not None and not again.changed


def test_an_empty_old_string_is_put_first_by_the_tracker_as_by_the_edit() -> None:
    files = FileTracker()
    files.apply(read("/a.py", "a\nb"))
    files.apply(change("/a.py", replacements=(("", "N\n"),)))
    assert files.files["/a.py"].text == Replacement("", "N\n").apply("a\nb") == "N\na\nb"


def serena(path: str, tool: str, **tool_input: object) -> Block:
    """The result of a Serena edit (`serena_change`) of `path`."""
    made = serena_change(f"mcp__serena__{tool}", tool_input, path)
    assert made is not None
    return Block(hash((path, str(made))), "tool_result", "OK", 5, file_change=made)


def test_a_serena_regex_over_a_file_known_whole_is_applied_as_serena_applies_it() -> None:
    """DOTALL and MULTILINE, `$!1` for a group, a backslash verbatim: the tracker knows the
    file after it, and reading that text again is no news (it had been the edit's
    text left stale, then an outside change)."""
    files = FileTracker()
    files.apply(read("/a.py", "def f(x):\n    return x\n\ndef g():\n    pass"))
    regex = {"needle": r"def (f)\(x\):.*?return x", "repl": "def $!1(y):\n    return '\\n'"}
    update = files.apply(serena("/a.py", "replace_content", mode="regex", **regex))
    assert update is not None and (update.how, update.changed) == ("edit", True)
    after = "def f(y):\n    return '\\n'\n\ndef g():\n    pass"
    assert files.files["/a.py"].text == after
    again = files.apply(read("/a.py", after))
    assert again is not None and not again.changed


@pytest.mark.parametrize(
    "needle",
    [
        "zzz",  # no match in what is known: not the text Serena edited
        "pass|return",  # two matches, several not allowed
        "def.*?:",  # the same, on the known text
    ],
)
def test_a_serena_regex_the_known_text_does_not_take_as_serena_did_leaves_it_unknown(
    needle: str,
) -> None:
    files = FileTracker()
    files.apply(read("/a.py", "def f():\n    return 1\n\ndef g():\n    pass"))
    update = files.apply(serena("/a.py", "replace_content", mode="regex", needle=needle, repl="x"))
    assert update is not None and update.changed and update.replaced_tokens > 0
    assert files.files["/a.py"].lines == {}
    reread = files.apply(read("/a.py", "x"))
    assert reread is not None and (reread.how, reread.changed) == ("read", True)


def test_a_serena_regex_over_a_range_read_leaves_the_file_unknown_not_stale() -> None:
    """A pattern may match in lines never read (and must match once only): over a range
    the result is not known, so the range is not kept as it was."""
    files = FileTracker()
    files.apply(read("/a.py", "l50\nl51 = x", start=50, total=60))
    files.apply(serena("/a.py", "replace_content", mode="regex", needle="x$", repl="y"))
    assert files.files["/a.py"].lines == {}
    stale = files.apply(read("/a.py", "l50\nl51 = x", start=50, total=60))
    assert stale is not None and (stale.how, stale.changed) == ("read", True)


def test_serenas_line_edits_count_lines_from_0_and_move_the_lines_after_them() -> None:
    """`delete_lines` and `replace_lines` take 0-based inclusive ranges, `insert_at_line`
    puts its content before a 0-based line (a newline added): exact over any range read."""
    files = FileTracker()
    files.apply(read("/a.py", "l1\nl2\nl3", total=60))
    files.apply(read("/a.py", "l50\nl51", start=50, total=60))
    files.apply(serena("/a.py", "replace_lines", start_line=1, end_line=1, content="a\nb\n"))
    files.apply(serena("/a.py", "insert_at_line", line=0, content="top"))
    files.apply(serena("/a.py", "delete_lines", start_line=3, end_line=3))
    assert files.files["/a.py"].lines == {1: "top", 2: "l1", 3: "a", 4: "l3", 51: "l50", 52: "l51"}
    again = files.apply(read("/a.py", "l50\nl51", start=51, total=61))
    assert again is not None and not again.changed


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("replace_symbol_body", {"name_path": "f", "body": "def f():\n    return 2"}),
        ("insert_after_symbol", {"name_path": "f", "body": "def h():\n    pass"}),
        ("insert_before_symbol", {"name_path": "f", "body": "import os"}),
        ("delete_lines", {"start_line": 2, "end_line": 0}),  # not lines in order
    ],
)
def test_a_serena_edit_whose_result_is_unsaid_leaves_the_file_unknown(
    tool: str, tool_input: dict[str, object]
) -> None:
    """Where a definition starts and ends is the language server's answer: the file is
    unknown after it, and the same Read again is not Claude Code's repeat (the edit changed
    the file's time: no stub), even when the lines it shows are the same."""
    files = FileTracker()
    whole = "def f():\n    return 1\n\n\ndef g():\n    pass"
    files.apply(read("/a.py", "def g():\n    pass", start=5, total=6))
    files.apply(read("/a.py", whole, total=6))
    update = files.apply(serena("/a.py", tool, **tool_input))
    assert update is not None and update.changed and files.files["/a.py"].lines == {}
    assert not repeat(files, read("/a.py", whole, total=6))


def test_a_serena_rename_leaves_every_file_unknown() -> None:
    """A rename changes the references wherever they are, and its answer does not say
    where: no file's known text or last Read stands after it."""
    files = FileTracker()
    files.apply(read("/a.py", "def f():\n    pass", total=2))
    files.apply(read("/b.py", "from a import f", total=1))
    files.apply(serena("/a.py", "rename_symbol", name_path="f", new_name="g"))
    assert files.files["/a.py"].lines == {} and files.files["/b.py"].lines == {}
    assert not repeat(files, read("/b.py", "from a import f", total=1))


def test_an_older_serenas_replace_regex_is_applied_as_re_subn_applies_it() -> None:
    """Before `replace_content`, Serena had `replace_regex`: its `repl` a Python template
    (`\\1`, `\\n`) and no check for a match that holds another one, which `replace_content`
    refuses (the file is then unknown)."""
    files = FileTracker()
    files.apply(read("/a.py", "x = 1\nx = 1\ny"))
    files.apply(serena("/a.py", "replace_regex", regex=r"(x) = 1.*?y", repl=r"\1 = 2\ny"))
    assert files.files["/a.py"].text == "x = 2\ny"
    files.apply(read("/b.py", "x = 1\nx = 1\ny"))
    regex = {"needle": r"(x) = 1.*?y", "repl": "$!1 = 2\ny", "mode": "regex"}
    files.apply(serena("/b.py", "replace_content", **regex))
    assert files.files["/b.py"].lines == {}


def test_a_serena_regex_that_backtracks_without_end_leaves_the_file_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A transcript's pattern may take hours on the known text: past PATTERN_SECONDS its
    edit is not applied (the file is unknown until read again), and the replay goes on."""
    monkeypatch.setattr(flow, "PATTERN_SECONDS", 0.01)
    files = FileTracker()
    files.apply(read("/a.py", "a" * 34 + "b\naa"))
    update = files.apply(
        serena("/a.py", "replace_content", mode="regex", needle="(a|aa)+$", repl="x")
    )
    assert update is not None and update.changed
    assert files.files["/a.py"].lines == {}


def test_one_deadline_serves_a_whole_serena_regex_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every match's check for a swallowed one shares the edit's PATTERN_SECONDS (a fresh
    limit per match let 40 matches take 68 s): a clock a second further at each look."""
    clock = iter(range(1000))
    monkeypatch.setattr("ephemeral_context.replay.flow.time.monotonic", lambda: float(next(clock)))
    text = "Z\na\n" * 5
    assert flow.Pattern("Z\na", "x", every=True).apply(text) is None
    monkeypatch.setattr(flow, "PATTERN_SECONDS", 100.0)
    assert flow.Pattern("Z\na", "x", every=True).apply(text) == "x\n" * 5


@pytest.mark.parametrize("repl", ["$!" + "9" * 5000, "$!99"])
def test_a_group_a_serena_replacement_cannot_name_leaves_the_edit_unapplied(repl: str) -> None:
    assert flow.Pattern("(a)", repl).apply("a") is None


@pytest.mark.parametrize("needle", ["a{99999999999999999999}", "(" * 3000 + "a" + ")" * 3000])
def test_a_serena_pattern_re_cannot_build_leaves_the_edit_unapplied(needle: str) -> None:
    """`re` raises OverflowError or RecursionError on these, not re.error: the whole
    session's replay had failed, even where Serena had refused the edit."""
    assert flow.Pattern(needle, "x").apply("a") is None
    assert flow.Pattern(needle, "x").matched("a") == []
