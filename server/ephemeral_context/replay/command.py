"""`ectx replay`: choose the transcripts, replay them with a progress bar, print or plot.

With no PATH it replays the user's own newest sessions under ~/.claude/projects (each with
its sub-agents; `--project`, `--since` and `--limit` narrow them), else the bundled demo
session; `--demo` asks for the demo explicitly (as `make run` does, so it never reads
outside the repository). The table ends with one line: what the sessions cost at list
prices and what each strategy would have cost. Problems in the input go to stderr with file
and line; the JSON or the table goes to stdout.

API:
- `run(paths, ...)`: the whole subcommand; returns the exit status.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

from ephemeral_context.replay.calibrate import describe, fit_paths
from ephemeral_context.replay.demo import DEMO_SESSION
from ephemeral_context.replay.projects import claude_projects, own_sessions
from ephemeral_context.replay.report import closing_line, discover, render, replay, to_json

DEFAULT_LIMIT = 10
"""Own sessions replayed when `--limit` is not given."""

PLOT_FORMATS = frozenset({".png", ".svg", ".pdf"})
"""What `--plot` writes, by the file's suffix."""


def _groups(
    paths: Sequence[Path],
    demo: bool,
    project: str | None,
    since: datetime | None,
    limit: int | None,
) -> list[tuple[str, tuple[Path, ...]]]:
    """What to replay, as (label, files) per session; LookupError when nothing matches."""
    if demo or paths:
        if project is not None or since is not None or limit is not None:
            raise LookupError(
                "--project, --since and --limit choose among your own sessions; "
                "they do not apply to a PATH or --demo"
            )
        files = [DEMO_SESSION, *discover(paths)] if demo else discover(paths)
        if not files:
            raise LookupError("no transcripts found in " + ", ".join(map(str, paths)))
        return [(path.name, (path,)) for path in files]
    root = claude_projects()
    narrowed = project is not None or since is not None
    wanted = DEFAULT_LIMIT if limit is None else limit
    own = own_sessions(root, project=project, since=since, limit=wanted) if root.is_dir() else []
    if own:
        return [(f"{s.project}/{s.files[0].name}", s.files) for s in own]
    if narrowed:
        raise LookupError(f"no sessions under {root} match --project/--since")
    print(f"no sessions under {root}: replaying the bundled demo session", file=sys.stderr)
    return [(DEMO_SESSION.name, (DEMO_SESSION,))]


def _check_plot_path(path: Path) -> None:
    """`--plot`'s file names a format it writes, in a folder that is there or can be made
    (LookupError otherwise, before the replay, not after all of it)."""
    if path.suffix.lower() not in PLOT_FORMATS:
        formats = ", ".join(sorted(PLOT_FORMATS))
        raise LookupError(f"--plot {path}: name the file with one of {formats}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LookupError(f"--plot {path}: cannot make its folder: {error.strerror}") from None


def _fit_tokens(sources: Sequence[Path]) -> int:
    """`--fit-tokens`: the fit over the files that can be read, each one that cannot said;
    status 1 when too few steps are left to fit."""
    problems: list[str] = []
    try:
        fitted = fit_paths(sources, problems)
    except ValueError as too_few:
        fitted = None
        problems.append(str(too_few))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if fitted is None:
        return 1
    print(describe(fitted))
    return 0


def run(
    paths: Sequence[Path],
    *,
    as_json: bool = False,
    plot_path: Path | None = None,
    demo: bool = False,
    fit_tokens: bool = False,
    project: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> int:
    """The whole subcommand; returns the exit status (1 when nothing could be replayed, or
    the arguments cannot be: checked before the replay, not after it)."""
    err = Console(stderr=True)
    try:
        if plot_path is not None:
            _check_plot_path(plot_path)
        groups = _groups(paths, demo, project, since, limit)
    except (LookupError, OSError) as nothing:
        print(f"error: {nothing}", file=sys.stderr)
        return 1
    sources = [path for _, files in groups for path in files]
    if fit_tokens:
        return _fit_tokens(sources)
    ends = {files[-1]: label for label, files in groups}  # a session is done after its last file
    with Progress(
        SpinnerColumn(),  # moves while one long session replays, the count still at 0/1
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task(groups[0][0] if len(groups) == 1 else "", total=len(groups))

        def advance(path: Path) -> None:
            if path in ends:
                progress.update(task, advance=1, description=ends[path])

        report = replay(sources, advance=advance)
    for error in report.errors:  # plain lines, one per problem, so they can be grepped
        print(f"error: {error}", file=sys.stderr)
    for problem in report.problems:
        print(f"note: {problem}", file=sys.stderr)  # each says what became of it
    if as_json:
        json.dump(to_json(report), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        terminal = Console()  # its own width in a terminal; piped, wide enough for the tables
        out = terminal if terminal.is_terminal else Console(width=130)
        render(report, out)
        if report.sessions:
            out.print(closing_line(report), soft_wrap=True, highlight=False)
    if plot_path is not None and report.sessions:
        from ephemeral_context.replay.plot import plot

        try:
            err.print(f"plot written to {plot(report, plot_path)}")
        except OSError as error:
            print(f"error: --plot {plot_path}: {error.strerror or error}", file=sys.stderr)
            return 1
    return 0 if report.sessions else 1
