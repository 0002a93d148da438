"""Write small Claude Code transcripts by hand, line by line as Claude Code writes them.

Each assistant response becomes one line per content block sharing a message.id (with the
usage repeated), tool results are user lines linked to the tool_use line, and every line is
chained by parentUuid, so tests exercise the same shapes as real transcripts.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from tests import claude_code
from tests.claude_code import ReadNumbering

START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


@dataclass
class Transcript:
    """A session under construction; `seconds` is the clock of the next line."""

    model: str = "claude-sonnet-4-5-20250929"
    sidechain: bool = False
    lines: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    parent: str | None = None
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def _uuid(self) -> str:
        return f"00000000-0000-0000-0000-{next(self._ids):012d}"

    def _stamp(self) -> str:
        when = datetime.fromtimestamp(START + self.seconds, UTC)
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _line(self, kind: str, **fields: Any) -> str:
        uuid = self._uuid()
        record = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "type": kind,
            "uuid": uuid,
            "timestamp": self._stamp(),
            **fields,
        }
        self.lines.append(record)
        self.parent = uuid
        return uuid

    def wait(self, seconds: float) -> Transcript:
        self.seconds += seconds
        return self

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> Transcript:
        self._line("user", message={"role": "user", "content": content}, **extra)
        return self

    def tool_result(self, tool_use_id: str, text: str, result: Any = None) -> Transcript:
        extra = {"toolUseResult": result} if result is not None else {}
        content = [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}]
        return self.user(content, **extra)

    def assistant(
        self,
        blocks: list[dict[str, Any]],
        usage: dict[str, int] | None = None,
        model: str | None = None,
        message_id: str | None = None,
        served: dict[str, str] | None = None,
        **extra: Any,
    ) -> Transcript:
        """One response: one line per block, all with the same id and usage (pass the id
        of the previous response to continue it after a tool result, as Claude Code
        writes parallel tool calls while it streams them); `served` goes into the usage
        (`{"speed": "fast"}`, `{"inference_geo": "us"}`); `extra` fields go on every line
        (`version`, `cwd`)."""
        self.seconds += 1
        message_id = message_id or f"msg_{next(self._ids)}"
        for block in blocks:
            message: dict[str, Any] = {
                "model": model or self.model,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
            }
            if usage is not None:
                message["usage"] = {
                    "input_tokens": usage.get("input", 0),
                    "cache_creation_input_tokens": usage.get("write", 0) + usage.get("write_1h", 0),
                    "cache_read_input_tokens": usage.get("read", 0),
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": usage.get("write", 0),
                        "ephemeral_1h_input_tokens": usage.get("write_1h", 0),
                    },
                    "output_tokens": 1,
                }
                message["usage"].update(served or {})
            self._line("assistant", message=message, requestId="req_x", **extra)
        self.seconds += 1
        return self

    def other(self, kind: str, **fields: Any) -> Transcript:
        """A record that is not sent to the model (progress, system, summary, ...)."""
        self._line(kind, **fields)
        return self

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    def write(self, path: Path) -> Path:
        path.write_text(self.text(), encoding="utf-8")
        return path


def tool_use(tool_use_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def bash_thread(calls: int, version: str | None = "2.1.97") -> Transcript:
    """One prompt, then `calls` responses each asking for one Bash command and its result
    (a few hundred tokens of output), with usage as a warm cache records it, and a closing
    answer, every response naming the release that wrote it (None: no line names one): the
    longest single thread a session makes, for the reader's and the replay's cost per call."""
    t = Transcript()
    t.user("run the checks one by one", version=version, cwd="/repo")
    sent = 20_000
    for n in range(calls):
        usage = {"read": sent, "write": 300} if n else {"write": sent}
        use = tool_use(f"toolu_{n}", "Bash", command=f"make check-{n}")
        t.assistant([use], usage=usage, version=version, cwd="/repo")
        t.tool_result(f"toolu_{n}", f"check {n}: ok\n" * 40)
        sent += 300
    t.assistant([text("all checks pass")], usage={"read": sent, "write": 10}, version=version)
    return t


cat_n = partial(claude_code.cat_n, numbering=ReadNumbering.ARROW)
"""A Read result numbered as the releases that wrote the transcripts under test did."""
