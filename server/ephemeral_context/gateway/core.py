"""The gateway's core: a client's Messages API request in, the engine's request out.

No HTTP here (server.py owns that). `prepare` finds the conversation a request continues,
feeds its new messages into the ContextEngine through replay/feed.py (the mapping the `ours`
replay strategy uses, so the benchmark measures what the gateway does) and builds the body
to send upstream, or says why the request must go upstream unchanged (fail open). When the
model calls the hydration tool, `answer_hydrations` feeds that round and answers the calls
from the engine's store, as a round trip of the engine (`ContextEngine.round_trip`, the
replay's own append): the engine pays for the extra upstream call, its recorded-style twin
neither carries the calls nor pays for that request; `finish` remembers how the merged
answer the client received will come back.

Images and documents, in a user message or in a tool result's content, go into the engine as
the client sent them (`Block.raw`) and stay; so does a tool result with ToolSearch's
`tool_reference` items (Claude Code 2.1.332 loads deferred tools so). Content the engine
cannot hold (server tool blocks, block types it does not know, a tool result's items other
than these) makes the whole conversation pass through: the engine's copy would be missing
it. So does a model without a list price in prices.py (newer than it, or a typo), before
anything is fed. A request the API refuses that the engine would send mended or fail on
(an empty user message or text block, more cache breakpoints than it takes or one it cannot
read, tools that are no objects) goes as it came, so its client gets the API's own error;
nothing of it is fed.

API:
- `GatewayCore`: `prepare`, `answer_hydrations`, `finish`, `release` over one engine;
  `MAX_HYDRATION_ROUNDS`, `KEPT_CONVERSATIONS`.
- `Plan`: the body for the next upstream call, and its thread.
- `Passthrough`: forward unchanged, and why.
- `hydration_calls(content, route)`, `visible(content, route)`: an answer's hydration
  calls, and what the client sees.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ephemeral_context.cache_sim import (
    MAX_BREAKPOINTS,
    CacheControlError,
    content_blocks,
    content_order,
)
from ephemeral_context.context.engine import ContextEngine, Fetched
from ephemeral_context.context.fetching import READ_SESSION_FILE, FetchRoute, route_for
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.gateway.conversations import (
    Conversations,
    Expected,
    Thread,
    message_key,
    session_of,
    working_directory,
)
from ephemeral_context.gateway.outbound import (
    breakpoints,
    client_ttl,
    head_ttl,
    marked_message_blocks,
    message_fields,
    system_text,
    upstream_body,
)
from ephemeral_context.gateway.savings import Pricing, Savings
from ephemeral_context.model.secrets import SecretPolicy, Workspace
from ephemeral_context.model.tools import ToolEnv, run_tool
from ephemeral_context.prices import UnknownModelError, lookup
from ephemeral_context.replay.feed import feed_message
from ephemeral_context.replay.flow import Block, Message
from ephemeral_context.replay.reader import api_content_block
from ephemeral_context.request_view import cache_ttl
from ephemeral_context.tokens import MEDIA_TYPES

log = logging.getLogger(__name__)

KEPT_ITEMS = frozenset({*MEDIA_TYPES, "tool_reference"})
"""A tool result's items that keep it as the client sent it, never evicted: images and
documents, and ToolSearch's `tool_reference` (a deferred tool loaded where it stands)."""
RESULT_ITEMS = frozenset({"text", *KEPT_ITEMS})
"""What a tool result's content list may hold for the engine to carry it."""

MAX_HYDRATION_ROUNDS = 8
"""Upstream calls the gateway adds for one client request, at most: the call after the last
one it answers may call no tool (`tool_choice` none), so the client gets an answer."""

KEPT_CONVERSATIONS = 64
"""Conversations the gateway keeps, engine state and all; past them, the one no request
went on in for longest is dropped, and a request that comes back to it starts again from
the client's messages. No clock drops one: a session resumed the next morning goes on with
what the engine had made of it (its evictions, its re-use estimates), as the replay
measures it, and its cold cache is rebuilt at its first call either way."""


class Unsupported(ValueError):
    """A request the engine cannot represent; it goes upstream as the client sent it."""


@dataclass
class Passthrough:
    """Forward the client's request unchanged, for this reason."""

    reason: str
    session: str = "anonymous"
    pricing: Pricing = field(default_factory=lambda: Pricing(None))


@dataclass
class Plan:
    """A request the engine handles: the body for the next upstream call, and its thread."""

    thread: Thread
    client: Mapping[str, Any]
    body: dict[str, Any]
    pricing: Pricing
    route: FetchRoute
    """How the model calls for content by id (the client's Read, or the engine's tool)."""
    rounds: int = 0
    hydrations: int = 0
    hydration_errors: int = 0


def hydration_calls(
    content: Sequence[Mapping[str, Any]], route: FetchRoute
) -> list[Mapping[str, Any]]:
    """The calls for content by id of one upstream answer (the client never sees them)."""
    return [b for b in content if route.asks(b)]


def visible(content: Sequence[Mapping[str, Any]], route: FetchRoute) -> list[dict[str, Any]]:
    """An answer's blocks as the client sees them (hydration calls left out)."""
    return [dict(b) for b in content if not route.asks(b)]


def _flow_message(message: Mapping[str, Any], thread: Thread) -> Message:
    """One client message as the replay flow knows it; raises Unsupported."""
    role = message.get("role")
    content = message.get("content")
    items = content_blocks(content)
    if role not in ("user", "assistant", "system") or not isinstance(items, list):
        raise Unsupported(f"a message of role {role!r} with content of type {type(content)}")
    # parallel results as the API renders them, so the engine's last block is the last rendered
    items = [items[i] for i in content_order(items, list(thread.calls.uses))]
    blocks: list[Block] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise Unsupported("a content block that is not an object")
        kind = item.get("type")
        inner = item.get("content")
        nested = inner if kind == "tool_result" and isinstance(inner, list) else []
        if any(isinstance(c, Mapping) and c.get("type") not in RESULT_ITEMS for c in nested):
            raise Unsupported(f"{kind} content the engine does not hold")
        if _wrong_type(item) or any(isinstance(c, Mapping) and _wrong_type(c) for c in nested):
            # the API refuses it with a clear error; the engine would have sent it mended
            raise Unsupported(f"a {kind} block whose text, content or input is of a wrong type")
        block, problems = api_content_block(item, thread.calls, thread.cwd)
        if block is None:
            if problems:  # an unknown block type: the engine would drop it
                raise Unsupported("; ".join(p.message for p in problems))
            continue  # an empty text block adds nothing
        if any(isinstance(c, Mapping) and c.get("type") in KEPT_ITEMS for c in nested):
            block = replace(block, media=True)  # kept as it came, as one carrying images
        blocks.append(replace(block, raw=item) if role == "assistant" or block.media else block)
        if role == "system" and block.type == "text":
            thread.system_texts.setdefault(block.text, []).append(message_fields(message))
    return Message("assistant" if role == "assistant" else "user", tuple(blocks), 0.0, 0)


def _refused(messages: Sequence[Any], client: Mapping[str, Any]) -> str | None:
    """What the API refuses in a request that the engine would send mended (an empty
    user message or text block it drops, the client's breakpoints it moves) or fail on
    (tools that are no objects), or None: such a request goes as it came, and its client
    gets the API's own error. An assistant message may be empty: it may be the gateway's
    own answer whose only blocks were its fetches, which the engine holds (`finish`)."""
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return f"messages.{n} is not an object, which the API refuses"
        if message.get("role") != "user":
            continue
        items = content_blocks(message.get("content"))
        if not items or (isinstance(items, list) and any(map(_empty_text, items))):
            return f"messages.{n} is empty or holds an empty text, which the API refuses"
    tools = client.get("tools")
    if not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools):
        return "tools is no list of objects, which the API refuses"
    if breakpoints(client) > MAX_BREAKPOINTS:
        return f"more than {MAX_BREAKPOINTS} cache breakpoints, which the API refuses"
    try:
        for block in marked_message_blocks(messages):
            cache_ttl(block)
    except CacheControlError as error:
        return f"{error}, which the API refuses"
    return None


def _empty_text(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "text" and item.get("text") == ""


def _wrong_type(item: Mapping[str, Any]) -> bool:
    """A text block whose text, a tool result whose content, or a tool call whose input is
    of no type the API takes."""
    if item.get("type") == "text":
        return not isinstance(item.get("text"), str)
    if item.get("type") == "tool_result":
        return not isinstance(item.get("content", ""), str | list)
    if item.get("type") == "tool_use":
        return not isinstance(item.get("input"), Mapping)
    return False


class GatewayCore:
    """One engine for every conversation the gateway carries."""

    def __init__(
        self,
        engine: ContextEngine,
        clock: Callable[[], float] = time.time,
        before_plan: Callable[[], None] | None = None,
        secrets: Callable[[], SecretPolicy] = SecretPolicy,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.conversations = Conversations()
        self.savings = Savings()
        self._status = self.savings.as_json()
        self._mirror = DocumentMirror()
        self.secrets = secrets
        """The secret file names as they are now: what is never stored, and what a fetch by
        id refuses (the hosted gateway: the editor's `secretPatterns` and `allowSecretFiles`;
        else the built-in names)."""
        self.before_plan = before_plan
        """Run before each request the engine plans: the hosted gateway's editor brings its
        pins up to date there (`Pins.follow`, as before an ask), so a pinned file edited
        since reaches the next request as it is now, not as it was pinned."""

    def serve_from(self, engine: ContextEngine) -> None:
        """Go on with `engine` (the editor's settings moved the store): the engine replaced
        holds nothing (`ContextEngine.empty`), so every thread fed here was passed through
        and the savings so far stay."""
        self.engine = engine

    # ------------------------------------------------------------------ requests

    def prepare(self, client: Any, headers: Mapping[str, str]) -> Plan | Passthrough:
        """The plan for one POST /v1/messages body, or why it passes through."""
        if not isinstance(client, Mapping) or not isinstance(client.get("messages"), list):
            return Passthrough("not a Messages API request body")
        session = session_of(client, headers) or "anonymous"
        now = self.clock()
        if not client.get("tools"):
            return self._passthrough("no tools: nothing the engine shortens", session, client, now)
        try:
            lookup(str(client.get("model", "")))  # the engine sizes and prices by the model
        except UnknownModelError as unknown:  # a model newer than prices.py, or a typo
            return self._passthrough(str(unknown), session, client, now)
        messages: list[Mapping[str, Any]] = client["messages"]
        refused = _refused(messages, client)
        if refused is not None:
            return self._passthrough(refused, session, client, now)
        keys = [message_key(m) for m in messages]
        if self.before_plan is not None:
            self.before_plan()
        thread = self.conversations.find(session, keys) or self._branch(session, keys)
        thread.used_at = now  # in use, passed through or not: the last to go
        for old in self.conversations.least_used(KEPT_CONVERSATIONS, thread):
            self._forget(old)
        if thread.passthrough:
            thread.keys = keys
            return self._passthrough(thread.passthrough, session, client, now)
        try:
            route = route_for(client.get("tools") or [])
            body = self._feed_and_build(thread, client, messages, keys, route)
        except Unsupported as why:
            thread.passthrough, thread.keys = str(why), keys
            return self._passthrough(str(why), session, client, now)
        except Exception as error:  # the engine failed: this request goes as it came
            self._forget(thread)
            log.exception("the engine could not handle a request; forwarded unchanged")
            return self._passthrough(f"engine error: {error!r}", session, client, now)
        pricing = self.savings.price_direct(thread.session, client, body, now)
        thread.requests += 1  # until `release`: not dropped while its rounds go on
        return Plan(thread, client, body, pricing, route)

    def _branch(self, session: str, keys: list[str]) -> Thread:
        """A new thread for a request that continues none: forked from the one sharing the
        most leading messages with it, else empty."""
        source, shared = self.conversations.branch(session, keys)
        thread = self.conversations.start(session)
        if source is not None:
            self.engine.fork(source.conv, thread.conv, source.ends[shared - 1])
            thread.keys, thread.ends = keys[:shared], source.ends[:shared]
            thread.roots, thread.cwd = source.roots[:shared], source.cwd
            thread.calls = source.calls.branch(source.roots[shared - 1])
            thread.system_texts = {t: list(f) for t, f in source.system_texts.items()}
        return thread

    def abandon(self, plan: Plan) -> None:
        """A plan made too late to be sent (server.py, `plan_timeout`): its thread and engine
        conversation hold a request that never went, so they go."""
        self._forget(plan.thread)

    def release(self, plan: Plan) -> None:
        """A plan's request is over (accounted, or never sent): its thread may be dropped
        again when used least of too many."""
        plan.thread.requests -= 1

    def _forget(self, thread: Thread) -> None:
        """Drop a thread and its engine conversation (failed, or used least of too many)."""
        self.conversations.forget(thread)
        self.engine.end(thread.conv)

    def _passthrough(
        self, reason: str, session: str, client: Mapping[str, Any], now: float
    ) -> Passthrough:
        return Passthrough(reason, session, self.savings.price_direct(session, client, None, now))

    def _feed_and_build(
        self,
        thread: Thread,
        client: Mapping[str, Any],
        messages: Sequence[Mapping[str, Any]],
        keys: list[str],
        route: FetchRoute,
    ) -> dict[str, Any]:
        thread.cwd = working_directory(system_text(client.get("system"))) or thread.cwd
        self.engine.set_route(thread.conv, route)
        secrets = self.secrets()
        new: list[tuple[Message, str | None]] = []  # each with the project in effect after it
        for sent in messages[len(thread.keys) :]:
            new.append((_flow_message(sent, thread), thread.calls.project_root))
        expected, thread.expected = thread.expected, None
        for n, (message, root) in enumerate(new):
            if n == 0 and expected is not None:
                self._feed_content(thread, expected.content, expected.route, secrets)
                if expected.owed:  # the client's tool results come with them: its request
                    self.engine.round_trip(thread.conv, expected.owed, continues=False)
            else:
                feed_message(self.engine, thread.conv, message, secrets)
            thread.ends.append(self.engine.position(thread.conv))
            thread.roots.append(root)
        thread.keys = keys
        return self._build(thread, client)

    def _build(self, thread: Thread, client: Mapping[str, Any]) -> dict[str, Any]:
        system = client.get("system")
        built = self.engine.build_request(
            thread.conv,
            str(client.get("model", "")),
            system_text(system),
            client.get("tools") or [],
            client_ttl=client_ttl(client),
            head_ttl=head_ttl(client),
        )
        return upstream_body(client, built, thread.system_texts)

    def _feed_content(
        self,
        thread: Thread,
        content: Sequence[Mapping[str, Any]],
        route: FetchRoute,
        secrets: SecretPolicy,
    ) -> None:
        """An upstream answer as the client sees it (the callers add its hydration calls,
        with their answers, as a round trip)."""
        shown = visible(content, route)
        if shown:
            message = _flow_message({"role": "assistant", "content": shown}, thread)
            feed_message(self.engine, thread.conv, message, secrets)

    # ------------------------------------------------------------------ hydration

    async def answer_hydrations(self, plan: Plan, content: Sequence[Mapping[str, Any]]) -> bool:
        """Feed one upstream answer that called only the hydration tool, answer its calls,
        and set `plan.body` to the next upstream request. False when the engine failed (the
        conversation is dropped; the caller falls back)."""
        try:
            self._feed_content(plan.thread, content, plan.route, self.secrets())
            calls = hydration_calls(content, plan.route)
            fetched = [await self._hydrate(plan, call) for call in calls]
            self.engine.round_trip(plan.thread.conv, fetched)
            plan.thread.unreceived = True
            plan.rounds += 1
            plan.body = self._build(plan.thread, plan.client)
            if plan.rounds >= MAX_HYDRATION_ROUNDS:  # it answers now, with what it has
                plan.body["tool_choice"] = {"type": "none"}
        except Exception:
            log.exception("the engine failed while answering a hydration call")
            self._forget(plan.thread)
            return False
        return True

    async def _hydrate(self, plan: Plan, call: Mapping[str, Any]) -> Fetched:
        tools = ToolEnv(
            workspace=Workspace.of(["/"]),
            mirror=self._mirror,
            secrets=self.secrets(),
            engine=self.engine,
            conversation=plan.thread.conv,  # its own ids only
        )
        arguments = plan.route.arguments(call.get("input"))
        result = await run_tool(tools, READ_SESSION_FILE["name"], arguments)
        plan.hydrations += 1
        plan.hydration_errors += int(result.is_error)
        if not result.is_error:
            return Fetched(call, result.text, False)
        log.warning("hydration %s failed: %s", call.get("input"), result.text)
        return Fetched(call, plan.route.error_text(result.text), True)

    async def finish(self, plan: Plan, shown: Sequence[Mapping[str, Any]], last: Any) -> None:
        """The client got `shown` (merged over the rounds); `last` is the last round's full
        content. Remember how it comes back when hydration changed anything."""
        hidden = hydration_calls(last, plan.route)
        plan.thread.unreceived = False
        if not plan.rounds and not hidden:
            return
        try:
            owed = [await self._hydrate(plan, c) for c in hidden]
        except Exception:  # the answer still goes to the client; the conversation restarts
            log.exception("the engine failed while answering a hydration call")
            self._forget(plan.thread)
            return
        key = message_key({"role": "assistant", "content": list(shown)})
        plan.thread.expected = Expected(key, [dict(b) for b in last], plan.route, owed)

    # ------------------------------------------------------------------ status

    def record(
        self, session: str, pricing: Pricing, usages: list[Any], plan: Plan | None = None
    ) -> None:
        """Account one answered client request (every upstream call's usage); the engine
        hears the usage too (its view of the cache, its hit rate)."""
        self.savings.record(session, pricing, usages, passthrough=plan is None)
        if plan is not None:
            self.release(plan)
            for usage in usages:
                if usage:
                    self.engine.record_usage(plan.thread.conv, usage)
            figures = self.savings.figures(session)
            figures.hydrations += plan.hydrations
            figures.hydration_errors += plan.hydration_errors
        self._status = self.savings.as_json()

    def status(self) -> dict[str, Any]:
        """GET /ectx/status: per session and in total, as of the last request accounted.
        A snapshot, never changed once made: read from any thread without waiting for the
        engine's work (a big request's takes seconds); not to be changed by its reader."""
        return self._status
