"""The invariants `ours` must keep on any session, checked call by call during one replay.

`replay_invariants(session)` replays a session once under `recorded` and under `ours` (the
engine as replay/ours.py drives it), looks at every request the engine builds as it is
built, and returns what broke, per invariant, in words that name the call:

- budget: no request is above the configured context budget unless nothing is left that the
  engine could evict (consumed, unpinned, evictable content, all of it already placeholders)
  or cut (stored content not seen yet, context/clipping.py),
  and none is above the model's context window (prices.py), ever;
- fork: a request carries exactly the messages of its call, each once and in order (a
  rewind, a branch or a reordered call never appends history a second time or keeps another
  branch's), and the first request of a thread that branched off another one starts with
  the blocks the engine last sent for their shared messages, so the cache can serve them;
- request: the Messages API request is one the API accepts (tests/fakes `request_problem`:
  roles, tool_use/tool_result pairing, non-empty content, at most 4 cache_control
  breakpoints, TTL order), with user and assistant messages alternating;
- peak: `ours`'s peak context is not above `recorded`'s;
- harm: `ours` bills at most 1% above `recorded` (policy.HARM_TOLERANCE, the product's bound)
  where `recorded`'s requests fit the budget (above it, the engine must cut what the twin keeps).

Only the observations are kept, not the requests, so a long session costs no more memory
than its replay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ephemeral_context.context.clipping import CLIPPABLE
from ephemeral_context.context.engine import EngineConfig
from ephemeral_context.context.kinds import EVICTABLE
from ephemeral_context.context.policy import HARM_TOLERANCE
from ephemeral_context.prices import priced
from ephemeral_context.replay.feed import api_block
from ephemeral_context.replay.flow import Call, Message, Session, shared_messages
from ephemeral_context.replay.ours import OursLayout
from ephemeral_context.replay.simulate import Prompt, simulate
from ephemeral_context.replay.strategies import STRATEGIES

from tests.fakes.messages_api import conversation_problem, request_problem

BUDGET = EngineConfig().context_budget
NAMES = ("budget", "fork", "request", "peak", "harm")
"""The invariants, by their field names in `Invariants`."""
PLACEHOLDER_TOKENS = 100
"""More than any placeholder: a block this small frees nothing worth a rewrite."""


@dataclass
class Invariants:
    """What one replay broke, per invariant (empty lists: nothing), and its figures."""

    path: str
    budget: list[str] = field(default_factory=list)
    fork: list[str] = field(default_factory=list)
    request: list[str] = field(default_factory=list)
    peak: list[str] = field(default_factory=list)
    harm: list[str] = field(default_factory=list)
    calls: int = 0
    forks: int = 0
    """Threads that branched off another thread of the same prefix (rewinds, edits)."""
    invalid_input: int = 0
    """Calls whose own messages the API would refuse: the request check does not apply."""
    ours_peak: int = 0
    recorded_peak: int = 0
    ours_billed: float = 0.0
    recorded_billed: float = 0.0

    def broken(self) -> dict[str, list[str]]:
        """Each invariant this replay broke, with its first three findings (empty: none)."""
        return {name: getattr(self, name)[:3] for name in NAMES if getattr(self, name)}


def skeleton(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """What identifies Messages API messages' content, in order: (type, id) of every
    tool_use and tool_result, ("text", text) of every assistant text."""
    out: list[tuple[str, str]] = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                out.append(("tool_use", str(block.get("id"))))
            elif block.get("type") == "tool_result":
                out.append(("tool_result", str(block.get("tool_use_id"))))
            elif block.get("type") == "text" and message.get("role") == "assistant":
                out.append(("text", str(block.get("text"))))
    return out


def session_skeleton(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """The same for the session's own messages (what the call's request carried)."""
    return skeleton(api_messages(messages))


def api_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The session's messages in the Messages API's shape (enough for its checks)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content: list[dict[str, Any]] = []
        for block in message.blocks:
            if message.role == "assistant":
                content.append(api_block(block))
            elif block.type == "tool_result":
                content.append(
                    {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": "r"}
                )
            else:
                content.append({"type": "text", "text": block.text or " "})
        out.append({"role": message.role, "content": content})
    return out


def role_problem(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Two user or two assistant messages in a row (role "system" may sit between turns)."""
    previous = ""
    for m, message in enumerate(messages):
        role = str(message.get("role"))
        if role == previous and role != "system":
            return f"messages.{m}: a second {role} message in a row"
        previous = role
    return None


class CheckedLayout(OursLayout):
    """`ours`, with every request it builds checked as it is built."""

    def __init__(self, session: Session, found: Invariants) -> None:
        super().__init__(session)
        self.found = found
        self._all_ids = {
            pair
            for thread in session.threads.values()
            for pair in session_skeleton(thread.messages)
        }
        self._sent: dict[str, list[dict[str, Any]]] = {}
        """Per thread, the messages of the last request built (for the fork check)."""
        self._sent_n: dict[str, int] = {}
        """Per thread, how many of the session's messages that request carried."""

    def prompt(self, call: Call) -> Prompt:
        first = call.thread not in self._sent
        prompt = super().prompt(call)
        built = self.engine.last_request(call.thread)
        assert built is not None
        where = f"call {call.index} (line {call.line}, thread {call.thread})"
        kwargs = built.kwargs
        self._check_budget(call, prompt.tokens, where)
        self._check_request(call, kwargs, where)
        self._check_messages(call, kwargs["messages"], where, first)
        self._sent[call.thread] = kwargs["messages"]
        self._sent_n[call.thread] = call.n_messages
        self.found.calls += 1
        return prompt

    def _check_budget(self, call: Call, tokens: int, where: str) -> None:
        window = priced(call.model).context_window
        if tokens > window:
            self.found.budget.append(f"{where}: {tokens} tokens, above the {window} window")
        if tokens > BUDGET:
            left = self._evictable(call.thread)
            if left:
                self.found.budget.append(
                    f"{where}: {tokens} tokens, above the {BUDGET} budget with "
                    f"{len(left)} evictable blocks ({sum(left)} tokens) left"
                )

    def _evictable(self, conv: str) -> list[int]:
        """Tokens of each block the engine could still evict or cut: consumed, not a
        placeholder yet, of an evictable kind, neither pinned nor protected; or not seen
        yet, stored, of a kind that is cut (clipping.py)."""
        state = self.engine.state
        thread = self.engine.conversation(conv).thread
        out = []
        for i, tb in enumerate(thread):
            item = state.ledger.get(tb.item_id) if tb.item_id else None
            held = item is not None and (item.pinned or not item.evictable)
            if tb.evicted or tb.tokens <= PLACEHOLDER_TOKENS:
                continue
            if thread.consumed(i):
                if tb.kind in EVICTABLE and not held:
                    out.append(tb.tokens)
            elif tb.kind in CLIPPABLE and item is not None:
                out.append(tb.tokens)
        return out

    def _check_request(self, call: Call, kwargs: Mapping[str, Any], where: str) -> None:
        if conversation_problem(api_messages(self.session.request(call))) is not None:
            self.found.invalid_input += 1
            return
        body = json.loads(json.dumps(kwargs))  # what goes over the wire
        problem = request_problem(body)
        if problem is not None:
            self.found.request.append(f"{where}: {problem.status} {problem.message}")
        alternation = role_problem(body["messages"])
        if alternation is not None:
            self.found.request.append(f"{where}: {alternation}")

    def _check_messages(
        self, call: Call, messages: Sequence[Mapping[str, Any]], where: str, first: bool
    ) -> None:
        expected = session_skeleton(self.session.request(call))
        sent = [pair for pair in skeleton(messages) if pair in self._all_ids]
        if sent != expected:
            at = next(
                (i for i, (x, y) in enumerate(zip(sent, expected, strict=False)) if x != y),
                min(len(sent), len(expected)),
            )
            self.found.fork.append(
                f"{where}: carries {len(sent)} of the session's tool blocks where its call has "
                f"{len(expected)}, the first difference at {at}"
            )
        if first:
            self._check_fork(call, messages, where)

    def _check_fork(self, call: Call, messages: Sequence[Mapping[str, Any]], where: str) -> None:
        """A new thread that shares messages with a thread already sent starts as it."""
        thread = self.session.threads[call.thread]
        best, shared = None, 0
        request = self.session.request(call)
        for other_id, n_sent in self._sent_n.items():
            other = self.session.threads[other_id]
            if other.prefix_key != thread.prefix_key:
                continue
            n = shared_messages(other.messages[:n_sent], request)
            if n > shared:
                best, shared = other_id, n
        if best is None or shared == 0:
            return
        self.found.forks += 1
        source = self._sent[best]
        # The blocks the source sent for the shared messages: through the last one that
        # identifies them (the first block when none does).
        prefix = session_skeleton(self.session.threads[best].messages[:shared])
        n_blocks = _blocks_through(source, prefix)
        ours, theirs = _strip(_flat(messages)[:n_blocks]), _strip(_flat(source)[:n_blocks])
        thread_blocks = self.engine.conversation(call.thread).thread
        # The new branch's own policy may evict more of the prefix; nothing else may differ.
        if len(ours) < n_blocks or any(
            x != y and not thread_blocks[i].evicted
            for i, (x, y) in enumerate(zip(ours, theirs, strict=True))
        ):
            self.found.fork.append(
                f"{where}: branches off {best} after {shared} shared messages but does not "
                f"start with the {n_blocks} blocks {best} last sent for them"
            )


def _flat(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        (str(m.get("role")), block)
        for m in messages
        for block in (m["content"] if isinstance(m.get("content"), list) else ())
    ]


def _strip(blocks: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Blocks without their cache_control (breakpoints move; content must not)."""
    return [(role, {k: v for k, v in b.items() if k != "cache_control"}) for role, b in blocks]


def _blocks_through(messages: Sequence[Mapping[str, Any]], marks: Sequence[tuple[str, str]]) -> int:
    """How many leading blocks of `messages` reach the last of `marks` (skeleton entries)."""
    if not marks:
        return 1
    for i, (role, block) in enumerate(_flat(messages)):
        if skeleton([{"role": role, "content": [block]}]) == [marks[-1]]:
            return i + 1
    return 0


def replay_invariants(session: Session) -> Invariants:
    """Replay `session` under `recorded` and the checked `ours`, once each."""
    found = Invariants(session.path)
    ours = simulate("ours", session, CheckedLayout(session, found))
    recorded = STRATEGIES["recorded"].replay(session)
    found.ours_peak, found.recorded_peak = ours.peak_context, recorded.peak_context
    found.ours_billed, found.recorded_billed = ours.billed_input, recorded.billed_input
    if ours.peak_context > recorded.peak_context:
        found.peak.append(
            f"peak context {ours.peak_context} above recorded's {recorded.peak_context}"
        )
    fits = recorded.peak_context <= BUDGET
    if fits and ours.billed_input > (1 + HARM_TOLERANCE) * recorded.billed_input:
        found.harm.append(
            f"billed {ours.billed_input:.0f}, {ours.billed_input / recorded.billed_input:.3f}x "
            f"recorded's {recorded.billed_input:.0f}"
        )
    return found
