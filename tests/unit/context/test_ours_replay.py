"""`ours` on the real transcripts and the honesty rule for evicted content."""

from __future__ import annotations

import statistics

import pytest
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.replay.report import discover, replay

from tests.conftest import TRACES_DIR
from tests.unit.context.context_helpers import Clock, Driver

PYTHON = "".join(
    f"def handler_{i}(request):\n    value = request.get('k{i}')\n    return value * {i}\n\n\n"
    for i in range(60)
)


def test_an_edit_of_evicted_text_pays_a_symbol_rehydration(
    engine: ContextEngine, clock: Clock
) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "fix handler_42")
    d.call()
    d.read("/app.py", PYTHON)
    for step in range(20):
        d.call()
        d.bash(f"log {step}\n" * 100)
        clock.advance(10)
    clock.advance(7200)  # cold: the read is evicted or moved at no rewrite cost
    d.call()
    d.bash("more\n" * 50)
    clock.advance(10)
    d.call()
    conversation = engine.conversation("c")
    view = conversation.files["file:///app.py"]
    assert not view.in_segment and all(conversation.thread[i].evicted for i in view.blocks)
    needle = "    value = request.get('k42')\n    return value * 42"
    appended = engine.ensure_visible("c", "file:///app.py", [needle])
    assert 0 < appended < 200  # one definition, not the whole file
    d.call()
    last = repr(d.requests[-1])
    assert "read_symbol('/app.py', 'handler_42')" in last
    assert "def handler_41" not in last.split("read_symbol")[-1]
    assert engine.ensure_visible("c", "file:///app.py", [needle]) == 0  # now visible


@pytest.mark.slow
@pytest.mark.skipif(not TRACES_DIR.is_dir(), reason="shared/traces is not beside the clone")
def test_ours_meets_the_targets_on_the_real_transcripts() -> None:
    report = replay(discover([TRACES_DIR]))
    assert len(report.sessions) >= 4
    billed, peaks = [], []
    for session in report.sessions:
        results = session.strategies
        ours = results["ours"]
        assert min(results, key=lambda name: results[name].billed_input) == "ours"
        assert ours.retrievable == 1.0
        billed.append(ours.billed_input / results["recorded"].billed_input - 1)
        peaks.append(ours.peak_context / results["recorded"].peak_context - 1)
    assert statistics.median(billed) <= -0.20
    assert statistics.median(peaks) <= -0.30
