"""The upstream body: the client's breakpoints kept, the engine's fitted, system roles back."""

from __future__ import annotations

from typing import Any

from ephemeral_context.cache_sim import resolve_breakpoints
from ephemeral_context.gateway.outbound import client_ttl, head_ttl, upstream_body
from ephemeral_context.request_view import request_from_messages_api

FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def built(segment_control: dict[str, str], thread_control: dict[str, str]) -> dict[str, Any]:
    """An engine request: its system text, a segment block, an anchor and a last breakpoint."""
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8192,
        "system": [
            {"type": "text", "text": "S", "cache_control": FIVE},
            {"type": "text", "text": "segment", "cache_control": segment_control},
        ],
        "tools": [{"name": "Read"}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "a", "cache_control": thread_control},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "agents: x"},
                {"type": "text", "text": "c", "cache_control": thread_control},
            ]},
        ],
    }  # fmt: skip


def client_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64000,
        "thinking": {"type": "adaptive"},
        "system": [
            {"type": "text", "text": "billing"},
            {"type": "text", "text": "one", "cache_control": FIVE},
            {"type": "text", "text": "two", "cache_control": FIVE},
        ],
        "tools": [{"name": "Read"}],
        "messages": [],
    }


def test_claude_codes_two_system_breakpoints_leave_two_for_the_engine() -> None:
    body = upstream_body(client_body(), built(HOUR, HOUR), system_roles={})
    assert body["system"][:3] == client_body()["system"]
    assert body["system"][3]["text"] == "segment"
    assert body["thinking"] == {"type": "adaptive"} and body["max_tokens"] == 64000
    request = request_from_messages_api(body)
    points = resolve_breakpoints(request.blocks(), None)
    assert len(points) == 4  # the client's two, the last block, the segment (anchor dropped)
    assert all(ttl == "5m" for _, ttl in points)  # never 1h after the client's 5m
    assert "cache_control" not in body["messages"][0]["content"][0]
    assert body["messages"][-1]["content"][-1]["cache_control"] == FIVE


def test_role_system_messages_get_their_role_back() -> None:
    body = upstream_body(client_body(), built(FIVE, FIVE), system_roles={"agents: x": [{}]})
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "system", "user"]
    assert body["messages"][2]["content"] == "agents: x"


def test_the_clients_ttl_is_that_of_its_last_breakpoint() -> None:
    """What the engine's recorded-style twin asks for: the client's own last breakpoint."""
    body = client_body()
    assert client_ttl(body) == "5m"  # no message marked: the system's last breakpoint
    body["system"][-1]["cache_control"] = HOUR
    assert client_ttl(body) == "1h"
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    body["messages"][0]["content"][0]["cache_control"] = FIVE
    assert client_ttl(body) == "5m"
    assert client_ttl({"messages": [{"role": "user", "content": "hi"}]}) is None


def test_the_heads_ttl_is_what_the_clients_own_tools_and_system_breakpoints_give() -> None:
    """`head_ttl`: the TTL the client's kept breakpoints give the head (fit_breakpoints
    keeps them as marked), which the engine lays its system breakpoint out with."""
    hour, five = HOUR, FIVE
    system: list[dict[str, Any]] = [
        {"type": "text", "text": "x"},
        {"type": "text", "text": "y", "cache_control": hour},
    ]
    assert head_ttl({"system": system, "messages": []}) == "1h"
    assert head_ttl({"system": "plain", "messages": []}) is None
    system[0]["cache_control"] = five
    assert head_ttl({"system": system, "messages": []}) == "5m"
    assert head_ttl({"tools": [{"name": "t", "cache_control": five}], "messages": []}) == "5m"
