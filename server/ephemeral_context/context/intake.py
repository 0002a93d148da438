"""What enters a conversation: the user's text, the model's content, tool results, skills.

Every block is appended to the thread (thread.append). Content that may later be evicted is
persisted to the store first and recorded in the ledger, so the placeholder that replaces it
carries an id that hydrates it: large tool results and tool_use inputs, a Write's content,
skill bodies (with their frontmatter: a protected or non-ephemeral skill is never evicted by
the policy) and memories. File reads and the model's edits go through reads.py. Images and
documents, in a user message or in a tool result's content, go in as the client sent them
and stay: the store holds text, so nothing could bring them back.

API:
- `add_user_text(state, conv, text, tokens)`: a message typed by the human.
- `add_user_block(state, conv, block, tokens)`: a block of a user message as the client sent
  it (text, an image, a document), never evicted.
- `add_user_content(...)`: skill bodies or memories the harness puts in a user message.
- `add_assistant_content(...)`: a model response, tool_use blocks included.
- `add_tool_result(state, conv, result)`: a tool's result in; the text the model sees out.
- `ToolOutput`: one tool result as it enters the engine.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ephemeral_context.claude_tools import builtin_tool
from ephemeral_context.context import reads
from ephemeral_context.context.blocks import (
    as_dict,
    block_tokens,
    content_key,
    input_strings,
    input_text,
    result_block,
    tool_file,
    uncached,
)
from ephemeral_context.context.conversation import Conversation, SkillState
from ephemeral_context.context.kinds import BlockKind
from ephemeral_context.context.ledger import LedgerItem
from ephemeral_context.context.skills import SkillMeta, parse_skill
from ephemeral_context.context.state import EngineState
from ephemeral_context.documents import utf8
from ephemeral_context.tokens import BLOCK_OVERHEAD_TOKENS, MEDIA_TYPES, media_tokens

log = logging.getLogger(__name__)

INPUT_EVICTION_MIN_TOKENS = 2 * BLOCK_OVERHEAD_TOKENS
"""A tool_use input smaller than this cannot shrink below its placeholder plus framing."""


def add_user_text(state: EngineState, conv: str, text: str, tokens: int | None) -> None:
    """A user message (typed by the human)."""
    add_user_block(state, conv, {"type": "text", "text": text}, tokens)


def add_user_block(
    state: EngineState, conv: str, block: Mapping[str, Any], tokens: int | None
) -> None:
    """A block of a user message, sent as the client sent it but for its cache_control (the
    engine places the breakpoints): text typed by the human, an image or a document (sized
    by `media_tokens`). Never evicted: nothing could bring an image back."""
    c = state.conversation(conv)
    sent = uncached(block)
    is_text = sent.get("type") == "text"
    text = str(sent.get("text", "")) if is_text else ""
    if tokens is None:
        tokens = state.count(text, "prose") if is_text else media_tokens(sent, state.count)
    c.thread.append(c.calls, "user", sent, tokens, text=text)


def _written(block: Mapping[str, Any]) -> list[str]:
    """What a response block writes: its text, or every string of its tool input."""
    if block.get("type") == "text":
        return [str(block.get("text", ""))]
    if block.get("type") == "tool_use":
        return input_strings(block.get("input") or {})
    return []


def add_assistant_content(
    state: EngineState,
    conv: str,
    blocks: Iterable[Mapping[str, Any] | Any],
    tokens: Sequence[int] | None,
    unstored: Collection[int] = (),
) -> None:
    """The content of a model response, tool_use blocks included, in order.

    A Write's content is persisted to the store (and becomes the file's current version), a
    large input is persisted as JSON, so either can later shrink to a placeholder plus id;
    a block whose index is in `unstored` (one that holds a secret) is stored nowhere.
    Both are stored before anything is recorded: a store that fails (another process holds
    it locked) leaves the conversation as it was, never half a response whose tool_use no
    tool_result can follow (the API refuses such a thread).
    """
    c = state.conversation(conv)
    raws = [as_dict(raw) for raw in blocks]
    counts = [
        tokens[n] if tokens is not None and n < len(tokens) else block_tokens(state.count, block)
        for n, block in enumerate(raws)
    ]
    stored = [
        (kept, state.store.put(kept.text, uri=kept.uri, tokens=kept.tokens).id)
        if n not in unstored and (kept := _kept(state, block, count)) is not None
        else None
        for n, (block, count) in enumerate(zip(raws, counts, strict=True))
    ]
    c.reuse.observe(c.thread.blocks, c.quotes, [t for b in raws for t in _written(b)], c.calls)
    for block, count, persisted in zip(raws, counts, stored, strict=True):
        kind = str(block.get("type", ""))
        if kind == "text" and not block.get("text"):
            continue
        if kind != "tool_use":
            c.thread.append(c.calls, "assistant", block, count, text=str(block.get("text", "")))
            continue
        name = str(block.get("name", ""))
        tool_input = block.get("input") or {}
        c.tool_uses[str(block.get("id", ""))] = (name, tool_input)
        path = tool_file(tool_input)
        item_id = None
        if persisted is not None:
            kept, item_id = persisted
            if kept.uri is not None:
                _add_write(state, c, block, count, kept.uri, kept.text, item_id)
                continue
            state.ledger.record(
                LedgerItem(
                    id=item_id, kind=BlockKind.TOOL_RESULT, key=f"{conv}:input:{item_id}",
                    tokens=count, size_bytes=len(utf8(kept.text)), content_hash=item_id,
                    last_use=c.calls, changed_at=c.calls, label=f"{name} input",
                )
            )  # fmt: skip
        c.thread.append(
            c.calls, "assistant", block, count,
            kind=BlockKind.TOOL_INPUT if item_id else BlockKind.TEXT,
            item_id=item_id, text=input_text(tool_input),
            uri=state.config.file_uri(path) if path is not None else None,
        )  # fmt: skip
        if path is not None:
            reads.touch(state, c, state.config.file_uri(path))


@dataclass(frozen=True)
class _Kept:
    """What the store keeps of a response block: a Write's content (`uri` its file), or a
    large tool_use input as JSON (`uri` None)."""

    text: str
    uri: str | None
    tokens: int


def _kept(state: EngineState, block: Mapping[str, Any], count: int) -> _Kept | None:
    if block.get("type") != "tool_use":
        return None
    name, tool_input = str(block.get("name", "")), block.get("input") or {}
    content = tool_input.get("content") if builtin_tool(name) == "Write" else None
    path = tool_file(tool_input)
    if isinstance(content, str) and path is not None:
        return _Kept(content, state.config.file_uri(path), state.count(content, "code"))
    if count > INPUT_EVICTION_MIN_TOKENS:
        return _Kept(json.dumps(tool_input, ensure_ascii=False, indent=1), None, count)
    return None


def _add_write(
    state: EngineState,
    c: Conversation,
    block: dict[str, Any],
    count: int,
    uri: str,
    content: str,
    item_id: str,
) -> None:
    """A Write tool_use (its content stored as `item_id`): the file's new version, and what
    the model sees."""
    reads.record_file_version(state, c, uri, item_id, content)
    index = c.thread.append(
        c.calls,
        "assistant",
        block,
        count,
        kind=BlockKind.WRITE_INPUT,
        item_id=item_id,
        uri=uri,
        text=content,
    )
    c.show_file(uri, item_id, content, [index], keep_segment=True)
    reads.touch(state, c, uri)


@dataclass(frozen=True)
class ToolOutput:
    """One tool result as it enters the engine (ContextEngine.add_tool_result).

    kind FILE: a read of `uri`; `content` is the raw text read (default `text`),
    `start_line`/`whole` say which part. kind EDIT: the model's own change; `content` is the
    whole file afterwards, if known. SKILL, MEMORY, TOOL_RESULT: kept as is, evictable by
    the policy. `parts`: the result's content list as the client sent it, when it carries
    images or documents (`text` its text alone): sent as it came but for cache_control, never
    evicted (its text alone would lose them), of any kind but FILE and EDIT (an image Read
    is no file read). `tokens` overrides the estimate (replay: the recorded size; by
    default the text's plus `media_tokens`); `name` the tool's name when the engine did not
    see its tool_use. `unstored`: sent as it came and never stored nor cut, so that no id
    names it (a result that holds a secret, replay/feed.py), of no kind but TOOL_RESULT.
    """

    tool_use_id: str
    text: str
    kind: BlockKind = BlockKind.TOOL_RESULT
    uri: str | None = None
    version: int | None = None
    content: str | None = None
    start_line: int = 1
    whole: bool = True
    is_error: bool = False
    tokens: int | None = None
    name: str | None = None
    parts: Sequence[Mapping[str, Any]] | None = None
    unstored: bool = False

    def __post_init__(self) -> None:
        if self.kind not in RESULT_KINDS:
            raise ValueError(f"a tool result's kind is one of {sorted(RESULT_KINDS)}")
        if self.parts is not None and self.kind in (BlockKind.FILE, BlockKind.EDIT):
            raise ValueError("a tool result carrying images is neither a file read nor an edit")
        object.__setattr__(self, "kind", BlockKind(self.kind))
        if self.unstored and self.kind is not BlockKind.TOOL_RESULT:
            raise ValueError("a result stored nowhere is no file read, edit, skill or memory")


RESULT_KINDS = frozenset(
    {BlockKind.FILE, BlockKind.EDIT, BlockKind.TOOL_RESULT, BlockKind.SKILL, BlockKind.MEMORY}
)


def add_tool_result(state: EngineState, conv: str, result: ToolOutput) -> str:
    """Record a tool's result and return the text the model actually sees."""
    c = state.conversation(conv)
    r, kind = result, result.kind
    if r.parts is not None:
        return _add_result_parts(state, c, r, r.parts)
    tool = r.name or c.tool_uses.get(r.tool_use_id, ("", {}))[0]
    given = r.tokens if r.tokens is not None else state.count(r.text, "tool_output")
    if r.unstored:  # stored nowhere, so never cut: nothing could bring it back
        block = result_block(r.tool_use_id, r.text, r.is_error)
        c.thread.append(c.calls, "user", block, given, text=r.text)
        return r.text
    base_key = content_key({"tool_result": r.tool_use_id, "text": r.text})
    if kind is BlockKind.FILE and r.uri is not None and not r.is_error:
        content = r.content if r.content is not None else r.text
        return reads.add_read(state, c, r, r.uri, content, given, base_key)
    if kind is BlockKind.EDIT and r.uri is not None:
        reads.record_edit(state, c, r.uri, r.version, r.content)
    item_id: str | None = None
    meta: SkillMeta | None = None
    if not r.is_error and given > INPUT_EVICTION_MIN_TOKENS:
        item_kind = kind if kind in (BlockKind.SKILL, BlockKind.MEMORY) else BlockKind.TOOL_RESULT
        meta = (
            parse_skill(r.text, default_name=tool or "skill") if kind is BlockKind.SKILL else None
        )
        if meta is not None and meta.problems:
            log.warning(
                "skill %s: %s (treated as not ephemeral)", meta.name, "; ".join(meta.problems)
            )
        item_id = state.store.put(r.text, tokens=given).id
        key = f"{conv}:{r.tool_use_id}"
        _record_item(state, c, item_id, r.text, given, item_kind, key, meta, tool)
    block_kind = BlockKind.TOOL_RESULT if kind is BlockKind.EDIT else kind
    index = c.thread.append(
        c.calls,
        "user",
        result_block(r.tool_use_id, r.text, r.is_error),
        given,
        kind=block_kind if item_id else BlockKind.TEXT,
        item_id=item_id,
        text=r.text,
        uri=r.uri if kind is BlockKind.EDIT else None,
    )
    if meta is not None:
        c.skills[index] = SkillState(meta, c.calls, c.thread.tokens)
    return r.text


def _add_result_parts(
    state: EngineState, c: Conversation, r: ToolOutput, parts: Sequence[Mapping[str, Any]]
) -> str:
    """A tool result carrying images or documents: its content list as sent, kept."""
    content = [uncached(part) for part in parts]
    media = sum(media_tokens(p, state.count) for p in content if p.get("type") in MEDIA_TYPES)
    given = r.tokens if r.tokens is not None else state.count(r.text, "tool_output") + media
    block = result_block(r.tool_use_id, content, r.is_error)
    c.thread.append(c.calls, "user", block, given, text=r.text)
    return r.text


def add_user_content(
    state: EngineState,
    conv: str,
    text: str,
    kind: BlockKind,
    name: str,
    tokens: int | None,
) -> None:
    """Skill bodies or memories the harness puts in a user message (not a tool result). An
    empty or blank one adds nothing: the API refuses a text block without text, and the
    block would stay in every later request."""
    if not text.strip():
        return
    c = state.conversation(conv)
    count = tokens if tokens is not None else state.count(text, "prose")
    item_id = state.store.put(text, tokens=count).id
    meta = parse_skill(text, default_name=name or "skill") if kind is BlockKind.SKILL else None
    key = f"{conv}:{kind}:{item_id}"
    _record_item(state, c, item_id, text, count, kind, key, meta, name or kind)
    index = c.thread.append(
        c.calls,
        "user",
        {"type": "text", "text": text},
        count,
        kind=kind,
        item_id=item_id,
        text=text,
    )
    if meta is not None:
        c.skills[index] = SkillState(meta, c.calls, c.thread.tokens)


def _record_item(
    state: EngineState,
    c: Conversation,
    item_id: str,
    text: str,
    tokens: int,
    kind: BlockKind,
    key: str,
    meta: SkillMeta | None,
    label: str,
) -> None:
    """Record persisted, evictable content in the ledger. A skill whose frontmatter protects
    it (or says it is not ephemeral) is not evictable."""
    protected = meta is not None and (meta.protected or not meta.ephemeral)
    state.ledger.record(
        LedgerItem(
            id=item_id,
            kind=kind,
            key=key,
            tokens=tokens,
            size_bytes=len(utf8(text)),
            content_hash=item_id,
            last_use=c.calls,
            changed_at=c.calls,
            evictable=not protected,
            label=meta.name if meta else label,
        )
    )
