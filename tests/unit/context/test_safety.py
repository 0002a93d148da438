"""The safety gate: a persona skill survives every trigger and target; only a human drops it."""

from __future__ import annotations

from typing import Any

from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput

from tests.unit.context.context_helpers import Clock, Driver

PERSONA = (
    "---\nname: reviewer-persona\nkind: persona\nephemeral: true\nevict-after: used\n---\n"
    + "You are a meticulous senior reviewer who explains every finding. " * 80
)
KNOWLEDGE = (
    "---\nname: pdf-tables\nephemeral: true\nevict-after: used\nplaceholder-budget: 40\n---\n"
    + "To extract a table from a PDF, first find the ruling lines, then ... " * 80
)


def _all_text(kwargs: dict[str, Any]) -> str:
    return repr(kwargs)


def test_persona_skill_is_never_evicted(engine: ContextEngine, clock: Clock) -> None:
    d = Driver(engine)
    engine.add_user_text("c", "Review the patch")
    d.call()
    persona = d.tool("Skill", {"skill": "reviewer-persona"})
    engine.add_tool_result("c", ToolOutput(persona, PERSONA, kind=BlockKind.SKILL))
    knowledge = d.tool("Skill", {"skill": "pdf-tables"})
    engine.add_tool_result("c", ToolOutput(knowledge, KNOWLEDGE, kind=BlockKind.SKILL))
    for step in range(150):
        d.call()
        d.bash(f"big output {step}\n" * 400)
        clock.advance(7200 if step % 25 == 24 else 30)  # warm stretches and cold gaps
    last = _all_text(d.requests[-1])
    assert "meticulous senior reviewer" in last
    assert "find the ruling lines" not in last  # the ephemeral knowledge skill did go
    assert engine.events, "evictions happened, so the gate was really exercised"
    persona_id = next(i.id for i in engine.items() if i.label == "reviewer-persona")
    assert engine.items()[0].kind in ("skill", "file", "tool_result")
    assert persona_id in engine.drop(persona_id)  # the explicit human override
    d.call()
    assert "meticulous senior reviewer" not in _all_text(d.requests[-1])
    assert "meticulous senior reviewer" in engine.read_session_file(persona_id).text
