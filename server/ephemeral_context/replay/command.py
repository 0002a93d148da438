"""`ectx replay`: choose the transcripts, replay them with a progress bar, print or plot.

With no PATH it replays the user's own most recent sessions under ~/.claude/projects when
there are any, else the bundled demo session; `--demo` asks for the demo explicitly (as
`make run` does, so it never reads outside the repository). Problems in the input go to
stderr with file and line; the JSON or the table goes to stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from ephemeral_context.replay.calibrate import describe, fit_paths
from ephemeral_context.replay.demo import DEMO_SESSION
from ephemeral_context.replay.report import discover, render, replay, to_json


def claude_projects() -> Path:
    """Where Claude Code keeps its transcripts (under the current HOME)."""
    return Path.home() / ".claude" / "projects"


def default_sources(limit: int) -> list[Path]:
    """The user's `limit` most recent sessions, else the bundled demo."""
    root = claude_projects()
    if root.is_dir():
        found = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
        if found:
            return found[:limit]
    return [DEMO_SESSION]


def run(
    paths: Sequence[Path],
    *,
    as_json: bool = False,
    plot_path: Path | None = None,
    demo: bool = False,
    fit_tokens: bool = False,
    limit: int = 10,
) -> int:
    """The whole subcommand; returns the exit status (1 when nothing could be replayed)."""
    err = Console(stderr=True)
    if demo:
        sources = [DEMO_SESSION, *paths]
    elif paths:
        sources = discover(paths)
    else:
        sources = default_sources(limit)
    if not sources:
        print("error: no transcripts found in " + ", ".join(map(str, paths)), file=sys.stderr)
        return 1
    if fit_tokens:
        print(describe(fit_paths(sources)))
        return 0
    with Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=len(sources) < 2,
    ) as progress:
        task = progress.add_task("", total=len(sources))
        report = replay(
            sources, advance=lambda path: progress.update(task, advance=1, description=path.name)
        )
    for error in report.errors:  # plain lines, one per problem, so they can be grepped
        print(f"error: {error}", file=sys.stderr)
    for problem in report.problems:
        print(f"skipped: {problem}", file=sys.stderr)
    if as_json:
        json.dump(to_json(report), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(report, Console(width=max(Console().width, 130)))
    if plot_path is not None and report.sessions:
        from ephemeral_context.replay.plot import plot

        err.print(f"plot written to {plot(report, plot_path)}")
    return 0 if report.sessions else 1
