"""The user's own Claude Code sessions under ~/.claude/projects, newest first.

Claude Code keeps one folder per project (its path with every other character turned into
`-`), a `<session>.jsonl` per session in it, and each session's sub-agents in
`<session>/subagents/agent-*.jsonl`. A session here is its main file plus those sub-agent
files (the sub-agents alone when the main file is gone), dated by the newest of them;
`--project`, `--since` and `--limit` narrow the list.

API:
- `claude_projects()`, `own_sessions(root, ...)`: the user's sessions.
- `parse_since(text)`: `--since`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path


@dataclass(frozen=True)
class OwnSession:
    """One session: its project folder's name, its transcript files and when it last changed."""

    project: str
    files: tuple[Path, ...]
    modified: float


def claude_projects() -> Path:
    """Where Claude Code keeps its transcripts (under the current HOME)."""
    return Path.home() / ".claude" / "projects"


def _folded(text: str) -> str:
    """A project name or path as Claude Code spells its folder, lower-cased for matching."""
    return re.sub(r"[^a-z0-9]", "-", text.lower())


def _sessions(project: Path) -> Iterator[OwnSession]:
    """Each session of a project folder: its main file with its sub-agents', or its
    sub-agents' alone when the main file is gone (deleted, or not yet written). A folder
    that cannot be listed is kept in the files of what it holds (the project folder: a
    session of its own), so that replaying it says why, as for a file that cannot be read;
    so is what is named like a transcript and is no regular file (a broken link, a FIFO)."""
    try:
        entries = sorted(project.iterdir())
    except OSError:
        yield OwnSession(project.name, (project,), _modified(project))
        return
    mains = {p.stem: p for p in entries if p.suffix == ".jsonl" and not p.is_dir()}
    agents = {p.name: _agents(p / "subagents") for p in entries if p.is_dir()}
    for stem in sorted(mains.keys() | agents.keys()):
        main = [mains[stem]] if stem in mains else []
        files = (*main, *agents.get(stem, ()))
        if files:
            yield OwnSession(project.name, files, max(map(_modified, files)))


def _agents(subagents: Path) -> list[Path]:
    """The sub-agent files of a session's `subagents` folder; the folder in their place
    when it cannot be listed."""
    try:
        names = sorted(os.listdir(subagents))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:
        return [subagents]
    found = (subagents / n for n in names if n.startswith("agent-") and n.endswith(".jsonl"))
    return [p for p in found if not p.is_dir()]


def _modified(path: Path) -> float:
    """When a file last changed; 0 for one that cannot be told (in a locked folder)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def own_sessions(
    root: Path,
    *,
    project: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[OwnSession]:
    """The newest sessions under `root` (projects whose folder name contains `project`)."""
    wanted = _folded(project) if project else ""
    found = [
        session
        for folder in sorted(p for p in root.iterdir() if p.is_dir())
        if wanted in _folded(folder.name)
        for session in _sessions(folder)
        if since is None or session.modified >= since.timestamp()
    ]
    found.sort(key=lambda s: s.modified, reverse=True)
    return found[:limit] if limit is not None else found


def parse_since(text: str) -> datetime:
    """`--since`: an ISO date or date-time (local time), or an age such as `7d` or `12h`."""
    age = re.fullmatch(r"(\d+)([dh])", text.strip())
    if age:
        amount = int(age.group(1))
        delta = timedelta(days=amount) if age.group(2) == "d" else timedelta(hours=amount)
        return datetime.now() - delta
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not a date (2026-11-30), date-time or age (7d, 12h): {text!r}") from None
