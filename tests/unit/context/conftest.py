"""An engine over a real on-disk store, with a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "store") as s:
        yield s


@pytest.fixture
def engine(store: Store, clock: Clock) -> ContextEngine:
    return ContextEngine(store, EngineConfig(), clock=clock)
