"""How fast the cache model and the local Messages API are.

cache_sim runs once per modelled call for every strategy of a replay, so its cost per call
bounds how fast `ectx replay` can be. The session here is synthetic but shaped like the
largest real transcript (80 calls growing to 580 blocks and about 170k tokens, breakpoints
on the system prompt and the last block, as Claude Code places them), replayed under six
independent caches as a six-strategy replay would. The fake Messages API figures say what
one model call costs a test.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic
from anthropic.types import MessageParam
from ephemeral_context.cache_sim import Block, PromptCache, Request
from ephemeral_context.request_view import request_from_messages_api

from tests.fakes import FakeMessagesAPI

CALLS = 80
BLOCKS_PER_CALL = 7
STRATEGIES = 6
REPEATS = 5


def session() -> list[Request]:
    tools = [Block(key=1_000_000 + i, tokens=900) for i in range(18)]
    system = [Block(key=2_000_000, tokens=3000), Block(key=2_000_001, tokens=9000, cache_ttl="5m")]
    history: list[Block] = []
    requests = []
    for call in range(CALLS):
        history = [Block(b.key, b.tokens) for b in history]  # the old last breakpoint moves on
        for j in range(BLOCKS_PER_CALL):
            history.append(Block(key=call * 100 + j, tokens=60 + (call * 37 + j * 91) % 400))
        history[-1] = Block(history[-1].key, history[-1].tokens, "5m")
        requests.append(Request(tools=tools, system=system, messages=list(history)))
    return requests


def replay_seconds(requests: list[Request]) -> float:
    start = time.perf_counter()
    for _ in range(STRATEGIES):
        cache = PromptCache("claude-opus-4-5-20251101")
        for i, request in enumerate(requests):
            cache.call(request, now=i * 20.0)
    return time.perf_counter() - start


def body_seconds(repeats: int) -> tuple[float, int]:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "system": [
            {"type": "text", "text": "rules " * 4000, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": "x" * 2000}],
            }
            for i in range(300)
        ],
    }
    size = len(str(body))
    start = time.perf_counter()
    for _ in range(repeats):
        request_from_messages_api(body)
    return (time.perf_counter() - start) / repeats, size


def fake_api_ms(calls: int) -> tuple[float, float]:
    with FakeMessagesAPI(["a short answer of a few words"] * (2 * calls)) as api:
        client = anthropic.Anthropic(api_key="bench", base_url=api.base_url, max_retries=0)
        model = "claude-sonnet-4-6"
        messages: list[MessageParam] = [{"role": "user", "content": "hi"}]
        plain, streamed = [], []
        for _ in range(calls):
            start = time.perf_counter()
            client.messages.create(model=model, max_tokens=50, messages=messages)
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            with client.messages.stream(model=model, max_tokens=50, messages=messages) as stream:
                stream.get_final_message()
            streamed.append(time.perf_counter() - start)
        client.close()
    return statistics.median(plain) * 1000, statistics.median(streamed) * 1000


def run() -> str:
    requests = session()
    blocks = sum(len(r.blocks()) for r in requests)
    peak = max(r.total_tokens for r in requests)
    replay = statistics.median(replay_seconds(requests) for _ in range(REPEATS))
    per_call_us = replay / (CALLS * STRATEGIES) * 1e6
    parse, size = statistics.median(body_seconds(3)[0] for _ in range(REPEATS)), body_seconds(1)[1]
    plain_ms, stream_ms = fake_api_ms(20)
    rows = [
        (f"`PromptCache.call`, whole session x {STRATEGIES}", f"{replay * 1000:.1f} ms"),
        (f"per call (about {blocks // CALLS} blocks)", f"{per_call_us:.0f} µs"),
        (f"`request_from_messages_api`, {size / 1e6:.1f} MB body", f"{parse * 1000:.1f} ms"),
        ("fake API, SDK `messages.create` round trip (median of 20)", f"{plain_ms:.1f} ms"),
        ("fake API, SDK `messages.stream` round trip (median of 20)", f"{stream_ms:.1f} ms"),
    ]
    header = (
        f"Synthetic session: {CALLS} calls, {blocks} blocks in all, peak {peak:,} tokens; "
        f"{STRATEGIES} caches (one per strategy); median of {REPEATS} runs."
    )
    table = ["| what | figure |", "|---|---|", *(f"| {what} | {figure} |" for what, figure in rows)]
    return "\n".join([header, "", *table])


if __name__ == "__main__":
    print(run())
