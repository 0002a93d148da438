"""Drive an engine the way the agent loop does: tool_use, result, next request."""

from __future__ import annotations

from typing import Any

from ephemeral_context.cache_sim import PromptCache, Usage
from ephemeral_context.context.engine import ContextEngine, ToolOutput


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a careful coding assistant. " * 200


def source(n: int, tag: str = "") -> str:
    return "".join(f"def {tag}f{i}(x):\n    return x + {i}\n\n" for i in range(n))


class Driver:
    """One conversation plus a prompt cache pricing every request the engine builds."""

    def __init__(self, engine: ContextEngine, conv: str = "c") -> None:
        self.engine = engine
        self.conv = conv
        self.cache = PromptCache(MODEL)
        self.n = 0
        self.requests: list[dict[str, Any]] = []

    def call(self) -> Usage:
        kwargs = self.engine.build_request(self.conv, MODEL, SYSTEM)
        self.requests.append(kwargs)
        built = self.engine.last_request(self.conv)
        assert built is not None
        return self.cache.call(built.cache_request, self.engine.clock())

    def tool(self, name: str, tool_input: dict[str, Any]) -> str:
        self.n += 1
        tool_id = f"toolu_{self.n}"
        self.engine.add_assistant_content(
            self.conv, [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        )
        return tool_id

    def read(self, path: str, text: str) -> str:
        tool_id = self.tool("read_file", {"path": path})
        return self.engine.add_tool_result(
            self.conv, ToolOutput(tool_id, text, kind="file", uri=f"file://{path}", content=text)
        )

    def bash(self, output: str) -> str:
        tool_id = self.tool("bash", {"command": "make test"})
        return self.engine.add_tool_result(self.conv, ToolOutput(tool_id, output))
