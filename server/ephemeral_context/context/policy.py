"""The policy: the cost model as pure functions, and `Policy`, one conversation's forecast.

`Policy` owns what the forecast reads (the idle gaps between calls, the thread's size over
the calls, the calls each file was used in) and turns it, once per request, into an
`Outlook`: the gate's prices, the remaining calls `M`, the TTLs, whether the gate may cut
and what a cut may cost, and the chance a file is used again. eviction.py and segment.py
decide with that outlook; the functions below are the rules.

Do no harm: every request is also priced twice more (accounting.py): as its recorded-style
twin, with the client's own TTL, and as its kept twin, the same request with nothing
evicted and no round trip. A TTL other than the client's is a bet on the idle gaps to come,
weighed by the kept twins' lead over the recorded-style ones (what the layout and the TTLs
saved, the cuts left out): behind them by more than HARM_TOLERANCE, the breakpoints take
the client's TTL until ahead again. A TTL dearer than the client's (an hour where it asks
for 5 minutes) also pays its premium on what the request writes, for certain: it is sent
only when the bill has that to spare. An eviction cut on a warm cache (a rewrite now, for
reads saved later) is a bet on the calls to come: its rewrite, the part paid for certain,
and the read of the one round trip that fetches its content back should the next call
need it may together be at most what the requests are ahead of the recorded-style twins
plus the tolerance, so a cut that saves nothing after it, or whose content the next call
fetches back, still leaves the bill within the bound but for the content appended again
(cold-cache and budget evictions go on). The request after a re-hydration round trip
makes no new cut. So the bill stays within the tolerance of the twins' but for those
re-appends, the round trips of cold cuts and the gap that finds a 5-minute prefix gone
where the client's hour would have kept it.

Anthropic's prompt cache is a prefix cache. Keeping an item of `s` tokens visible for `M`
more calls costs `rho*s*M` (cache reads); removing or rewriting it costs a one-time
`omega*X`, where `X` is the number of tokens from the last cache-hit boundary at or before
the change to the end of the warm prefix (those tokens must be written again). Evict when
`rho*s*M > omega*X`; after an idle gap longer than the TTL the prefix is cold, `X` costs
nothing extra, and a consolidation is free.

Nothing here looks into the future: `M` is estimated from the calls seen so far, the TTL
from the idle gaps seen so far, and the chance that evicted content is needed again from
the session's own history. The constants are the list-price multipliers and first
principles, never values fitted to a transcript (docs/cost-model.md derives each one).

API:
- `Policy` (one per conversation): `touch(uri, call)`, `sent(thread_tokens, now)`, and
  `outlook(c, now, twin_ttl, cache_ttl, budget, head)` -> an `Outlook` (prices, M, the two TTLs,
  `file_reuse(uri, since)`) for the request about to be built; `horizon(c, budget)`.
- The cost gate, pure: `candidate_value`,
  `plan_eviction(candidates, boundaries, warm_end, m, rates, ttl, max_rewrite)` -> an
  `EvictionPlan`, `round_trip_read`, `fit_budget(candidates, total, limit)`.
- The forecast, pure: `remaining_calls`, `calls_until_full`, `idle_reuse_probability`
  (`reuse_share` from its counts), `expected_wait` (`mean_residual`), both by search
  (`sorted_reuse`), `choose_ttl`, `mean_lifetime`.
- How a Read is shown: `read_form(visible, new, label, count, full_tokens, frame)`,
  `unified_diff`.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from ephemeral_context.cache_sim import TTL_SECONDS, Ttl
from ephemeral_context.documents import split_lines
from ephemeral_context.prices import REFERENCE_MODEL, lookup, priced
from ephemeral_context.prices import Multipliers as Rates

if TYPE_CHECKING:
    from ephemeral_context.context.conversation import Conversation

RATES = lookup(REFERENCE_MODEL).multipliers
"""The multipliers most models have (0.1x reads, 1.25x and 2x writes): the default rates."""

HARM_TOLERANCE = 0.01
"""How far above its recorded-style twins a conversation may bill and still bet (the
product's bound, not a fitted value): a share of the twins' bill so far."""


def remaining_calls(calls_so_far: int, horizon: float = math.inf) -> float:
    """Expected further calls that content added now stays in the context.

    With no prior on a session's length, a session observed at age `t` has further life `R`
    with P(R > r) = t / (t + r) (Gott's delta-t argument: the moment we look is uniformly
    placed in its life). Its mean diverges, but content cannot outlive the context: a
    compaction (or the end of the budget) comes `horizon` calls from now at the latest, so
    the expectation is E[min(R, horizon)] = t * ln(1 + horizon / t). Without a finite
    horizon the median, `t`, is used.
    """
    t = float(max(1, calls_so_far))
    if not math.isfinite(horizon):
        return t
    return max(1.0, t * math.log1p(max(0.0, horizon) / t))


def calls_until_full(budget: int, context: int, growth_per_call: float) -> float:
    """Calls until the context reaches its budget at the growth seen so far (the horizon)."""
    if growth_per_call <= 0:
        return math.inf
    return max(0.0, budget - context) / growth_per_call


def idle_reuse_probability(
    idle: int, retouch_gaps: Sequence[int], open_idles: Sequence[int]
) -> float:
    """Chance content untouched for `idle` calls is used again, from this session's history.

    `retouch_gaps` are the gaps (in calls) between consecutive uses of a file (or of an
    output of one kind, reuse.py) seen so far; `open_idles` are the current idle spans of
    those not used again yet (censored gaps).
    Among episodes that lasted at least `idle` calls, the share that ended with a re-use,
    with Laplace's prior.
    """
    ended = sum(1 for g in retouch_gaps if g >= idle)
    still_open = sum(1 for g in open_idles if g >= idle)
    return reuse_share(ended, still_open)


def reuse_share(ended: int, still_open: int) -> float:
    """`idle_reuse_probability` from its counts: of the episodes that lasted long enough,
    those that `ended` in a re-use and those `still_open`, with Laplace's prior (for a
    caller that keeps the counts by other means than lists)."""
    return (ended + 1) / (ended + still_open + 2)


def expected_wait(idle: int, retouch_gaps: Sequence[int]) -> float | None:
    """Mean calls until the next use of a file idle for `idle` calls, if it is used again.

    The mean residual of the re-use gaps seen so far that lasted at least `idle` calls;
    None when no such gap was seen (then nothing is known about when).
    """
    longer = [g for g in retouch_gaps if g >= idle]
    return mean_residual(idle, sum(longer), len(longer))


def sorted_reuse(idle: int, gaps: Sequence[int], still_open: int) -> tuple[float, float | None]:
    """`idle_reuse_probability` and `expected_wait` from `gaps` in order of length and the
    count of open spans idle for at least `idle` calls: a search, where a pass over every
    other item for each item weighed made a long conversation cubic (reuse.py, files)."""
    longer = bisect.bisect_left(gaps, idle)
    ended = len(gaps) - longer
    return reuse_share(ended, still_open), mean_residual(idle, sum(gaps[longer:]), ended)


def mean_residual(idle: int, total: int, count: int) -> float | None:
    """`expected_wait` from the `count` gaps of at least `idle` calls and their `total`."""
    return max(1.0, (total - idle * count) / count) if count else None


def choose_ttl(
    idle_gaps: Sequence[float],
    calls_so_far: int,
    rates: Rates = RATES,
    horizon: float = math.inf,
    lifetime: float = math.inf,
) -> Ttl:
    """5 minutes or 1 hour for a breakpoint, from the idle gaps seen so far.

    A token written under a 1-hour breakpoint costs `write_1h - write_5m` more, once; every
    idle gap between 5 minutes and 1 hour during its life turns a rewrite (`write_5m`) into
    a read (`read`). The expected number of such gaps is their rate so far times the calls
    the token stays: the remaining calls, or less for content with a shorter `lifetime`
    (thread content the policy evicts).
    """
    short, long = TTL_SECONDS["5m"], TTL_SECONDS["1h"]
    gaps = [g for g in idle_gaps if short < g <= long]
    if not gaps:
        return "5m"
    stays = min(remaining_calls(calls_so_far, horizon), lifetime)
    expected = len(gaps) / max(1, len(idle_gaps)) * stays
    saved = expected * (rates.write_5m - rates.read)
    return "1h" if saved > rates.write_1h - rates.write_5m else "5m"


def mean_lifetime(context_token_calls: float, tokens_added: float) -> float:
    """Calls a token stays in the context on average (Little's law: the mean content
    divided by the rate it arrives): the sum over calls of the context's size, divided by
    all tokens ever added. Infinite before anything was added."""
    return context_token_calls / tokens_added if tokens_added > 0 else math.inf


@dataclass(frozen=True)
class Candidate:
    """A block whose content could be replaced by a placeholder.

    `offset` is the token position where the block starts in the prompt, `freed` the tokens
    eviction removes (content minus placeholder), `reuse` the chance it is needed again
    (then it is appended again at the write price).
    """

    index: int
    offset: int
    freed: int
    reuse: float
    wait: float | None = None
    """Expected calls until the re-use, if it comes (None: unknown, counts as never)."""


@dataclass(frozen=True)
class Boundary:
    """A block boundary where the cache would hit: `index` of the first block after it."""

    index: int
    offset: int


@dataclass(frozen=True)
class EvictionPlan:
    """Which candidates to evict, where the cache breaks, and what it costs and saves."""

    evict: tuple[int, ...]
    cut: int
    tokens_freed: int
    tokens_reprocessed: int
    net_benefit: float


NO_EVICTION = EvictionPlan((), 0, 0, 0, 0.0)


def candidate_value(c: Candidate, m: float, rates: Rates, ttl: Ttl) -> float:
    """Reads saved until the content is needed again (or over `m` calls if it never is),
    minus the expected cost of appending it again."""
    reads = m if c.wait is None else (1 - c.reuse) * m + c.reuse * min(c.wait, m)
    return rates.read * c.freed * reads - c.reuse * rates.write(ttl) * c.freed


def appended_cost(tokens: int, m: float, rates: Rates, ttl: Ttl) -> float:
    """What `tokens` appended to the conversation cost from now on: written once, read at
    each of the `m` calls to come (the route's note, which a first cut or demotion brings)."""
    return tokens * (rates.write(ttl) + rates.read * m)


def plan_eviction(
    candidates: Sequence[Candidate],
    boundaries: Sequence[Boundary],
    warm_end: int,
    m: float,
    rates: Rates = RATES,
    ttl: Ttl = "5m",
    max_rewrite: float = math.inf,
    overhead: int = 0,
) -> EvictionPlan:
    """The best single cut: evict every worthwhile candidate after a warm boundary.

    Evicting anything after boundary `b` rewrites the tokens between `b` and `warm_end`
    (the end of what the cache would have served), less what the eviction removes there:
    that is `X`. Tokens after `warm_end` are written anyway, so a cold cache
    (`warm_end` at or before `b`) makes the rewrite free. Returns the plan with the largest
    positive `sum(value) - omega*X` among those whose rewrite `omega*X` and, on a warm
    cache, one round trip's read (`round_trip_read`) are together at most `max_rewrite`
    (what the policy may bet now), or NO_EVICTION. `overhead`: tokens any cut appends at
    the end (the route's note, when the conversation hides nothing yet), written once and
    read at each call to come.
    """
    values = {c.index: candidate_value(c, m, rates, ttl) for c in candidates}
    appended = appended_cost(overhead, m, rates, ttl)
    worth = sorted((c for c in candidates if values[c.index] > 0), key=lambda c: c.offset)
    if not worth:
        return NO_EVICTION
    best = NO_EVICTION
    for b in sorted(boundaries, key=lambda b: b.offset):
        chosen = [c for c in worth if c.index >= b.index]
        if not chosen:
            continue
        value = sum(values[c.index] for c in chosen)
        freed_in_warm = sum(c.freed for c in chosen if c.offset < warm_end)
        x = max(0, warm_end - b.offset - freed_in_warm)
        rewrite = rates.write(ttl) * x
        if rewrite + round_trip_read(b, warm_end, rates) > max_rewrite:
            continue
        net = value - rewrite - appended
        if net > best.net_benefit:
            best = EvictionPlan(
                tuple(c.index for c in chosen),
                b.index,
                sum(c.freed for c in chosen),
                x,
                net,
            )
    return best


def round_trip_read(cut: Boundary, warm_end: int, rates: Rates) -> float:
    """What a warm cut loses at once if anything it removes is needed at the next call:
    one more request, which reads the warm prefix again (rehydration.py); the twin sends
    none. Cuts on a cold cache (at or after `warm_end`) are not held to it: what they
    remove the twin writes again in this request, which pays for appending it once more
    (the trip's read is not paid for). Nor is the re-append of a warm cut's content: its
    value prices it by its chance of re-use; bounding it too stops the cuts that pay."""
    return rates.read * warm_end if cut.offset < warm_end else 0.0


def fit_budget(
    candidates: Sequence[Candidate],
    total: int,
    limit: int,
    last: frozenset[int] = frozenset(),
) -> tuple[int, ...]:
    """Newest candidates to evict until the prompt fits `limit` (the context budget, or
    the size of the request's recorded-style twin).

    Not a cost decision: a request over the model's context window fails outright, and a
    request larger than its twin breaks the peak's bound. But the order is one: the cut
    nearest the end rewrites least. A conversation at its budget stays there, one call
    after another, and taking the oldest content first rewrote everything after the system
    prompt at every call (the gateway bench: 2.76x the direct client's billed input).
    The candidates in `last` go only once every other one is gone.
    """
    chosen: list[int] = []
    order = sorted(candidates, key=lambda c: c.offset, reverse=True)
    for c in sorted(order, key=lambda c: c.index in last):
        if total <= limit:
            break
        chosen.append(c.index)
        total -= c.freed
    return tuple(chosen)


@dataclass(frozen=True)
class Outlook:
    """What the calls so far say about the rest of the conversation, for one request."""

    rates: Rates
    """The read and write multipliers of the model the last request used."""
    remaining: float
    """`M`: the further calls that content in the context now is expected to stay."""
    ttl: Ttl
    """The TTL of the prefix breakpoints (system, segment)."""
    thread_ttl: Ttl
    """The TTL of the thread breakpoints."""
    max_rewrite: float
    """What an eviction cut on a warm cache may risk now, its rewrite and one round trip's
    read (base-input-token equivalents): the requests' lead over their recorded-style twins
    plus the tolerance, none behind."""
    evicts: bool
    """The cost gate may evict: not in the request after a re-hydration round trip, which
    carries what was fetched for a call the policy already decided on."""
    calls: int
    last_use: Mapping[str, int]
    """The call each file was last used in."""
    retouch_gaps: Sequence[int]
    """Gaps (in calls) between consecutive uses of a file so far."""
    budget: int
    """The most input tokens the request may carry: the context budget, or the model's
    context window when that is smaller (a larger request fails outright)."""
    hedge: bool = False
    """The thread's 5-minute breakpoint is a bet against a 1-hour client: hedge it with a
    1-hour breakpoint on the first block after the warm prefix (the prefix takes an hour
    too), so that a gap between five minutes and an hour rewrites only what this request
    adds after that block, never the whole conversation."""

    def file_reuse(self, uri: str, since: int) -> tuple[float, float | None]:
        """Chance the file is used again and the expected wait, from the other files'
        history (the file's own open span is what is being predicted, so it is not
        evidence); `since` is when it was shown, if it was never used. The rule of
        `idle_reuse_probability` and `expected_wait`, counted by search (`sorted_reuse`)."""
        idle = self.calls - self.last_use.get(uri, since)
        gaps, idles = self._reuse_counts
        still_open = len(idles) - bisect.bisect_left(idles, idle)
        if uri in self.last_use:
            still_open -= 1  # its own span, idle for exactly `idle` calls
        return sorted_reuse(idle, gaps, still_open)

    @cached_property
    def _reuse_counts(self) -> tuple[list[int], list[int]]:
        """The re-use gaps and every file's idle span, each in order: made once per
        outlook, so weighing each file is a search (`sorted_reuse`)."""
        gaps = sorted(self.retouch_gaps)
        return gaps, sorted(self.calls - last for last in self.last_use.values())


@dataclass
class Policy:
    """One conversation's forecast: what it has done so far, and the outlook it gives.

    Nothing here looks ahead: the horizon (calls until the context would fill its budget),
    the TTLs (from the idle gaps and the mean lifetime of thread content so far), the lead
    over the twins (the requests already built) and the chance a file is used again (from
    the gaps between uses of the other files) all come from the calls already built.
    """

    gaps: list[float] = field(default_factory=list)
    """Idle time (seconds) before each request after the first."""
    last_call_time: float | None = None
    context_token_calls: int = 0
    """The thread's size summed over every request built (Little's law numerator)."""
    touches: dict[str, list[int]] = field(default_factory=dict)
    """The calls each file was used in."""

    def touch(self, uri: str, call: int) -> None:
        """The conversation used `uri` in `call`."""
        self.touches.setdefault(uri, []).append(call)

    def outlook(
        self,
        c: Conversation,
        now: float,
        twin_ttl: Ttl,
        cache_ttl: Literal["auto", "5m", "1h"],
        budget: int,
        head: int = 0,
        fallback_ttl: Ttl | None = None,
    ) -> Outlook:
        """The outlook for the request about to be built at `now` (its idle gap counts),
        whose recorded-style twin asks for `twin_ttl` (the client's TTL, 5 minutes while
        unknown); `head` is the tokens of its tool schemas and system prompt;
        `fallback_ttl` (default `twin_ttl`) is what a conversation behind its twins sends
        (while the client's TTL is unknown, that of the cheaper twins' bill)."""
        if self.last_call_time is not None:
            self.gaps.append(max(0.0, now - self.last_call_time))
        rates = priced(c.accounting.model).multipliers
        hedge = False
        until_full = self.horizon(c, budget)
        a = c.accounting
        # The TTL bets are weighed by what the requests with nothing evicted (the kept
        # twins) saved against the recorded-style ones: a cut that lost is no reason to
        # give up the TTL. A warm cut may rewrite what the whole bill has to spare.
        ttl_behind = a.layout_lead < -HARM_TOLERANCE * a.baseline_billed
        spare = max(0.0, a.lead + HARM_TOLERANCE * a.baseline_billed)
        if cache_ttl != "auto":
            ttl = thread_ttl = cache_ttl
        else:
            if ttl_behind:  # send what the twins send until ahead again
                ttl = thread_ttl = fallback_ttl or twin_ttl
            else:
                # Prefix content stays for the rest of the session; thread content stays,
                # on average, as long as Little's law says from this conversation so far.
                ttl = choose_ttl(self.gaps, c.calls, rates, horizon=until_full)
                lifetime = mean_lifetime(self.context_token_calls, c.thread.added_tokens)
                thread_ttl = choose_ttl(
                    self.gaps, c.calls, rates, horizon=until_full, lifetime=lifetime
                )
            # A TTL dearer than the client's pays its premium on what this request writes,
            # for certain: a bet the bill must have to spare (the fallback to an hour while
            # the client's TTL is unknown too: generated sessions found three prompts 301 s
            # apart at 1.201x `recorded`, the last written under the hour).
            written = head + sum(e.tokens for e in c.segment) + c.thread.tokens
            written -= c.thread.cache.warm_end
            premium = (rates.write("1h") - rates.write(twin_ttl)) * max(0, written)
            if premium > spare:
                if rates.write(ttl) > rates.write(twin_ttl):
                    ttl = twin_ttl
                if rates.write(thread_ttl) > rates.write(twin_ttl):
                    thread_ttl = twin_ttl
            # A 5-minute thread against a 1-hour client is hedged (`Outlook.hedge`): the
            # hour on the prefix and on the request's first new block costs what the
            # client pays there, and keeps a gap from finding all but the tail gone.
            hedge = twin_ttl == "1h" and thread_ttl == "5m"
            if hedge:
                ttl = "1h"
        retouch_gaps: list[int] = []
        for uses in self.touches.values():
            calls = sorted(set(uses))
            retouch_gaps.extend(b - a for a, b in itertools.pairwise(calls))
        return Outlook(
            rates,
            remaining_calls(c.calls, until_full),
            ttl,
            thread_ttl,
            spare,
            not a.continues,
            c.calls,
            {uri: max(uses) for uri, uses in self.touches.items()},
            retouch_gaps,
            budget,
            hedge,
        )

    def horizon(self, c: Conversation, budget: int) -> float:
        """Calls until the context would fill its budget, at the growth so far of what it
        was shown (before any eviction)."""
        shown = sum(b.tokens for b in c.thread.baseline)
        built = c.accounting.last_built
        current = built.total_tokens if built else shown
        return calls_until_full(budget, current, shown / max(1, c.calls))

    def sent(self, thread_tokens: int, now: float) -> None:
        """A request was built at `now` with a thread of `thread_tokens`."""
        self.context_token_calls += thread_tokens
        self.last_call_time = now


ReadForm = Literal["reference", "diff", "full"]
NO_NEWLINE = "\n\\ No newline at end of file\n"


def unified_diff(old: str, new: str, label: str) -> str:
    """A unified diff of two versions, as the model would see it. The last line of a file
    that ends without a line end is marked as diff marks it: with a newline alone, adding
    one looked like no change at all, and the file like one that ends with it."""
    lines = difflib.unified_diff(split_lines(old), split_lines(new), label, label, n=2)
    return "".join(
        line if line.endswith("\n") else line + ("\n" if line.endswith("\r") else NO_NEWLINE)
        for line in lines
    )


def read_form(
    visible: str | None,
    new: str,
    label: str,
    count: Callable[[str], int],
    full_tokens: int | None = None,
    frame: Callable[[str], str] = lambda diff: diff,
) -> tuple[ReadForm, str]:
    """How to show a Read: a reference if the model sees this text, else a diff, as
    `frame` words it for the model, when that counts fewer tokens than the full answer
    (`full_tokens`, by default `new`'s), else the full answer."""
    if visible is not None and visible == new:
        return "reference", ""
    if visible is None:
        return "full", new
    shown = frame(unified_diff(visible, new, label))
    if count(shown) < (count(new) if full_tokens is None else full_tokens):
        return "diff", shown
    return "full", new
