"""Real transcripts damaged the ways held-out ones arrive: shapes no fixture has on its own.

Each `Damage` changes the lines of a real transcript in one span (`at` and `span` are
fractions of its lines), as exports, merges, gateways and other Claude Code versions do:
no usage, a usage that lost its cache counts, a count no request can have, a clock that goes
backwards, lines swapped or written twice, a model no price table knows, record types and
tool names the reader has not seen, CRLF line ends and a last line cut short. And the same
session from a user who pauses longer or shorter: every idle gap scaled.

API:
- `damages()`: a hypothesis strategy of `Damage`; `damaged(lines, damages)` -> the file's bytes.
- `lost_cache_count(data)`: whether a usage in the file's bytes lacks a cache count.
- `stretched(lines, factor)`: the lines with every time since the first one `factor` times as
  long (TTL bets meet gaps the recorded session never had); `stretched_copy(path, factor,
  folder)` -> such a copy of a transcript file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ephemeral_context.replay.reader import parse_timestamp
from hypothesis import strategies as st

KINDS = (
    "lose_usage",
    "lose_cache_read",
    "lose_cache_write",
    "count_past_window",
    "clock_back",
    "swap",
    "duplicate",
    "unknown_model",
    "unknown_record",
    "unknown_tool",
    "crlf",
    "truncate",
)


UNKNOWN_MODEL = "glm-5"
"""No price table's, and no Claude model: served by a gateway, billed by whoever served it."""


@dataclass(frozen=True)
class Damage:
    kind: str
    at: float = 0.5
    span: float = 0.2


def damages() -> st.SearchStrategy[Damage]:
    fractions = st.floats(0.0, 1.0)
    return st.builds(Damage, st.sampled_from(KINDS), fractions, st.floats(0.0, 0.5))


def _usage(record: Any) -> dict[str, Any] | None:
    message = record.get("message") if isinstance(record, dict) else None
    usage = message.get("usage") if isinstance(message, dict) else None
    return usage if isinstance(usage, dict) else None


def _damage(records: list[Any], damage: Damage) -> list[Any]:
    n = len(records)
    start = min(n - 1, int(damage.at * n))
    stop = min(n, start + max(1, int(damage.span * n)))
    kind, span = damage.kind, range(start, stop)
    if kind == "swap":
        for i in span[:-1:2]:
            records[i], records[i + 1] = records[i + 1], records[i]
    elif kind == "duplicate":
        return records[:stop] + records[start:stop] + records[stop:]
    elif kind == "clock_back":
        times = [records[i].get("timestamp") for i in span]
        for i, time in zip(span, reversed(times), strict=True):
            records[i]["timestamp"] = time
    elif kind == "unknown_record":
        extra = {"type": "brand-new-record", "uuid": f"new-{start}", "payload": {"x": [1]}}
        return [*records[:start], extra, *records[start:]]
    responses = [i for i in range(start, n) if _usage(records[i]) is not None]
    if kind == "count_past_window":
        targets = responses[:1]  # the first response from `at` on
    elif kind.startswith("lose_"):
        targets = [i for i in responses if i < stop][::2]  # every other one in the span
    else:
        targets = list(span)
    for i in targets:
        _damage_record(records[i], kind)
    return records


def _damage_record(record: dict[str, Any], kind: str) -> None:
    usage = _usage(record)
    message = record.get("message")
    if kind == "lose_usage" and isinstance(message, dict):
        message.pop("usage", None)
    elif kind == "lose_cache_read" and usage is not None:
        usage.pop("cache_read_input_tokens", None)
    elif kind == "lose_cache_write" and usage is not None:
        usage.pop("cache_creation_input_tokens", None)
        usage.pop("cache_creation", None)
    elif kind == "count_past_window" and usage is not None:
        usage["input_tokens"] = 1e12
    elif kind == "unknown_model" and isinstance(message, dict) and "model" in message:
        message["model"] = UNKNOWN_MODEL
    elif kind == "unknown_tool" and isinstance(message, dict):
        for block in message.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                block["name"] = "mcp__held_out__tool"


def damaged(lines: Sequence[str], found: Sequence[Damage]) -> bytes:
    """The transcript's lines with every damage applied in turn, as the file's bytes."""
    records: list[Any] = [json.loads(line) for line in lines]
    for damage in found:
        if damage.kind not in ("crlf", "truncate"):
            records = _damage(records, damage)
    kinds = {damage.kind for damage in found}
    end = "\r\n" if "crlf" in kinds else "\n"
    data = "".join(json.dumps(r, ensure_ascii=False) + end for r in records).encode()
    if "truncate" in kinds:
        last = data.rstrip(b"\r\n").rfind(b"\n") + 1
        data = data[: last + (len(data) - last) // 2]
    return data


CACHE_COUNTS = ("cache_read_input_tokens", "cache_creation_input_tokens")


def lost_cache_count(data: bytes) -> bool:
    """Whether some response lost a cache count in every copy of its usage (Claude Code
    repeats a response's usage on each of its lines; a line cut short aside)."""
    whole: dict[object, bool] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        usage = _usage(record)
        if usage and "input_tokens" in usage:
            key = record["message"].get("id") or id(usage)
            complete = all(k in usage for k in CACHE_COUNTS)
            whole[key] = whole.get(key, False) or complete
    return not all(whole.values())


def stretched(lines: Sequence[str], factor: float) -> list[str]:
    """Every record's `timestamp` moved so that the time since the first one is `factor`
    times as long: the same session, each idle gap `factor` times as long. Lines that are not
    JSON records with a readable timestamp stay as they are."""
    records: list[Any] = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            records.append(line)
    times = [
        parse_timestamp(r.get("timestamp"), math.nan) if isinstance(r, dict) else math.nan
        for r in records
    ]
    first = min((t for t in times if not math.isnan(t)), default=math.nan)
    out: list[str] = []
    for line, record, time in zip(lines, records, times, strict=True):
        if math.isnan(first) or math.isnan(time):
            out.append(line)
            continue
        moved = datetime.fromtimestamp(first + (time - first) * factor, UTC)
        record["timestamp"] = moved.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out.append(json.dumps(record, ensure_ascii=False))
    return out


def stretched_copy(path: Path, factor: float, folder: Path) -> Path:
    """A copy of the transcript at `path` in `folder`, its gaps `factor` times as long."""
    lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    copy = folder / path.name
    text = "\n".join(stretched(lines, factor)) + "\n"
    copy.write_text(text, encoding="utf-8", errors="surrogateescape")
    return copy
