"""Replay many transcripts under every strategy and say how they compare.

`replay(paths)` reads each transcript (files, or folders searched for *.jsonl and for *.md
files that hold a session), runs every strategy on it, checks the `recorded` strategy
against the usage the transcript recorded (when Anthropic billed it: replay/billing.py),
and returns a `Report`. A file that cannot be
replayed is listed under `errors` with its path and the others still replay. `to_json`
gives the documented JSON shape; `render` prints the side-by-side table with rich.

API:
- `replay(paths, strategies, advance, workers)` -> a `Report` (`SessionReport`s and
  `ReplayError`s), a large batch replayed one file per core (replay/parallel.py);
  `replay_session(session, strategies)`; `discover(paths)`.
- Output: `to_json(report)`, `render(report, console, per_session_limit)`,
  `closing_line(report)`; `recorded_total`, `recorded_billed`, `recorded_cost`.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ephemeral_context.cache_sim import Usage
from ephemeral_context.documents import real_path
from ephemeral_context.replay.billing import Billing, classify
from ephemeral_context.replay.flow import Problem, RecordedUsage, Session
from ephemeral_context.replay.parallel import Lost, available_cores, run_in_workers
from ephemeral_context.replay.reader import NO_CALLS, TranscriptError, read_session
from ephemeral_context.replay.simulate import Fidelity, Strategy, StrategyResult, fidelity
from ephemeral_context.replay.strategies import STRATEGIES

BASELINE = "recorded"


@dataclass
class SessionReport:
    """One transcript: its calls, what it recorded, and each strategy's replay."""

    path: str
    session: Session
    recorded_usage: RecordedUsage | None
    recorded_billed: float | None
    """Billed input the transcript records, each call at its own model's prices."""
    billing: Billing
    fidelity: Fidelity | None
    """Only for sessions Anthropic billed: other billing is not Anthropic's cache."""
    strategies: dict[str, StrategyResult]

    @property
    def calls(self) -> int:
        return len(self.session.calls)


@dataclass(frozen=True)
class ReplayError:
    """A file that could not be replayed, and why."""

    path: str
    error: str

    def __str__(self) -> str:
        return f"{self.path}: {self.error}"


@dataclass
class Report:
    """All transcripts replayed, plus what could not be."""

    sessions: list[SessionReport] = field(default_factory=list)
    errors: list[ReplayError] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def discover(paths: Iterable[Path]) -> list[Path]:
    """Transcript files named directly, or found under the named folders (*.jsonl and
    *.jsonl.gz, and *.md files that hold a Claude Code session: sorted); what is found
    there and is no regular file (a FIFO, a broken link, a folder that cannot be listed) is
    kept, so that reading it lists it under errors instead of leaving it out unsaid. Other
    markdown (a README, notes) is no transcript and no error: it is left out."""
    found: dict[Path, Path] = {}  # by the file it is: a path named twice is replayed once
    for path in paths:
        if path.is_dir():
            for each in sorted(_found_under(path)):
                found.setdefault(real_path(each), each)
        else:
            found.setdefault(real_path(path), path)
    return list(found.values())


def _found_under(folder: Path) -> list[Path]:
    """The transcripts under a folder, and each folder in it that cannot be listed (a
    locked one: reading it lists it under errors with why, as for a file that cannot be
    read, instead of leaving out unsaid what it holds)."""
    found: list[Path] = []

    def unlisted(error: OSError) -> None:
        found.append(Path(error.filename))

    for parent, _, names in os.walk(folder, onerror=unlisted):  # links to folders: not followed
        for name in names:  # what is no folder: files, FIFOs, broken links, link loops
            path = Path(parent, name)
            markdown = name.endswith(".md") and _markdown_transcript(path)
            if markdown or name.endswith(TRANSCRIPT_NAMES):
                found.append(path)
    return found


TRANSCRIPT_NAMES = (".jsonl", ".jsonl.gz")
"""A session file as Claude Code names it, or gzip'd (the reader reads both)."""


SNIFFED_BYTES = 256 * 1024
"""What is read of a markdown file to tell a transcript saved as .md from other markdown."""
_SESSION_KEY = rb'"(?:sessionId|session_id|uuid|parentUuid|leafUuid)"\s*:'
_RECORD = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{(?=.*"type"\s*:)(?=.*' + _SESSION_KEY + rb")")
"""A line that is a Claude Code record (JSONL or stream-json): a type and a session key."""


def _turn(roles: bytes) -> re.Pattern[bytes]:
    """A turn as markdown exporters write it (`**User:** ...`, `## Claude`, `### User
    (10:32)`, `## 👤 User`, `### USER`, SpecStory's `_**User**_`): a heading of the role
    alone or with a time or number, so that a README's `## User guide` or `## Claude Code`
    is none."""
    return re.compile(
        rb"^(?:\*\*(?:" + roles + rb")(?::\*\*|\*\*:)"
        rb"|_\*\*(?:" + roles + rb")\*\*_\s*$"
        rb"|#{1,4} *(?:[^\w\s#]+ *)?(?:" + roles + rb")\s*(?:[:(\[|\d-].*)?$)",
        re.IGNORECASE,
    )


_USER_TURN = _turn(rb"User|Human")
_ASSISTANT_TURN = _turn(rb"Assistant|Claude")


def _markdown_transcript(path: Path) -> bool:
    """A .md file that is a Claude Code session: its records as JSON lines (replayed as if
    named directly), or a conversation exported as markdown prose, a user's turn and an
    assistant's (named directly, it is one clear error: the reader needs the records). A
    file that is no regular file is not looked into (a FIFO would wait for a writer)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as stream:
            lines = stream.read(SNIFFED_BYTES).splitlines()
    except OSError:
        return False
    if any(_RECORD.match(line) for line in lines):
        return True
    return any(map(_USER_TURN.match, lines)) and any(map(_ASSISTANT_TURN.match, lines))


def recorded_total(session: Session) -> RecordedUsage | None:
    """The sum of the recorded usage of every call, when every call has one."""
    if not session.recorded:
        return None
    usages = [call.usage for call in session.calls if call.usage is not None]
    inputs = sum(usages, Usage())
    return RecordedUsage(**asdict(inputs), output_tokens=sum(u.output_tokens for u in usages))


def recorded_billed(session: Session) -> float | None:
    """The recorded billed input, each call at its own prices (`Call.price`)."""
    if not session.recorded:
        return None
    return sum(
        call.price.billed_input(call.usage) for call in session.calls if call.usage is not None
    )


def replay_session(
    session: Session, strategies: Mapping[str, Strategy] = STRATEGIES
) -> SessionReport:
    """Every strategy on one session, and the fidelity of the `recorded` one."""
    results = {name: strategy.replay(session) for name, strategy in strategies.items()}
    baseline = results.get(BASELINE)
    billing = classify(session)
    checked = baseline is not None and billing is Billing.ANTHROPIC
    return SessionReport(
        path=session.path,
        session=session,
        recorded_usage=recorded_total(session),
        recorded_billed=recorded_billed(session),
        billing=billing,
        fidelity=fidelity(session, baseline) if checked and baseline else None,
        strategies=results,
    )


PARALLEL_FROM_BYTES = 8_000_000
"""Less input than this replays in this process: a worker process takes about half a second
to start (it imports the package), more than a small batch would gain."""


@dataclass(frozen=True)
class _Replayed:
    """What one file gave: its session's report, the problems reading it found, or the
    error that stopped it (or that it made no calls)."""

    session: SessionReport | None = None
    problems: tuple[Problem, ...] = ()
    error: ReplayError | None = None


def _replay_file(path: Path, strategies: Mapping[str, Strategy] = STRATEGIES) -> _Replayed:
    """One file under every strategy; any failure is its own error, never the batch's."""
    try:
        session = read_session(path)
        if not session.calls:  # nothing replayed: an error, in the JSON as on the terminal
            notes = tuple(p for p in session.problems if p.message != NO_CALLS)
            return _Replayed(problems=notes, error=ReplayError(str(path), NO_CALLS))
        return _Replayed(replay_session(session, strategies), tuple(session.problems))
    except TranscriptError as error:
        return _Replayed(error=ReplayError(str(path), str(error).removeprefix(f"{path}: ")))
    except Exception as error:  # one bad file never stops the batch: say why, go on
        return _Replayed(error=ReplayError(str(path), f"{type(error).__name__}: {error}"))


def replay(
    paths: Sequence[Path],
    strategies: Mapping[str, Strategy] = STRATEGIES,
    advance: Callable[[Path], None] | None = None,
    workers: int | None = None,
) -> Report:
    """Replay each transcript; `advance` is called after each file (for a progress bar).

    `workers` processes replay files side by side; None: one per core for a batch of the
    built-in strategies with at least `PARALLEL_FROM_BYTES` of input, else this process
    alone. The report lists the files in the order given however they finished.
    """
    count = _workers(paths, strategies) if workers is None else workers
    if count > 1:
        replayed = _in_workers(paths, strategies, count, advance)
    else:
        replayed = []
        for path in paths:
            replayed.append(_replay_file(path, strategies))
            if advance is not None:
                advance(path)
    report = Report()
    for one in replayed:
        if one.session is not None:
            report.sessions.append(one.session)
        report.problems.extend(one.problems)
        if one.error is not None:
            report.errors.append(one.error)
    return report


def _workers(paths: Sequence[Path], strategies: Mapping[str, Strategy]) -> int:
    """How many processes a batch is worth (strategies other than the built-in ones are the
    caller's objects, which need not pickle: they replay here; so does an embedded
    interpreter, which has no executable to start a worker with)."""
    if strategies is not STRATEGIES or len(paths) < 2 or not sys.executable:
        return 1
    if sum(map(_size, paths)) < PARALLEL_FROM_BYTES:
        return 1
    return min(available_cores(), len(paths))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # the reader says what is wrong with it
        return 0


def _in_workers(
    paths: Sequence[Path],
    strategies: Mapping[str, Strategy],
    workers: int,
    advance: Callable[[Path], None] | None,
) -> list[_Replayed]:
    """The files replayed in `workers` processes, the largest handed out first so that no
    worker is left with a long file at the end; in the order of `paths`."""
    order = sorted(range(len(paths)), key=lambda i: -_size(paths[i]))
    batch = run_in_workers(
        partial(_replay_file, strategies=strategies),
        [paths[i] for i in order],
        workers,
        None if advance is None else lambda k: advance(paths[order[k]]),
    )
    replayed: list[_Replayed | None] = [None] * len(paths)
    for k, result in enumerate(batch.results):
        path = paths[order[k]]
        if isinstance(result, Lost):
            result = _Replayed(error=ReplayError(str(path), result.reason))
        elif k in batch.rerun:
            rerun = Problem(str(path), 0, WORKER_DIED_ONCE)
            result = replace(result, problems=(*result.problems, rerun))
        replayed[order[k]] = result
    return [r for r in replayed if r is not None]


WORKER_DIED_ONCE = "the worker process replaying it died; replayed again in a fresh one"


def _strategy_json(result: StrategyResult) -> dict[str, Any]:
    return {
        "peak_context": result.peak_context,
        "total_context": result.total_context,
        "billed_input": round(result.billed_input, 1),
        "cost_usd": round(result.cost_usd, 4),
        "cache_hit_rate": round(result.cache_hit_rate, 4),
        "retrievable": round(result.retrievable, 4),
        "rehydrations": result.rehydrations,
        "rehydrated_tokens": result.rehydrated_tokens,
    }


def to_json(report: Report) -> dict[str, Any]:
    """The report in the documented JSON shape (errors are signed fractions)."""
    sessions = []
    for item in report.sessions:
        usage = item.recorded_usage
        sessions.append(
            {
                "path": item.path,
                "parent": item.session.parent,
                "calls": item.calls,
                "model": item.session.model,
                "billing": item.billing.value,
                "recorded_usage": None
                if usage is None
                else {
                    "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                    "billed_input": round(item.recorded_billed or 0.0, 1),
                },
                "fidelity": None
                if item.fidelity is None
                else {
                    "billed_input_error": round(item.fidelity.billed_input_error, 4),
                    "median_call_error": round(item.fidelity.median_call_error, 4),
                },
                "strategies": {name: _strategy_json(r) for name, r in item.strategies.items()},
            }
        )
    return {
        "sessions": sessions,
        "errors": [{"path": e.path, "error": e.error} for e in report.errors],
    }


def _k(tokens: float) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.2f}M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.1f}K"
    return f"{tokens:.0f}"


def _table(title: str, results: Mapping[str, Sequence[StrategyResult]], calls: int) -> Table:
    table = Table(title=title, title_justify="left")
    for header in ("strategy", "calls", "peak ctx", "total ctx", "billed input", "vs recorded"):
        if header == "strategy":
            table.add_column(header, no_wrap=True)
        else:
            table.add_column(header, justify="right")
    for header in ("cost $", "cache hits", "retrievable"):
        table.add_column(header, justify="right")
    base = sum(r.billed_input for r in results.get(BASELINE, ()))
    for name, runs in results.items():
        billed = sum(r.billed_input for r in runs)
        hits = sum(r.usage.cache_read_input_tokens for r in runs)
        total = sum(r.usage.total_input_tokens for r in runs)
        shown = sum(r.shown_tokens for r in runs)
        lost = sum(r.lost_tokens for r in runs)
        table.add_row(
            name,
            str(calls),
            _k(max((r.peak_context for r in runs), default=0)),
            _k(sum(r.total_context for r in runs)),
            _k(billed),
            f"{billed / base - 1:+.1%}" if base else "-",
            f"{sum(r.cost_usd for r in runs):.2f}",
            f"{hits / total:.1%}" if total else "-",
            f"{1 - lost / shown:.1%}" if shown else "100.0%",
        )
    return table


def _fidelity_line(item: SessionReport) -> str:
    """What the session's recorded usage says about the cache model, in words."""
    if item.billing is Billing.NONE:
        recorded = sum(call.usage is not None for call in item.session.calls)
        if recorded:
            return f"  usage recorded for {recorded} of {item.calls} calls: fidelity not checked"
        return "  no recorded usage in this transcript: fidelity not checked"
    billed = _k(item.recorded_billed or 0.0)
    if item.billing is Billing.OTHER or item.fidelity is None:
        return (
            f"  recorded billed input {billed}, not billed by Anthropic's prompt cache "
            "(reads nothing wrote, or no cache counts): strategies compared under "
            "Anthropic's rules, fidelity not claimed"
        )
    return (
        f"  billed by Anthropic: recorded billed input {billed}; "
        f"model error {item.fidelity.billed_input_error:+.1%} in total, "
        f"median per call {item.fidelity.median_call_error:+.1%}"
    )


def _rehydration_lines(results: Mapping[str, Sequence[StrategyResult]]) -> list[str]:
    """What each strategy that brought evicted content back paid for it, in words."""
    lines = []
    for name, runs in results.items():
        items = sum(r.rehydrations for r in runs)
        if items:
            tokens = _k(sum(r.rehydrated_tokens for r in runs))
            lines.append(
                f"  {name} re-hydrated {items} evicted item{'s' if items > 1 else ''} "
                f"({tokens} tokens), each fetched by an extra round trip before the call "
                "that used it (billed above)"
            )
    return lines


def render(report: Report, console: Console, per_session_limit: int = 6) -> None:
    """The side-by-side tables: one per session (up to a limit), then the totals."""
    for item in report.sessions[:per_session_limit]:
        title = f"{Path(item.path).name}  ({item.session.model}, {item.calls} calls)"
        results = {n: [r] for n, r in item.strategies.items()}
        console.print(_table(title, results, item.calls))
        console.print(_fidelity_line(item))
        for line in _rehydration_lines(results):
            console.print(line)
    if len(report.sessions) > per_session_limit:
        left = len(report.sessions) - per_session_limit
        console.print(f"{left} more transcript{'s' if left > 1 else ''}: each is in --json")
    if len(report.sessions) > 1:
        names = list(report.sessions[0].strategies)
        totals = {n: [s.strategies[n] for s in report.sessions] for n in names}
        calls = sum(s.calls for s in report.sessions)
        console.print(_table(f"All {_counted(report.sessions)}", totals, calls))
        for line in _rehydration_lines(totals):
            console.print(line)


def recorded_cost(item: SessionReport) -> float | None:
    """Dollars at list price for what Anthropic billed, None when it billed nothing on record.

    Transcripts keep only the stream-start output count, so the output side is the replay's
    own estimate (the `recorded` strategy's), as in every strategy's cost.
    """
    baseline = item.strategies.get(BASELINE)
    if item.billing is not Billing.ANTHROPIC or baseline is None:
        return None
    return sum(
        call.price.cost_usd(call.usage, modelled.output_tokens)
        for call, modelled in zip(item.session.calls, baseline.calls, strict=True)
        if call.usage is not None
    )


def closing_line(report: Report) -> str:
    """One line to end on: what the sessions cost at list prices, what each strategy would."""
    items = report.sessions
    costs = [c for c in map(recorded_cost, items) if c is not None]
    if costs:
        unknown = len(items) - len(costs)
        paid = f"${sum(costs):,.2f} at list prices" + (
            f" ({unknown} not billed by Anthropic on record)" if unknown else ""
        )
    else:
        paid = "no usage billed by Anthropic on record"
    names = list(items[0].strategies) if items else []
    each = ", ".join(f"{n} ${sum(i.strategies[n].cost_usd for i in items):,.2f}" for n in names)
    calls = sum(item.calls for item in items)
    return f"{_counted(items)}, {calls} calls: {paid}; under each strategy: {each}"


def _counted(items: Sequence[SessionReport]) -> str:
    """How many transcripts, and of them how many are sub-agents of a session replayed with
    them (each is a file of its own, not a session of its own)."""
    agents = sum(item.session.parent is not None for item in items)
    counted = f"{len(items)} transcript{'' if len(items) == 1 else 's'}"
    if not agents:
        return counted
    return f"{counted} ({len(items) - agents} sessions and {agents} of their sub-agents)"
