"""The `ours` strategy: the context engine itself, driven by a transcript's information flow.

No second copy of the policy: each call's new messages go into a `ContextEngine` (one
conversation per thread) through replay/feed.py, the mapping `ectx gateway` uses for live
requests too, and the request the engine builds is what the cache model prices.

Honesty about eviction: before each call, the edits its response makes are checked against
what the engine left visible. If an Edit's old_string (or the file it edits) is only in
content the engine evicted, the engine appends that content again (`ensure_visible`), as a
real read_session_file call would, and the call pays for it. docs/cost-model.md ("Our
policy") states the rule.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ephemeral_context.context.blocks import uri_of
from ephemeral_context.context.engine import ContextEngine, EngineConfig
from ephemeral_context.prices import priced
from ephemeral_context.replay.feed import EDIT_TOOLS, feed_message
from ephemeral_context.replay.flow import Call, Session
from ephemeral_context.replay.simulate import LayoutStrategy, Prompt
from ephemeral_context.store import Store


def _scratch_dir() -> str | None:
    """A memory-backed folder for the replay's throwaway store when the system has one
    (the store fsyncs every new blob, which on a busy disk dominates a replay)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


class OursLayout:
    """One engine per session; each thread is one conversation."""

    def __init__(self, session: Session, eviction: bool = True) -> None:
        self.session = session
        self._dir = tempfile.TemporaryDirectory(prefix="ectx-replay-", dir=_scratch_dir())
        self.store = Store(self._dir.name)
        self.engine = ContextEngine(self.store, EngineConfig(eviction=eviction), clock=lambda: 0.0)
        self._fed: dict[str, int] = {}

    @property
    def lost_tokens(self) -> int:
        """Nothing shown is lost: every evicted block stays in the store under its id."""
        return 0

    def close(self) -> None:
        """Release the temporary store (simulate() calls this after the last call)."""
        self.store.close()
        self._dir.cleanup()

    def rehydrated_tokens(self) -> int:
        """Tokens appended again because a later call used evicted content."""
        return sum(self.engine.rehydrated_tokens(conv) for conv in self._fed)

    def prompt(self, call: Call) -> Prompt:
        thread = self.session.threads[call.thread]
        messages = self.session.request(call)
        for message in messages[self._fed.get(call.thread, 0) :]:
            feed_message(self.engine, call.thread, message)
        self._fed[call.thread] = len(messages)
        self._rehydrate_for(call)
        system = f"prefix:{thread.prefix_key}"
        self.engine.build_request(
            call.thread,
            priced(call.model).id,  # an unknown model is laid out as the reference one
            system,
            now=call.started,
            system_tokens=max(1, thread.prefix_tokens + thread.hidden_tokens),
        )
        built = self.engine.last_request(call.thread)
        assert built is not None
        request = built.cache_request
        return Prompt(tuple(request.system), tuple(request.messages))

    def _rehydrate_for(self, call: Call) -> None:
        """Content the response is about to use must be visible: re-append what was evicted."""
        for block in call.response.blocks:
            if block.type != "tool_use" or block.tool not in EDIT_TOOLS:
                continue
            tool_input: Mapping[str, Any] = block.tool_input or {}
            path = str(tool_input.get("file_path", ""))
            needles = [str(tool_input.get("old_string", ""))]
            needles += [
                str(e.get("old_string", ""))
                for e in tool_input.get("edits") or ()
                if isinstance(e, Mapping)
            ]
            self.engine.ensure_visible(call.thread, uri_of(path), [n for n in needles if n])


def ours_layout(session: Session) -> OursLayout:
    return OursLayout(session)


def lossless_layout(session: Session) -> OursLayout:
    """`ours` with eviction off: references, diffs and consolidation only."""
    return OursLayout(session, eviction=False)


OURS_STRATEGIES = (
    LayoutStrategy("ours", ours_layout, "the context engine (eviction on)"),
    LayoutStrategy("ours-lossless", lossless_layout, "the context engine, eviction off"),
)
"""Registered in replay/strategies.py STRATEGIES."""
