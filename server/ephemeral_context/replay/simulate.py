"""The part of a replay every strategy shares: driving the cache model call by call.

A strategy only decides what each request looks like (a `Prompt`: blocks with their cache
breakpoints) and which shown content it threw away for good. This module feeds the prompts
to `cache_sim` in the session's time order, with one cache per model and speed (a model
switch, or fast mode turned on or off, finds the cache cold) and each call at its start time
(an idle gap longer than the TTL finds it cold too). A thread whose first call read from a
cache that something outside the transcript had warmed (an earlier session, the compaction
call) gets that prefix written just before, with the client's TTL (the one its first call
wrote with) whatever the strategy asks for.
A forked session's inherited calls (the parent's, `Session.inherited`) are laid out and sent
first, unbilled, so the fork starts from what the parent had cached.
The results carry what the report needs: per call usage and context size, and per strategy
the totals, dollars, cache hit rate and the share of shown content that stays retrievable.

API:
- `simulate(name, session, layout)`: one layout through the cache model.
- `Prompt`, `LayoutStrategy`, `Strategy`, `StrategyResult`: what a strategy gives and gets.
- `fidelity(...)`, `Fidelity`: modelled against recorded usage.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from ephemeral_context import cache_sim
from ephemeral_context.cache_sim import PromptCache, Request, Usage
from ephemeral_context.prices import PriceRow, Speed, priced
from ephemeral_context.replay.flow import Call, Session, Unanswered

PREWARM_LEAD_SECONDS = 1.0
"""How long before a thread's first call its warm prefix is taken to have been written."""


@dataclass(frozen=True)
class Prompt:
    """One request as a strategy lays it out for the cache model."""

    system: tuple[cache_sim.Block, ...]
    messages: tuple[cache_sim.Block, ...]
    steps_before: tuple[Prompt, ...] = ()
    """Sampling steps the API runs before this one within the same call (a server-side
    compaction summarises the conversation first): each is billed like a call."""
    output_tokens: int = 0
    """Output this step writes on top of the recorded response (a compaction's summary)."""

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.system) + sum(b.tokens for b in self.messages)

    @property
    def steps(self) -> tuple[Prompt, ...]:
        """Every sampling step of the call, in order, this one last."""
        return (*self.steps_before, self)


class Layout(Protocol):
    """A strategy's state over one session: lays out each call's request, in call order."""

    def prompt(self, call: Call) -> Prompt:
        """The request for `call` (calls arrive in the session's time order)."""
        ...

    @property
    def lost_tokens(self) -> int:
        """Tokens of the session's content (its calls' messages as recorded) that this
        layout threw away for good (not retrievable), each block counted once."""
        ...


@runtime_checkable
class Rehydrating(Protocol):
    """A layout that brings evicted content back when a call uses it (`ours`) says how
    often and how much."""

    @property
    def rehydrations(self) -> int: ...

    @property
    def rehydrated_tokens(self) -> int: ...


@runtime_checkable
class Interruptible(Protocol):
    """A layout that also lays out the requests interrupted before any answer
    (`Session.unanswered`): they are sent, so they warm the cache, and never billed here."""

    def unanswered(self, request: Unanswered) -> Prompt: ...


@runtime_checkable
class Closing(Protocol):
    """A layout that holds resources (a store, a temporary folder) releases them in close()."""

    def close(self) -> None: ...


class Strategy(Protocol):
    """What the report runs: a name and a replay of one session."""

    @property
    def name(self) -> str: ...

    def replay(self, session: Session) -> StrategyResult: ...


@dataclass(frozen=True)
class CallResult:
    """One modelled call."""

    index: int
    started: float
    model: str
    context_tokens: int
    usage: Usage
    output_tokens: int
    price: PriceRow
    """The prices in effect for the call's model when it started."""

    @property
    def billed_input(self) -> float:
        return self.price.billed_input(self.usage)

    @property
    def cost_usd(self) -> float:
        return self.price.cost_usd(self.usage, self.output_tokens)


@dataclass
class StrategyResult:
    """One strategy's replay of one session."""

    name: str
    calls: list[CallResult] = field(default_factory=list)
    shown_tokens: int = 0
    """Tokens of the session's content: every block its calls' messages carry as recorded,
    once, whatever the layout made of it (the same for every strategy of a session)."""
    lost_tokens: int = 0
    rehydrations: int = 0
    """Evicted items brought back because a call used them (replay/ours.py)."""
    rehydrated_tokens: int = 0

    @property
    def usage(self) -> Usage:
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    @property
    def peak_context(self) -> int:
        return max((c.context_tokens for c in self.calls), default=0)

    @property
    def total_context(self) -> int:
        return sum(c.context_tokens for c in self.calls)

    @property
    def billed_input(self) -> float:
        return sum(c.billed_input for c in self.calls)

    @property
    def cost_usd(self) -> float:
        """Dollars at list price, each call at its own model's prices (output estimated).

        A call on a model without a list price is priced as prices.REFERENCE_MODEL (the
        report warns about it).
        """
        return sum(c.cost_usd for c in self.calls)

    @property
    def cache_hit_rate(self) -> float:
        """Share of all input tokens that were read from the cache."""
        usage = self.usage
        total = usage.total_input_tokens
        return usage.cache_read_input_tokens / total if total else 0.0

    @property
    def retrievable(self) -> float:
        """Share of the content ever shown that stays in context or can be fetched back."""
        if not self.shown_tokens:
            return 1.0
        return 1.0 - self.lost_tokens / self.shown_tokens


def simulate(name: str, session: Session, layout: Layout) -> StrategyResult:
    """Replay `session` under one layout through the cache model (then close the layout)."""
    try:
        return _drive(name, session, layout)
    finally:
        if isinstance(layout, Closing):
            layout.close()


def _drive(name: str, session: Session, layout: Layout) -> StrategyResult:
    # One cache per model and speed: requests at different speeds share no prefix.
    caches: dict[tuple[str, Speed], PromptCache] = {}
    # Each thread's speed as its latest call was served: what an interrupted request of the
    # thread, which recorded nothing, was sent at.
    speeds: dict[str, Speed] = {}
    result = StrategyResult(name)
    started_threads: set[str] = set()
    shown: set[int] = set()
    shown_tokens = 0
    interrupted = iter(session.unanswered if isinstance(layout, Interruptible) else ())
    waiting = next(interrupted, None)
    inherited = {id(call) for call in session.inherited}
    for call in itertools.chain(session.inherited, session.calls):
        while (
            waiting is not None
            and waiting.started <= call.started
            and not _comes_first(call, waiting)
        ):
            if waiting.thread in started_threads:
                assert isinstance(layout, Interruptible)
                sent_to = _cache(caches, waiting.model, speeds[waiting.thread])
                for step in layout.unanswered(waiting).steps:
                    sent_to.call(
                        Request(system=step.system, messages=step.messages), waiting.started
                    )
            waiting = next(interrupted, None)
        prompt = layout.prompt(call)
        cache = _cache(caches, call.model, call.speed)
        speeds[call.thread] = call.speed
        thread = session.threads[call.thread]
        if call.thread not in started_threads:
            started_threads.add(call.thread)
            if thread.warm_tokens > 0 and prompt.system:
                warm = Request(system=(_cached(prompt.system[0], session.call_ttl(call)),))
                cache.call(warm, call.started - PREWARM_LEAD_SECONDS)
        usage = Usage()
        for step in prompt.steps:
            usage = usage + cache.call(
                Request(system=step.system, messages=step.messages), call.started
            )
        for message in session.request(call):
            for block in message.blocks:
                if block.key not in shown:
                    shown.add(block.key)
                    shown_tokens += block.tokens
        if id(call) in inherited:
            continue  # the parent's call, billed there
        result.calls.append(
            CallResult(
                index=call.index,
                started=call.started,
                model=call.model,
                context_tokens=max(step.tokens for step in prompt.steps),
                usage=usage,
                output_tokens=call.response.tokens + sum(s.output_tokens for s in prompt.steps),
                price=call.price,
            )
        )
    result.shown_tokens = shown_tokens
    result.lost_tokens = layout.lost_tokens
    if isinstance(layout, Rehydrating):
        result.rehydrations = layout.rehydrations
        result.rehydrated_tokens = layout.rehydrated_tokens
    return result


def _comes_first(call: Call, request: Unanswered) -> bool:
    """`call` precedes the interrupted `request` in their thread's chain (it carries fewer
    messages), whatever their clocks say: the request waits for it."""
    return call.thread == request.thread and call.n_messages < request.n_messages


def _cache(caches: dict[tuple[str, Speed], PromptCache], model: str, speed: Speed) -> PromptCache:
    """The cache of a model at a speed, new the first time (an unpriced model's gets the
    reference model's minimum length)."""
    cache = caches.get((model, speed))
    if cache is None:
        minimum = priced(model).min_cacheable_tokens
        cache = caches[model, speed] = PromptCache(model, min_cacheable_tokens=minimum)
    return cache


def _cached(block: cache_sim.Block, ttl: cache_sim.Ttl) -> cache_sim.Block:
    """The block with a breakpoint of `ttl`: the client wrote the warm prefix, with its own
    TTL, whatever the strategy's request asks for later."""
    return replace(block, cache_ttl=ttl)


@dataclass(frozen=True)
class LayoutStrategy:
    """A strategy made of a name and a factory of per-session layouts."""

    name: str
    layout: Callable[[Session], Layout]
    description: str = ""

    def replay(self, session: Session) -> StrategyResult:
        return simulate(self.name, session, self.layout(session))


@dataclass(frozen=True)
class Fidelity:
    """How far modelled usage is from the recorded usage: signed fractions (model/recorded - 1).

    `median_call_error` is the per-call error of median size, its sign kept.
    """

    billed_input_error: float
    median_call_error: float
    call_errors: tuple[float, ...]


def fidelity(session: Session, modelled: StrategyResult) -> Fidelity | None:
    """Compare the `recorded` strategy's modelled usage with what the transcript recorded."""
    if not session.recorded:
        return None
    recorded = [
        model.price.billed_input(call.usage)
        for call, model in zip(session.calls, modelled.calls, strict=True)
        if call.usage is not None
    ]
    errors = tuple(
        _relative(model.billed_input, rec)
        for model, rec in zip(modelled.calls, recorded, strict=True)
    )
    total = sum(recorded)
    by_size = sorted(errors, key=abs)
    median = by_size[len(by_size) // 2] if len(by_size) % 2 else _middle(by_size)
    return Fidelity(_relative(modelled.billed_input, total), median, errors)


def _middle(values: Sequence[float]) -> float:
    """The median of an even-length list sorted by size, keeping the sign of the larger one."""
    low, high = values[len(values) // 2 - 1], values[len(values) // 2]
    size = statistics.fmean((abs(low), abs(high)))
    return size if high >= 0 else -size


def _relative(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else 1.0
    return value / reference - 1.0
