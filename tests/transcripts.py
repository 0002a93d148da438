"""Where the tests' real transcripts are, so a bare clone runs what it can and skips the rest.

The MIT-licensed transcripts live in the repository with their notices: tests/data/transcripts,
and the largest in the package as its demo session. The others and the 2026 corpus are the
project's shared data: `$ECTX_DATA` (a folder holding traces/ and corpus/), else ../shared
beside the checkout. A test that needs a file which is in neither place is skipped with a
reason that says how to get it.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.replay.demo import DEMO_SESSION

from tests.conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "data" / "transcripts"
IN_REPO = (FIXTURES, DEMO_SESSION.parent)

# The four transcripts of traces/MANIFEST.json, in its order of names.
DRMACIVER = "DRMacIver__claude-reliability__python-to-rust-port.jsonl"
VIEWER = "d-kimuson__claude-code-viewer__fe5e1c67.jsonl"
HISTORY = "randlee__claude-history__session-967e501d.jsonl"
SUBAGENT = "randlee__claude-history__subagents__agent-aabf2dd.jsonl"
NAMES = (DRMACIVER, VIEWER, HISTORY, SUBAGENT)

HOW_TO_GET = (
    "set ECTX_DATA to a folder holding the project's shared traces/ and corpus/, "
    "or put that folder at ../shared beside the checkout"
)


def data_dir() -> Path | None:
    """`$ECTX_DATA` when set, else ../shared beside the checkout; None when neither exists."""
    named = os.environ.get("ECTX_DATA")
    folder = Path(named) if named else REPO_ROOT.parent / "shared"
    return folder if folder.is_dir() else None


def shared(part: str) -> Path:
    """The shared data's `traces` or `corpus` folder, or skip the test."""
    root = data_dir()
    if root is None or not (root / part).is_dir():
        named = os.environ.get("ECTX_DATA")
        where = f"$ECTX_DATA={named}" if named else "../shared"
        pytest.skip(f"needs the shared {part}/ ({where} has none): {HOW_TO_GET}")
    return root / part


def transcript(name: str) -> Path:
    """One transcript by file name: from the repository, else from the shared traces."""
    for folder in IN_REPO:
        if (folder / name).is_file():
            return folder / name
    return shared("traces") / name


def all_transcripts() -> list[Path]:
    """All four transcripts, or skip: a test over the set means nothing with part of it."""
    return [transcript(name) for name in NAMES]


def found_transcripts() -> tuple[list[Path], list[Path]]:
    """Every transcript found: the repository's, then the shared traces' and corpus' not
    already among them (none when the shared data is absent)."""
    ours = sorted(FIXTURES.glob("*.jsonl"))
    root = data_dir()
    names = {p.name for p in ours}
    shared = [
        p
        for part in ("traces", "corpus")
        for p in sorted(root.glob(f"{part}/*.jsonl") if root else ())
        if p.name not in names
    ]
    return ours, shared


@cache
def _manifest(path: Path) -> dict[str, dict[str, Any]]:
    return {entry["file"]: entry for entry in json.loads(path.read_text(encoding="utf-8"))}


def manifest_entry(name: str) -> dict[str, Any]:
    """What MANIFEST.json records for one transcript (repository's copy first)."""
    entries = _manifest(FIXTURES / "MANIFEST.json")
    if name in entries:
        return entries[name]
    return _manifest(shared("traces") / "MANIFEST.json")[name]
