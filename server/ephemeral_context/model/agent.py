"""The agent loop: prompt -> request from the context engine -> streamed answer -> tools -> again.

The loop owns no context of its own. Every message goes into the context engine (user text,
the assistant's content blocks, each tool result) and every request comes out of it, so the
file-once, reference-on-repeat and eviction rules apply to everything the model sees. The
loop ends at `end_turn` (or any stop without tool calls), at the step bound, on a refusal,
or on cancellation; a cancelled loop leaves the conversation valid for the next ask (every
tool call it had started gets a result).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import Message

from ephemeral_context.cache_sim import UnknownModelError
from ephemeral_context.context.engine import ContextEngine, ResultKind
from ephemeral_context.model import DEFAULT_MODEL
from ephemeral_context.model.client import ModelClient, ModelError, RetryNotice, TextCallback
from ephemeral_context.model.tools import ToolEnv, ToolResult, run_tool, tool_schemas

log = logging.getLogger(__name__)

DEFAULT_SYSTEM = (
    "You are a coding assistant working inside the user's editor. Use the tools to read, "
    "search and edit the workspace. Content you have already seen may come back as a short "
    "reference such as [[file:3f9a2c10]]; read_session_file hydrates any id. Some files are "
    "withheld because they may hold secrets; do not try to work around that. Keep edits "
    "minimal and say what you changed."
)

CANCELLED_RESULT = "[cancelled by the user before this tool ran]"
REFUSED_RESULT = "[not run: the response ended in a refusal]"
TRUNCATED_RESULT = (
    "[not run: your response hit max_tokens before this call was complete; make the call "
    "again, with less output before it]"
)


ENGINE_KINDS: dict[str, ResultKind] = {
    "file": "file",
    "edit": "edit",
    "skill": "skill",
    "memory": "memory",
}


def record_result(engine: ContextEngine, conversation: str, use_id: str, result: ToolResult) -> str:
    """Hand one tool result to the engine; returns the text the model will see."""
    kind: ResultKind = ENGINE_KINDS.get(result.kind, "tool_result")
    if kind == "file" and result.document is not None:
        return engine.add_tool_result(
            conversation,
            use_id,
            result.text + result.note,
            kind="file",
            uri=result.uri,
            content=result.text,
            version=result.document.version,
            start_line=result.first_line,
            whole=result.whole,
        )
    return engine.add_tool_result(
        conversation,
        use_id,
        result.text,
        kind=kind,
        uri=result.uri,
        content=result.content,
        is_error=result.is_error,
    )


@dataclass(frozen=True)
class AgentSettings:
    """Per-ask knobs; the server fills them from its configuration."""

    model: str = DEFAULT_MODEL
    max_steps: int = 20
    system: str = DEFAULT_SYSTEM


@dataclass
class AgentEvents:
    """What a front end hears while the loop runs (all optional, all synchronous)."""

    on_text: TextCallback | None = None
    on_tool_use: Callable[[str, Mapping[str, Any]], None] | None = None
    on_tool_result: Callable[[str, str, bool], None] | None = None
    on_usage: Callable[[Mapping[str, int]], None] | None = None
    on_retry: Callable[[RetryNotice], None] | None = None


@dataclass(frozen=True)
class EditRecord:
    """One edit_file call: which file and whether it landed."""

    uri: str | None
    applied: bool
    message: str


@dataclass
class AgentResult:
    """How an ask ended and what it cost."""

    conversation: str
    text: str
    stop_reason: str
    calls: int
    usage: dict[str, int] = field(default_factory=dict)
    edits: list[EditRecord] = field(default_factory=list)
    retries: int = 0


USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def usage_of(message: Message) -> dict[str, int]:
    """The four usage figures of a response, missing ones as 0."""
    return {name: int(getattr(message.usage, name, 0) or 0) for name in USAGE_FIELDS}


def content_blocks(message: Message) -> list[dict[str, Any]]:
    """The assistant's blocks as plain JSON for the thread (empty text blocks dropped:
    the API refuses them on the way back in)."""
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        else:
            blocks.append(block.model_dump(mode="json", exclude_none=True))
    return blocks


async def _until_cancelled(
    work: Coroutine[Any, Any, Message], cancel: asyncio.Event | None
) -> Message | None:
    """The call's result, or None if `cancel` was set first (the call is then stopped)."""
    task = asyncio.ensure_future(work)
    if cancel is None:
        return await task
    waiter = asyncio.ensure_future(cancel.wait())
    racing: list[asyncio.Future[Any]] = [task, waiter]
    try:
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


async def run_agent(
    prompt: str,
    *,
    engine: ContextEngine,
    conversation: str,
    client: ModelClient,
    env: ToolEnv,
    settings: AgentSettings | None = None,
    events: AgentEvents | None = None,
    cancel: asyncio.Event | None = None,
) -> AgentResult:
    """Answer `prompt` in `conversation`, calling tools until the model is done.

    Raises `ModelError` when a call fails for good (after retries); cancellation through
    `cancel` returns with stop_reason "cancelled", a task cancel propagates after the
    conversation has been made consistent.
    """
    settings = settings or AgentSettings()
    events = events or AgentEvents()
    engine.add_user_text(conversation, prompt)
    result = AgentResult(conversation, "", "max_steps", 0)
    retries_before = client.retries
    totals = dict.fromkeys(USAGE_FIELDS, 0)
    try:
        for _ in range(settings.max_steps):
            if cancel is not None and cancel.is_set():
                result.stop_reason = "cancelled"
                break
            try:
                request = engine.build_request(
                    conversation, settings.model, settings.system, tool_schemas(env)
                )
            except UnknownModelError as exc:
                raise ModelError(
                    "unknown_model",
                    f"Unknown model {settings.model!r}: not a Claude model this version knows "
                    f"({exc}). Check the model setting.",
                ) from None
            message = await _until_cancelled(
                client.stream(request, events.on_text, events.on_retry), cancel
            )
            if message is None:
                result.stop_reason = "cancelled"
                break
            result.calls += 1
            usage = usage_of(message)
            for name, value in usage.items():
                totals[name] += value
            engine.record_usage(conversation, usage)
            if events.on_usage is not None:
                events.on_usage(usage)
            blocks = content_blocks(message)
            if blocks:
                engine.add_assistant_content(conversation, blocks)
            result.text = "".join(b["text"] for b in blocks if b["type"] == "text")
            stop = message.stop_reason or "end_turn"
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if stop == "refusal":
                _close_calls(engine, conversation, uses, REFUSED_RESULT)
                result.stop_reason = "refusal"
                result.text = result.text or "The model declined to answer this request."
                break
            if stop == "max_tokens" and uses:  # the last call's input may be cut short
                _close_calls(engine, conversation, uses, TRUNCATED_RESULT)
                continue
            if not uses:
                result.stop_reason = stop
                break
            await _run_tools(uses, engine, conversation, env, events, cancel, result)
            if result.stop_reason == "cancelled":
                break
    finally:
        result.usage = totals
        result.retries = client.retries - retries_before
    return result


async def _run_tools(
    uses: Sequence[Mapping[str, Any]],
    engine: ContextEngine,
    conversation: str,
    env: ToolEnv,
    events: AgentEvents,
    cancel: asyncio.Event | None,
    result: AgentResult,
) -> None:
    """Answer every tool call of one turn, in order; after a cancel the rest say so."""
    answered = 0
    try:
        for use in uses:
            if cancel is not None and cancel.is_set():
                result.stop_reason = "cancelled"
                break
            name, args = str(use["name"]), use["input"]
            if events.on_tool_use is not None:
                events.on_tool_use(name, args if isinstance(args, Mapping) else {})
            outcome = await run_tool(env, name, args)
            shown = record_result(engine, conversation, str(use["id"]), outcome)
            answered += 1
            if outcome.kind == "edit":
                result.edits.append(EditRecord(outcome.uri, not outcome.is_error, outcome.text))
            if events.on_tool_result is not None:
                events.on_tool_result(name, shown, outcome.is_error)
    finally:
        _close_calls(engine, conversation, uses[answered:], CANCELLED_RESULT)


def _close_calls(
    engine: ContextEngine, conversation: str, uses: Sequence[Mapping[str, Any]], why: str
) -> None:
    """Tool calls that will not run still get a result: the API refuses a thread without."""
    for use in uses:
        record_result(
            engine, conversation, str(use["id"]), ToolResult(why, is_error=True, kind="error")
        )
