"""A model of Anthropic's prompt cache and prices, as the documentation describes them.

Replay and the tests use it to say what a request costs without calling the API. Each rule
here is cited in docs/cost-model.md ("Prompt cache model"): the prefix runs tools -> system
-> messages; each `cache_control` breakpoint (at most 4) writes one entry, the hash of the
prefix ending at its block; reads are found at a breakpoint or at most 20 positions back
from it (a run of consecutive tool_use blocks is one position, and so is a run of
tool_result blocks); a prefix shorter than the model's minimum is never cached; entries
live 5 minutes or 1 hour from the start of the last request that wrote or read them; 1-hour
breakpoints must come before 5-minute ones; a top-level `cache_control` puts a breakpoint
on the last cacheable block. Usage comes back in the API's shape; prices.py prices it per model.

Speed matters (a long transcript is replayed under several strategies): blocks carry a
precomputed token count and content key, prefix hashes are a chain over those keys (a
request that starts like the cache's last one, as a conversation that grows at its end does,
hashes only the blocks after the part they share), and the cache is a dict from prefix hash
to (expiry, ttl, tokens).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Literal

from ephemeral_context.prices import lookup
from ephemeral_context.tokens import media_tokens

Ttl = Literal["5m", "1h"]

TTL_SECONDS: dict[Ttl, float] = {"5m": 300.0, "1h": 3600.0}
MAX_BREAKPOINTS = 4
LOOKBACK_POSITIONS = 20
"""Positions checked per breakpoint, the breakpoint itself counted as the first."""
RUN_TYPES = frozenset({"tool_use", "tool_result"})
"""Content block types a run of which counts as one lookback position (parallel tool calls
and their results do not push the last turn's entry out of the window)."""


def lookback_run(block_type: object) -> str:
    """The `Block.run` of a content block of this type: its type where a run of such blocks
    is one lookback position, else "" (a position of its own)."""
    return block_type if isinstance(block_type, str) and block_type in RUN_TYPES else ""


class CacheControlError(ValueError):
    """A request the API would reject with 400 invalid_request_error for its cache_control."""


@dataclass(slots=True, frozen=True)
class Block:
    """One block of the prompt: what identifies its content, what it costs, its breakpoint."""

    key: int
    tokens: int
    cache_ttl: Ttl | None = None
    auto_target: bool = True
    """May carry the automatic breakpoint (thinking and empty text blocks may not)."""
    run: str = ""
    """`lookback_run` of its content type: consecutive blocks with the same non-empty run
    count as one lookback position."""
    nested: tuple[Ttl, ...] = ()
    """Breakpoints set inside the block (on an item of a tool result, a document's content
    source, a search result's text), in order: each is one of the four, before the block's
    own `cache_ttl`, and writes its entry where the block ends."""


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

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.ephemeral_5m_input_tokens + other.ephemeral_5m_input_tokens,
            self.ephemeral_1h_input_tokens + other.ephemeral_1h_input_tokens,
        )


def usage_from_dict(raw: Mapping[str, Any] | Any) -> Usage:
    """The input side of the API's JSON `usage` (what tests/fakes writes with `usage_to_dict`).

    An SDK `Usage` object (anything with `model_dump`) is read as its JSON. Usage without
    the 5m/1h split (older API versions, older transcripts) counts every cache write as a
    5-minute one. Raises ValueError, TypeError or AttributeError for fields of the wrong shape
    or a negative count (output tokens included, which are checked, not returned).
    """
    if not isinstance(raw, Mapping):
        raw = raw.model_dump()
    creation = raw.get("cache_creation") or {}
    written = int(raw.get("cache_creation_input_tokens") or 0)
    five = int(creation.get("ephemeral_5m_input_tokens", written) or 0)
    hour = int(creation.get("ephemeral_1h_input_tokens", 0) or 0)
    if five + hour != written:
        five, hour = written, 0
    usage = Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        cache_creation_input_tokens=written,
        cache_read_input_tokens=int(raw.get("cache_read_input_tokens") or 0),
        ephemeral_5m_input_tokens=five,
        ephemeral_1h_input_tokens=hour,
    )
    output = int(raw.get("output_tokens") or 0)
    if min(usage.input_tokens, written, usage.cache_read_input_tokens, five, hour, output) < 0:
        raise ValueError("a negative token count")
    return usage


# ---------------------------------------------------------------------------------------------
# The cache


def resolve_breakpoints(blocks: Sequence[Block], auto_ttl: Ttl | None) -> list[tuple[int, Ttl]]:
    """Positions and TTLs of the request's breakpoints, refused as the API refuses them."""
    marked = [(i, b) for i, b in enumerate(blocks) if b.cache_ttl is not None or b.nested]
    points: list[tuple[int, Ttl]] = [  # a block's inner breakpoints before its own
        (i, ttl) for i, b in marked for ttl in (*b.nested, b.cache_ttl) if ttl is not None
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
                points.sort(key=lambda point: point[0])
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
    last_keys: list[int] = field(default_factory=list)
    last_hashes: list[int] = field(default_factory=list)
    """The block keys of the last request and the prefix hash ending at each."""

    def __post_init__(self) -> None:
        if not self.min_cacheable_tokens:
            self.min_cacheable_tokens = lookup(self.model).min_cacheable_tokens

    def call(self, request: Request, now: float) -> Usage:
        """Usage of one call starting at `now` (seconds); the cache is updated as the API would."""
        blocks = request.blocks()
        points = resolve_breakpoints(blocks, request.auto_cache_ttl)
        hashes = self._prefix_hashes([block.key for block in blocks])
        cumulative = list(accumulate([block.tokens for block in blocks]))
        total = cumulative[-1] if cumulative else 0
        minimum = self.min_cacheable_tokens
        points = [(p, ttl) for p, ttl in points if cumulative[p] >= minimum]
        entries = self.entries

        positions = _positions(blocks)
        hit = -1
        found: list[int] = []
        for position, _ in points:
            window_start = positions[position] - LOOKBACK_POSITIONS
            for q in range(position, -1, -1):
                if positions[q] <= window_start:
                    break
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
            expiry, ttl, tokens = entries[hashes[q]]
            # A read refreshes, never shortens: a clock that went backwards (a transcript's
            # calls stamped out of order) must not expire what a later stamp wrote.
            entries[hashes[q]] = (max(expiry, now + TTL_SECONDS[ttl]), ttl, tokens)

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

    def _prefix_hashes(self, keys: list[int]) -> list[int]:
        """The hash of the prefix ending at each block: a chain over the keys, taken over
        from the last request as far as its keys are the same."""
        last = self.last_keys
        shared = min(len(keys), len(last))
        if keys[:shared] != last[:shared]:
            shared = next(i for i, (a, b) in enumerate(zip(keys, last, strict=False)) if a != b)
        hashes = self.last_hashes[:shared]
        chain = hashes[-1] if hashes else 0
        for key in keys[shared:]:
            chain = hash((chain, key))
            hashes.append(chain)
        self.last_keys, self.last_hashes = keys, hashes
        return hashes


def _positions(blocks: Sequence[Block]) -> list[int]:
    """The lookback position of each block: one more than the block before, except inside a
    run of consecutive tool_use (or tool_result) blocks, which share one."""
    positions: list[int] = []
    current = -1
    previous = ""
    for block in blocks:
        if not (block.run and block.run == previous):
            current += 1
        previous = block.run
        positions.append(current)
    return positions


# ---------------------------------------------------------------------------------------------
# Tool results, as the API counts them


def canonical_json(value: Any) -> str:
    """One spelling of a JSON value, so equal content gets equal keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rendered_order(result_ids: Sequence[str | None], use_ids: Sequence[str]) -> list[int]:
    """The order in which the API renders a message's blocks, as indices into them: its tool
    results (`result_ids`, None for other blocks) in the order of the tool uses they answer,
    everything else in place. Claude Code sends parallel results as they finish and marks the
    last one sent; what the API renders after it is billed as plain input, as the corpus
    records (docs/cost-model.md, "Transcript to calls")."""
    rank = {use_id: i for i, use_id in enumerate(use_ids)}
    results = {i: rank[r] for i, r in enumerate(result_ids) if r is not None and r in rank}
    order = list(range(len(result_ids)))
    for place, source in zip(results, sorted(results, key=results.__getitem__), strict=True):
        order[place] = source
    return order


def content_blocks(content: Any) -> Any:
    """String content as the one text block it stands for, which the API renders (and caches)
    the same (an empty string is no block); anything else as it is. Claude Code 2.1.212 and
    later send an attachment as a marked text block while it ends the request, then as a
    string."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content


def content_order(content: Sequence[Any], use_ids: Sequence[str]) -> list[int]:
    """`rendered_order` of a message's content as the Messages API takes it (dicts)."""
    return rendered_order(
        [
            str(block.get("tool_use_id"))
            if isinstance(block, Mapping) and block.get("type") == "tool_result"
            else None
            for block in content
        ],
        use_ids,
    )


def inner_blocks(block: Mapping[str, Any]) -> list[Any]:
    """The content blocks a block holds, each of which may carry its own `cache_control`
    (API reference: "Create a cache control breakpoint at this content block"): a tool
    result's or a search result's content, a document's content source."""
    kind = block.get("type")
    items: Any = None
    if kind in ("tool_result", "search_result"):
        items = block.get("content")
    elif kind == "document" and isinstance(source := block.get("source"), Mapping):
        items = source.get("content") if source.get("type") == "content" else None
    return items if isinstance(items, list) else []


def unmarked(block: Mapping[str, Any]) -> dict[str, Any]:
    """A content block without its breakpoints, its inner blocks' included: where a request
    marks its prefix is no part of the prefix."""
    without = {k: v for k, v in block.items() if k != "cache_control"}
    inner = [unmarked(item) if isinstance(item, Mapping) else item for item in inner_blocks(block)]
    if not inner:
        return without
    if block.get("type") == "document":
        return {**without, "source": {**without["source"], "content": inner}}
    return {**without, "content": inner}


def tool_result_text(content: Any, *, other_items: bool = True) -> tuple[str, int]:
    """Text of a tool_result's content and the tokens of its images and documents.

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
                images += media_tokens(item)
            elif other_items:
                texts.append(canonical_json(item))
    return "\n".join(texts), images
