"""Peak resident memory of a fresh interpreter running a short script (the benchmarks' rule)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

PRINT_PEAK = """
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""
"""Appended to each child script: it prints the peak resident set in KiB."""


PRINT_CHILDREN_PEAK = """
import resource
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
"""Appended after PRINT_PEAK: the largest peak resident set of the script's ended child
processes in KiB (the replay's workers; each is a fresh interpreter, so no fork carries a
parent's peak into it)."""


def peak_rss_mb(script: str, *args: str) -> float:
    """MB at the peak of `python -c script args...` run from the repository.

    VmHWM (peak resident set) belongs to the new process image; ru_maxrss would carry over
    the forked parent's peak across exec.
    """
    return _peaks(script + PRINT_PEAK, *args)[0]


def peak_rss_with_children_mb(script: str, *args: str) -> tuple[float, float]:
    """MB at the peak of the script's own process, and of the largest of its children."""
    own, child = _peaks(script + PRINT_PEAK + PRINT_CHILDREN_PEAK, *args)
    return own, child


def _peaks(script: str, *args: str) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return [int(line) / 1024 for line in done.stdout.split()]
