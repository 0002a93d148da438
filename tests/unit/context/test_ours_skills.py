"""`ours` over a transcript that loads a skill the way Claude Code 2.x records it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ephemeral_context.replay.ours import OursLayout
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.simulate import simulate

MODEL = "claude-sonnet-4-5-20250929"


def _transcript(path: Path, frontmatter: str, rounds: int = 30) -> Path:
    """A session loading a skill, then `rounds` Bash calls. The client caches for an hour
    (its usage says so) where the calls 10 seconds apart make 5 minutes enough: `ours`
    saves on the writes, which gives a cut's rewrite something to spend (policy.py)."""
    records: list[dict[str, Any]] = []
    clock = [0]

    def add(kind: str, content: Any, msg_id: str | None = None, **extra: Any) -> None:
        clock[0] += 10
        parent = records[-1]["uuid"] if records else None
        record: dict[str, Any] = {
            "parentUuid": parent, "isSidechain": False, "type": kind,
            "uuid": f"u{len(records)}",
            "timestamp": f"2026-01-01T00:{clock[0] // 60:02d}:{clock[0] % 60:02d}.000Z",
            **extra,
        }  # fmt: skip
        if kind == "assistant":
            record["message"] = {
                "model": MODEL, "id": msg_id, "type": "message", "role": "assistant",
                "content": content,
                "usage": {
                    "input_tokens": 3, "output_tokens": 20, "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 100,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100,
                    },
                },
            }  # fmt: skip
        else:
            record["message"] = {"role": "user", "content": content}
        records.append(record)

    body = "To extract a table from a PDF, find the ruling lines first; then ... " * 60
    add("user", "Extract the tables from report.pdf")
    add("assistant", [{"type": "tool_use", "id": "s1", "name": "Skill",
                      "input": {"skill": "pdf-tables"}}], "m0")  # fmt: skip
    add(
        "user",
        [{"type": "tool_result", "tool_use_id": "s1", "content": "Launching skill: pdf-tables"}],
    )
    base = "Base directory for this skill: /p/.claude/skills/pdf-tables\n\n"
    add("user", f"{base}{frontmatter}{body}", isMeta=True)
    for n in range(rounds):
        add("assistant", [{"type": "tool_use", "id": f"b{n}", "name": "Bash",
                          "input": {"command": f"step {n}"}}], f"m{n + 1}")  # fmt: skip
        add("user", [{"type": "tool_result", "tool_use_id": f"b{n}", "content": f"ok {n}\n" * 30}])
    add("assistant", [{"type": "text", "text": "Done."}], "m_end")
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _last_thread_text(layout: OursLayout) -> str:
    return "\n".join(
        repr(tb.block) for conv in layout.engine.conversations()
        for tb in layout.engine.conversation(conv).thread
    )  # fmt: skip


def test_an_ephemeral_skill_body_goes_once_used(tmp_path: Path) -> None:
    frontmatter = "---\nname: pdf-tables\nephemeral: true\nevict-after: used\n---\n"
    session = read_session(_transcript(tmp_path / "s.jsonl", frontmatter))
    layout = OursLayout(session)
    simulate("ours", session, layout)
    text = _last_thread_text(layout)
    assert "find the ruling lines" not in text
    assert "[[skill:" in text


def test_a_skill_without_ephemeral_stays(tmp_path: Path) -> None:
    frontmatter = "---\nname: pdf-tables\n---\n"
    session = read_session(_transcript(tmp_path / "s.jsonl", frontmatter))
    layout = OursLayout(session)
    simulate("ours", session, layout)
    assert "find the ruling lines" in _last_thread_text(layout)
