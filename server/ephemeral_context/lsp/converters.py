"""Translation between lsprotocol types and our own: the only module that knows both sides.

Handlers call these to turn wire types into the mirror's edits and positions, and the core's
results (context items, usage, hydrated text) into the `ephemeralContext/*` payloads of
protocol.py.

API:
- Positions: `position_encoding`, `to_position`, `to_range`, `from_position`, `from_range`,
  `to_text_edits`.
- Results: `usage_params`, `status_result`, `context_item`, `hydrate_result`, `ask_usage`,
  `ask_result`, `subagent_progress`, `last_call`; `folder_path`, `relative_label`. Those
  that name a file take `ClientUri`: the core keys a file by its real path, the editor is
  sent the URI it knows it by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from lsprotocol import types

from ephemeral_context.cache_sim import Usage
from ephemeral_context.context.engine import EngineStatus, HydratedText, ItemInfo
from ephemeral_context.documents import (
    Position,
    PositionEncoding,
    Range,
    TextEdit,
    uri_to_path,
)
from ephemeral_context.lsp.protocol import (
    AskEdit,
    AskProgressParams,
    AskResult,
    AskUsage,
    Breakdown,
    ContextItem,
    HydrateResult,
    LastCall,
    StatusResult,
    SubagentProgressEvent,
    UsageParams,
)

if TYPE_CHECKING:  # the agent imports the anthropic SDK, which is slow to load
    from ephemeral_context.model.agent import AgentResult, SubagentEvent, SubagentEventKind

ClientUri = Callable[[str], str]
"""A file's key in the core -> the URI the editor knows the file by (a linked path)."""

_ENCODINGS: dict[str, PositionEncoding] = {
    types.PositionEncodingKind.Utf8: "utf-8",
    types.PositionEncodingKind.Utf16: "utf-16",
    types.PositionEncodingKind.Utf32: "utf-32",
}


def position_encoding(kind: types.PositionEncodingKind | str | None) -> PositionEncoding:
    """The mirror's name for the encoding pygls negotiated (UTF-16 when none was)."""
    return _ENCODINGS.get(str(kind) if kind is not None else "", "utf-16")


def to_position(position: types.Position) -> Position:
    return Position(position.line, position.character)


def to_range(range_: types.Range) -> Range:
    return Range(to_position(range_.start), to_position(range_.end))


def to_text_edits(changes: Sequence[types.TextDocumentContentChangeEvent]) -> list[TextEdit]:
    """didChange content changes as mirror edits; a change without a range replaces all."""
    edits: list[TextEdit] = []
    for change in changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            edits.append(TextEdit(to_range(change.range), change.text))
        else:
            edits.append(TextEdit(None, change.text))
    return edits


def from_position(position: Position) -> types.Position:
    return types.Position(line=position.line, character=position.character)


def from_range(start: Position, end: Position) -> types.Range:
    return types.Range(start=from_position(start), end=from_position(end))


def folder_path(uri: str) -> str:
    """A workspace folder URI as a path for glob patterns (clients without RelativePattern)."""
    path = uri_to_path(uri)
    return path.as_posix() if path is not None else uri


def last_call(usage: Usage | None, output_tokens: int) -> LastCall | None:
    """The engine keeps the input side of the last call; the server adds its output."""
    if usage is None:
        return None
    return LastCall(
        cache_read=usage.cache_read_input_tokens,
        cache_write=usage.cache_creation_input_tokens,
        input=usage.input_tokens,
        output=output_tokens,
    )


def usage_params(status: EngineStatus, last_output_tokens: int = 0) -> UsageParams:
    return UsageParams(
        context_tokens=status.context_tokens,
        budget=status.budget,
        cache_hit_rate=round(status.cache_hit_rate, 4),
        saved_tokens=round(status.saved_tokens),
        saved_usd=round(status.saved_usd, 6),
        breakdown=_breakdown(status.breakdown),
        last_call=last_call(status.last_call, last_output_tokens),
    )


def _breakdown(tokens: Mapping[str, int]) -> Breakdown:
    """The four documented states; a reference-only item costs nothing, like an evicted one."""
    return Breakdown(
        full=tokens.get("full", 0),
        partial=tokens.get("partial", 0),
        synopsis=tokens.get("synopsis", 0),
        evicted=tokens.get("evicted", 0) + tokens.get("reference", 0),
    )


def status_result(
    status: EngineStatus, last_output_tokens: int, model: str, open_documents: int, encoding: str
) -> StatusResult:
    usage = usage_params(status, last_output_tokens)
    return StatusResult(
        **attrs.asdict(usage, recurse=False),
        items=status.items,
        model=model,
        open_documents=open_documents,
        position_encoding=encoding,
    )


def context_item(info: ItemInfo, folders: Sequence[Path], client_uri: ClientUri) -> ContextItem:
    """An item for the wire; a label naming a path inside a workspace folder is made
    relative to it (the first folder that holds it), whatever the client."""
    return ContextItem(
        id=info.id,
        kind=info.kind,
        state=info.state,
        tokens=info.tokens,
        label=relative_label(info.label, folders),
        pinned=info.pinned,
        uri=client_uri(info.uri) if info.uri is not None else None,
        version=info.version,
    )


def relative_label(label: str, folders: Sequence[Path]) -> str:
    """`label` without the leading workspace folder, when it starts with one."""
    for folder in folders:
        prefix = folder.as_posix().rstrip("/") + "/"
        if label.startswith(prefix) and len(label) > len(prefix):
            return label[len(prefix) :]
    return label


def hydrate_result(text: HydratedText, client_uri: ClientUri) -> HydrateResult:
    return HydrateResult(
        id=text.id,
        text=text.text,
        total_length=text.total_length,
        offset=text.offset,
        uri=client_uri(text.uri) if text.uri is not None else None,
        version=text.version,
    )


def ask_usage(usage: Mapping[str, int]) -> AskUsage:
    return AskUsage(
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
    )


def ask_result(result: AgentResult, client_uri: ClientUri) -> AskResult:
    return AskResult(
        conversation_id=result.conversation,
        text=result.text,
        stop_reason=result.stop_reason,
        calls=result.calls,
        usage=ask_usage(result.usage),
        edits=[AskEdit(uri=client_uri(e.uri), applied=e.applied) for e in result.edits if e.uri],
    )


_SUBAGENT_EVENTS: dict[SubagentEventKind, SubagentProgressEvent] = {
    "start": "start",
    "text": "text",
    "tool_use": "toolUse",
    "tool_result": "toolResult",
    "usage": "usage",
    "retry": "retry",
    "end": "end",
}


def subagent_progress(conversation: str, event: SubagentEvent) -> AskProgressParams:
    """A sub-agent's event as a "subagent" askProgress; fields that do not apply to its kind
    stay unset, so they are left out on the wire."""
    kind = event.kind
    return AskProgressParams(
        conversation_id=conversation,
        kind="subagent",
        agent=event.agent,
        event=_SUBAGENT_EVENTS[kind],
        text=event.text if kind in ("start", "text", "tool_result", "retry", "end") else None,
        tool=event.tool if kind in ("tool_use", "tool_result") else None,
        input=dict(event.input) if kind == "tool_use" else None,
        is_error=event.is_error if kind in ("tool_result", "end") else None,
        usage=ask_usage(event.usage) if kind == "usage" else None,
    )
