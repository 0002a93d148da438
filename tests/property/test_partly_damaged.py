"""The invariants, the `harm` bound among them, on real transcripts damaged over part of a
session: held-out sessions mix recorded and missing usage (an export of part of a session,
a gateway for some of its calls).

Each file of tests/property/test_transcripts.py is replayed with its usage removed over its
first tenth, its first half or its last half (the replay then learns the client's TTL late,
or stops learning it), and with a model no price table knows over its last tenth (a
gateway's model: a model switch, so a cache of its own). Before the engine priced its twins
under both TTLs until it knew the client's (accounting.py), a TTL learnt late left it
believing its twins had lost the gaps its 5-minute cache lost (6200b25791, first tenth:
1.079x `recorded`); before the replay sent the requests a person interrupted
(replay/ours.py), a model switch at one left `ours` a cold cache where every other
strategy had a warm one (3e72c419b0: 1.075x). What is still above the bound is listed in
`KNOWN`, with its mechanism.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ephemeral_context.replay.reader import read_session

from tests.property.invariants import replay_invariants
from tests.property.perturb import Damage, damaged
from tests.property.test_transcripts import files
from tests.property.test_without_usage import without_usage

pytestmark = pytest.mark.slow


def usage_lost(start: float, stop: float) -> Callable[[list[str]], bytes]:
    """Every usage removed from the lines between the two fractions of the file."""

    def damage(lines: list[str]) -> bytes:
        a, b = int(start * len(lines)), int(stop * len(lines))
        kept = [without_usage(line) if a <= i < b else line for i, line in enumerate(lines)]
        return ("\n".join(kept) + "\n").encode("utf-8", "surrogateescape")

    return damage


def unknown_model(start: float) -> Callable[[list[str]], bytes]:
    """The responses from the fraction `start` of the file on from a model no price table
    knows."""

    def damage(lines: list[str]) -> bytes:
        return damaged(lines, [Damage("unknown_model", start, 1.0 - start)])

    return damage


SHAPES = {
    "usage lost over the first tenth": usage_lost(0.0, 0.1),
    "usage lost over the first half": usage_lost(0.0, 0.5),
    "usage lost over the last half": usage_lost(0.5, 1.0),
    "an unknown model over the last tenth": unknown_model(0.9),
}


GAP_BEFORE_ANY_USAGE = (
    "a gap between 5 minutes and an hour before any usage showed the client's TTL: either "
    "TTL sent first loses under one of the two clients it may be talking to "
    "(docs/cost-model.md, Partly recorded sessions)"
)
KNOWN = {
    ("6200b25791", "usage lost over the first tenth"): GAP_BEFORE_ANY_USAGE,
    ("6200b25791", "usage lost over the first half"): GAP_BEFORE_ANY_USAGE,
}
"""What still bills above 1.01x `recorded`, by session and shape: strict, so a fix shows."""


def cases() -> list[pytest.ParameterSet]:
    """Every transcript (tests/property/test_transcripts.py) with every shape."""
    out: list[pytest.ParameterSet] = []
    for param in files():
        [path] = param.values
        for shape in SHAPES:
            name = path.name if isinstance(path, Path) else ""
            reason = next((r for (s, k), r in KNOWN.items() if s in name and k == shape), None)
            marks = [
                *param.marks,
                *([pytest.mark.xfail(strict=True, reason=reason)] if reason else []),
            ]
            out.append(pytest.param(path, shape, id=f"{param.id}-{shape}", marks=marks))
    return out


@pytest.mark.parametrize(("path", "shape"), cases())
def test_partly_damaged_every_invariant_holds(path: Path, shape: str, tmp_path: Path) -> None:
    lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    copy = tmp_path / path.name
    copy.write_bytes(SHAPES[shape](lines))
    session = read_session(copy)
    assert session.calls
    found = replay_invariants(session)
    assert found.broken() == {}
