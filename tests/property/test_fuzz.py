"""`python -m tests.property.fuzz`: a few examples each way, and the do-no-harm threshold."""

from __future__ import annotations

from pathlib import Path

from tests.property.fuzz import findings, main
from tests.property.sessions import Plan, Step, write_session


def test_a_short_run_each_way_finds_nothing() -> None:
    assert main(["generated", "--examples", "5", "--seed", "1"]) == 0
    assert main(["damaged", "--examples", "3", "--cut", "60", "--seed", "1"]) == 0


def test_the_harm_bound_is_reported_above_the_threshold_only(tmp_path: Path) -> None:
    """A limit docs/cost-model.md states ("Known limits"): a cold cut whose content the next
    response edits pays a round trip's read, 1.023x `recorded` here."""
    plan = Plan(
        "claude-sonnet-4-6",
        (Step("read", 1, 0, seconds=1.0), Step("prompt", 1, 0, seconds=301.0), Step("edit")),
    )
    path = write_session(plan, tmp_path / "s.jsonl")
    assert list(findings(path, harm=1.01)) == ["harm"]
    assert findings(path, harm=1.05) == {}
