"""Where the shared transcripts are (the same place tests/conftest.py names)."""

from __future__ import annotations

from pathlib import Path

TRACES_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
