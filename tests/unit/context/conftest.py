"""An engine over the real on-disk store (tests/unit/conftest.py), with a clock the test moves."""

from __future__ import annotations

import pytest
from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.store import Store

from tests.unit.context.context_helpers import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def engine(store: Store, clock: Clock) -> ContextEngine:
    return ContextEngine(store, EngineConfig(), clock=clock)
