"""The body the gateway sends upstream: the client's request with the engine's messages.

Pure functions. Everything the engine does not own passes through as the client sent it:
model, max_tokens, thinking, metadata, stream, tool_choice, context_management and any
field unknown here; the client's system blocks and tools (their `cache_control` included),
with the file segment after the system blocks and the engine's hydration tool, when the
client has no Read to fetch with (context/fetching.py), after the tools. The messages are
the engine's, role "system" messages given their role back (and their own fields, such as
a per-turn `output_config`); a last message that is only such a control goes after them.

Breakpoints: the client's own (tools, system) stay; the engine's (end of segment, a
mid-thread anchor, the last block) fill what is left of the API's four, the last block
first, then the segment, then the anchor; none of them is 1 hour after a 5-minute one.

API:
- `upstream_body(...)`: the client's request with the engine's messages, segment and tools.
- `system_text(system)`: the client's system prompt as one text.
- `message_fields(message)`: what a message holds besides its role and content.
- `breakpoints(body)`: how many cache breakpoints a request marks.
- `marked_message_blocks(messages)`: the message blocks with a `cache_control`.
- `client_ttl(client)`, `head_ttl(client)`: the TTL of the client's last breakpoint, and
  the one its kept tools and system breakpoints give the head.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ephemeral_context.cache_sim import MAX_BREAKPOINTS, Ttl, inner_blocks


def system_blocks(system: Any) -> list[dict[str, Any]]:
    """The client's system prompt as blocks (a string becomes one text block)."""
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    if isinstance(system, list):
        return [dict(b) for b in system if isinstance(b, Mapping)]
    return []


def system_text(system: Any) -> str:
    """The client's system prompt as one text (what the engine sizes and keys it by)."""
    return "\n\n".join(str(b.get("text", "")) for b in system_blocks(system))


def upstream_body(
    client: Mapping[str, Any],
    built: Mapping[str, Any],
    system_roles: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    """The client's request with the engine's messages, segment and tools (see the module)."""
    body = dict(client)
    own_system = system_blocks(client.get("system"))
    engine_system = list(built.get("system") or [])
    segment = engine_system[1:] if own_system else engine_system
    if segment:
        body["system"] = own_system + segment
    body["tools"] = list(built.get("tools") or [])
    messages = restore_system_roles(built["messages"], system_roles)
    body["messages"] = messages + trailing_controls(client.get("messages") or [])
    fit_breakpoints(body, len(own_system))
    return body


def message_fields(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message's fields besides its role and content (a system message's `output_config`)."""
    return {k: v for k, v in message.items() if k not in ("role", "content")}


def trailing_controls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The client's last messages that are role "system" controls with no content (2.1.332's
    `output_config` for the turn, after a compaction): no block for the engine to hold, they
    go after its messages as sent. One left behind in the history is not sent again."""
    controls: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "system" or message.get("content"):
            break
        controls.insert(0, dict(message))
    return controls


def restore_system_roles(
    messages: Sequence[Mapping[str, Any]], texts: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The engine's messages with the blocks of role "system" messages split out again,
    each with the fields its message had (`texts`: by text, one per time it was sent)."""
    if not texts:
        return [dict(m) for m in messages]
    seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            out.append(dict(message))
            continue
        run: list[dict[str, Any]] = []
        for block in content:
            if block.get("type") == "text" and block.get("text") in texts:
                if run:
                    out.append({"role": "user", "content": run})
                    run = []
                control = block.get("cache_control")
                text = block["text"]
                content = [dict(block)] if control else text
                sent = texts[text]
                fields = sent[min(seen.get(text, 0), len(sent) - 1)]
                seen[text] = seen.get(text, 0) + 1
                out.append({"role": "system", "content": content, **fields})
            else:
                run.append(block)
        if run:
            out.append({"role": "user", "content": run})
    return out


def _marked(blocks: Sequence[Any]) -> Iterator[dict[str, Any]]:
    for block in blocks:
        if isinstance(block, dict) and "cache_control" in block:
            yield block


def marked_message_blocks(messages: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            yield from _marked(content)


def breakpoints(body: Mapping[str, Any]) -> int:
    """The cache breakpoints a request marks: its tools, system and message blocks, and
    the blocks those hold (a tool result's items, a document's content source)."""
    system = body.get("system")
    marked = [
        *_marked(body.get("tools") or []),
        *_marked(system if isinstance(system, list) else []),
    ]
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    blocks = [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]
    return len(marked) + sum(_marks_in(block) for block in blocks)


def _marks_in(block: Any) -> int:
    """The breakpoints a content block sets, itself and the blocks it holds."""
    if not isinstance(block, Mapping):
        return 0
    return ("cache_control" in block) + sum(_marks_in(item) for item in inner_blocks(block))


def _is_1h(block: Mapping[str, Any]) -> bool:
    control = block.get("cache_control")
    return isinstance(control, Mapping) and control.get("ttl") == "1h"


def client_ttl(client: Mapping[str, Any]) -> Ttl | None:
    """The TTL of the client's own last breakpoint (messages, then system, then tools):
    what its recorded-style twin asks for; None when it marks nothing."""
    system = client.get("system")
    for blocks in (
        list(marked_message_blocks(client.get("messages") or [])),
        list(_marked(system if isinstance(system, list) else [])),
        list(_marked(client.get("tools") or [])),
    ):
        if blocks:
            return "1h" if _is_1h(blocks[-1]) else "5m"
    return None


def head_ttl(client: Mapping[str, Any]) -> Ttl | None:
    """The TTL the client's own breakpoints in its tools and system prompt give the head,
    which `fit_breakpoints` keeps: 5 minutes if any of them asks for it (nothing after it
    may then take an hour), else an hour; None when it marks neither."""
    system = client.get("system")
    own = [*_marked(client.get("tools") or [])]
    own += _marked(system if isinstance(system, list) else [])
    if not own:
        return None
    return "1h" if all(_is_1h(b) for b in own) else "5m"


def fit_breakpoints(body: dict[str, Any], own_system: int) -> None:
    """Keep the client's breakpoints, fit the engine's into the rest (in place)."""
    system = body.get("system")
    system_list = system if isinstance(system, list) else []
    own = [*_marked(body.get("tools") or []), *_marked(system_list[:own_system])]
    segment = list(_marked(system_list[own_system:]))
    thread = list(marked_message_blocks(body["messages"]))
    last = thread[-1:]
    anchors = thread[:-1]
    budget = max(0, MAX_BREAKPOINTS - len(own))
    keep: list[dict[str, Any]] = []
    for group in (last, segment, anchors):
        for block in group:
            if len(keep) < budget:
                keep.append(block)
    kept = {id(b) for b in keep}
    seen_5m = any(not _is_1h(b) for b in own)
    for block in [*segment, *thread]:  # prefix order: segment, then messages
        if id(block) not in kept:
            del block["cache_control"]
        elif _is_1h(block) and seen_5m:
            block["cache_control"] = {"type": "ephemeral"}
        elif not _is_1h(block):
            seen_5m = True
