"""Where Claude Code's fixed prefix (tools, system prompt) changes in mid-session, as the
transcript predicts it: a skill file written (releases that list skills among the tools)
and a turn in another working directory (releases that rebuild the environment section of
the system prompt every turn). The recorded replay then writes the prefix again there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.strategies import STRATEGIES

from tests.unit.replay.builder import Transcript, text, tool_use

SKILL = "/home/u/.claude/skills/deploy/SKILL.md"
SKILL_TEXT = "---\nname: deploy\ndescription: Use when deploying\n---\nSteps.\n"


def _usage(read: int, write: int) -> dict[str, int]:
    return {"input": 1, "read": read, "write_1h": write}


def _skill_session(version: str, *, edit: str | None = None) -> Transcript:
    """Write a skill, answer at once (the watcher has not seen it), then 5 s later again."""
    t = Transcript(model="claude-opus-4-5-20251101")
    on: dict[str, Any] = {"version": version, "cwd": "/w"}
    t.user("make a skill", **on)
    t.assistant(
        [tool_use("t1", "Write", file_path=SKILL, content=SKILL_TEXT)], _usage(20_000, 5_000), **on
    )
    t.tool_result("t1", "File created successfully at: " + SKILL)
    t.assistant([tool_use("t2", "Read", file_path="/w/a.txt")], _usage(25_000, 300), **on)
    t.wait(5).tool_result("t2", "a")
    change = (
        tool_use("t3", "Edit", file_path=SKILL, old_string="Steps.", new_string=edit)
        if edit is not None
        else tool_use("t3", "Read", file_path="/w/b.txt")
    )
    t.assistant([change], _usage(5_000, 20_600), **on)
    t.wait(5).tool_result("t3", "b")
    t.assistant([tool_use("t4", "Read", file_path="/w/c.txt")], _usage(25_600, 200), **on)
    t.wait(5).tool_result("t4", "c")
    t.assistant([text("done")], _usage(25_800, 200), **on)
    return t


def test_a_skill_written_relists_the_tools_from_the_first_call_the_watcher_is_late_for(
    tmp_path: Path,
) -> None:
    session = read_session(_skill_session("2.1.22").write(tmp_path / "s.jsonl"))
    assert [c.prefix.skills for c in session.calls] == [0, 0, 1, 1, 1]
    modelled = STRATEGIES["recorded"].replay(session).calls
    # the third call writes the whole prompt again, the fourth reads what it wrote
    assert modelled[2].usage.cache_read_input_tokens == 0
    assert modelled[3].usage.cache_read_input_tokens > 25_000


def test_an_edit_that_leaves_name_and_description_changes_no_listing(tmp_path: Path) -> None:
    session = read_session(_skill_session("2.1.22", edit="More steps.").write(tmp_path / "s.jsonl"))
    assert [c.prefix.skills for c in session.calls] == [0, 0, 1, 1, 1]  # the Write did
    edited = _skill_session("2.1.22", edit="description: Use when shipping")
    session = read_session(edited.write(tmp_path / "e.jsonl"))
    assert [c.prefix.skills for c in session.calls] == [0, 0, 1, 1, 2]


def test_from_2_1_23_the_listing_is_a_reminder_and_the_tools_stay(tmp_path: Path) -> None:
    session = read_session(_skill_session("2.1.27").write(tmp_path / "s.jsonl"))
    assert {c.prefix for c in session.calls} == {session.calls[0].prefix}
    assert session.calls[0].prefix.skills == 0


def _two_turns(version: str) -> Transcript:
    t = Transcript(model="claude-opus-4-5-20251101")
    t.user("go to sub", version=version, cwd="/w")
    t.assistant(
        [tool_use("b1", "Bash", command="cd /w/sub")],
        _usage(16_000, 9_000),
        version=version,
        cwd="/w",
    )
    t.tool_result("b1", "")
    t.assistant([text("in sub")], _usage(25_000, 100), version=version, cwd="/w/sub")
    t.wait(30).user("now what", version=version, cwd="/w/sub")
    t.assistant([text("still here")], _usage(16_000, 9_300), version=version, cwd="/w/sub")
    return t


def test_a_turn_in_another_directory_rebuilds_the_system_prompt(tmp_path: Path) -> None:
    session = read_session(_two_turns("2.1.27").write(tmp_path / "s.jsonl"))
    assert [c.prefix.cwd for c in session.calls] == ["", "", "/w/sub"]
    modelled = STRATEGIES["recorded"].replay(session).calls
    # what other sessions had cached (the tools and the system prompt's first part) stays
    assert modelled[2].usage.cache_read_input_tokens == 16_000


def test_later_releases_build_the_environment_once_per_session(tmp_path: Path) -> None:
    session = read_session(_two_turns("2.1.97").write(tmp_path / "s.jsonl"))
    assert {c.prefix.cwd for c in session.calls} == {""}
    modelled = STRATEGIES["recorded"].replay(session).calls
    assert modelled[2].usage.cache_read_input_tokens > 25_000
