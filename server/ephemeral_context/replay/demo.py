"""Where the bundled demo session lives (a transcript this project wrote, not a real one).

`ectx replay --demo` and `make run` replay it; tests/unit/replay/demo_session.py writes it.
"""

from __future__ import annotations

from pathlib import Path

DEMO_SESSION = Path(__file__).resolve().parent / "data" / "demo-session.jsonl"
