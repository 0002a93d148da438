"""Replay of the whole 2026 corpus (61 sessions, 40 MB) under every strategy: time and memory.

The baseline is reading the same files alone (bytes, and each line parsed as JSON: what any
replay has to do), timed in the same process, so the figure is a ratio that holds on a noisy
machine; three rounds, each reading then replaying, give the medians and the spread. Peak
memory is the peak resident set (VmHWM) of a fresh interpreter that replays the whole corpus,
next to one that only reads and parses the files. Aim (issue 10): the whole corpus in under
20 s and 500 MB. The corpus is `$ECTX_DATA/corpus`, else ../shared/corpus beside the checkout.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from ephemeral_context.replay.report import replay
from memory import peak_rss_mb

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = Path(os.environ.get("ECTX_DATA") or REPO.parent / "shared") / "corpus"
ROUNDS = 3

_CHILD = """
import json, sys
from pathlib import Path
files = sorted(Path(sys.argv[2]).glob("*.jsonl"))
if sys.argv[1] == "replay":
    from ephemeral_context.replay.report import replay
    replay(files)
else:
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                json.loads(line) if line.strip() else None
"""


def _read_only(files: list[Path]) -> None:
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.strip():
                    json.loads(line)


def _peak_rss_mb(mode: str) -> float:
    return peak_rss_mb(_CHILD, mode, str(CORPUS))


def run() -> str:
    files = sorted(CORPUS.glob("*.jsonl"))
    if not files:
        return f"No corpus at {CORPUS}: nothing measured."
    size_mb = sum(p.stat().st_size for p in files) / 1e6
    load = os.getloadavg()[0]
    read_s: list[float] = []
    replay_s: list[float] = []
    replay_cpu_s: list[float] = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _read_only(files)
        read_s.append(time.perf_counter() - start)
        start, start_cpu = time.perf_counter(), time.process_time()
        report = replay(files)
        replay_s.append(time.perf_counter() - start)
        replay_cpu_s.append(time.process_time() - start_cpu)
    ratio = statistics.median(play / read for play, read in zip(replay_s, read_s, strict=True))
    read_median, replay_median = statistics.median(read_s), statistics.median(replay_s)
    reading_mb = _peak_rss_mb("read")
    replay_mb = _peak_rss_mb("replay")
    strategies = len(report.sessions[0].strategies) if report.sessions else 0
    return "\n".join(
        [
            f"Corpus: {len(files)} files, {size_mb:.1f} MB, {len(report.sessions)} sessions "
            f"replayed under {strategies} strategies, {len(report.errors)} errors.",
            "",
            f"Load average when the run started: {load:.1f} (the 2 cores are shared). Wall "
            f"times are medians of {ROUNDS} rounds (replay {min(replay_s):.1f}-"
            f"{max(replay_s):.1f} s); the ratio is the median of the rounds' ratios. The "
            f"replay's CPU time in this process: {statistics.median(replay_cpu_s):.1f} s "
            f"({min(replay_cpu_s):.1f}-{max(replay_cpu_s):.1f} s; the other engineers' load "
            f"inflates it too, less than the wall time).",
            "",
            "| | wall time | peak resident memory (fresh interpreter) |",
            "|---|---|---|",
            f"| read and parse the files alone | {read_median:.2f} s | {reading_mb:.0f} MB |",
            f"| **replay: read, every strategy, report** | **{replay_median:.1f} s** "
            f"({ratio:.0f}x reading; aim < 20 s) | **{replay_mb:.0f} MB** "
            f"({replay_mb / reading_mb:.1f}x reading; aim < 500 MB) |",
        ]
    )


if __name__ == "__main__":
    print(run())
