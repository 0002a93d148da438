"""Replaying files in worker processes: the same report as one process, nothing lost when a
worker dies (killed from outside, or by the job itself); real worker processes."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from ephemeral_context.replay import report as report_module
from ephemeral_context.replay.parallel import DIED, Lost, run_in_workers
from ephemeral_context.replay.report import WORKER_DIED_ONCE, Report, replay, to_json
from ephemeral_context.replay.strategies import STRATEGIES

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "data" / "transcripts"
RANDLEE = TRANSCRIPTS / "randlee__claude-history__subagents__agent-aabf2dd.jsonl"
D_KIMUSON = TRANSCRIPTS / "d-kimuson__claude-code-viewer__fe5e1c67.jsonl"
BOTH = [RANDLEE, D_KIMUSON]


@pytest.fixture(scope="module")
def alone() -> Report:
    """The two transcripts replayed in this process."""
    return replay(BOTH, workers=1)


def _same(a: Report, b: Report) -> bool:
    """The same sessions, figure for figure."""
    return json.dumps(to_json(a)["sessions"]) == json.dumps(to_json(b)["sessions"])


def test_workers_give_the_report_one_process_gives(tmp_path: Path, alone: Report) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x00\xff\xfe" * 1000)
    paths = [BOTH[0], binary, BOTH[1], tmp_path / "missing.jsonl"]
    advanced: list[Path] = []
    side_by_side = replay(paths, workers=2, advance=advanced.append)
    assert _same(side_by_side, alone)  # the two bad files add no session
    assert [str(p) for p in side_by_side.problems if p.path != str(binary)] == [
        str(p) for p in alone.problems
    ]
    assert [e.path for e in side_by_side.errors] == [str(binary), str(tmp_path / "missing.jsonl")]
    assert [p.path for p in side_by_side.problems if p.path == str(binary)]
    assert sorted(advanced) == sorted(paths)  # each file once, in the order they finished


def test_a_small_batch_or_own_strategies_stay_in_this_process() -> None:
    assert report_module._workers([D_KIMUSON, RANDLEE], STRATEGIES) == 1
    big = [D_KIMUSON] * (report_module.PARALLEL_FROM_BYTES // D_KIMUSON.stat().st_size + 1)
    assert report_module._workers(big, STRATEGIES) >= min(2, os.cpu_count() or 1)
    assert report_module._workers(big, dict(STRATEGIES)) == 1


def test_an_interpreter_without_an_executable_replays_in_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = [D_KIMUSON] * (report_module.PARALLEL_FROM_BYTES // D_KIMUSON.stat().st_size + 1)
    monkeypatch.setattr(sys, "executable", "")  # the interpreter report.py asks
    assert report_module._workers(big, STRATEGIES) == 1


def _workers_of(pid: int) -> list[int]:
    """The replay's worker processes among the children of `pid`."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    found = []
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"ephemeral_context.replay.parallel" in command:
            found.append(child)
    return found


def test_a_worker_killed_mid_batch_loses_no_file(alone: Report) -> None:
    paths = BOTH
    killed: list[int] = []
    finished = threading.Event()

    def kill_the_first_worker() -> None:
        while not finished.is_set() and not killed:
            for pid in _workers_of(os.getpid()):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_first_worker)
    killer.start()
    try:
        report = replay(paths, workers=2)
    finally:
        finished.set()
        killer.join()
    assert killed, "no worker was seen to kill"
    assert report.errors == []
    assert len(report.sessions) == len(paths)
    rerun = [p for p in report.problems if p.message == WORKER_DIED_ONCE]
    assert len(rerun) == 1, "the file the dead worker had is replayed again, and says so"
    assert _same(report, alone)


def _job(item: str) -> str:
    """A job that kills its own worker process on the item 'die'."""
    if item == "die":
        os._exit(3)
    return item.upper()


def test_only_the_job_that_kills_its_worker_is_lost() -> None:
    items = ["one", "die", "two", "three"]
    done: list[int] = []
    batch = run_in_workers(_job, items, 2, done.append)
    assert batch.results == ["ONE", Lost(DIED), "TWO", "THREE"]
    assert batch.rerun == [1]  # it ran twice; the others, in workers that lived, once
    assert sorted(done) == [0, 1, 2, 3]
