"""The cache's view of a Messages API request body, parsed from the body itself.

Two users get request bodies they did not build: tests/fakes (which bills each request it
receives, and the tests that check the engine's requests against the API's rules) and
`ectx gateway` (which prices what the client's own requests would have cost). Each body
becomes a `cache_sim.Request`: one block per tool, system block and message content block,
each with a content key, an estimated token count and its `cache_control` TTL (and those
set inside it: a tool result with a list of content is one block per item, so a mark on an
item ends where the item does), refused with `CacheControlError` where the API refuses the
body. A tool sent with `defer_loading` is no
part of the prefix: the API renders its definition where a tool result references it (a
`tool_reference`, ToolSearch's answer in Claude Code 2.1.332), and bills it there. Blocks
go in the order the API renders them (`cache_sim.content_order`: parallel tool results in
the order of their tool uses), and string content is the one text block it stands for. The
engine builds its own `Request` directly and never parses bodies this way.

API:
- `request_from_messages_api(body)`: a body as a `cache_sim.Request`.
- `cache_ttl(owner)`: the TTL a block's (or a body's) `cache_control` asks for; raises
  CacheControlError for one the API refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import xxhash

from ephemeral_context.cache_sim import (
    Block,
    CacheControlError,
    Request,
    Ttl,
    canonical_json,
    content_blocks,
    content_order,
    inner_blocks,
    lookback_run,
    tool_result_text,
    unmarked,
)
from ephemeral_context.documents import utf8
from ephemeral_context.tokens import estimate_tokens, media_tokens

TokenCounter = Callable[[str, str], int]


def cache_ttl(owner: Mapping[str, Any]) -> Ttl | None:
    control = owner.get("cache_control")
    if control is None:
        return None
    if not isinstance(control, Mapping) or control.get("type") != "ephemeral":
        raise CacheControlError(f"cache_control must be {{'type': 'ephemeral'}}, got {control!r}")
    ttl = control.get("ttl", "5m")
    if ttl == "5m":
        return "5m"
    if ttl == "1h":
        return "1h"
    raise CacheControlError(f"cache_control.ttl must be '5m' or '1h', got {ttl!r}")


def _text_key(text: str) -> int:
    return xxhash.xxh3_64_intdigest(utf8(text))


def _content_key(prefix: str, block: Mapping[str, Any]) -> int:
    return _text_key(prefix + canonical_json(unmarked(block)))


Deferred = Mapping[str, Mapping[str, Any]]
"""The tools sent with `defer_loading`, by name: out of the prefix, rendered where referenced."""


def _definition(tool: Mapping[str, Any]) -> str:
    """A tool's definition as billed: its JSON without its cache_control."""
    return canonical_json({k: v for k, v in tool.items() if k != "cache_control"})


def _tool_result_tokens(content: Any, count: TokenCounter, deferred: Deferred) -> int:
    """A tool result's tokens; each tool it references is billed as its definition."""
    loaded = 0
    if isinstance(content, list):
        kept = []
        for item in content:
            if isinstance(item, Mapping) and item.get("type") == "tool_reference":
                tool = deferred.get(str(item.get("tool_name")), item)
                loaded += count(_definition(tool), "json")
            else:
                kept.append(item)
        content = kept
    text, flat = tool_result_text(content)
    return count(text, "tool_output") + flat + loaded


def _content_block_tokens(block: Mapping[str, Any], count: TokenCounter, deferred: Deferred) -> int:
    kind = block.get("type")
    if kind == "text":
        return count(str(block.get("text", "")), "prose")
    if kind == "tool_use" or kind == "server_tool_use":
        return count(str(block.get("name", "")) + canonical_json(block.get("input", {})), "json")
    if kind == "tool_result":
        return _tool_result_tokens(block.get("content", ""), count, deferred)
    if kind == "thinking":
        return count(str(block.get("thinking", "")), "thinking")
    if kind in ("image", "document"):
        return media_tokens(block, count)
    return count(canonical_json(block), "json")


def _inner_marks(block: Any, where: str) -> list[Ttl]:
    """The breakpoints set inside a content block, in the order the API renders them (an
    inner block's before the block holding it), refused where the API refuses them."""
    return [
        ttl
        for n, item in enumerate(inner_blocks(block))
        for ttl in _marks(item, f"{where}.content[{n}]")
    ]


def _marks(block: Any, where: str) -> list[Ttl]:
    """Every breakpoint a content block sets: those inside it, then its own."""
    ttl = _own_mark(block, where)
    return [*_inner_marks(block, where), *([ttl] if ttl else [])]


def _own_mark(block: Any, where: str) -> Ttl | None:
    """A content block's own breakpoint, refused where the API refuses it."""
    if not isinstance(block, Mapping) or "type" not in block:
        raise CacheControlError(f"{where}: a content block must be an object with a 'type'")
    ttl = cache_ttl(block)
    if ttl is not None and not _cacheable(block):
        kind = block["type"]
        raise CacheControlError(f"{where}: cache_control cannot be set on an empty text or {kind}")
    return ttl


def _cacheable(block: Mapping[str, Any]) -> bool:
    """May carry a breakpoint: not thinking, not an empty text."""
    kind = block["type"]
    return kind not in ("thinking", "redacted_thinking") and not (
        kind == "text" and not block.get("text")
    )


def _content_blocks(
    block: Mapping[str, Any],
    prefix: str,
    count: TokenCounter,
    where: str,
    deferred: Deferred | None = None,
) -> list[Block]:
    """A content block as the cache sees it: one block, or a tool result with a list of
    content as one block per item, so a breakpoint set on an item ends where the item does
    (its tokens are the growth of the result's count with it, so the parts add up to the
    whole). Breakpoints set deeper (in a document or search result) end with their item."""
    own = _own_mark(block, where)
    kind = block["type"]
    deferred = deferred or {}
    items = inner_blocks(block) if kind == "tool_result" else []
    if len(items) < 2:
        return [
            Block(
                key=_content_key(prefix, block),
                tokens=_content_block_tokens(block, count, deferred),
                cache_ttl=own,
                auto_target=_cacheable(block),
                run=lookback_run(kind),
                nested=tuple(_inner_marks(block, where)),
            )
        ]
    head = {k: v for k, v in block.items() if k not in ("content", "cache_control")}
    parts: list[Block] = []
    counted = 0
    for n, item in enumerate(items):
        marks = tuple(_marks(item, f"{where}.content[{n}]"))  # refuses an item that is no block
        upto = max(counted, _tool_result_tokens(items[: n + 1], count, deferred))
        parts.append(
            Block(
                key=_content_key(f"{prefix}{n}\x00", {"head": head, "item": unmarked(item)}),
                tokens=upto - counted,
                run=lookback_run(kind),
                nested=marks,
            )
        )
        counted = upto
    parts[-1] = replace(parts[-1], cache_ttl=own)
    return parts


def request_from_messages_api(
    body: Mapping[str, Any], count: TokenCounter = estimate_tokens
) -> Request:
    """The cache's view of a Messages API request body, as the SDK sends it.

    Raises CacheControlError for a body the API would refuse for its cache_control (or for a
    shape so broken that no blocks can be read from it).
    """
    tools: list[Block] = []
    deferred: dict[str, Mapping[str, Any]] = {}
    listed = body.get("tools") or []
    if not isinstance(listed, list):
        raise CacheControlError("tools must be a list")
    for i, tool in enumerate(listed):
        if not isinstance(tool, Mapping):
            raise CacheControlError(f"tools[{i}] must be an object")
        if tool.get("defer_loading") is True:
            deferred[str(tool.get("name"))] = tool
            continue
        tools.append(
            Block(
                key=_content_key("tool\x00", tool),
                tokens=count(_definition(tool), "json"),
                cache_ttl=cache_ttl(tool),
            )
        )

    system: list[Block] = []
    raw_system = content_blocks(body.get("system"))
    if isinstance(raw_system, list):
        for i, item in enumerate(raw_system):
            system += _content_blocks(item, "system\x00", count, f"system[{i}]")
    elif raw_system is not None:
        raise CacheControlError("system must be a string or a list of text blocks")

    messages: list[Block] = []
    uses: list[str] = []
    for m, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            raise CacheControlError(f"messages[{m}] must be an object")
        role = str(message.get("role", ""))
        content = content_blocks(message.get("content", ""))
        if not isinstance(content, list):
            raise CacheControlError(f"messages[{m}].content must be a string or a list of blocks")
        for place, j in enumerate(content_order(content, uses)):
            prefix = f"{role}\x00first\x00" if place == 0 else f"{role}\x00"
            where = f"messages[{m}].content[{j}]"
            messages += _content_blocks(content[j], prefix, count, where, deferred)
        uses = [str(block.get("id")) for block in content if _is_tool_use(block)]

    _salt(system or messages, {"speed": body.get("speed")})
    output_config = body.get("output_config")
    _salt(
        messages,
        {
            "tool_choice": body.get("tool_choice"),
            "thinking": body.get("thinking"),
            "effort": output_config.get("effort") if isinstance(output_config, Mapping) else None,
        },
    )
    top = body.get("cache_control")
    auto_ttl = cache_ttl(body) if top is not None else None
    return Request(tools=tools, system=system, messages=messages, auto_cache_ttl=auto_ttl)


def _is_tool_use(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_use"


def _salt(blocks: list[Block], settings: Mapping[str, Any]) -> None:
    """Fold request settings the API renders into the prompt into the first block's key.

    "What invalidates the cache": tool_choice, thinking parameters and effort change the
    message blocks; the speed setting changes system and messages. Unset settings leave keys
    as they are, so plain requests hash the same as before. Images are not among them, though
    the table lists them: the real cache kept every message across a conversation's first
    image (docs/cost-model.md, "Invalidation by settings").
    """
    if not blocks or not any(settings.values()):
        return
    first = blocks[0]
    salted = _text_key(canonical_json({k: v for k, v in settings.items() if v}))
    blocks[0] = replace(first, key=hash((salted, first.key)))
