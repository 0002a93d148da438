"""Content blocks and file names as the engine writes them: pure helpers, no state.

The Messages API shapes the engine builds (tool results), what it can quote from a tool_use
input, how an input shrinks to a reference, how a range read is spliced into the file the
model saw, and the `file://` URI <-> label convention of tool paths.

API:
- `content_key(value)`: a stable key for a block's content.
- `as_dict(raw)`: an API dict or SDK block as a plain dict.
- `block_tokens(count, block)`: tokens of an assistant block; `tool_use_payload(block)`: the
  text a tool_use is counted from.
- `result_block(...)`: a tool_result block as the API takes it.
- `uncached(block)`: a client's block without its `cache_control`.
- `reference_id(reference)`: the id in `[[kind:id]]`, `kind:id` or `id`;
  `definition_answer(...)`: one definition of a file's content, as fetched by its id.
- `input_text(tool_input)`: every string a tool_use input carries.
- `readable(text)`: a one-line JSON answer with its strings on lines of their own (for quotes).
- `shrink_input(tool_input, reference)`: an input with its long fields replaced by a reference.
- `stand_in(count, block, text)`: what is sent instead of an evicted or referenced
  block, and its tokens.
- `splice(text, start_line, part)`: a range read spliced into the file the model saw.
- `text_hash(text)`: the mirror's content hash of a text.
- `clip_tokens(text, budget)`: text cut to about `budget` tokens.
- `uri_of(path)`, `label_of(uri)`: a tool's path as a URI, and back; `tool_file(tool_input)`:
  the file a tool_use names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import xxhash

from ephemeral_context.cache_sim import unmarked
from ephemeral_context.claude_tools import tool_file_path
from ephemeral_context.documents import (
    content_hash,
    holds_raw_bytes,
    shown_name,
    split_lines,
    utf8,
)

SHRINK_KEEP_CHARS = 120
"""Input fields up to this long (paths, short commands) stay; longer ones become the reference."""


def content_key(value: Any) -> int:
    """A stable key for a block's content (equal keys mean byte-equal blocks)."""
    return xxhash.xxh3_64_intdigest(
        utf8(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    )


def as_dict(raw: Mapping[str, Any] | Any) -> dict[str, Any]:
    """An API dict or SDK block (anything with `model_dump`) as a plain dict."""
    if isinstance(raw, Mapping):
        return dict(raw)
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        result = dump(exclude_none=True)
        if isinstance(result, dict):
            return result
    raise TypeError(f"not a content block: {raw!r}")


def block_tokens(count: Callable[[str, str], int], block: Mapping[str, Any]) -> int:
    """Tokens of an assistant block: prose for text, JSON for a tool_use."""
    if block.get("type") == "text":
        return count(str(block.get("text", "")), "prose")
    return count(tool_use_payload(block), "json")


def tool_use_payload(block: Mapping[str, Any]) -> str:
    """A tool_use block as the text its tokens are counted from: its name and input."""
    return json.dumps({"name": block.get("name"), "input": block.get("input")})


def text_hash(text: str) -> str:
    """The mirror's content hash of a text (documents.content_hash of its UTF-8 bytes)."""
    return content_hash(utf8(text))


def splice(text: str, start_line: int, part: str) -> str:
    """`text` with the lines a range read showed replaced by what it shows now."""
    lines = split_lines(text)
    new = split_lines(part)
    if new and not new[-1].endswith(("\n", "\r")) and start_line - 1 + len(new) < len(lines):
        new[-1] += "\n"
    return "".join(lines[: start_line - 1] + new + lines[start_line - 1 + len(new) :])


def result_block(
    tool_use_id: str, content: str | list[dict[str, Any]], is_error: bool
) -> dict[str, Any]:
    """A tool_result block as the API takes it: its text, or its list of content blocks."""
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
    }
    if is_error:
        block["is_error"] = True
    return block


def uncached(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block as a client sent it, without its `cache_control` nor any set inside it (a
    document's content source, a search result's text): the engine places the breakpoints,
    and one left inside would make a fifth."""
    return unmarked(block)


def reference_id(reference: str) -> str:
    """The id a model names content by: `[[kind:id]]` (a reference as shown), `kind:id` or
    the bare id."""
    return reference.strip().removeprefix("[[").removesuffix("]]").rsplit(":", 1)[-1]


def definition_answer(item_id: str, symbol: str, source: str) -> str:
    """What fetching one definition of a file's content by id brings back (the gateway's
    answer and the replay's round trip alike)."""
    return f"[{item_id}: {symbol}]\n{source}"


def input_strings(tool_input: Mapping[str, Any] | list[Any]) -> list[str]:
    """Every string a tool_use input (or any JSON value) carries, in order (what the model
    can quote from it)."""
    parts: list[str] = []
    pending: list[Any] = [tool_input]  # a stack, not recursion: JSON nests as deep as it likes
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            pending.extend(reversed(value))
    return parts


def input_text(tool_input: Mapping[str, Any]) -> str:
    """Every string a tool_use input carries, one after the other (the block's text)."""
    return "\n".join(input_strings(tool_input))


def readable(text: str) -> str:
    """`text` as the model reads it, for finding quotes: when it is one line of JSON (an MCP
    tool's structured answer: Serena's `find_symbol` bodies, `search_for_pattern` matches),
    its strings follow it, each on lines of its own. Escaped and quoted on one line, they
    matched no quote."""
    strings = _json_line_strings(text)
    return "\n".join([text, *strings]) if strings else text


def _json_line_strings(text: str) -> list[str]:
    """The strings of `text` when it is one line of JSON, none otherwise; a string that is
    itself one line of JSON gives its own (Serena wraps its JSON answer in a string)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")) or "\n" in stripped:
        return []
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return []
    if not isinstance(value, (Mapping, list)):
        return []
    return [
        part for string in input_strings(value) for part in _json_line_strings(string) or [string]
    ]


def shrink_input(tool_input: Mapping[str, Any], reference: str) -> dict[str, Any]:
    """A tool_use input with its long fields replaced by one reference to the stored input."""
    out: dict[str, Any] = {}
    replaced = False
    for key, value in tool_input.items():
        size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
        if size <= SHRINK_KEEP_CHARS:
            out[key] = value
        elif not replaced:
            out[key] = reference
            replaced = True
    return out


def stand_in(
    count: Callable[[str, str], int], block: Mapping[str, Any], text: str
) -> tuple[dict[str, Any], int]:
    """What is sent instead of `block` once `text` (a placeholder or reference) replaces its
    content, and its tokens: a tool_result keeps its id (`text` counts as tool output), a
    tool_use its short input fields (the API needs the pair; counted as JSON), anything else
    becomes a text block (`text` counts as prose)."""
    if block.get("type") == "tool_result":
        return {**block, "content": text}, count(text, "tool_output")
    if block.get("type") == "tool_use":
        kept = {**block, "input": shrink_input(block.get("input") or {}, text)}
        return kept, block_tokens(count, kept)
    return {"type": "text", "text": text}, count(text, "prose")


def uri_of(path: str) -> str:
    """A tool's path as a URI (`file://` unless it already names a scheme)."""
    return path if "://" in path else f"file://{path}"


def tool_file(tool_input: Mapping[str, Any]) -> str | None:
    """The file a tool_use input names, read as the replay's reader reads it (claude_tools.py:
    a built-in file tool's or its bridge's path), or our own tools' `path`. A Serena
    `relative_path` is none: it is relative to a project the engine is not told (the tool's
    result names the file resolved: replay/feed.py)."""
    named = {k: v for k, v in tool_input.items() if k != "relative_path"}
    path = tool_file_path(named) or tool_input.get("path")
    return path if isinstance(path, str) and path else None


def label_of(uri: str) -> str:
    """A URI as the model is shown it: the path of a `file://` URI, as it is unless a byte
    of it is not UTF-8 (then escaped: `shown_name`). The client's own tools take a label as
    it is, so a Windows `build\\x86` must not become `build\\x5cx86`."""
    path = uri.removeprefix("file://")
    return shown_name(path) if holds_raw_bytes(path) else path


def clip_tokens(text: str, budget: int) -> str:
    """`text` cut to about `budget` tokens (three characters each), with an ellipsis."""
    limit = max(16, budget * 3)
    return text if len(text) <= limit else text[: limit - 1] + "…"
