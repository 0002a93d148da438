"""Which conversation a request continues, and what of it the engine has not seen yet.

Claude Code re-sends the whole conversation on every call. The gateway keeps, per engine
conversation, a key for each client message it has fed; a request continues the thread of
its Claude Code session (named in `metadata.user_id` or the `x-claude-code-session-id`
header) whose keys are a prefix of the request's (the longest prefix wins), never another
session's. A request that extends no thread (a rewind, `/compact`, a sub-agent, a retry
after a hydration round the client never received, a session opening with another one's
history, one beside a request still going on in its thread) starts a new one: forked from
the thread that shares the most leading messages with it (`branch`: of its session, else
of any), at the engine's position after them, so the shared prefix goes out as it was
sent; from its first message when none does.

A message's key is taken over what the model reads (types, texts, tool ids, names and
inputs, result texts), not over `cache_control` or signatures, so Claude Code moving its
breakpoint or a merged hydration answer coming back does not look like a rewind.

API:
- `Conversations`: every thread the gateway has seen, by session; finds the one a request
  continues.
- `Thread`: one engine conversation and the client messages fed into it.
- `Expected`: a merged answer the client will send back.
- `message_key(message)`, `session_of(body, headers)`: the keys a request is matched by.
- `working_directory(system)`: where the client runs, from its system prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import xxhash

from ephemeral_context.cache_sim import content_blocks
from ephemeral_context.context.engine import Fetched
from ephemeral_context.context.fetching import FetchRoute
from ephemeral_context.documents import utf8
from ephemeral_context.replay.tools import ToolCalls

_SESSION_IN_USER_ID = re.compile(r"session_([0-9a-fA-F-]{8,})")


def session_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """Claude Code's session id: from `metadata.user_id` (a JSON object since 2.1, before
    that `user_<hash>_account_<uuid>_session_<uuid>`), else the session header."""
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user_id, str):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping) and isinstance(parsed.get("session_id"), str):
            return str(parsed["session_id"])
        found = _SESSION_IN_USER_ID.search(user_id)
        if found:
            return found.group(1)
    header = headers.get("x-claude-code-session-id")
    return header or None


def _readable(block: Any) -> Any:
    """The part of a content block the model reads (what a message key covers)."""
    if not isinstance(block, Mapping):
        return block
    kind = block.get("type")
    if kind == "text":
        return ["text", block.get("text")]
    if kind == "thinking":
        return ["thinking", block.get("thinking")]
    if kind == "tool_use":
        return ["tool_use", block.get("id"), block.get("name"), block.get("input")]
    if kind == "tool_result":
        content = block.get("content")
        parts = [_readable(c) for c in content] if isinstance(content, list) else content
        return ["tool_result", block.get("tool_use_id"), parts, bool(block.get("is_error"))]
    return {k: v for k, v in block.items() if k not in ("cache_control", "signature")}


_WORKING_DIRECTORY = (
    re.compile(r"^\s*- Primary working directory: (.+)$", re.MULTILINE),
    re.compile(r"^Working directory: (.+)$", re.MULTILINE),
)
"""The environment section of Claude Code's system prompt, each release's wording:
" - Primary working directory: /w" (2.1.x, before any additional directories), then
"Working directory: /w" (in `<env>`, 2.0.x)."""


def working_directory(system: str) -> str | None:
    """The working directory a client's system prompt names, if it names one (the newest
    release's wording first: another section that happens to quote the older one loses)."""
    for wording in _WORKING_DIRECTORY:
        found = wording.search(system)
        if found:
            return found.group(1).strip()
    return None


def message_key(message: Mapping[str, Any]) -> str:
    """A key for one client message: equal when the model would read the same thing."""
    content = message.get("content")
    blocks = content_blocks(content)
    parts = [_readable(b) for b in blocks] if isinstance(blocks, list) else [content]
    text = json.dumps([message.get("role"), parts], sort_keys=True, default=str)
    return xxhash.xxh3_128_hexdigest(utf8(text))


@dataclass
class Expected:
    """An answer the client got merged from several upstream rounds (hydration calls the
    gateway answered itself), and how to feed it when the client sends it back."""

    visible_key: str
    """The key of the merged assistant message as the client received it."""
    content: list[dict[str, Any]]
    """The last round's full content (hidden hydration calls included): the engine already
    holds the rounds before it."""
    route: FetchRoute
    """Which of its calls were the gateway's (the client's next request may bring other
    tools)."""
    owed: list[Fetched] = field(default_factory=list)
    """Hydration calls answered, to put before the client's next tool results (when the
    last round also called the client's tools)."""


@dataclass
class Thread:
    """One engine conversation and the client messages it has been fed."""

    conv: str
    session: str
    keys: list[str] = field(default_factory=list)
    calls: ToolCalls = field(default_factory=ToolCalls)
    """Tool calls seen so far (a result is read by its call's tool), and the project Serena
    activated."""
    system_texts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Texts of role "system" messages, fed as user text, given their role back on the way
    out, each with the fields its messages had besides role and content, one per time it
    was sent, in order (2.1.332's per-turn `output_config`: each turn's own)."""
    ends: list[int] = field(default_factory=list)
    """The engine's position after each client message fed (where a fork starts)."""
    roots: list[str | None] = field(default_factory=list)
    """The project Serena had activated after each client message fed (a fork resolves its
    paths under the one in effect where it branched)."""
    cwd: str | None = None
    """The working directory the client's system prompt names (Serena's paths resolve
    under it until a project is activated). None: they stay relative, one file per path,
    never guessed under a root (a wrong guess could make two files one)."""
    expected: Expected | None = None
    unreceived: bool = False
    """Rounds of fetches were fed after the client's messages, and the answer they led to
    has not reached the client (yet, or ever: a client gone, an upstream error): no request
    continues the thread until `finish` says how that answer comes back; a retry forks it
    where the client's messages end."""
    used_at: float = 0.0
    """When a request last went on in it (the least recently used go first:
    `Conversations.least_used`)."""
    requests: int = 0
    """Requests going on in it now (planned, not yet accounted): it is not dropped under
    them, whose later rounds go on in its engine conversation."""
    passthrough: str | None = None
    """Why this conversation goes upstream unchanged (content the engine cannot hold)."""

    def extended_by(self, keys: Sequence[str]) -> bool:
        """True when a request with these message keys continues this thread."""
        n = len(self.keys)
        if self.unreceived or len(keys) < n or list(keys[:n]) != self.keys:
            return False
        if self.expected is None:
            return True
        return len(keys) > n and keys[n] == self.expected.visible_key


class Conversations:
    """Every thread the gateway has seen, by session."""

    def __init__(self) -> None:
        self._threads: dict[str, list[Thread]] = {}
        self._count = 0

    def find(self, session: str | None, keys: Sequence[str]) -> Thread | None:
        """The thread of this request's session that it continues (the longest): never
        another session's, which would go on with the newcomer's messages in it, nor one a
        request is going on in (a retry beside its first try, two sub-agents given one
        prompt), whose rounds of fetches would be sent with this one: it is forked."""
        threads = self._threads.get(session or "anonymous", [])
        found = [t for t in threads if not t.requests and t.extended_by(keys)]
        return max(found, key=lambda t: len(t.keys)) if found else None

    def branch(self, session: str | None, keys: Sequence[str]) -> tuple[Thread | None, int]:
        """The thread sharing the most leading messages with a request that extends none,
        and how many: of its session, else of any (a session that opens with another one's
        history forks from it); (None, 0) when none shares any it was fed."""
        own = self._threads.get(session or "anonymous", [])
        for pool in (own, [t for ts in self._threads.values() for t in ts if t not in own]):
            best: Thread | None = None
            shared = 0
            for thread in pool:
                if thread.passthrough or len(thread.ends) != len(thread.keys):
                    continue
                n = next(
                    (i for i, (a, b) in enumerate(zip(thread.keys, keys, strict=False)) if a != b),
                    min(len(thread.keys), len(keys)),
                )
                if n > shared:
                    best, shared = thread, n
            if best is not None:
                return best, shared
        return None, 0

    def start(self, session: str | None) -> Thread:
        """A new thread (and engine conversation) for a request that continues none."""
        self._count += 1
        name = session or "anonymous"
        thread = Thread(conv=f"gateway/{name}/{self._count}", session=name)
        self._threads.setdefault(name, []).append(thread)
        return thread

    def forget(self, thread: Thread) -> None:
        """Drop a thread whose engine conversation can no longer be trusted, or has ended."""
        threads = self._threads.get(thread.session, [])
        if thread in threads:
            threads.remove(thread)
        if not threads:
            self._threads.pop(thread.session, None)

    def least_used(self, keep: int, current: Thread) -> list[Thread]:
        """The threads beyond the `keep` a request went on in last, least recent first:
        never `current` (the one a request goes on in now), nor one a request is still
        going on in."""
        threads = [t for ts in self._threads.values() for t in ts]
        droppable = [t for t in threads if t is not current and not t.requests]
        return sorted(droppable, key=lambda t: t.used_at)[: max(0, len(threads) - keep)]

    def sessions(self) -> list[str]:
        return list(self._threads)
