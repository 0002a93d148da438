"""How long the context engine takes to build one request, and how much memory it holds.

The engine builds every request of a conversation, so its cost per call sits on the path of
every model call. The session is synthetic, at the ledger's default limits: 50 files of
100 KB (5 MB) read in the first calls, then tool calls up to a 200-call thread (reads of
those files again, edits, command output, idle gaps that let the policy consolidate). Each
build is incremental: it continues the same engine state from the previous call, as the
agent loop does. Figures: median and 95th percentile of build_request over the last 100
calls, median of repeated runs, and the memory the engine holds (tracemalloc).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ephemeral_context.context.engine import BlockKind, ContextEngine, EngineConfig, ToolOutput
from ephemeral_context.replay.plot import plot
from ephemeral_context.replay.report import discover, replay
from ephemeral_context.store import Store

from tests.property.perturb import stretched_copy

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT.parent / "shared" / "traces"
PLOT = ROOT / "docs" / "replay-traces.png"

FILES = 50
FILE_BYTES = 100_000
CALLS = 200
REPEATS = 3
MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a careful coding assistant working in a large repository. " * 150


def file_text(n: int, version: int = 0) -> str:
    row = f"def f_{n}_{{i}}(x):\n    return x * {version} + {{i}}  # padding padding\n\n"
    lines: list[str] = []
    size = 0
    i = 0
    while size < FILE_BYTES:
        line = row.format(i=i)
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def session(engine: ContextEngine, timings: list[float]) -> None:
    conv = "bench"
    now = 1_000_000.0
    engine.add_user_text(conv, "Refactor every module to the new API")
    texts = {n: file_text(n) for n in range(FILES)}
    for call in range(CALLS):
        start = time.perf_counter()
        engine.build_request(conv, MODEL, SYSTEM, now=now)
        timings.append(time.perf_counter() - start)
        tool_id = f"toolu_{call}"
        n = call % FILES
        if call < FILES or call % 5 == 0:
            engine.add_assistant_content(
                conv,
                [
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "read_file",
                        "input": {"path": f"/m{n}.py"},
                    }
                ],
            )
            engine.add_tool_result(
                conv,
                ToolOutput(
                    tool_id, texts[n], kind=BlockKind.FILE, uri=f"file:///m{n}.py", content=texts[n]
                ),
            )
        elif call % 5 == 1:
            texts[n] = texts[n].replace("return x * 0 + 1 ", "return x * 1 + 1 ", 1)
            engine.add_assistant_content(
                conv, [{"type": "tool_use", "id": tool_id, "name": "edit_file",
                        "input": {"path": f"/m{n}.py", "old": "x * 0 + 1 ", "new": "x * 1 + 1 "}}]
            )  # fmt: skip
            engine.add_tool_result(
                conv,
                ToolOutput(
                    tool_id, "ok", kind=BlockKind.EDIT, uri=f"file:///m{n}.py", content=texts[n]
                ),
            )
        else:
            engine.add_assistant_content(
                conv, [{"type": "tool_use", "id": tool_id, "name": "bash",
                        "input": {"command": "make test"}}]
            )  # fmt: skip
            engine.add_tool_result(conv, ToolOutput(tool_id, f"test run {call}: 3 failed\n" * 40))
        now += 1800 if call % 60 == 59 else 15


def run_once(trace: bool = False) -> tuple[list[float], int, int]:
    """One session; with `trace`, the memory the engine holds at the end (slower timings)."""
    with tempfile.TemporaryDirectory() as root, Store(root) as store:
        engine = ContextEngine(store, EngineConfig())
        timings: list[float] = []
        if trace:
            tracemalloc.start()
        session(engine, timings)
        held = tracemalloc.get_traced_memory()[0] if trace else 0
        if trace:
            tracemalloc.stop()
        built = engine.last_request("bench")
        return timings, held, built.total_tokens if built else 0


def _pct(value: float, reference: float) -> str:
    return f"{value / reference - 1:+.1%}" if reference else "n/a"


def replay_section() -> str:
    """`ours` against every strategy on the real transcripts, and the issue's targets."""
    report = replay(discover([TRACES]))
    plot(report, PLOT)
    rows = [
        "| transcript | calls | recorded billed | ours billed | ours-lossless billed | "
        "lowest billed | recorded peak | ours peak | ours retrievable | ours re-hydrated |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    billed: list[float] = []
    peaks: list[float] = []
    lossless: list[float] = []
    for session in report.sessions:
        res = session.strategies
        rec, ours, free = res["recorded"], res["ours"], res["ours-lossless"]
        lowest = min(res, key=lambda name: res[name].billed_input)
        billed.append(ours.billed_input / rec.billed_input - 1)
        peaks.append(ours.peak_context / rec.peak_context - 1)
        lossless.append(free.billed_input / rec.billed_input - 1)
        rows.append(
            f"| {Path(session.path).name[:44]} | {session.calls} | {rec.billed_input:,.0f} | "
            f"{ours.billed_input:,.0f} ({_pct(ours.billed_input, rec.billed_input)}) | "
            f"{free.billed_input:,.0f} ({_pct(free.billed_input, rec.billed_input)}) | "
            f"{lowest} | {rec.peak_context:,} | {ours.peak_context:,} "
            f"({_pct(ours.peak_context, rec.peak_context)}) | {ours.retrievable:.2f} | "
            f"{ours.rehydrated_tokens:,} |"
        )
    rows += [
        "",
        f"Median over the transcripts: `ours` billed input **{statistics.median(billed):+.1%}** "
        f"(target at most -20%), peak context **{statistics.median(peaks):+.1%}** "
        f"(target at most -30%); lossless only (eviction off): billed "
        f"{statistics.median(lossless):+.1%}.",
        "",
        f"![context per call and cumulative billed input]({PLOT.name})",
    ]
    return "\n".join(rows)


def robustness_section() -> str:
    """The same transcripts with every idle gap stretched or shrunk: sessions the policy's
    constants were never checked on (a user who pauses 4 or 12 times as long, or a quarter).
    Each factor replays copies of the files with their timestamps moved (`stretched_copy`)."""
    paths = discover([TRACES])
    names = [f"{p.stem[:10]}…{p.stem[-8:]}" for p in paths]
    rows = ["| gaps x | " + " | ".join(names) + " |"]
    rows.append("|---|" + "---|" * (len(rows[0].split("|")) - 3))
    with tempfile.TemporaryDirectory() as root:
        for scale in (0.25, 1.0, 4.0, 12.0):
            folder = Path(root) / f"x{scale:g}"
            folder.mkdir()
            report = replay([stretched_copy(path, scale, folder) for path in paths])
            cells = []
            for session in report.sessions:
                billed = {name: r.billed_input for name, r in session.strategies.items()}
                lowest = min(billed, key=lambda name: billed[name])
                cells.append(f"{_pct(billed['ours'], billed['recorded'])} ({lowest} lowest)")
            rows.append(f"| {scale:g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def run() -> str:
    medians: list[float] = []
    p95s: list[float] = []
    worst: list[float] = []
    firsts: list[float] = []
    tokens = 0
    for _ in range(REPEATS):
        timings, _, tokens = run_once()
        tail = sorted(timings[CALLS // 2 :])
        medians.append(statistics.median(tail))
        p95s.append(tail[int(len(tail) * 0.95)])
        worst.append(max(timings))
        firsts.append(statistics.median(timings[:FILES]))
    median_ms = statistics.median(medians) * 1000
    memory = run_once(trace=True)[1]
    return "\n".join(
        [
            f"{FILES} files of {FILE_BYTES // 1000} KB ({FILES * FILE_BYTES // 1_000_000} MB) "
            f"read into the ledger, a {CALLS}-call thread, median of {REPEATS} runs.",
            "",
            "| measure | value |",
            "|---|---|",
            f"| build_request, calls 1-{FILES} (files arriving) | "
            f"{statistics.median(firsts) * 1000:.2f} ms |",
            f"| build_request, calls {CALLS // 2 + 1}-{CALLS}, median | **{median_ms:.2f} ms** "
            "(aim < 10 ms) |",
            f"| build_request, calls {CALLS // 2 + 1}-{CALLS}, 95th percentile | "
            f"{statistics.median(p95s) * 1000:.2f} ms |",
            f"| slowest build_request of the session (a cold consolidation) | "
            f"{statistics.median(worst) * 1000:.2f} ms |",
            f"| memory the engine holds after {CALLS} calls (tracemalloc) | "
            f"{memory / 1_000_000:.1f} MB |",
            f"| tokens in the last request (budget 150,000) | {tokens:,} |",
            "",
            "### `ours` on the real transcripts (`ectx replay ../shared/traces`)",
            "",
            replay_section(),
            "",
            "### The same transcripts with idle gaps scaled (`ours` billed input vs `recorded`)",
            "",
            robustness_section(),
        ]
    )


if __name__ == "__main__":
    print(run())
