"""Anthropic's list prices as dated data: one table read by the cache model, the dollar
figures and the cost gate alike.

The rows live in data/prices.toml (per model: input, output, 5-minute and 1-hour cache
writes, cache reads, minimum cacheable length, context window, output limit, an optional
long-prompt band, the date the row took effect and its source). A call is priced by the
newest row of its model in effect when it started; multipliers (read / input, ...) are per
model, since the 2026 models read the cache at 0.05x or 0.025x instead of 0.1x.

API:
- `lookup(model, at=None) -> PriceRow`: the row in effect; `UnknownModelError` for an id that
  names no listed model (an unlisted version of a known family is unknown too, never priced
  as an older member).
- `priced(model, at=None) -> PriceRow`: the same, but the reference row (`REFERENCE_MODEL`,
  marked `known=False`) for an unknown model: replay warns and goes on.
- `PriceRow`: `.billed_input(usage)` (base-input token equivalents), `.cost_usd(usage,
  output_tokens)`, `.rates_for(prompt_tokens)`, `.served(speed, geo)` (fast mode's and
  US-only inference's prices), `.output_limit(betas)` (the largest `max_tokens` the API
  takes).
- `Speed`, `Geo`: how and where a request was served (`usage.speed`, `usage.inference_geo`).
- `Multipliers`: cache prices relative to base input (what the cost gate weighs).
- `parse_model(model) -> (family, version) | None`; `rows()`: every row.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Any, Protocol

REFERENCE_MODEL = "claude-sonnet-4-6"
"""Whose prices an unknown model's calls are given, so strategies can still be compared."""


class UnknownModelError(KeyError):
    """A model id that names no model in the price table."""


class Speed(StrEnum):
    """How the API served a request (`usage.speed`): fast mode bills a multiple of every
    price, and requests at different speeds do not share cached prefixes."""

    STANDARD = "standard"
    FAST = "fast"


class Geo(StrEnum):
    """Where the API ran a request (`usage.inference_geo`): US-only inference bills more."""

    GLOBAL = "global"
    US = "us"


US_ONLY_MULTIPLIER = 1.1
"""US-only inference (`inference_geo: "us"`, Opus 4.6 and every later model; older ones
refuse the parameter) on every price ("What's new in Claude 4.6": "US-only inference is
priced at 1.1x"); it stacks with fast mode's."""


class InputUsage(Protocol):
    """The input side of one call's usage (cache_sim.Usage has these)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def cache_read_input_tokens(self) -> int: ...
    @property
    def ephemeral_5m_input_tokens(self) -> int: ...
    @property
    def ephemeral_1h_input_tokens(self) -> int: ...
    @property
    def total_input_tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens for one price band."""

    input: float
    output: float
    write_5m: float
    write_1h: float
    read: float


@dataclass(frozen=True, slots=True)
class LongPromptBand:
    """Prices for a request whose prompt exceeds `above_tokens` (every token of it)."""

    above_tokens: int
    rates: Rates


@dataclass(frozen=True, slots=True)
class Multipliers:
    """Cache prices relative to base input: what the cost gate weighs."""

    read: float
    write_5m: float
    write_1h: float

    def write(self, ttl: str) -> float:
        return self.write_1h if ttl == "1h" else self.write_5m


@dataclass(frozen=True, slots=True)
class PriceRow:
    """One model's prices from one date on."""

    id: str
    name: str
    effective: date
    rates: Rates
    min_cacheable_tokens: int
    context_window: int
    source: str
    long_prompt: LongPromptBand | None = None
    known: bool = True
    """False for the reference row standing in for a model the table does not list."""
    fast: float | None = None
    """Fast mode's multiplier on every price of the row (prompt caching's on top); None
    where the table lists no fast price for the model."""
    factor: float = 1.0
    """What this row's prices are multiplied by (`served`): `fast` for a request served
    fast, US_ONLY_MULTIPLIER for one run in the US only, both for both. Billed input stays
    in the standard base price's tokens."""
    max_output: int | None = None
    """The largest `max_tokens` the API takes for the model; None where the table lists none."""
    max_output_betas: tuple[tuple[str, int], ...] = ()
    """(beta, limit): a larger `max_output` the beta header gives (Sonnet 3.7's 128K)."""

    def output_limit(self, betas: Collection[str] = ()) -> int | None:
        """The largest `max_tokens` a request naming `betas` (its `anthropic-beta` header)
        may ask of the model, or None where the table does not know it."""
        raised = [limit for beta, limit in self.max_output_betas if beta in betas]
        return max(raised, default=self.max_output)

    @property
    def version(self) -> tuple[int, ...]:
        """The model's version, (4, 5) for Claude Opus 4.5."""
        parsed = parse_model(self.id)
        assert parsed is not None  # every row's id parses: _table checks it
        return parsed[1]

    @property
    def multipliers(self) -> Multipliers:
        r = self.rates
        return Multipliers(r.read / r.input, r.write_5m / r.input, r.write_1h / r.input)

    def served(self, speed: Speed, geo: Geo = Geo.GLOBAL) -> PriceRow:
        """The row pricing a request served at `speed` in `geo`: fast at the model's fast
        multiplier (at standard prices where none is listed: the reader warns about those
        calls), US-only at 1.1x, the two multiplied."""
        factor = self.fast if speed is Speed.FAST and self.fast is not None else 1.0
        if geo is Geo.US:
            factor *= US_ONLY_MULTIPLIER
        return self if factor == 1.0 else replace(self, factor=factor)

    def rates_for(self, prompt_tokens: int) -> Rates:
        """The band a request of `prompt_tokens` (input + cache reads + writes) is billed in."""
        band = self.long_prompt
        if band is not None and prompt_tokens > band.above_tokens:
            return band.rates
        return self.rates

    def input_usd(self, usage: InputUsage) -> float:
        """Dollars for the input side of one call."""
        r = self.rates_for(usage.total_input_tokens)
        return (
            self.factor
            * (
                usage.input_tokens * r.input
                + usage.ephemeral_5m_input_tokens * r.write_5m
                + usage.ephemeral_1h_input_tokens * r.write_1h
                + usage.cache_read_input_tokens * r.read
            )
            / 1_000_000
        )

    def billed_input(self, usage: InputUsage) -> float:
        """Base-input-token equivalents of one call: its input dollars over the base price."""
        return self.input_usd(usage) * 1_000_000 / self.rates.input

    def cost_usd(self, usage: InputUsage, output_tokens: int) -> float:
        """Dollars at list price for one call (output in the same band as the prompt)."""
        r = self.rates_for(usage.total_input_tokens)
        return self.input_usd(usage) + self.factor * output_tokens * r.output / 1_000_000


_DATE_SUFFIX = re.compile(r"(-\d{8}|@\d{8}|-latest|-v\d+(:\d+)?|\[[^\]]*\])+$")
_FAMILIES = ("fable", "mythos", "opus", "sonnet", "haiku")
# claude-sonnet-4-5, claude-opus-4, claude-opus-5-5, and the older claude-3-5-haiku; a
# gateway may write the version with a dot (anthropic/claude-opus-4.5, claude-3.5-sonnet)
_NEW_STYLE = re.compile(rf"claude-({'|'.join(_FAMILIES)})-(\d+)(?:[-.](\d))?(?![\d])")
_OLD_STYLE = re.compile(rf"claude-(\d+)(?:[-.](\d))?-({'|'.join(_FAMILIES)})")


def parse_model(model: str) -> tuple[str, tuple[int, ...]] | None:
    """(family, version) of a model id as the API, Bedrock, Vertex, Claude Code or a gateway
    spell it. A minor version 0 is the major one (the API's alias claude-opus-4-0 is Opus 4)."""
    name = _DATE_SUFFIX.sub("", model.strip().lower())
    if m := _NEW_STYLE.search(name):
        family, major, minor = m.group(1), m.group(2), m.group(3)
    elif m := _OLD_STYLE.search(name):
        family, major, minor = m.group(3), m.group(1), m.group(2)
    else:
        return None
    return family, (int(major),) + ((int(minor),) if minor and minor != "0" else ())


def _rates(raw: dict[str, Any]) -> Rates:
    return Rates(
        float(raw["input"]),
        float(raw["output"]),
        float(raw["write_5m"]),
        float(raw["write_1h"]),
        float(raw["read"]),
    )


@cache
def _table() -> dict[tuple[str, tuple[int, ...]], tuple[PriceRow, ...]]:
    """The rows of data/prices.toml by (family, version), oldest first."""
    text = resources.files("ephemeral_context").joinpath("data/prices.toml").read_text("utf-8")
    rows: dict[tuple[str, tuple[int, ...]], list[PriceRow]] = {}
    for raw in tomllib.loads(text)["model"]:
        band = raw.get("long_prompt")
        row = PriceRow(
            id=raw["id"],
            name=raw["name"],
            effective=raw["effective"],
            rates=_rates(raw),
            min_cacheable_tokens=int(raw["min_cacheable_tokens"]),
            context_window=int(raw["context_window"]),
            source=raw["source"],
            long_prompt=None
            if band is None
            else LongPromptBand(int(band["above_tokens"]), _rates(band)),
            fast=float(raw["fast"]) if "fast" in raw else None,
            max_output=int(raw["max_output"]) if "max_output" in raw else None,
            max_output_betas=tuple(
                (str(beta), int(limit)) for beta, limit in raw.get("max_output_betas", {}).items()
            ),
        )
        key = parse_model(row.id)
        if key is None:
            raise ValueError(f"prices.toml: {row.id!r} is not a model id parse_model reads")
        rows.setdefault(key, []).append(row)
    return {key: tuple(sorted(found, key=lambda r: r.effective)) for key, found in rows.items()}


def rows() -> list[PriceRow]:
    """Every row of the table (for the docs and the tests)."""
    return [row for found in _table().values() for row in found]


def lookup(model: str, at: float | None = None) -> PriceRow:
    """The row in effect for `model` at `at` (seconds since the epoch; None: the newest).

    A call older than every row of its model takes the oldest row. A `[1m]` suffix (Claude
    Code's 1M-context variant of a model) widens the context window to a million tokens.
    """
    key = parse_model(model)
    found = _table().get(key) if key is not None else None
    if not found:
        raise UnknownModelError(f"no list price for model {model!r}")
    row = found[-1]
    if at is not None:
        day = datetime.fromtimestamp(at, UTC).date()
        row = next((r for r in reversed(found) if r.effective <= day), found[0])
    if "[1m]" in model.lower() and row.context_window < 1_000_000:
        row = replace(row, context_window=1_000_000)
    return row


def priced(model: str, at: float | None = None) -> PriceRow:
    """`lookup`, or for an unknown model the reference row marked `known=False`."""
    try:
        return lookup(model, at)
    except UnknownModelError:
        return replace(lookup(REFERENCE_MODEL, at), known=False)
