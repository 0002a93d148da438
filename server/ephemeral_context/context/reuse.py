"""Re-use: how often this conversation uses again the output it was shown, by kind and age.

The cost gate needs the chance that an output it may cut is needed again. Counting only
what was fetched back after a cut learns from the cuts alone: a session whose responses
keep quoting the outputs they can still see teaches it nothing until a cut loses. So every
response is checked against every output the conversation holds (tool results, large tool
inputs, skills, memories, fetched content; files have their own history, policy.py): a run
of 3 lines or 200 characters it repeats (quotes.py: the conversation's one index, shared with
re-hydration), visible or evicted, is a use of that item in that call. The estimate for an
item idle for `idle` calls is the file rule (policy.idle_reuse_probability): among the idle
spans of items of its kind seen so far that lasted at least as long, the share that ended in
a use, with Laplace's prior.

API:
- `tracked(tb)`: the selection of outputs whose re-use is learnt.
- `ReuseLog`: `observe(thread, index, texts, call)` records the uses a response's texts make;
  `estimate(tb, now)` -> (chance, expected wait) for a thread block.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from ephemeral_context.context.kinds import EVICTABLE, BlockKind
from ephemeral_context.context.policy import sorted_reuse
from ephemeral_context.context.quotes import QuoteIndex
from ephemeral_context.context.thread import ThreadBlock


def tracked(tb: ThreadBlock) -> bool:
    """An output whose re-use this log learns: evictable, stored, not a file's copy."""
    return tb.item_id is not None and tb.uri is None and tb.kind in EVICTABLE


@dataclass
class ReuseLog:
    """The items a conversation was shown (kind, first call) and the calls that used them."""

    kinds: dict[str, BlockKind] = field(default_factory=dict)
    uses: dict[str, list[int]] = field(default_factory=dict)
    """Per item: the call it was first shown in, then every call whose response used it."""
    members: dict[BlockKind, list[str]] = field(default_factory=dict)
    """The items of each kind (so an estimate reads its kind's items, not every item)."""
    gaps: dict[BlockKind, list[int]] = field(default_factory=dict)
    """The gaps between consecutive uses of the items of each kind, grown with `uses`, in
    order of length."""
    last: dict[BlockKind, list[int]] = field(default_factory=dict)
    """The last use of each item of each kind, in order: an estimate counts the items idle
    for long enough in one search, where reading every item for every block a call weighs
    made a long conversation's replay cubic in its length."""

    def observe(
        self, thread: Sequence[ThreadBlock], index: QuoteIndex, texts: Sequence[str], call: int
    ) -> None:
        """A response written before `call` wrote `texts`: the items it quotes (found by the
        conversation's quote `index`) were used."""
        for tb in thread:
            if tracked(tb) and tb.item_id not in self.kinds:
                assert tb.item_id is not None
                self.kinds[tb.item_id] = tb.kind
                self.uses[tb.item_id] = [tb.call]
                self.members.setdefault(tb.kind, []).append(tb.item_id)
                bisect.insort(self.last.setdefault(tb.kind, []), tb.call)
        for quote in index.quotes(thread, texts, tracked):
            item = thread[quote.index].item_id
            if item is not None and self.uses[item][-1] < call:
                kind, before = self.kinds[item], self.uses[item][-1]
                bisect.insort(self.gaps.setdefault(kind, []), call - before)
                last = self.last[kind]
                del last[bisect.bisect_left(last, before)]
                bisect.insort(last, call)
                self.uses[item].append(call)

    def estimate(self, tb: ThreadBlock, now: int) -> tuple[float, float | None]:
        """Chance `tb` is used again and the expected wait, from the other items of its
        kind (its own open span is what is being predicted)."""
        kind = self.kinds.get(tb.item_id or "", tb.kind)
        history = self.uses.get(tb.item_id or "", [tb.call])
        idle = now - history[-1]
        still_open = bisect.bisect_right(self.last.get(kind, []), now - idle)  # idle as long
        if tb.item_id in self.kinds:
            still_open -= 1  # its own open span is what is being predicted
        return sorted_reuse(idle, self.gaps.get(kind, []), still_open)
