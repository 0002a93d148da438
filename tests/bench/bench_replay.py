"""Replay of the largest real transcript (2.3 MB) under every strategy: time and memory;
then a generated thread of n and 2n calls: does the time grow with its length or its square?

Wall time is the median of ROUNDS runs in this process (reading the file, then every
strategy), with each strategy's own median beside it. Peak memory is the peak resident set
(VmHWM) of a fresh interpreter that does one whole replay, next to one that only imports
the same modules, so the replay's own share is the difference. Aim: under 3 s and 300 MB.

The long thread is one prompt and n Bash calls (tests/unit/replay/builder.py `bash_thread`),
read at n and 2n calls, and read and replayed under every strategy at n and 2n (smaller n:
the strategies take longer), in this process: the ratio of the two times is about 2 when
the work grows with the thread, about 4 when it grows with its square.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.strategies import STRATEGIES

from tests.bench.memory import peak_rss_mb
from tests.transcripts import HISTORY, data_dir
from tests.unit.replay.builder import bash_thread

ROUNDS = 5
REPO = Path(__file__).resolve().parent.parent.parent
TRACE = (data_dir() or REPO.parent / "shared") / "traces" / HISTORY

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


LONG_READ = 1_000
"""Calls of the long thread that is only read, at n and 2n (median of ROUNDS reads each)."""
LONG_REPLAY = 250
"""Calls of the long thread read and replayed under every strategy, at n and 2n (once)."""


def _long_thread(calls: int, replayed: bool, folder: Path) -> float:
    """Seconds to read (and with `replayed`, replay under every strategy) a thread of `calls`."""
    path = bash_thread(calls).write(folder / f"bash-{calls}.jsonl")
    times = []
    for _ in range(1 if replayed else ROUNDS):
        start = time.perf_counter()
        session = read_session(path)
        for strategy in STRATEGIES.values() if replayed else ():
            strategy.replay(session)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _long_thread_rows() -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, n, replayed in (
            ("read", LONG_READ, False),
            ("read + every strategy", LONG_REPLAY, True),
        ):
            once, twice = (_long_thread(k, replayed, Path(folder)) for k in (n, 2 * n))
            rows.append(f"| {label} | {n:,} | {once:.2f} | {twice:.2f} | {twice / once:.1f} |")
    return rows


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
        "",
        "A generated thread of one prompt and n Bash calls, at n and 2n calls, in this process "
        f"(load average {os.getloadavg()[0]:.1f} when it started): *2n/n* is about 2 when "
        "the time grows with the thread, about 4 when it grows with its square.",
        "",
        "| long thread | n | n: s | 2n: s | 2n/n |",
        "|---|---|---|---|---|",
        *_long_thread_rows(),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
