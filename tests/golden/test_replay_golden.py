"""`ectx replay <transcripts> --json`, byte for byte, against the output kept in this folder.

A refactoring must leave these files byte-identical: it is the yardstick that says the
context engine still builds the same requests. A change that alters replay's figures ON
PURPOSE (a fidelity fix, a new strategy, a cost-model change) regenerates them in the same
commit, so the diff of the .json files shows what moved:

    .venv/bin/pytest tests/golden --update-golden

then commit the .json files with the change that caused them (regenerate only then: a
refactoring that needs it has changed behaviour). Each case runs in the transcripts' folder
with a relative path, so the output does not depend on where the repository or the shared
data lies. The demo session and the MIT-licensed fixtures ship in the repository; the shared
traces are found by tests/transcripts.py ($ECTX_DATA or ../shared), else that case skips.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ephemeral_context.replay.demo import DEMO_SESSION

from tests.transcripts import FIXTURES, shared

GOLDEN = Path(__file__).resolve().parent
CASES: dict[str, Callable[[], tuple[Path, str]]] = {
    "replay-demo.json": lambda: (DEMO_SESSION.parent, DEMO_SESSION.name),
    "replay-fixtures.json": lambda: (FIXTURES, "."),
    "replay-traces.json": lambda: (shared("traces"), "."),
}


def replay_json(folder: Path, target: str) -> bytes:
    """What a user gets from `ectx replay TARGET --json` run in `folder` (stdout only)."""
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "replay", target, "--json"],
        cwd=folder,
        capture_output=True,
        check=True,
        timeout=240,
    )
    return done.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_output_is_byte_identical(name: str, request: pytest.FixtureRequest) -> None:
    folder, target = CASES[name]()  # the shared traces skip here when absent
    got = replay_json(folder, target)
    kept = GOLDEN / name
    if request.config.getoption("--update-golden"):
        kept.write_bytes(got)
        return
    assert kept.exists(), f"{kept.name} missing: run pytest tests/golden --update-golden"
    assert got == kept.read_bytes(), (
        f"ectx replay output differs from tests/golden/{name}; if the change is meant to "
        "move replay's figures, run pytest tests/golden --update-golden and commit the file"
    )
