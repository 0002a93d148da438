"""The invariants on every real transcript with its idle gaps scaled: users who pause a
quarter as long, or four times as long, as the ones we have.

The TTL the engine bets on (docs/cost-model.md, "TTL per breakpoint") is chosen from the
gaps seen so far, so a session whose gaps are all shorter than five minutes as recorded
meets, stretched, gaps between five minutes and an hour that no earlier call announced.
Each file of tests/property/test_transcripts.py is replayed once per factor, from a copy
of its lines with every timestamp moved (tests/property/perturb.py `stretched`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import replay

from tests.property.invariants import replay_invariants
from tests.property.perturb import stretched_copy
from tests.property.test_transcripts import files
from tests.transcripts import FIXTURES

pytestmark = pytest.mark.slow

FIRST_WRITE = (
    "known gap: the first request writes the context Claude Code adds unrecorded (22.8K "
    "tokens) at 5 minutes: the replay's engine counts it in its system prompt, after the "
    "client's breakpoint, and the hedge finds no thread block before the last to anchor its "
    "hour on (the gateway's engine sees that context as the first message's blocks); a "
    "first gap over 5 minutes loses it (docs/cost-model.md, 'Known limits')"
)
KNOWN = {4.0: {"11fc04ef4e": FIRST_WRITE}}
"""Per factor, where the 1% bound is missed and why (strict: a fix shows)."""
FACTORS = (0.25, 4.0)


def cases() -> list[pytest.ParameterSet]:
    """Every transcript at every factor, marked as `files` marks it for that factor."""
    return [
        pytest.param(factor, *case.values, id=f"x{factor:g}-{case.id}", marks=case.marks)
        for factor in FACTORS
        for case in files(KNOWN.get(factor))
    ]


@pytest.mark.parametrize(("factor", "path"), cases())
def test_stretched_gaps_every_invariant_holds(factor: float, path: Path, tmp_path: Path) -> None:
    session = read_session(stretched_copy(path, factor, tmp_path))
    assert session.calls
    found = replay_invariants(session)
    assert found.broken() == {}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_a_factor_of_one_replays_the_same(path: Path, tmp_path: Path) -> None:
    """The copy is the transcript: stretched by 1, `ours` and `recorded` bill the same."""
    same, original = replay([stretched_copy(path, 1.0, tmp_path)]), replay([path])
    assert [s.strategies["ours"].billed_input for s in same.sessions] == [
        s.strategies["ours"].billed_input for s in original.sessions
    ]
    assert [s.strategies["recorded"].billed_input for s in same.sessions] == [
        s.strategies["recorded"].billed_input for s in original.sessions
    ]


def test_every_gap_is_scaled(tmp_path: Path) -> None:
    path = sorted(FIXTURES.glob("*.jsonl"))[0]
    before = read_session(path).calls
    after = read_session(stretched_copy(path, 4.0, tmp_path)).calls
    assert len(before) == len(after) > 1
    for a, b, c, d in zip(before, before[1:], after, after[1:], strict=False):
        assert d.started - c.started == pytest.approx(4 * (b.started - a.started), abs=0.01)
