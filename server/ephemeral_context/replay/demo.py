"""Where the bundled demo session lives: a real, MIT-licensed transcript with recorded usage.

`ectx replay --demo` and `make run` replay it, so a newcomer sees fidelity checked against
what was billed; data/README.md says where it comes from.

API:
- `DEMO_SESSION`: the demo transcript's path.
"""

from __future__ import annotations

from pathlib import Path

DEMO_SESSION = (
    Path(__file__).resolve().parent / "data" / "randlee__claude-history__session-967e501d.jsonl"
)
