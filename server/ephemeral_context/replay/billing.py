"""Who billed a session: Anthropic's prompt cache, something else, or nobody on record.

Recorded usage can only be checked against Anthropic's cache rules when it came from them.
Sessions sent through other gateways (glm-4.7 behind an Anthropic-compatible endpoint, for
one) record usage that Anthropic's cache cannot produce: cache reads when nothing was ever
written, a read larger than any prefix written or read before it, no cache counts at all
(every usage Anthropic returns has both; a gateway or an export may drop them), or no input
at all (a request holds at least its prompt; a gateway that does not count says 0). A call of a
model that is no Claude model (glm-5) was billed by whoever served it, whatever its usage
looks like. Such a session is
"other": strategies are still compared under Anthropic's rules, fidelity is not claimed.

API:
- `classify(session)`: a `Billing`: Anthropic, other, or none on record.
"""

from __future__ import annotations

from enum import StrEnum

from ephemeral_context.prices import parse_model
from ephemeral_context.replay.flow import Session

READ_SLACK = 1.25
READ_SLACK_TOKENS = 4096
"""How far a read may exceed every prefix the transcript shows cached before it counts as
impossible: Claude Code makes calls it does not record (a side request on the same prefix
writes too), so real sessions read up to about 18% (7K tokens) more than they show written."""


class Billing(StrEnum):
    ANTHROPIC = "anthropic"
    OTHER = "other"
    NONE = "none"


def classify(session: Session) -> Billing:
    """How the session's recorded usage was billed (see the module docstring)."""
    if not session.recorded:
        return Billing.NONE
    usages = [call.usage for call in session.calls if call.usage is not None]
    copied = [call.usage for call in session.inherited if call.usage is not None]
    if not all(usage.cache_counted for usage in [*usages, *copied]):
        return Billing.OTHER  # a fork's copies too: they size the history its calls replay
    if not all(usage.total_input_tokens for usage in usages):
        return Billing.OTHER
    if any(parse_model(model) is None for model in session.models):
        return Billing.OTHER
    reads = sum(u.cache_read_input_tokens for u in usages)
    writes = sum(u.cache_creation_input_tokens for u in usages)
    if reads and not writes:
        return Billing.OTHER
    cached: dict[str, int] = {}
    seen_threads: set[str] = set()
    for call in session.calls:
        usage = call.usage
        assert usage is not None
        first_of_thread = call.thread not in seen_threads
        seen_threads.add(call.thread)
        known = cached.get(call.model, 0)
        limit = known * READ_SLACK + READ_SLACK_TOKENS
        if not first_of_thread and usage.cache_read_input_tokens > limit:
            return Billing.OTHER
        cached[call.model] = max(
            known, usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        )
    return Billing.ANTHROPIC
