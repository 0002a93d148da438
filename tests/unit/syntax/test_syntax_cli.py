"""`ectx outline` as a user runs it: a real subprocess, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "syntax" / "samples"


def ectx(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "outline", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_synopsis_text() -> None:
    result = ectx(str(SAMPLES / "inventory.py"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{SAMPLES / 'inventory.py'} (python, 68 lines, ~")
    assert "    42-52 method Inventory.reserve(self, sku: str, count: int) -> Item" in lines


def test_json_shape() -> None:
    result = ectx(str(SAMPLES / "queue.go"), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"path", "language", "lines", "symbols"}
    assert data["language"] == "go" and data["lines"] == 72
    push = next(s for s in data["symbols"] if s["qualname"] == "Queue.Push")
    assert push == {
        "name": "Push",
        "qualname": "Queue.Push",
        "kind": "method",
        "start_line": 44,
        "end_line": 52,
        "signature": "func Push(job T) error",
    }


def test_one_symbol() -> None:
    result = ectx(f"{SAMPLES / 'shapes.rs'}::Circle.new")
    assert result.returncode == 0, result.stderr
    header, *body = result.stdout.splitlines()
    assert header.endswith(":30-33 method Circle.new")
    assert body[0].strip() == "/// A circle of the given radius."
    assert body[-1].strip() == "}"


def test_ambiguous_symbol_lists_candidates() -> None:
    result = ectx(f"{SAMPLES / 'Library.java'}::Library.add")
    assert result.returncode == 1
    assert "matches 2 definitions" in result.stderr
    assert [line.split("  ")[0].rsplit("::", 1)[1] for line in result.stdout.splitlines()] == [
        "Library.add#1",
        "Library.add#2",
    ]


def test_unknown_symbol_suggests(tmp_path: Path) -> None:
    result = ectx(f"{SAMPLES / 'cache.rb'}::LRU.evikt")
    assert result.returncode == 1
    assert "closest: " in result.stderr and "Caching.LRU.evict!" in result.stderr


def test_missing_file_and_binary_file(tmp_path: Path) -> None:
    missing = ectx(str(tmp_path / "absent.py"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    blob = tmp_path / "blob.py"
    blob.write_bytes(b"\x00\x01\x02\xff" * 100)
    binary = ectx(str(blob))
    assert binary.returncode == 0
    assert "no outline: binary file" in binary.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_not_waited_for(tmp_path: Path) -> None:
    """Reading a FIFO no one writes blocks forever (and /dev/zero never ends)."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    result = ectx(str(fifo), timeout=20)
    assert result.returncode == 2 and "not a regular file" in result.stderr
    folder = ectx(str(tmp_path))
    assert folder.returncode == 2 and "Is a directory" in folder.stderr


def test_an_unknown_language_is_refused_not_ignored() -> None:
    """`--language pyhton` fell back on the file name: a .txt file had 'no grammar'."""
    result = ectx(str(SAMPLES / "notes.txt"), "--language", "pyhton")
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown language 'pyhton'" in result.stderr and "python" in result.stderr


def test_a_symbol_name_longer_than_a_file_name_is_unknown_not_a_traceback() -> None:
    """Whether `a.py::<5,000 characters>` is itself a file raised ENAMETOOLONG."""
    result = ectx(f"{SAMPLES / 'inventory.py'}::{'x' * 5000}")
    assert result.returncode == 1 and "no definition" in result.stderr
    assert "Traceback" not in result.stderr
