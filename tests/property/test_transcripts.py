"""The invariants (tests/property/invariants.py) on every real transcript we have.

The MIT-licensed transcripts in tests/data/transcripts always run; the shared traces and the
2026 corpus run when they are found ($ECTX_DATA, else ../shared: tests/transcripts.py) and
are skipped with the reason otherwise. Each file is replayed once for all four invariants.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from ephemeral_context.replay.reader import read_session

from tests.property.invariants import NAMES, Invariants, replay_invariants
from tests.transcripts import found_transcripts

pytestmark = pytest.mark.slow


def files(known: Mapping[str, str] | None = None) -> list[pytest.ParameterSet]:
    """Every transcript as a parameter: the repository's, then the shared ones (or one
    parameter that skips, saying how to get them). `known`: for a file whose name holds
    one of its keys, why it fails (a strict xfail, so that a fix shows)."""

    def param(path: Path, name: str) -> pytest.ParameterSet:
        reason = next((why for key, why in (known or {}).items() if key in path.name), None)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        return pytest.param(path, id=name, marks=marks)

    ours, shared = found_transcripts()
    files = [param(p, p.name) for p in ours]
    if not shared:
        files.append(
            pytest.param(
                None,
                id="shared",
                marks=pytest.mark.skip(
                    reason="needs the shared traces/ and corpus/: "
                    "set ECTX_DATA or put them at ../shared"
                ),
            )
        )
    files += [param(p, f"{p.parent.name}/{p.name}") for p in shared]
    return files


@pytest.fixture(scope="module")
def replays() -> dict[Path, Invariants]:
    """One replay per file, shared by the four invariants."""
    return {}


def _replayed(path: Path, replays: dict[Path, Invariants]) -> Invariants:
    if path not in replays:
        replays[path] = replay_invariants(read_session(path))
    return replays[path]


FIRST_GAP = (
    "a 5-minute bet against a 1-hour client before any gap was seen, lost at the first gap "
    "over 5 minutes: the rewrite costs more than the bet had saved "
    "(docs/cost-model.md, 'Gaps no earlier call announced')"
)
KNOWN: dict[tuple[str, str], str] = {}
"""Where an invariant does not hold on a real transcript, and why (strict: a fix shows)."""


def cases() -> list[pytest.ParameterSet]:
    """Every transcript with every invariant, marked where `KNOWN` says it fails."""
    out = []
    for case in files():
        path = case.values[0]
        for invariant in NAMES:
            name = path.name if isinstance(path, Path) else ""
            why = next((r for (f, i), r in KNOWN.items() if f in name and i == invariant), None)
            marks = [*case.marks, *([pytest.mark.xfail(strict=True, reason=why)] if why else [])]
            out.append(pytest.param(path, invariant, id=f"{case.id}-{invariant}", marks=marks))
    return out


@pytest.mark.parametrize(("path", "invariant"), cases())
def test_invariant_holds(path: Path, invariant: str, replays: dict[Path, Invariants]) -> None:
    found = _replayed(path, replays)
    assert found.calls > 0
    assert getattr(found, invariant) == []
