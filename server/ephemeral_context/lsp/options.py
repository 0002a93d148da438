"""Server settings: `initializationOptions` and `workspace/configuration`, as typed dataclasses.

The wire uses camelCase keys (docs/protocol.md, *Configuration*); Python uses snake_case.
One cattrs converter maps between them. Invalid settings never stop the server: the caller
gets the defaults plus a message to show the user (`parse_options`).

API:
- `parse_options(raw)` -> (`Options`, problem or None); `merge_settings(*layers)`;
  `options_to_json(options)`; `Options`, `Limits`, `CONFIGURATION_SECTION`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ephemeral_context.model import DEFAULT_MODEL  # no SDK import: model/__init__ is bare

CONFIGURATION_SECTION = "ephemeralContext"


@dataclass(frozen=True)
class Limits:
    """Sizes that bound what the server sends and keeps."""

    context_tokens: int = 150_000
    max_output_tokens: int = 8192
    max_file_bytes: int = 1_000_000
    max_turns: int = 20

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            if getattr(self, item.name) <= 0:
                raise ValueError(f"limits.{_camel(item.name)} must be positive")


@dataclass(frozen=True)
class Options:
    """Everything a client can configure; each field has the default the server runs with."""

    model: str = DEFAULT_MODEL
    api_base_url: str | None = None
    limits: Limits = field(default_factory=Limits)
    cache_ttl: Literal["auto", "5m", "1h"] = "auto"
    secret_patterns: tuple[str, ...] = ()
    allow_secret_files: tuple[str, ...] = ()
    data_directory: str | None = None
    skills_directory: str | None = None
    usage_throttle_ms: int = 100
    stall_timeout_seconds: int = 60
    """A model call that sends no byte for this long is given up and retried."""

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("model must not be empty")
        if self.usage_throttle_ms < 0:
            raise ValueError("usageThrottleMs must not be negative")
        if self.stall_timeout_seconds <= 0:
            raise ValueError("stallTimeoutSeconds must be positive")


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter()

    def structure_factory(cls: type[Any]) -> Any:
        renames = {f.name: override(rename=_camel(f.name)) for f in dataclasses.fields(cls)}
        return make_dict_structure_fn(cls, converter, **renames)  # type: ignore[arg-type]

    def unstructure_factory(cls: type[Any]) -> Any:
        renames = {f.name: override(rename=_camel(f.name)) for f in dataclasses.fields(cls)}
        return make_dict_unstructure_fn(cls, converter, **renames)  # type: ignore[arg-type]

    def structure_strings(value: object, _: object) -> tuple[str, ...]:
        # A bare string would otherwise become a tuple of its characters.
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError(f"expected a list of strings, got {value!r}")
        if not all(isinstance(item, str) for item in value):
            raise ValueError(f"expected a list of strings, got {value!r}")
        return tuple(value)

    converter.register_structure_hook_func(lambda t: t == tuple[str, ...], structure_strings)
    converter.register_structure_hook_factory(dataclasses.is_dataclass, structure_factory)
    converter.register_unstructure_hook_factory(dataclasses.is_dataclass, unstructure_factory)
    return converter


CONVERTER = _make_converter()


def merge_settings(*layers: object) -> dict[str, Any]:
    """Later layers win, key by key; nested objects (like `limits`) merge too."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if not isinstance(layer, Mapping):
            continue
        for key, value in layer.items():
            old = merged.get(key)
            if isinstance(old, dict) and isinstance(value, Mapping):
                merged[key] = merge_settings(old, value)
            else:
                merged[key] = value
    return merged


def parse_options(raw: object) -> tuple[Options, str | None]:
    """Options from client JSON; on any problem the defaults and a one-line reason."""
    if raw is None:
        return Options(), None
    if not isinstance(raw, Mapping):
        return Options(), f"settings must be an object, got {type(raw).__name__}"
    try:
        return CONVERTER.structure(dict(raw), Options), None
    except Exception as exc:  # cattrs wraps every field error in an exception group
        return Options(), _describe(exc)


def _describe(exc: BaseException) -> str:
    """The first leaf error of a cattrs exception group, readable in a message box."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        notes = getattr(exc, "__notes__", None)
        inner = _describe(exc.exceptions[0])
        return f"{notes[0]}: {inner}" if notes else inner
    notes = getattr(exc, "__notes__", None)
    reason = str(exc) or type(exc).__name__
    return f"{reason} ({notes[0]})" if notes else reason


def options_to_json(options: Options) -> dict[str, Any]:
    """The camelCase JSON form, as documented in docs/protocol.md."""
    result: dict[str, Any] = CONVERTER.unstructure(options)
    return result
