"""Finding the user's own sessions (under a temporary HOME): grouping, narrowing, dates."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from ephemeral_context.replay.projects import claude_projects, own_sessions, parse_since


def touch(path: Path, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    os.utime(path, (mtime, mtime))
    return path


def test_a_session_is_its_file_and_its_subagents_dated_by_the_newest(isolated_home: Path) -> None:
    root = claude_projects()
    assert root == isolated_home / ".claude" / "projects"
    main = touch(root / "-w-app" / "s1.jsonl", 100)
    agent = touch(root / "-w-app" / "s1" / "subagents" / "agent-x.jsonl", 300)
    touch(root / "-w-app" / "s1" / "tool-results" / "t.jsonl", 900)  # not a transcript
    (root / "-w-app" / "odd.jsonl").mkdir()  # a folder named like a transcript is skipped
    other = touch(root / "-w-lib" / "s2.jsonl", 200)
    found = own_sessions(root)
    assert [(s.project, s.files, s.modified) for s in found] == [
        ("-w-app", (main, agent), 300),
        ("-w-lib", (other,), 200),
    ]
    assert [s.files[0] for s in own_sessions(root, limit=1)] == [main]
    assert [s.files[0] for s in own_sessions(root, project="W/LIB")] == [other]
    since = datetime.fromtimestamp(250)
    assert [s.files[0] for s in own_sessions(root, since=since)] == [main]


def test_since_takes_dates_date_times_and_ages() -> None:
    assert parse_since("2026-11-30") == datetime(2026, 11, 30)
    assert parse_since("2026-11-30T08:15") == datetime(2026, 11, 30, 8, 15)
    for age, delta in (("7d", timedelta(days=7)), ("12h", timedelta(hours=12))):
        before = datetime.now()
        got = parse_since(age)
        assert before - delta <= got <= datetime.now() - delta
    with pytest.raises(ValueError, match="not a date"):
        parse_since("yesterday")


def test_what_is_no_regular_file_is_kept_so_that_replaying_it_says_why(
    isolated_home: Path,
) -> None:
    """A broken link or a FIFO named as a session or a sub-agent is kept, as it is in a
    folder named on the command line, so that the replay lists it under errors instead of
    leaving it out unsaid."""
    root = claude_projects()
    main = touch(root / "-w-app" / "s1.jsonl", 100)
    pipe = root / "-w-app" / "s1" / "subagents" / "agent-p.jsonl"
    pipe.parent.mkdir(parents=True)
    os.mkfifo(pipe)
    os.utime(pipe, (300, 300))
    gone = root / "-w-app" / "s2.jsonl"
    gone.symlink_to(root / "deleted.jsonl")
    assert [s.files for s in own_sessions(root)] == [(main, pipe), (gone,)]
