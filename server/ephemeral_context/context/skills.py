"""Skill frontmatter: may this skill's body be evicted, when, and what stays behind.

A skill file starts with a `---` fenced block of `key: value` lines. Keys read here:

    ephemeral: true | false          (default false: the body stays all session)
    evict-after: used | N-steps | T-tokens
    placeholder-budget: 60           (tokens the placeholder may use)
    kind: knowledge | behavioral | persona

Behavioral and persona skills govern how the model acts: they are never evictable, whatever
the frontmatter says, except by an explicit human override (engine.drop). Broken frontmatter
makes the skill not ephemeral and the problem is reported, never raised.

API:
- `parse_skill(text)`: a skill file's frontmatter as a `SkillMeta` (problems collected, never
  raised).
- `SkillMeta`, `EvictAfter`: what the frontmatter says.
- `trigger_fired(meta, used, steps_since, tokens_since)`: whether eviction is allowed now.
- `HARNESS_HEADER`: how the harness introduces a skill body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

TriggerKind = Literal["used", "steps", "tokens"]
PROTECTED_KINDS = frozenset({"behavioral", "behavioural", "persona"})
DEFAULT_PLACEHOLDER_BUDGET = 60
_TRIGGER = re.compile(r"^(\d+)-(steps?|tokens?)$")


@dataclass(frozen=True)
class EvictAfter:
    """When an ephemeral skill's body may go: once used, after N calls, or after T tokens."""

    kind: TriggerKind = "used"
    amount: int = 0


@dataclass(frozen=True)
class SkillMeta:
    """What the frontmatter says about eviction, plus anything wrong with it."""

    name: str
    description: str = ""
    ephemeral: bool = False
    evict_after: EvictAfter = EvictAfter()
    placeholder_budget: int = DEFAULT_PLACEHOLDER_BUDGET
    kind: str = "knowledge"
    problems: tuple[str, ...] = field(default=())

    @property
    def protected(self) -> bool:
        """Behavioral and persona skills: never evicted by policy or by a target."""
        return self.kind in PROTECTED_KINDS


HARNESS_HEADER = "Base directory for this skill:"
"""The line Claude Code puts before a loaded SKILL.md; the frontmatter follows it."""


def _split_frontmatter(text: str) -> tuple[list[str] | None, str]:
    lines = text.lstrip("\ufeff").splitlines()
    while lines and (not lines[0].strip() or lines[0].startswith(HARNESS_HEADER)):
        lines = lines[1:]
    if not lines or lines[0].strip() != "---":
        return None, "no frontmatter"
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return lines[1:end], ""
    return None, "frontmatter is not closed with '---'"


def parse_evict_after(value: str) -> EvictAfter | None:
    """`used`, `N-steps` or `T-tokens`; None when the value is none of these."""
    value = value.strip().lower()
    if value == "used":
        return EvictAfter("used", 0)
    match = _TRIGGER.match(value)
    if not match or int(match.group(1)) <= 0:
        return None
    unit: TriggerKind = "steps" if match.group(2).startswith("step") else "tokens"
    return EvictAfter(unit, int(match.group(1)))


def parse_skill(text: str, default_name: str = "skill") -> SkillMeta:
    """Read a skill file's frontmatter; problems are collected, the skill stays loadable."""
    body, why = _split_frontmatter(text)
    if body is None:
        return SkillMeta(name=default_name, problems=(why,) if why != "no frontmatter" else ())
    values: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(body, start=2):
        if not line.strip() or line.lstrip().startswith("#") or line.startswith((" ", "\t")):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            problems.append(f"line {number}: expected 'key: value', got {line.strip()!r}")
            continue
        values[key.strip().lower()] = value.strip().strip("'\"")
    name = values.get("name") or default_name
    kind = values.get("kind", "knowledge").lower() or "knowledge"
    ephemeral = False
    raw = values.get("ephemeral", "false").lower()
    if raw in ("true", "yes"):
        ephemeral = True
    elif raw not in ("false", "no"):
        problems.append(f"ephemeral must be true or false, got {raw!r}")
    evict_after = EvictAfter()
    if "evict-after" in values:
        parsed = parse_evict_after(values["evict-after"])
        if parsed is None:
            problems.append(
                f"evict-after must be used, N-steps or T-tokens, got {values['evict-after']!r}"
            )
        else:
            evict_after = parsed
    budget = DEFAULT_PLACEHOLDER_BUDGET
    if "placeholder-budget" in values:
        raw_budget = values["placeholder-budget"]
        if raw_budget.isdigit() and int(raw_budget) > 0:
            budget = int(raw_budget)
        else:
            problems.append(f"placeholder-budget must be a positive integer, got {raw_budget!r}")
    if ephemeral and kind in PROTECTED_KINDS:
        problems.append(f"a {kind} skill is never ephemeral; ephemeral: true ignored")
        ephemeral = False
    if problems:
        ephemeral = False
    return SkillMeta(
        name=name,
        description=values.get("description", ""),
        ephemeral=ephemeral,
        evict_after=evict_after,
        placeholder_budget=budget,
        kind=kind,
        problems=tuple(problems),
    )


def trigger_fired(meta: SkillMeta, used: bool, steps_since: int, tokens_since: int) -> bool:
    """Whether the frontmatter trigger allows eviction now (never for protected skills)."""
    if not meta.ephemeral or meta.protected:
        return False
    trigger = meta.evict_after
    if trigger.kind == "used":
        return used
    if trigger.kind == "steps":
        return steps_since >= trigger.amount
    return tokens_since >= trigger.amount
