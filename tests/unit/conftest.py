"""Fixtures the unit tests share: a real persist-once store on disk, in the test's tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ephemeral_context.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """An open store under tmp_path/store, closed after the test."""
    with Store(tmp_path / "store") as opened:
        yield opened
