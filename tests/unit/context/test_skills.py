"""Skill frontmatter: ephemeral flag, trigger, placeholder budget, and the persona safety gate."""

from __future__ import annotations

from ephemeral_context.context.skills import EvictAfter, parse_skill, trigger_fired


def test_default_is_not_ephemeral() -> None:
    meta = parse_skill("---\nname: style\ndescription: house style\n---\nUse tabs.\n")
    assert meta.name == "style"
    assert not meta.ephemeral
    assert meta.problems == ()


def test_triggers_parse() -> None:
    for raw, expected in [
        ("used", EvictAfter("used", 0)),
        ("3-steps", EvictAfter("steps", 3)),
        ("2000-tokens", EvictAfter("tokens", 2000)),
    ]:
        meta = parse_skill(f"---\nname: pdf\nephemeral: true\nevict-after: {raw}\n---\nbody\n")
        assert meta.ephemeral and meta.evict_after == expected


def test_trigger_fires_by_use_steps_or_tokens() -> None:
    used = parse_skill("---\nname: a\nephemeral: true\nevict-after: used\n---\n")
    steps = parse_skill("---\nname: b\nephemeral: true\nevict-after: 3-steps\n---\n")
    tokens = parse_skill("---\nname: c\nephemeral: true\nevict-after: 500-tokens\n---\n")
    assert trigger_fired(used, True, 0, 0) and not trigger_fired(used, False, 9, 9)
    assert not trigger_fired(steps, True, 2, 0) and trigger_fired(steps, True, 3, 0)
    assert not trigger_fired(tokens, True, 9, 499) and trigger_fired(tokens, True, 0, 500)


def test_broken_frontmatter_is_not_ephemeral_and_reported() -> None:
    unclosed = parse_skill("---\nname: x\nephemeral: true\n")
    assert not unclosed.ephemeral and unclosed.problems
    bad = parse_skill("---\nname: x\nephemeral: true\nevict-after: soon\n---\n")
    assert not bad.ephemeral
    assert any("evict-after" in p for p in bad.problems)
    garbage = parse_skill("---\nname: x\nephemeral: maybe\nno colon here\n---\n")
    assert not garbage.ephemeral and len(garbage.problems) == 2


def test_persona_skill_is_never_ephemeral_whatever_it_says() -> None:
    for kind in ("persona", "behavioral"):
        meta = parse_skill(f"---\nname: p\nkind: {kind}\nephemeral: true\nevict-after: used\n---\n")
        assert meta.protected and not meta.ephemeral
        assert not trigger_fired(meta, True, 10**6, 10**9)


def test_frontmatter_after_claude_codes_base_directory_line() -> None:
    text = (
        "Base directory for this skill: /p/.claude/skills/pdf\n\n"
        "---\nname: pdf\nephemeral: true\n---\nbody\n"
    )
    meta = parse_skill(text)
    assert meta.name == "pdf" and meta.ephemeral
