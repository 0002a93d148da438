"""Drive an engine the way the agent loop does: tool_use, result, next request."""

from __future__ import annotations

from typing import Any

from ephemeral_context.cache_sim import PromptCache, Usage
from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput


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
            self.conv,
            ToolOutput(tool_id, text, kind=BlockKind.FILE, uri=f"file://{path}", content=text),
        )

    def read_range(self, path: str, text: str, start_line: int) -> str:
        """A Read of `text`, the lines of `path` from `start_line` on (not the whole file)."""
        n = len(text.splitlines())
        tool_id = self.tool("read_file", {"path": path, "offset": start_line, "limit": n})
        return self.engine.add_tool_result(
            self.conv,
            ToolOutput(tool_id, text, kind=BlockKind.FILE, uri=f"file://{path}", content=text,
                       start_line=start_line, whole=False),
        )  # fmt: skip

    def bash(self, output: str) -> str:
        tool_id = self.tool("bash", {"command": "make test"})
        return self.engine.add_tool_result(self.conv, ToolOutput(tool_id, output))


def grow_a_file_in_the_segment(engine: ContextEngine, clock: Clock, grown_by: int = 80) -> Driver:
    """/a.py (40 definitions) read once, a consumed log (room for the first move), then six
    edits: a cold gap before the fourth moves the file into the segment, and the fourth
    adds `grown_by` definitions, more than the thread holds about the file. The setup of the
    tests where a segment file grows; the next cold gap rebuilds the segment from it."""
    d = Driver(engine)
    engine.add_user_text("c", "go")
    d.call()
    text = source(40)
    d.read("/a.py", text)
    d.bash("log line\n" * 200)
    extra = "".join(f"def g{i}(x):\n    return x * {i}\n\n" for i in range(grown_by))
    for k in range(6):
        if k == 3:
            engine.add_assistant_content("c", [{"type": "text", "text": "done"}])
            clock.advance(7200)  # cold: the file moves into the segment
            d.call()
            assert engine.conversation("c").segment
        d.call()
        text = text.replace(f"return x + {k}\n", f"return x - {k}\n" + (extra if k == 3 else ""))
        tool_id = d.tool("edit_file", {"path": "/a.py", "old": f"x + {k}", "new": f"x - {k}"})
        engine.add_tool_result(
            "c", ToolOutput(tool_id, "ok", kind=BlockKind.EDIT, uri="file:///a.py", content=text)
        )
        clock.advance(10)
    return d
