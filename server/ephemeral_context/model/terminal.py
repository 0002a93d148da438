"""`ectx ask`: the agent loop in a terminal, for one prompt against one workspace folder.

The answer streams to stdout as it arrives; tool calls, retries and the closing summary go
to stderr, so `ectx ask ... > answer.md` keeps only the answer. A model call that breaks and
is retried starts its text over: on a terminal the reader sees both (stderr says so), but
stdout redirected to a file or a pipe gets each call's text only once the call succeeded, so
it holds the final answer only. Edits are written to disk.
Exit codes: 0 for a finished answer, 3 for one that stopped before its end (max_steps,
max_tokens, a refusal), 1 for a model error, 130 for Ctrl-C (which cancels the running
call), so `ectx ask ... && git commit` goes on only after a finished answer.

API:
- `run_ask(...)`: `ectx ask`; returns the exit code.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model.agent import AgentEvents, AgentResult, SubagentEvent
from ephemeral_context.model.client import ModelError, RetryNotice
from ephemeral_context.model.session import AskSession
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store

EXIT_MODEL_ERROR = 1
EXIT_UNFINISHED = 3
FINISHED = frozenset({"end_turn", "stop_sequence"})
"""The stop reasons of an answer the model finished; any other exits EXIT_UNFINISHED."""
EXIT_CANCELLED = 130


DESCRIBED_CHARS = 70
SHOWN_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (9, 10)
}
"""Control characters as a terminal shows them, not as it obeys them."""


def _printable(text: str) -> str:
    """`text` for a terminal: an escape sequence the model was steered into writing (by a
    file it read) shows as text instead of retitling the window, setting the clipboard
    (OSC 52) or clearing the screen."""
    return text.translate(SHOWN_CONTROLS)


def _describe_call(name: str, args: Mapping[str, Any]) -> str:
    """`read_file src/app.py` style: the tool and its most telling argument (first line,
    clipped), printable."""
    for key in ("path", "pattern", "name", "id", "command", "task"):
        value = args.get(key)
        if isinstance(value, str):
            line = value.strip().split("\n", 1)[0]
            clipped = line if len(line) <= DESCRIBED_CHARS else line[: DESCRIBED_CHARS - 1] + "…"
            return _printable(f"{name} {clipped}")
    return _printable(name)


def _summary(result: AgentResult) -> str:
    usage = result.usage
    edits = sum(1 for e in result.edits if e.applied)
    return (
        f"[{result.stop_reason}: {result.calls} model calls, "
        f"{usage.get('cache_read_input_tokens', 0)} tokens read from cache, "
        f"{usage.get('cache_creation_input_tokens', 0)} written, "
        f"{usage.get('input_tokens', 0)} uncached, {usage.get('output_tokens', 0)} out"
        f"{f' (with {result.subagent_calls} sub-agent calls)' if result.subagent_calls else ''}; "
        f"{edits} edit(s); {result.retries} retries]"
    )


async def _ask(
    prompt: str,
    workspace: Path,
    model: str,
    *,
    allow_secret: Sequence[str],
    skills: str | None,
    max_steps: int,
    stall_timeout: float,
    out: TextIO,
    err: TextIO,
) -> int:
    mirror = DocumentMirror()
    with Store() as store:
        engine = ContextEngine(store)
        mirror.subscribe(engine.note_document_change)
        env = ToolEnv.configured(
            mirror=mirror,
            folders=[workspace],
            engine=engine,
            allow_secret_files=allow_secret,
            allow_base=Path.cwd(),  # `--allow-secret config/.env` names it as the shell does
            skills_directory=skills,
        )
        session = AskSession.create(
            engine=engine, env=env, model=model, max_steps=max_steps, stall_timeout=stall_timeout
        )

        wrote, after_tool = False, False
        live = out.isatty()
        held: list[str] = []
        """This call's text, until it succeeds (stdout not a terminal)."""

        def show(delta: str) -> None:
            nonlocal wrote, after_tool
            if wrote and after_tool:  # a new turn of the answer starts on a new line
                out.write("\n")
            wrote, after_tool = True, False
            out.write(delta)
            out.flush()

        def text(delta: str) -> None:
            if live:
                show(_printable(delta))
            else:
                held.append(delta)

        def call_done(_: Mapping[str, int]) -> None:
            if held:
                show("".join(held))
                held.clear()

        def tool(name: str, args: Mapping[str, Any]) -> None:
            nonlocal after_tool
            after_tool = True
            err.write(f"→ {_describe_call(name, args)}\n")

        def retry(notice: RetryNotice) -> None:
            held.clear()
            again = "; the answer starts over" if notice.restarts_text else ""
            err.write(f"\n[{notice.reason}; retrying in {notice.delay:.1f}s{again}]\n")

        def subagent(event: SubagentEvent) -> None:
            """A sub-agent's calls, indented under its `delegate` line; its text stays out
            of the answer (its report comes back to the main agent)."""
            name = event.agent.rsplit("/", 1)[-1]
            if event.kind == "tool_use":
                err.write(f"  ↳ {name}: {_describe_call(event.tool, event.input)}\n")
            elif event.kind == "retry":
                err.write(f"  ↳ {name}: [{event.text}; retrying]\n")
            elif event.kind == "end":
                err.write(f"  ↳ {name}: {'failed' if event.is_error else 'reported'}\n")

        events = AgentEvents(
            on_text=text,
            on_tool_use=tool,
            on_usage=call_done,
            on_retry=retry,
            on_subagent=subagent,
        )
        try:
            result = await session.ask(prompt, f"cli-{uuid.uuid4().hex[:8]}", events)
        except ModelError as exc:
            if wrote:  # the error on a line of its own, not after the answer's last words
                out.write("\n")
                out.flush()
            err.write(f"ectx ask: {_printable(str(exc))}\n")  # a proxy's words, in part
            return EXIT_MODEL_ERROR
        finally:
            await session.close()
    out.write("\n")
    err.write(_summary(result) + "\n")
    return 0 if result.stop_reason in FINISHED else EXIT_UNFINISHED


def run_ask(
    prompt: str,
    workspace: str,
    model: str,
    *,
    allow_secret: Sequence[str] = (),
    skills: str | None = None,
    max_steps: int = 20,
    stall_timeout: float = 60.0,
    out: TextIO,
    err: TextIO,
) -> int:
    """Exit code: 0 answered, 1 the API failed (the message says why), 2 bad arguments,
    130 cancelled."""
    root = Path(workspace).expanduser()
    if not root.is_dir():
        err.write(f"ectx ask: {workspace} is not a folder\n")
        return 2
    if not prompt.strip():
        err.write("ectx ask: the prompt is empty\n")
        return 2
    if max_steps < 1:
        err.write("ectx ask: --max-steps must be at least 1\n")
        return 2
    if not stall_timeout > 0:
        err.write("ectx ask: --stall-timeout must be positive\n")
        return 2
    try:
        return asyncio.run(
            _ask(
                prompt,
                root,
                model,
                allow_secret=allow_secret,
                skills=skills,
                max_steps=max_steps,
                stall_timeout=stall_timeout,
                out=out,
                err=err,
            )
        )
    except KeyboardInterrupt:
        err.write("\n[cancelled]\n")
        return EXIT_CANCELLED
