"""What the gateway saved: billed input as sent against what the client's own requests cost.

Per Claude Code session: the requests the client made, the billed input (base-input-token
equivalents at the model's list prices, prices.py) of every upstream call made for them as
the upstream's usage reports it, and what the client's own requests would have been billed.
Those were never sent, so the cache model prices them (cache_sim on each client body, one
prompt cache per session and model, at the time the request arrived), scaled by how the
upstream's token count for the request actually sent compares with the cache model's
estimate of it, so both sides count tokens the same way. A request passed through unchanged
costs the same on both sides.

API:
- `Savings`: figures per session.
- `Pricing`: one client request's price, waiting for the upstream's usage.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ephemeral_context.cache_sim import CacheControlError, PromptCache, Usage, usage_from_dict
from ephemeral_context.prices import Geo, Speed, UnknownModelError, priced
from ephemeral_context.request_view import request_from_messages_api

log = logging.getLogger(__name__)


@dataclass
class Figures:
    """One session's numbers (or the total)."""

    requests: int = 0
    passthrough: int = 0
    hydrations: int = 0
    hydration_errors: int = 0
    upstream_calls: int = 0
    billed_input_sent: float = 0.0
    billed_input_direct: float = 0.0

    def add(self, other: Figures) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "passthrough": self.passthrough,
            "upstream_calls": self.upstream_calls,
            "hydrations": self.hydrations,
            "hydration_errors": self.hydration_errors,
            "billed_input_sent": round(self.billed_input_sent, 1),
            "billed_input_direct": round(self.billed_input_direct, 1),
            "saved": round(self.billed_input_direct - self.billed_input_sent, 1),
        }


@dataclass
class Pricing:
    """The cache model's price for one client request, waiting for the upstream's usage."""

    direct: Usage | None
    model: str = ""
    at: float = 0.0
    speed: Speed = Speed.STANDARD
    geo: Geo = Geo.GLOBAL
    direct_tokens: int = 0
    sent_tokens: int = 0


@dataclass
class Savings:
    """Figures per session, and the cache models that price the client's own requests."""

    sessions: dict[str, Figures] = field(default_factory=dict)
    _caches: dict[tuple[str, str], PromptCache] = field(default_factory=dict)

    def figures(self, session: str) -> Figures:
        return self.sessions.setdefault(session, Figures())

    def price_direct(
        self,
        session: str,
        client: Mapping[str, Any],
        sent: Mapping[str, Any] | None,
        now: float,
    ) -> Pricing:
        """Price the client's own request in the cache model (None when it cannot be)."""
        model = str(client.get("model", ""))
        # Fast mode (`speed`) bills a multiple; request_view folds it into the prompt's keys.
        speed = Speed.FAST if client.get("speed") == Speed.FAST else Speed.STANDARD
        geo = Geo.US if client.get("inference_geo") == Geo.US else Geo.GLOBAL
        try:
            cache = self._cache(session, model, now)
            request = request_from_messages_api(client)
            sent_tokens = request_from_messages_api(sent).total_tokens if sent else 0
            usage = cache.call(request, now)
            return Pricing(usage, model, now, speed, geo, request.total_tokens, sent_tokens)
        except (UnknownModelError, CacheControlError) as error:
            log.info("cannot price the direct request in the cache model: %s", error)
            return Pricing(None, model, now, speed, geo)

    def _cache(self, session: str, model: str, now: float) -> PromptCache:
        """The cache model of one session's requests to one model. Making a new one drops
        those whose every entry has expired (sessions idle past their TTLs: they would price
        nothing as read again), so a gateway running for weeks keeps the live ones only."""
        cache = self._caches.get((session, model))
        if cache is None:
            self._caches = {
                key: kept
                for key, kept in self._caches.items()
                if any(expiry > now for expiry, _, _ in kept.entries.values())
            }
            cache = self._caches[(session, model)] = PromptCache(model)
        return cache

    def record(self, session: str, pricing: Pricing, usages: list[Any], passthrough: bool) -> None:
        """One client request answered, with the usage of every upstream call made for it."""
        figures = self.figures(session)
        figures.requests += 1
        figures.passthrough += int(passthrough)
        sent = [usage_from_dict(u) for u in usages if u]
        figures.upstream_calls += len(usages)
        price = priced(pricing.model, pricing.at or None).served(pricing.speed, pricing.geo)
        billed = sum(price.billed_input(u) for u in sent)
        figures.billed_input_sent += billed
        if passthrough or pricing.direct is None or not sent:
            figures.billed_input_direct += billed
            return
        first = sent[0].total_input_tokens
        scale = first / pricing.sent_tokens if pricing.sent_tokens else 1.0
        figures.billed_input_direct += price.billed_input(pricing.direct) * scale

    def total(self) -> Figures:
        total = Figures()
        for figures in self.sessions.values():
            total.add(figures)
        return total

    def as_json(self) -> dict[str, Any]:
        return {
            "sessions": {name: f.as_json() for name, f in self.sessions.items()},
            "total": self.total().as_json(),
        }
