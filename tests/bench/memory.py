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


def peak_rss_mb(script: str, *args: str) -> float:
    """MB at the peak of `python -c script args...` run from the repository.

    VmHWM (peak resident set) belongs to the new process image; ru_maxrss would carry over
    the forked parent's peak across exec.
    """
    done = subprocess.run(
        [sys.executable, "-c", script + PRINT_PEAK, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return int(done.stdout.strip()) / 1024
