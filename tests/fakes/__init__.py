"""Stand-ins for services that cannot exist in tests: the Anthropic Messages API (no key here)."""

from tests.fakes.messages_api import (
    ApiError,
    FakeMessagesAPI,
    FakeProcess,
    RecordedRequest,
    Reply,
    ToolCall,
    fake_api_subprocess,
    invalid_api_key,
    overloaded,
    rate_limited,
    refused,
    server_error,
    unknown_model,
)

__all__ = [
    "ApiError",
    "FakeMessagesAPI",
    "FakeProcess",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "fake_api_subprocess",
    "invalid_api_key",
    "overloaded",
    "rate_limited",
    "refused",
    "server_error",
    "unknown_model",
]
