"""What enters a conversation: the user's text, the model's content, tool results, skills.

Every block is appended to the thread (thread.append). Content that may later be evicted is
persisted to the store first and recorded in the ledger, so the placeholder that replaces it
carries an id that hydrates it: large tool results and tool_use inputs, a Write's content,
skill bodies (with their frontmatter: a protected or non-ephemeral skill is never evicted by
the policy) and memories. File reads and the model's edits go through reads.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from ephemeral_context.context import reads
from ephemeral_context.context.blocks import (
    as_dict,
    block_tokens,
    input_text,
    result_block,
    uri_of,
)
from ephemeral_context.context.layout import content_key
from ephemeral_context.context.ledger import ItemKind, LedgerItem
from ephemeral_context.context.skills import SkillMeta, parse_skill
from ephemeral_context.context.state import EngineState
from ephemeral_context.context.thread import Conversation, FileView, SkillState, append
from ephemeral_context.tokens import BLOCK_OVERHEAD_TOKENS

log = logging.getLogger(__name__)

ResultKind = Literal["file", "edit", "tool_result", "skill", "memory"]
INPUT_EVICTION_MIN_TOKENS = 2 * BLOCK_OVERHEAD_TOKENS
"""A tool_use input smaller than this cannot shrink below its placeholder plus framing."""

WRITE_TOOLS = frozenset({"Write", "write_file"})


def add_user_text(state: EngineState, conv: str, text: str, tokens: int | None) -> None:
    """A user message (typed by the human)."""
    c = state.conversation(conv)
    append(
        c,
        "user",
        {"type": "text", "text": text},
        tokens if tokens is not None else state.count(text, "prose"),
        text=text,
    )


def add_assistant_content(
    state: EngineState,
    conv: str,
    blocks: Iterable[Mapping[str, Any] | Any],
    tokens: Sequence[int] | None,
) -> None:
    """The content of a model response, tool_use blocks included, in order.

    A Write's content is persisted to the store (and becomes the file's current version), a
    large input is persisted as JSON, so either can later shrink to a placeholder plus id.
    """
    c = state.conversation(conv)
    for n, raw in enumerate(blocks):
        block = as_dict(raw)
        kind = str(block.get("type", ""))
        if kind == "text" and not block.get("text"):
            continue
        count = (
            tokens[n]
            if tokens is not None and n < len(tokens)
            else block_tokens(state.count, block)
        )
        if kind != "tool_use":
            append(c, "assistant", block, count, text=str(block.get("text", "")))
            continue
        name = str(block.get("name", ""))
        tool_input = block.get("input") or {}
        c.tool_uses[str(block.get("id", ""))] = (name, tool_input)
        content = tool_input.get("content") if name in WRITE_TOOLS else None
        path = tool_input.get("file_path") or tool_input.get("path")
        if isinstance(content, str) and isinstance(path, str):
            _add_write(state, c, block, count, uri_of(path), content)
            continue
        item_id = None
        if count > INPUT_EVICTION_MIN_TOKENS:
            stored = json.dumps(tool_input, ensure_ascii=False, indent=1)
            entry = state.store.put(stored, tokens=count)
            item_id = entry.id
            state.ledger.record(
                LedgerItem(
                    id=entry.id, kind=ItemKind.TOOL_RESULT, key=f"{conv}:input:{entry.id}",
                    tokens=count, size_bytes=len(stored.encode()), content_hash=entry.id,
                    last_use=c.calls, changed_at=c.calls, label=f"{name} input",
                )
            )  # fmt: skip
        append(
            c, "assistant", block, count, kind="tool_input" if item_id else "text",
            item_id=item_id, text=input_text(tool_input),
            uri=uri_of(path) if isinstance(path, str) else None,
        )  # fmt: skip
        if isinstance(path, str):
            reads.touch(state, c, uri_of(path))


def _add_write(
    state: EngineState, c: Conversation, block: dict[str, Any], count: int, uri: str, content: str
) -> None:
    """A Write tool_use: its content is the file's new version, and what the model sees."""
    entry = state.store.put(content, uri=uri, tokens=state.count(content, "code"))
    reads.record_file_version(state, c, uri, entry.id, content)
    index = append(
        c, "assistant", block, count, kind="write_input", item_id=entry.id, uri=uri, text=content
    )
    view = c.files.get(uri)
    c.files[uri] = FileView(uri, entry.id, content, 1, True, c.calls, [index])
    if view is not None and view.in_segment:
        c.files[uri].in_segment = True
    reads.touch(state, c, uri)


def add_tool_result(
    state: EngineState,
    conv: str,
    tool_use_id: str,
    text: str,
    *,
    kind: ResultKind,
    uri: str | None,
    version: int | None,
    content: str | None,
    start_line: int,
    whole: bool,
    is_error: bool,
    tokens: int | None,
    name: str | None,
) -> str:
    """Record a tool's result and return the text the model actually sees (see
    ContextEngine.add_tool_result)."""
    c = state.conversation(conv)
    tool = name or c.tool_uses.get(tool_use_id, ("", {}))[0]
    given = tokens if tokens is not None else state.count(text, "tool_output")
    base_key = content_key({"tool_result": tool_use_id, "text": text})
    if kind == "file" and uri is not None and not is_error:
        return reads.add_read(
            state,
            c,
            tool_use_id,
            text,
            uri,
            version,
            content if content is not None else text,
            start_line,
            whole,
            given,
            base_key,
        )
    if kind == "edit" and uri is not None:
        reads.record_edit(state, c, uri, version, content)
    item_id: str | None = None
    meta: SkillMeta | None = None
    if not is_error and given > INPUT_EVICTION_MIN_TOKENS:
        item_kind = (
            ItemKind.SKILL
            if kind == "skill"
            else ItemKind.MEMORY
            if kind == "memory"
            else ItemKind.TOOL_RESULT
        )
        meta = parse_skill(text, default_name=tool or "skill") if kind == "skill" else None
        if meta is not None and meta.problems:
            log.warning(
                "skill %s: %s (treated as not ephemeral)", meta.name, "; ".join(meta.problems)
            )
        item_id = state.store.put(text, tokens=given).id
        _record_item(state, c, item_id, text, given, item_kind, f"{conv}:{tool_use_id}", meta, tool)
    index = append(
        c,
        "user",
        result_block(tool_use_id, text, is_error),
        given,
        kind=("tool_result" if kind == "edit" else kind) if item_id else "text",
        item_id=item_id,
        text=text,
        uri=uri if kind == "edit" else None,
    )
    if meta is not None:
        c.skills[index] = SkillState(meta, c.calls, c.thread_tokens)
    return text


def add_user_content(
    state: EngineState,
    conv: str,
    text: str,
    kind: Literal["skill", "memory"],
    name: str,
    tokens: int | None,
) -> None:
    """Skill bodies or memories the harness puts in a user message (not a tool result)."""
    c = state.conversation(conv)
    count = tokens if tokens is not None else state.count(text, "prose")
    item_id = state.store.put(text, tokens=count).id
    meta = parse_skill(text, default_name=name or "skill") if kind == "skill" else None
    key = f"{conv}:{kind}:{item_id}"
    _record_item(state, c, item_id, text, count, ItemKind(kind), key, meta, name or kind)
    index = append(
        c, "user", {"type": "text", "text": text}, count, kind=kind, item_id=item_id, text=text
    )
    if meta is not None:
        c.skills[index] = SkillState(meta, c.calls, c.thread_tokens)


def _record_item(
    state: EngineState,
    c: Conversation,
    item_id: str,
    text: str,
    tokens: int,
    kind: ItemKind,
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
            size_bytes=len(text.encode()),
            content_hash=item_id,
            last_use=c.calls,
            changed_at=c.calls,
            evictable=not protected,
            label=meta.name if meta else label,
        )
    )
