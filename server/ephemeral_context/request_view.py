"""The cache's view of a Messages API request body, parsed from the body itself.

Two users get request bodies they did not build: tests/fakes (which bills each request it
receives, and the tests that check the engine's requests against the API's rules) and
`ectx gateway` (which prices what the client's own requests would have cost). Each body
becomes a `cache_sim.Request`: one block per tool, system block and message content block,
each with a content key, an estimated token count and its `cache_control` TTL, refused with
`CacheControlError` where the API refuses the body. A tool sent with `defer_loading` is no
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
    lookback_run,
    tool_result_text,
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
    without = {k: v for k, v in block.items() if k != "cache_control"}
    return _text_key(prefix + canonical_json(without))


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


def _content_block(
    block: Mapping[str, Any],
    prefix: str,
    count: TokenCounter,
    where: str,
    deferred: Deferred | None = None,
) -> Block:
    if not isinstance(block, Mapping) or "type" not in block:
        raise CacheControlError(f"{where}: a content block must be an object with a 'type'")
    ttl = cache_ttl(block)
    kind = block["type"]
    not_target = kind in ("thinking", "redacted_thinking") or (
        kind == "text" and not block.get("text")
    )
    if ttl is not None and not_target:
        raise CacheControlError(f"{where}: cache_control cannot be set on an empty text or {kind}")
    return Block(
        key=_content_key(prefix, block),
        tokens=_content_block_tokens(block, count, deferred or {}),
        cache_ttl=ttl,
        auto_target=not not_target,
        run=lookback_run(kind),
    )


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
            system.append(_content_block(item, "system\x00", count, f"system[{i}]"))
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
            messages.append(_content_block(content[j], prefix, count, where, deferred))
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
