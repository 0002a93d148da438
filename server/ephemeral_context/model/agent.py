"""The agent loop: prompt -> request from the context engine -> streamed answer -> tools -> again.

The loop owns no context of its own. Every message goes into the context engine (user text,
the assistant's content blocks, each tool result) and every request comes out of it, so the
file-once, reference-on-repeat and eviction rules apply to everything the model sees. The
loop ends at `end_turn` (or any stop without tool calls), at the step bound, on a refusal,
or on cancellation; a cancelled loop leaves the conversation valid for the next ask (every
tool call it had started gets a result).

API:
- `run_agent(...)`: answer a prompt in a conversation, calling tools until the model is done.
- `AgentSettings`, `AgentEvents`, `AgentResult`: per-ask knobs, what a front end hears, how it
  ended.
- `SubagentEvent`, `SubagentEventKind`: what a sub-agent did.
- `record_result(...)`: one tool result into the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from anthropic.types import Message

from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput
from ephemeral_context.model import DEFAULT_MODEL
from ephemeral_context.model.client import ModelClient, ModelError, RetryNotice, TextCallback
from ephemeral_context.model.delegation import (
    DELEGATE,
    DELEGATE_TOOL,
    SUBAGENT_SYSTEM,
    SUBAGENT_TOOLS,
    brief,
    seen_files,
    workspace_label,
)
from ephemeral_context.model.tools import ToolEnv, ToolResult, run_tool, tool_schemas
from ephemeral_context.prices import UnknownModelError
from ephemeral_context.store import StoreError

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
SUBAGENT_CANCELLED = "[cancelled by the user while the sub-agent worked]"
TRUNCATED_RESULT = (
    "[not run: your response hit max_tokens before this call was complete; make the call "
    "again, with less output before it]"
)
TOO_LONG_RESULT = (
    "[not run: this call alone is longer than a response may be (max_tokens: {limit}) and "
    "was cut; make it in smaller parts (a big new file: create it with its first part, then "
    "add the rest with further edits)]"
)


def record_result(engine: ContextEngine, conversation: str, use_id: str, result: ToolResult) -> str:
    """Hand one tool result to the engine; returns the text the model will see."""
    if result.kind is BlockKind.FILE and result.document is not None:
        shown = ToolOutput(
            use_id,
            result.text + result.note,
            result.kind,
            uri=result.uri,
            content=result.text,
            version=result.document.version,
            start_line=result.first_line,
            whole=result.whole,
        )
    else:
        shown = ToolOutput(
            use_id,
            result.text,
            result.kind,
            uri=result.uri,
            content=result.content if _knows_base(engine, conversation, result) else None,
            is_error=result.is_error,
        )
    return engine.add_tool_result(conversation, shown)


def _knows_base(engine: ContextEngine, conversation: str, result: ToolResult) -> bool:
    """Whether the model knows the file an edit applied to, so that the file afterwards is
    what it now sees: not when the file changed since it read it whole (the user typed, a
    formatter ran); then its view stays, and a later read shows it the difference."""
    if result.kind is not BlockKind.EDIT or result.base is None:
        return True
    seen = [v for v in engine.file_views(conversation) if v.uri == result.uri and v.whole]
    return all(view.text == result.base for view in seen)


@dataclass(frozen=True)
class AgentSettings:
    """Per-ask knobs; the server fills them from its configuration."""

    model: str = DEFAULT_MODEL
    max_steps: int = 20
    system: str = DEFAULT_SYSTEM
    subagent_steps: int = 8
    """Step bound of a `delegate` sub-agent; 0 offers no delegate tool (a sub-agent's own
    settings have 0, so sub-agents do not nest)."""
    tools: frozenset[str] | None = None
    """The only tools offered and run (None: all of tool_schemas); a sub-agent's are
    delegation.SUBAGENT_TOOLS."""


SubagentEventKind = Literal["start", "text", "tool_use", "tool_result", "usage", "retry", "end"]


@dataclass(frozen=True)
class SubagentEvent:
    """Something a sub-agent did, labelled with its conversation id so a front end can show
    it apart from the main answer. "start" carries the brief as `text`, "end" the report
    (`is_error` when it ended without one)."""

    agent: str
    kind: SubagentEventKind
    text: str = ""
    tool: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    is_error: bool = False
    usage: Mapping[str, int] = field(default_factory=dict)


@dataclass
class AgentEvents:
    """What a front end hears while the loop runs (all optional, all synchronous).

    The first five are the main agent's only: a sub-agent's text, tool calls and usage go
    to `on_subagent`, labelled, so they never mix into the main answer.
    """

    on_text: TextCallback | None = None
    on_tool_use: Callable[[str, Mapping[str, Any]], None] | None = None
    on_tool_result: Callable[[str, str, bool], None] | None = None
    on_usage: Callable[[Mapping[str, int]], None] | None = None
    on_retry: Callable[[RetryNotice], None] | None = None
    on_subagent: Callable[[SubagentEvent], None] | None = None
    on_notice: Callable[[str], None] | None = None
    """A sentence for the person, outside the answer (a pin released before the ask)."""


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
    subagent_calls: int = 0
    """Model calls made by sub-agents; their usage is included in `usage`."""


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
                    conversation, settings.model, settings.system, offered_tools(env, settings)
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
                alone = len(blocks) == 1  # "less output before it" would loop to max_steps
                why = TOO_LONG_RESULT.format(limit=request["max_tokens"]) if alone else None
                _close_calls(engine, conversation, uses[:-1], TRUNCATED_RESULT)
                _close_calls(engine, conversation, uses[-1:], why or TRUNCATED_RESULT)
                continue
            if not uses:
                result.stop_reason = stop
                break
            loop = _Loop(engine, conversation, client, env, settings, events, cancel, totals)
            await _run_tools(uses, loop, result)
            if result.stop_reason == "cancelled":
                break
    finally:
        result.usage = totals
        result.retries = client.retries - retries_before
    return result


def offered_tools(env: ToolEnv, settings: AgentSettings) -> list[dict[str, Any]]:
    """The tool schemas of one request: the handlers' (or the allowed subset), then
    `delegate` when sub-agents are on; always in the same order (they head the prefix)."""
    tools = tool_schemas(env)
    if settings.tools is not None:
        tools = [tool for tool in tools if tool["name"] in settings.tools]
    if settings.subagent_steps > 0:
        tools.append(dict(DELEGATE_TOOL))
    return tools


@dataclass(frozen=True)
class _Loop:
    """What one run of the loop passes to the tool step."""

    engine: ContextEngine
    conversation: str
    client: ModelClient
    env: ToolEnv
    settings: AgentSettings
    events: AgentEvents
    cancel: asyncio.Event | None
    totals: dict[str, int]


async def _answer(loop: _Loop, name: str, args: object, result: AgentResult) -> ToolResult:
    """One tool call's result: a sub-agent's report for `delegate`, else the handler's."""
    settings = loop.settings
    if name == DELEGATE and settings.subagent_steps > 0:
        return await _delegate(loop, args, result)
    if settings.tools is not None and name not in settings.tools:
        available = ", ".join(sorted(settings.tools))
        return ToolResult(f"{name} is not available here; available: {available}", is_error=True)
    return await run_tool(loop.env, name, args)


def _sub_conversation(engine: ContextEngine, parent: str) -> str:
    """A fresh conversation id under the parent's: `<parent>/sub-<n>`."""
    taken = set(engine.conversations())
    n = 1
    while f"{parent}/sub-{n}" in taken:
        n += 1
    return f"{parent}/sub-{n}"


def _labelled(events: AgentEvents, agent: str) -> AgentEvents:
    """A sub-agent's events, each sent to the parent's `on_subagent` with its label."""
    tell = events.on_subagent
    if tell is None:
        return AgentEvents()
    return AgentEvents(
        on_text=lambda text: tell(SubagentEvent(agent, "text", text=text)),
        on_tool_use=lambda name, args: tell(
            SubagentEvent(agent, "tool_use", tool=name, input=args)
        ),
        on_tool_result=lambda name, shown, error: tell(
            SubagentEvent(agent, "tool_result", text=shown, tool=name, is_error=error)
        ),
        on_usage=lambda usage: tell(SubagentEvent(agent, "usage", usage=usage)),
        on_retry=lambda notice: tell(SubagentEvent(agent, "retry", text=notice.reason)),
    )


async def _delegate(loop: _Loop, args: object, result: AgentResult) -> ToolResult:
    """Run a sub-agent on the task: the same loop, a new conversation of the same engine,
    the read-only tools and `subagent_steps` calls; its last text is the result."""
    task = args.get("task") if isinstance(args, Mapping) else None
    if not isinstance(task, str) or not task.strip():
        return ToolResult("delegate: 'task' must be a non-empty string", is_error=True)
    agent = _sub_conversation(loop.engine, loop.conversation)
    seen = seen_files(loop.engine, loop.conversation, workspace_label(loop.env.workspace))
    first = brief(task, seen)
    tell = loop.events.on_subagent
    if tell is not None:
        tell(SubagentEvent(agent, "start", text=first))
    settings = replace(
        loop.settings,
        max_steps=loop.settings.subagent_steps,
        subagent_steps=0,
        tools=SUBAGENT_TOOLS,
        system=SUBAGENT_SYSTEM,
    )
    events = _labelled(loop.events, agent)
    heard = events.on_usage

    def billed(usage: Mapping[str, int]) -> None:
        """Each call counted as it returns: one of a sub-agent that fails later was billed."""
        for name, value in usage.items():
            loop.totals[name] += value
        result.subagent_calls += 1
        if heard is not None:
            heard(usage)

    events.on_usage = billed
    try:
        sub = await run_agent(
            first,
            engine=loop.engine,
            conversation=agent,
            client=loop.client,
            env=loop.env,
            settings=settings,
            events=events,
            cancel=loop.cancel,
        )
    except ModelError as exc:
        text, error = f"[the sub-agent failed: {exc}]", True
    else:
        text, error = _report(sub, settings.max_steps)
    if tell is not None:
        tell(SubagentEvent(agent, "end", text=text, is_error=error))
    return ToolResult(text, is_error=error)


def _report(sub: AgentResult, steps: int) -> tuple[str, bool]:
    """What the parent is told of a finished sub-agent, and whether that is an error."""
    if sub.stop_reason == "cancelled":
        return SUBAGENT_CANCELLED, True
    if sub.stop_reason == "max_steps":
        cut = f"[the sub-agent used all {steps} steps before finishing"
        if not sub.text:
            return cut + " and left no report]", True
        return f"{cut}; its last words:]\n{sub.text}", False
    if not sub.text:
        return f"[the sub-agent ended ({sub.stop_reason}) without a report]", True
    return sub.text, False


async def _run_tools(uses: Sequence[Mapping[str, Any]], loop: _Loop, result: AgentResult) -> None:
    """Answer every tool call of one turn, in order; after a cancel the rest say so, and
    after a result the store could not keep (busy) that one and the rest say that."""
    engine, conversation, events, cancel = loop.engine, loop.conversation, loop.events, loop.cancel
    answered = 0
    unanswered = CANCELLED_RESULT
    try:
        for use in uses:
            if cancel is not None and cancel.is_set():
                result.stop_reason = "cancelled"
                break
            name, args = str(use["name"]), use["input"]
            if events.on_tool_use is not None:
                events.on_tool_use(name, args if isinstance(args, Mapping) else {})
            outcome = await _answer(loop, name, args, result)
            shown = record_result(engine, conversation, str(use["id"]), outcome)
            answered += 1
            if outcome.kind is BlockKind.EDIT:
                result.edits.append(EditRecord(outcome.uri, not outcome.is_error, outcome.text))
            if events.on_tool_result is not None:
                events.on_tool_result(name, shown, outcome.is_error)
    except StoreError as exc:  # the ask fails; the model hears why at the next one
        unanswered = f"[not recorded: {exc}]"
        raise
    finally:
        _close_calls(engine, conversation, uses[answered:], unanswered)


def _close_calls(
    engine: ContextEngine, conversation: str, uses: Sequence[Mapping[str, Any]], why: str
) -> None:
    """Tool calls that will not run still get a result: the API refuses a thread without."""
    for use in uses:
        record_result(engine, conversation, str(use["id"]), ToolResult(why, is_error=True))
