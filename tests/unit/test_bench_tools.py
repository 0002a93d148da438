"""The bench's own plumbing: how figures land in docs/benchmarks.md, and the baselines table.

The benches themselves are measured, not tested (timings are noisy); what they compute from a
replay and where they write it is code like any other and is checked here on the transcripts
that ship in the repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.replay.report import Report, replay

from tests.bench import bench_baselines, run
from tests.transcripts import FIXTURES


@pytest.fixture(scope="module")
def fixtures_report() -> Report:
    return replay(sorted(FIXTURES.glob("*.jsonl")))


def test_a_bench_block_is_replaced_in_place_and_the_prose_around_it_stays() -> None:
    doc = "# Benchmarks\n\nbefore\n\n<!-- bench:x -->\nold figures\n<!-- /bench:x -->\n\nafter\n"
    updated = run.replace_block(doc, "x", "new figures\n")
    assert "old figures" not in updated
    assert updated.startswith("# Benchmarks\n\nbefore\n\n<!-- bench:x -->\n_Machine: ")
    assert updated.endswith("\n\nnew figures\n<!-- /bench:x -->\n\nafter\n")
    assert run.replace_block(updated, "x", "new figures\n").count("<!-- bench:x -->") == 1


def test_a_bench_without_a_block_gets_a_section_of_its_own_at_the_end() -> None:
    updated = run.replace_block("# Benchmarks\n\nprose\n", "y", "figures")
    assert updated.startswith("# Benchmarks\n\nprose\n\n## y\n\n<!-- bench:y -->\n")
    assert updated.endswith("figures\n<!-- /bench:y -->\n")


def test_a_body_with_a_regex_replacement_escape_is_written_as_it_is() -> None:
    doc = "<!-- bench:z -->\n<!-- /bench:z -->"
    assert r"C:\1 \g<0>" in run.replace_block(doc, "z", r"C:\1 \g<0>")


def test_recorded_against_itself_is_zero_and_ours_is_what_the_report_says(
    fixtures_report: Report,
) -> None:
    billed, peaks = bench_baselines.against_recorded(fixtures_report, "recorded")
    assert billed == peaks == [0.0] * len(fixtures_report.sessions) != []
    billed, _ = bench_baselines.against_recorded(fixtures_report, "ours")
    for item, ratio in zip(fixtures_report.sessions, billed, strict=True):
        ours, recorded = item.strategies["ours"].billed_input, item.strategies["recorded"]
        assert ours == pytest.approx(recorded.billed_input * (1 + ratio))


def test_the_strategy_table_has_one_row_per_shown_strategy(fixtures_report: Report) -> None:
    rows = bench_baselines.strategy_rows(fixtures_report)
    table = [row for row in rows if row.startswith("| `")]
    assert [row.split("`")[1] for row in table] == list(bench_baselines.SHOWN)
    assert rows[0].startswith(f"{len(fixtures_report.sessions)} sessions")
    assert all(row.count("|") == 7 for row in table)


def test_a_session_where_ours_beats_every_lossless_strategy_is_not_listed(
    fixtures_report: Report,
) -> None:
    above = bench_baselines.above_lossless(fixtures_report)
    assert all(share > 0 for share in above)
    cheapest_lossless = [
        min(item.strategies[name].billed_input for name in bench_baselines.LOSSLESS)
        for item in fixtures_report.sessions
    ]
    losing = [
        item
        for item, cheapest in zip(fixtures_report.sessions, cheapest_lossless, strict=True)
        if item.strategies["ours"].billed_input > cheapest
    ]
    assert len(above) == len(losing)


def test_a_gap_row_names_the_sessions_above_the_bound(fixtures_report: Report) -> None:
    row = bench_baselines.gap_row(4.0, fixtures_report)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[0] == "4"
    assert cells[3].split(" ")[0].isdigit()
    assert int(cells[4]) == len(bench_baselines.above_lossless(fixtures_report))


def test_stretched_copies_of_same_named_files_do_not_meet(tmp_path: Path) -> None:
    files = []
    for folder in ("corpus", "traces"):
        (tmp_path / folder).mkdir()
        source = sorted(FIXTURES.glob("*.jsonl"))[0]
        files.append(tmp_path / folder / "same.jsonl")
        files[-1].write_bytes(source.read_bytes())
    copies = bench_baselines.stretched(files, 4.0, tmp_path / "out")
    assert len(set(copies)) == 2
    assert [copy.parent.name for copy in copies] == ["corpus", "traces"]


def test_a_corpus_session_is_named_by_its_id_and_any_other_by_its_stem() -> None:
    assert bench_baselines.session_name("x/corpus/owner__0f10dbe908__agent-a.jsonl") == (
        "0f10dbe908"
    )
    assert bench_baselines.session_name("x/traces/session.jsonl") == "session"
