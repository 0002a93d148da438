"""Content no eviction can make room for (not seen yet, larger than the budget left) goes in
cut, with a note that names its id and where the rest starts; what has no id is never cut."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pytest
from ephemeral_context.context.clipping import REASON
from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.store import Store

from tests.fakes.messages_api import request_problem
from tests.unit.context.context_helpers import Clock, Driver

BUDGET = 20_000
LOG = "".join(f"step {n}: compiled module {n} with a warning or two\n" for n in range(6000))
"""About 70,000 tokens: more than three budgets."""


def _as_result(engine: ContextEngine, d: Driver) -> None:
    d.bash(LOG)


def _as_memory(engine: ContextEngine, d: Driver) -> None:
    engine.add_user_content("c", LOG, kind="memory", name="build-log")


@pytest.fixture
def driver(store: Store, clock: Clock) -> Driver:
    engine = ContextEngine(store, EngineConfig(context_budget=BUDGET), clock=clock)
    engine.add_user_text("c", "go")
    d = Driver(engine)
    d.call()
    engine.add_assistant_content("c", [{"type": "text", "text": "building"}])
    return d


@pytest.mark.parametrize("add", [_as_result, _as_memory], ids=["tool result", "memory"])
def test_content_larger_than_the_budget_goes_in_cut_and_the_rest_by_its_id(
    driver: Driver, add: Callable[[ContextEngine, Driver], None]
) -> None:
    """A 70,000-token log under a 20,000-token budget: it had gone whole into a request of
    72,965 tokens, which the budget (or a window) refuses, as every later request."""
    engine = driver.engine
    add(engine, driver)
    driver.call()
    built = engine.last_request("c")
    assert built is not None and built.total_tokens <= BUDGET
    assert request_problem(built.kwargs) is None
    sent = str(built.kwargs["messages"][-1]["content"])
    found = re.search(
        r"\[\[\w+:(\w+)\]\] cut here: lines 1-(\d+) of 6000.*from character (\d+)", sent
    )
    assert found is not None, sent[-400:]
    item, shown, offset = found[1], int(found[2]), int(found[3])
    assert 1000 < shown < 6000
    rest = engine.read_session_file(item, offset, 200)
    assert rest.text.startswith(f"step {shown}: compiled module {shown} ")
    assert engine.read_session_file(item).text == LOG
    assert [e.reason for e in engine.events] == [REASON]


def test_a_cut_block_leaves_once_consumed_when_the_room_is_needed(driver: Driver) -> None:
    engine = driver.engine
    driver.bash(LOG)
    driver.call()
    engine.add_assistant_content("c", [{"type": "text", "text": "read the head"}])
    driver.bash(LOG[: len(LOG) // 5])  # about 14,000 tokens: room only if the head goes
    driver.call()
    built = engine.last_request("c")
    assert built is not None and built.total_tokens <= BUDGET
    first, second = (
        str(b["content"])
        for m in built.kwargs["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )
    assert "output evicted" in first and "cut here" not in first
    assert "cut here" in second


def test_typed_text_is_never_cut(driver: Driver, caplog: pytest.LogCaptureFixture) -> None:
    """Nothing could bring it back: it goes whole, and the log says the request is past its
    budget with the figures (the API's refusal says the rest)."""
    engine = driver.engine
    engine.add_user_text("c", LOG)
    with caplog.at_level(logging.WARNING):
        driver.call()
    assert driver.requests[-1]["messages"][-1]["content"][-1]["text"] == LOG
    assert any("past its budget of 20000" in r.getMessage() for r in caplog.records)
    assert not engine.events


def test_history_the_model_has_seen_is_not_cut(store: Store, clock: Clock) -> None:
    """A gateway's first request carries the conversation so far: what comes before the
    latest response was seen (the cache may hold it as the client sent it), so it goes as
    it came, over the budget on that one request as the client's own."""
    engine = ContextEngine(store, EngineConfig(context_budget=BUDGET), clock=clock)
    engine.add_user_text("c", "go")
    d = Driver(engine)
    d.bash(LOG)
    engine.add_assistant_content("c", [{"type": "text", "text": "read it"}])
    engine.add_user_text("c", "and now?")
    d.call()
    assert d.requests[-1]["messages"][2]["content"][0]["content"] == LOG
    assert not engine.events
