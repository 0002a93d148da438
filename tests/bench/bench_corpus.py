"""Replay of the whole 2026 corpus (61 sessions, 40 MB) under every strategy: time and memory.

The baseline is reading the same files alone (bytes, and each line parsed as JSON: what any
replay has to do), timed in the same process, so the figure is a ratio that holds on a noisy
machine; three rounds, each reading, then replaying in this process alone, then in worker
processes (one per core, as `ectx replay` does for a batch this size), give the medians and
the spread. CPU time counts the workers' too. Peak memory is the peak resident set (VmHWM)
of a fresh interpreter that replays the whole corpus, next to one that only reads and parses
the files; with workers, the interpreter's own peak plus each worker at the largest peak any
of them reached (an upper bound: they peak at different times). Aim (issue 10): the whole
corpus in under 20 s and 500 MB. The corpus is `$ECTX_DATA/corpus`, else ../shared/corpus
beside the checkout.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ephemeral_context.replay.parallel import available_cores
from ephemeral_context.replay.report import replay

from tests.bench.memory import peak_rss_mb, peak_rss_with_children_mb

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = Path(os.environ.get("ECTX_DATA") or REPO.parent / "shared") / "corpus"
ROUNDS = 3

_CHILD = """
import json, sys
from pathlib import Path
files = sorted(Path(sys.argv[2]).glob("*.jsonl"))
if sys.argv[1] == "read":
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                json.loads(line) if line.strip() else None
else:
    from ephemeral_context.replay.report import replay
    replay(files, workers=1 if sys.argv[1] == "alone" else None)
"""


def _read_only(files: list[Path]) -> None:
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.strip():
                    json.loads(line)


def _timed(files: list[Path], workers: int | None) -> tuple[float, float, int]:
    """Wall and CPU seconds (the workers' CPU included) of one replay, and its sessions."""
    before = os.times()
    start = time.perf_counter()
    report = replay(files, workers=workers)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # user and system, own and children's
    return wall, cpu, len(report.sessions)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"


def run() -> str:
    files = sorted(CORPUS.glob("*.jsonl"))
    if not files:
        return f"No corpus at {CORPUS}: nothing measured."
    size_mb = sum(p.stat().st_size for p in files) / 1e6
    load = os.getloadavg()[0]
    workers = min(available_cores(), len(files))
    read_s: list[float] = []
    alone: dict[str, list[float]] = {"wall": [], "cpu": [], "ratio": []}
    beside: dict[str, list[float]] = {"wall": [], "cpu": [], "ratio": []}
    sessions = 0
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _read_only(files)
        read_s.append(time.perf_counter() - start)
        for figures, count in ((alone, 1), (beside, None)):
            wall, cpu, sessions = _timed(files, count)
            figures["wall"].append(wall)
            figures["cpu"].append(cpu)
            figures["ratio"].append(wall / read_s[-1])
    reading_mb = peak_rss_mb(_CHILD, "read", str(CORPUS))
    alone_mb = peak_rss_mb(_CHILD, "alone", str(CORPUS))
    own_mb, worker_mb = peak_rss_with_children_mb(_CHILD, "workers", str(CORPUS))
    beside_mb = own_mb + workers * worker_mb
    return "\n".join(
        [
            f"Corpus: {len(files)} files, {size_mb:.1f} MB, {sessions} sessions replayed under "
            f"every strategy.",
            "",
            f"Load average when the run started: {load:.1f} (the 2 cores are shared). Medians "
            f"of {ROUNDS} rounds, the spread in brackets; each ratio is the median of the "
            "rounds' ratios to reading in the same round. CPU time is user and system time, the "
            "workers' included.",
            "",
            "| | wall time | CPU time | peak resident memory (fresh interpreter) |",
            "|---|---|---|---|",
            f"| read and parse the files alone | {statistics.median(read_s):.2f} s | | "
            f"{reading_mb:.0f} MB |",
            f"| replay in one process | {_spread(alone['wall'])}, "
            f"{statistics.median(alone['ratio']):.0f}x reading | {_spread(alone['cpu'])} | "
            f"{alone_mb:.0f} MB |",
            f"| **replay in {workers} worker processes (`ectx replay`)** | "
            f"**{_spread(beside['wall'])}**, {statistics.median(beside['ratio']):.0f}x reading; "
            f"aim < 20 s | {_spread(beside['cpu'])} | **{beside_mb:.0f} MB** ({own_mb:.0f} + "
            f"{workers} x {worker_mb:.0f}; aim < 500 MB) |",
        ]
    )


if __name__ == "__main__":
    print(run())
