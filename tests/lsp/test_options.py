"""Settings parsing without a server: camelCase in, defaults and a reason on bad input."""

from __future__ import annotations

from ephemeral_context.lsp.options import (
    Limits,
    Options,
    merge_settings,
    options_to_json,
    parse_options,
)
from ephemeral_context.lsp.server import engine_config
from ephemeral_context.model import DEFAULT_MODEL
from ephemeral_context.prices import priced


def test_camel_case_sample() -> None:
    options, problem = parse_options(
        {
            "model": "claude-haiku-4-5",
            "apiBaseUrl": "http://127.0.0.1:9",
            "limits": {"contextTokens": 5000, "maxTurns": 3},
            "cacheTtl": "1h",
            "secretPatterns": ["*.secret"],
            "allowSecretFiles": [".env.example"],
            "dataDirectory": "/tmp/ectx",
            "skillsDirectory": "/tmp/skills",
            "usageThrottleMs": 250,
            "stallTimeoutSeconds": 15,
        }
    )
    assert problem is None
    assert options == Options(
        model="claude-haiku-4-5",
        api_base_url="http://127.0.0.1:9",
        limits=Limits(context_tokens=5000, max_turns=3),
        cache_ttl="1h",
        secret_patterns=("*.secret",),
        allow_secret_files=(".env.example",),
        data_directory="/tmp/ectx",
        skills_directory="/tmp/skills",
        usage_throttle_ms=250,
        stall_timeout_seconds=15,
    )


def test_round_trip_of_defaults() -> None:
    """The documented JSON of the defaults parses back to the defaults."""
    assert parse_options(options_to_json(Options())) == (Options(), None)


def test_invalid_values_give_defaults_and_a_reason() -> None:
    cases = {
        "wrong type": {"limits": {"maxTurns": "many"}},
        "bad literal": {"cacheTtl": "forever"},
        "negative": {"limits": {"contextTokens": -1}},
        "string for list": {"secretPatterns": "*.pem"},
        "not an object": ["model"],
        "empty model": {"model": " "},
        "no stall timeout": {"stallTimeoutSeconds": 0},
    }
    for name, raw in cases.items():
        options, problem = parse_options(raw)
        assert options == Options(), name
        assert problem, name


def test_null_and_unknown_keys() -> None:
    assert parse_options(None) == (Options(), None)
    assert parse_options({"someFutureKey": 1}) == (Options(), None)


def test_merge_is_per_key_and_nested() -> None:
    merged = merge_settings(
        {"model": "a", "limits": {"contextTokens": 1, "maxTurns": 2}},
        {"limits": {"maxTurns": 3}},
        None,
    )
    assert merged == {"model": "a", "limits": {"contextTokens": 1, "maxTurns": 3}}


def test_default_model_is_the_agents() -> None:
    from ephemeral_context.model.agent import AgentSettings

    assert Options().model == DEFAULT_MODEL == AgentSettings().model


def test_the_engines_budget_is_the_models_window_where_that_is_smaller() -> None:
    """contextTokens 500K with a 200K model: pins were held to half of 500K, past the window
    the requests go to (the request itself was bounded, the pins and the budget shown not)."""
    window = priced("claude-opus-4-6").context_window
    large = Options(model="claude-opus-4-6", limits=Limits(context_tokens=5 * window))
    assert engine_config(large).context_budget == window
    small = Options(model="claude-opus-4-6", limits=Limits(context_tokens=window // 4))
    assert engine_config(small).context_budget == window // 4
