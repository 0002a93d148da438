"""Replay of the largest real transcript (2.3 MB) under every strategy: time and memory.

Wall time is the median of ROUNDS runs in this process (reading the file, then every
strategy), with each strategy's own median beside it. Peak memory is the peak resident set
(VmHWM) of a fresh interpreter that does one whole replay, next to one that only imports
the same modules, so the replay's own share is the difference. Aim: under 3 s and 300 MB.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.strategies import STRATEGIES

from tests.bench.memory import peak_rss_mb

ROUNDS = 5
REPO = Path(__file__).resolve().parent.parent.parent
TRACE = REPO.parent / "shared" / "traces" / "randlee__claude-history__session-967e501d.jsonl"

_CHILD = """
import sys
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import replay_session
from ephemeral_context.replay.strategies import STRATEGIES
if sys.argv[1] == "replay":
    replay_session(read_session(sys.argv[2]))
"""


def _peak_rss_mb(mode: str) -> float:
    return peak_rss_mb(_CHILD, mode, str(TRACE))


def run() -> str:
    totals: list[float] = []
    reads: list[float] = []
    per_strategy: dict[str, list[float]] = {name: [] for name in STRATEGIES}
    calls = 0
    for _ in range(ROUNDS):
        start = time.perf_counter()
        session = read_session(TRACE)
        reads.append(time.perf_counter() - start)
        calls = len(session.calls)
        for name, strategy in STRATEGIES.items():
            begin = time.perf_counter()
            strategy.replay(session)
            per_strategy[name].append(time.perf_counter() - begin)
        totals.append(time.perf_counter() - start)
    baseline = _peak_rss_mb("import")
    peak = _peak_rss_mb("replay")
    size_mb = TRACE.stat().st_size / 1e6
    lines = [
        f"Transcript: `{TRACE.name}` ({size_mb:.1f} MB, {calls} calls), "
        f"{len(STRATEGIES)} strategies, median of {ROUNDS} runs.",
        "",
        "| step | median wall time |",
        "|---|---|",
        f"| read the transcript | {statistics.median(reads) * 1000:.0f} ms |",
    ]
    lines += [
        f"| `{name}` | {statistics.median(times) * 1000:.0f} ms |"
        for name, times in per_strategy.items()
    ]
    lines += [
        f"| **all: read + every strategy** | **{statistics.median(totals):.2f} s** (aim < 3 s) |",
        "",
        f"Peak resident memory of one whole replay in a fresh interpreter: **{peak:.0f} MB** "
        f"(aim < 300 MB); the same interpreter importing the modules only: {baseline:.0f} MB, "
        f"so the replay itself adds {peak - baseline:.0f} MB.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
