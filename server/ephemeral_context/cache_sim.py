"""A model of Anthropic's prompt cache and prices, as the documentation describes them.

Replay and the tests use it to say what a request costs without calling the API. Each rule
here is cited in docs/cost-model.md ("Prompt cache model"): the prefix runs tools -> system
-> messages; each `cache_control` breakpoint (at most 4) writes one entry, the hash of the
prefix ending at its block; reads are found at a breakpoint or at most 20 positions back
from it; a prefix shorter than the model's minimum is never cached; entries live 5 minutes
or 1 hour from the start of the last request that wrote or read them; 1-hour breakpoints
must come before 5-minute ones; a top-level `cache_control` puts a breakpoint on the last
cacheable block. Usage comes back in the API's shape, priced with the per-model table.

Speed matters (a long transcript is replayed under several strategies): blocks carry a
precomputed token count and content key, prefix hashes are a chain over those keys, and the
cache is a dict from prefix hash to (expiry, ttl, tokens).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import xxhash

from ephemeral_context.tokens import estimate_tokens

Ttl = Literal["5m", "1h"]

TTL_SECONDS: dict[Ttl, float] = {"5m": 300.0, "1h": 3600.0}
MAX_BREAKPOINTS = 4
LOOKBACK_POSITIONS = 20
"""Positions checked per breakpoint, the breakpoint itself counted as the first."""

CACHE_WRITE_5M = 1.25
CACHE_WRITE_1H = 2.0
CACHE_READ = 0.1

IMAGE_TOKENS = 1600
"""Flat estimate for an image or binary document block (about a 1.1 megapixel image)."""


class CacheControlError(ValueError):
    """A request the API would reject with 400 invalid_request_error for its cache_control."""


class UnknownModelError(KeyError):
    """A model id that names no Claude family we have prices for."""


@dataclass(slots=True, frozen=True)
class Block:
    """One block of the prompt: what identifies its content, what it costs, its breakpoint."""

    key: int
    tokens: int
    cache_ttl: Ttl | None = None
    auto_target: bool = True
    """May carry the automatic breakpoint (thinking and empty text blocks may not)."""


@dataclass(slots=True)
class Request:
    """A Messages API request reduced to what the cache sees."""

    tools: Sequence[Block] = ()
    system: Sequence[Block] = ()
    messages: Sequence[Block] = ()
    auto_cache_ttl: Ttl | None = None
    """Set by a top-level `cache_control` (automatic caching)."""

    def blocks(self) -> list[Block]:
        """The prefix order the cache uses: tools, then system, then messages."""
        return [*self.tools, *self.system, *self.messages]

    @property
    def total_tokens(self) -> int:
        return (
            sum(b.tokens for b in self.tools)
            + sum(b.tokens for b in self.system)
            + sum(b.tokens for b in self.messages)
        )


@dataclass(slots=True, frozen=True)
class Usage:
    """The input side of the API's `usage` object for one call."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def billed_input(self) -> float:
        """Base-input-token equivalents: what this call's input costs relative to plain input."""
        return (
            self.input_tokens
            + CACHE_WRITE_5M * self.ephemeral_5m_input_tokens
            + CACHE_WRITE_1H * self.ephemeral_1h_input_tokens
            + CACHE_READ * self.cache_read_input_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.ephemeral_5m_input_tokens + other.ephemeral_5m_input_tokens,
            self.ephemeral_1h_input_tokens + other.ephemeral_1h_input_tokens,
        )


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """The API's JSON shape of the input side of `usage`."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
        },
    }


def usage_from_dict(raw: Mapping[str, Any] | Any) -> Usage:
    """The input side of the API's JSON `usage` (what `usage_to_dict` writes).

    An SDK `Usage` object (anything with `model_dump`) is read as its JSON. Usage without
    the 5m/1h split (older API versions, older transcripts) counts every cache write as a
    5-minute one. Raises ValueError, TypeError or AttributeError for fields of the wrong shape.
    """
    if not isinstance(raw, Mapping):
        raw = raw.model_dump()
    creation = raw.get("cache_creation") or {}
    written = int(raw.get("cache_creation_input_tokens") or 0)
    five = int(creation.get("ephemeral_5m_input_tokens", written) or 0)
    hour = int(creation.get("ephemeral_1h_input_tokens", 0) or 0)
    if five + hour != written:
        five, hour = written, 0
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        cache_creation_input_tokens=written,
        cache_read_input_tokens=int(raw.get("cache_read_input_tokens") or 0),
        ephemeral_5m_input_tokens=five,
        ephemeral_1h_input_tokens=hour,
    )


# ---------------------------------------------------------------------------------------------
# Prices and minimum cacheable lengths


@dataclass(slots=True, frozen=True)
class ModelInfo:
    """List prices (USD per million tokens) and the minimum cacheable prompt length."""

    family: str
    version: tuple[int, ...]
    name: str
    input_per_mtok: float
    output_per_mtok: float
    min_cacheable_tokens: int

    @property
    def write_5m_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_5M

    @property
    def write_1h_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_1H

    @property
    def read_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_READ


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("fable", (5,), "Claude Fable 5", 10.0, 50.0, 512),
    ModelInfo("mythos", (5,), "Claude Mythos 5", 10.0, 50.0, 512),
    ModelInfo("opus", (5,), "Claude Opus 5", 5.0, 25.0, 512),
    ModelInfo("opus", (4, 8), "Claude Opus 4.8", 5.0, 25.0, 1024),
    ModelInfo("opus", (4, 7), "Claude Opus 4.7", 5.0, 25.0, 2048),
    ModelInfo("opus", (4, 6), "Claude Opus 4.6", 5.0, 25.0, 4096),
    ModelInfo("opus", (4, 5), "Claude Opus 4.5", 5.0, 25.0, 4096),
    ModelInfo("opus", (4, 1), "Claude Opus 4.1", 15.0, 75.0, 1024),
    ModelInfo("opus", (4,), "Claude Opus 4", 15.0, 75.0, 1024),
    ModelInfo("opus", (3,), "Claude Opus 3", 15.0, 75.0, 1024),
    ModelInfo("sonnet", (5,), "Claude Sonnet 5", 2.0, 10.0, 1024),
    ModelInfo("sonnet", (4, 6), "Claude Sonnet 4.6", 3.0, 15.0, 1024),
    ModelInfo("sonnet", (4, 5), "Claude Sonnet 4.5", 3.0, 15.0, 1024),
    ModelInfo("sonnet", (4,), "Claude Sonnet 4", 3.0, 15.0, 1024),
    ModelInfo("sonnet", (3, 7), "Claude Sonnet 3.7", 3.0, 15.0, 1024),
    ModelInfo("sonnet", (3, 5), "Claude Sonnet 3.5", 3.0, 15.0, 1024),
    ModelInfo("haiku", (4, 5), "Claude Haiku 4.5", 1.0, 5.0, 4096),
    ModelInfo("haiku", (3, 5), "Claude Haiku 3.5", 0.80, 4.0, 2048),
    ModelInfo("haiku", (3,), "Claude Haiku 3", 0.25, 1.25, 2048),
)

_BY_VERSION = {(m.family, m.version): m for m in MODELS}
_FAMILIES = "|".join(sorted({m.family for m in MODELS}))
# claude-sonnet-4-5, claude-opus-4, claude-opus-5  and the older claude-3-5-haiku, claude-3-opus
_NEW_STYLE = re.compile(rf"claude-({_FAMILIES})-(\d+)(?:-(\d))?(?![\d])")
_OLD_STYLE = re.compile(rf"claude-(\d+)(?:-(\d))?-({_FAMILIES})")
_DATE_SUFFIX = re.compile(r"(-\d{8}|@\d{8}|-latest|-v\d+(:\d+)?|\[[^\]]*\])+$")


def model_info(model: str) -> ModelInfo:
    """Prices for a model id as the API, Bedrock, Vertex or Claude Code spell it.

    An unlisted version of a known family gets the newest listed member of that family.
    """
    name = _DATE_SUFFIX.sub("", model.strip().lower())
    family: str | None = None
    version: tuple[int, ...] = ()
    if m := _NEW_STYLE.search(name):
        family = m.group(1)
        version = (int(m.group(2)),) + ((int(m.group(3)),) if m.group(3) else ())
    elif m := _OLD_STYLE.search(name):
        family = m.group(3)
        version = (int(m.group(1)),) + ((int(m.group(2)),) if m.group(2) else ())
    else:
        for candidate in {mi.family for mi in MODELS}:
            if candidate in name and "claude" in name:
                family = candidate
    if family is None:
        raise UnknownModelError(f"no prices for model {model!r}")
    found = _BY_VERSION.get((family, version))
    if found is not None:
        return found
    return max((mi for mi in MODELS if mi.family == family), key=lambda mi: mi.version)


def cost_usd(usage: Usage, output_tokens: int, model: str) -> float:
    """Dollars at list price for one call (or a sum of calls) on `model`."""
    info = model_info(model)
    return (
        usage.input_tokens * info.input_per_mtok
        + usage.ephemeral_5m_input_tokens * info.write_5m_per_mtok
        + usage.ephemeral_1h_input_tokens * info.write_1h_per_mtok
        + usage.cache_read_input_tokens * info.read_per_mtok
        + output_tokens * info.output_per_mtok
    ) / 1_000_000


# ---------------------------------------------------------------------------------------------
# The cache


def resolve_breakpoints(blocks: Sequence[Block], auto_ttl: Ttl | None) -> list[tuple[int, Ttl]]:
    """Positions and TTLs of the request's breakpoints, refused as the API refuses them."""
    points: list[tuple[int, Ttl]] = [
        (i, b.cache_ttl) for i, b in enumerate(blocks) if b.cache_ttl is not None
    ]
    if len(points) > MAX_BREAKPOINTS:
        raise CacheControlError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(points)}."
        )
    if auto_ttl is not None:
        target = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].auto_target), None)
        if target is not None:
            explicit = blocks[target].cache_ttl
            if explicit is not None and explicit != auto_ttl:
                raise CacheControlError(
                    f"top-level cache_control ttl={auto_ttl!r} conflicts with ttl={explicit!r} "
                    "already set on the last cacheable block"
                )
            if explicit is None:
                if len(points) == MAX_BREAKPOINTS:
                    raise CacheControlError(
                        f"top-level cache_control needs a breakpoint slot, but {MAX_BREAKPOINTS} "
                        "blocks already carry cache_control"
                    )
                points.append((target, auto_ttl))
                points.sort()
    seen_5m = False
    for _, ttl in points:
        if ttl == "5m":
            seen_5m = True
        elif seen_5m:
            raise CacheControlError(
                "A ttl='1h' cache_control block must not come after a ttl='5m' cache_control "
                "block. Blocks are processed in the order tools, system, messages."
            )
    return points


@dataclass(slots=True)
class PromptCache:
    """One model's prompt cache within one workspace, advanced call by call."""

    model: str
    min_cacheable_tokens: int = 0
    entries: dict[int, tuple[float, Ttl, int]] = field(default_factory=dict)
    prune_at: int = 4096
    """Expired entries are swept once the dict grows past this (then twice the live count)."""

    def __post_init__(self) -> None:
        if not self.min_cacheable_tokens:
            self.min_cacheable_tokens = model_info(self.model).min_cacheable_tokens

    def call(self, request: Request, now: float) -> Usage:
        """Usage of one call starting at `now` (seconds); the cache is updated as the API would."""
        blocks = request.blocks()
        points = resolve_breakpoints(blocks, request.auto_cache_ttl)
        hashes: list[int] = []
        cumulative: list[int] = []
        chain = 0
        total = 0
        for block in blocks:
            chain = hash((chain, block.key))
            total += block.tokens
            hashes.append(chain)
            cumulative.append(total)
        minimum = self.min_cacheable_tokens
        points = [(p, ttl) for p, ttl in points if cumulative[p] >= minimum]
        entries = self.entries

        hit = -1
        found: list[int] = []
        for position, _ in points:
            for q in range(position, max(position - LOOKBACK_POSITIONS, -1), -1):
                entry = entries.get(hashes[q])
                if entry is None:
                    continue
                if entry[0] <= now:
                    del entries[hashes[q]]
                    continue
                found.append(q)
                hit = max(hit, q)
                break
        for q in found:
            _, ttl, tokens = entries[hashes[q]]
            entries[hashes[q]] = (now + TTL_SECONDS[ttl], ttl, tokens)

        read = cumulative[hit] if hit >= 0 else 0
        one_hour_end = read
        last_end = read
        for position, ttl in points:
            if position <= hit:
                # Inside the prefix just read: the entry costs nothing to (re)create.
                if hashes[position] not in entries:
                    entries[hashes[position]] = (now + TTL_SECONDS[ttl], ttl, cumulative[position])
                continue
            entries[hashes[position]] = (now + TTL_SECONDS[ttl], ttl, cumulative[position])
            if ttl == "1h":
                one_hour_end = cumulative[position]
            last_end = cumulative[position]
        if len(entries) > self.prune_at:
            self.entries = {h: e for h, e in entries.items() if e[0] > now}
            self.prune_at = max(self.prune_at, 2 * len(self.entries))
        write_1h = one_hour_end - read
        write_5m = last_end - one_hour_end
        return Usage(
            input_tokens=total - last_end,
            cache_creation_input_tokens=write_1h + write_5m,
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=write_5m,
            ephemeral_1h_input_tokens=write_1h,
        )


# ---------------------------------------------------------------------------------------------
# From a Messages API body

TokenCounter = Callable[[str, str], int]


def _cache_ttl(owner: Mapping[str, Any]) -> Ttl | None:
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


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _text_key(text: str) -> int:
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


def _content_key(prefix: str, block: Mapping[str, Any]) -> int:
    without = {k: v for k, v in block.items() if k != "cache_control"}
    return _text_key(prefix + _canonical(without))


def tool_result_text(content: Any, *, other_items: bool = True) -> tuple[str, int]:
    """Text of a tool_result's content and the flat cost of its images and documents.

    Other items (neither text nor image/document) count as their JSON when `other_items` is
    set, else they are left out (the replay reader counts only what the model reads as text).
    """
    if isinstance(content, str):
        return content, 0
    texts: list[str] = []
    images = 0
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "text":
                texts.append(str(item.get("text", "")))
            elif item.get("type") in ("image", "document"):
                images += IMAGE_TOKENS
            elif other_items:
                texts.append(_canonical(item))
    return "\n".join(texts), images


def _content_block_tokens(block: Mapping[str, Any], count: TokenCounter) -> int:
    kind = block.get("type")
    if kind == "text":
        return count(str(block.get("text", "")), "prose")
    if kind == "tool_use" or kind == "server_tool_use":
        return count(str(block.get("name", "")) + _canonical(block.get("input", {})), "json")
    if kind == "tool_result":
        text, flat = tool_result_text(block.get("content", ""))
        return count(text, "tool_output") + flat
    if kind == "thinking":
        return count(str(block.get("thinking", "")), "thinking")
    if kind == "image":
        return IMAGE_TOKENS
    if kind == "document":
        source = block.get("source", {})
        if isinstance(source, Mapping) and source.get("type") == "text":
            return count(str(source.get("data", "")), "prose")
        return IMAGE_TOKENS
    return count(_canonical(block), "json")


def _content_block(block: Mapping[str, Any], prefix: str, count: TokenCounter, where: str) -> Block:
    if not isinstance(block, Mapping) or "type" not in block:
        raise CacheControlError(f"{where}: a content block must be an object with a 'type'")
    ttl = _cache_ttl(block)
    kind = block["type"]
    not_target = kind in ("thinking", "redacted_thinking") or (
        kind == "text" and not block.get("text")
    )
    if ttl is not None and not_target:
        raise CacheControlError(f"{where}: cache_control cannot be set on an empty text or {kind}")
    return Block(
        key=_content_key(prefix, block),
        tokens=_content_block_tokens(block, count),
        cache_ttl=ttl,
        auto_target=not not_target,
    )


def request_from_messages_api(
    body: Mapping[str, Any], count: TokenCounter = estimate_tokens
) -> Request:
    """The cache's view of a Messages API request body, as the SDK sends it.

    Raises CacheControlError for a body the API would refuse for its cache_control (or for a
    shape so broken that no blocks can be read from it).
    """
    tools: list[Block] = []
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, Mapping):
            raise CacheControlError(f"tools[{i}] must be an object")
        without = {k: v for k, v in tool.items() if k != "cache_control"}
        tools.append(
            Block(
                key=_content_key("tool\x00", tool),
                tokens=count(_canonical(without), "json"),
                cache_ttl=_cache_ttl(tool),
            )
        )

    system: list[Block] = []
    raw_system = body.get("system")
    if isinstance(raw_system, str):
        if raw_system:
            system.append(Block(_text_key("system\x00" + raw_system), count(raw_system, "prose")))
    elif isinstance(raw_system, list):
        for i, item in enumerate(raw_system):
            system.append(_content_block(item, "system\x00", count, f"system[{i}]"))
    elif raw_system is not None:
        raise CacheControlError("system must be a string or a list of text blocks")

    messages: list[Block] = []
    for m, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            raise CacheControlError(f"messages[{m}] must be an object")
        role = str(message.get("role", ""))
        content = message.get("content", "")
        if isinstance(content, str):
            messages.append(
                Block(
                    _text_key(f"{role}\x00first\x00{content}"),
                    count(content, "prose"),
                    auto_target=bool(content),
                )
            )
            continue
        if not isinstance(content, list):
            raise CacheControlError(f"messages[{m}].content must be a string or a list of blocks")
        for j, block in enumerate(content):
            prefix = f"{role}\x00first\x00" if j == 0 else f"{role}\x00"
            messages.append(_content_block(block, prefix, count, f"messages[{m}].content[{j}]"))

    _salt(system or messages, {"speed": body.get("speed")})
    output_config = body.get("output_config")
    _salt(
        messages,
        {
            "tool_choice": body.get("tool_choice"),
            "thinking": body.get("thinking"),
            "effort": output_config.get("effort") if isinstance(output_config, Mapping) else None,
            "images": any(_has_image(m.get("content")) for m in body.get("messages") or []),
        },
    )
    top = body.get("cache_control")
    auto_ttl = _cache_ttl(body) if top is not None else None
    return Request(tools=tools, system=system, messages=messages, auto_cache_ttl=auto_ttl)


def _salt(blocks: list[Block], settings: Mapping[str, Any]) -> None:
    """Fold request settings the API renders into the prompt into the first block's key.

    "What invalidates the cache": tool_choice, images anywhere, thinking parameters and
    effort change the message blocks; the speed setting changes system and messages.
    Unset settings leave keys as they are, so plain requests hash the same as before.
    """
    if not blocks or not any(settings.values()):
        return
    first = blocks[0]
    salted = _text_key(_canonical({k: v for k, v in settings.items() if v}))
    blocks[0] = Block(hash((salted, first.key)), first.tokens, first.cache_ttl, first.auto_target)


def _has_image(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    return any(
        isinstance(item, Mapping)
        and (item.get("type") == "image" or _has_image(item.get("content")))
        for item in content
    )
