"""Golden synopses: one realistic file per language, its synopsis checked in next to it.

Regenerate after an intended change with `UPDATE_GOLDEN=1 pytest tests/unit/syntax`, then
read the diff: every line is a claim about what the model will see.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from ephemeral_context.syntax import LANGUAGES, outline_text, render_synopsis

DATA = Path(__file__).resolve().parents[2] / "data" / "syntax"
SAMPLES = DATA / "samples"
GOLDEN = DATA / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()))
def test_synopsis_matches_golden(sample: str) -> None:
    relative = f"samples/{sample}"
    text = (SAMPLES / sample).read_text(encoding="utf-8")
    outline = outline_text(text, relative)
    _check(GOLDEN / f"{sample}.synopsis", render_synopsis(outline))
    _check(GOLDEN / f"{sample}.json", json.dumps(outline.to_json(), indent=1) + "\n")


def test_every_language_has_a_sample_with_definitions() -> None:
    samples = SAMPLES.iterdir()
    covered = {outline_text(p.read_text(encoding="utf-8"), p.name).language for p in samples}
    assert {spec.name for spec in LANGUAGES} <= covered
    for sample in SAMPLES.iterdir():
        outline = outline_text(sample.read_text(encoding="utf-8"), sample.name)
        assert outline.symbols or outline.language is None, sample.name
        assert not outline.has_errors, sample.name


def test_synopsis_of_real_module_is_deterministic_and_small() -> None:
    path = Path(sys.base_prefix) / "lib" / "python3.11" / "json" / "encoder.py"
    text = path.read_text(encoding="utf-8")
    first = render_synopsis(outline_text(text, str(path)))
    assert first == render_synopsis(outline_text(text, str(path)))
    assert len(first) < len(text) / 5
