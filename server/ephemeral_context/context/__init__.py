"""The context engine: ledger (items, limits), policy (cost gate, TTL), layout (request shape).

`ContextEngine` (engine.py) ties them together for the server, the agent loop and the `ours`
replay strategy; it is a facade over one module per idea (thread, intake, reads, eviction,
segment, rehydration, policy, accounting, items), listed in engine.py's docstring.

API:
- `ContextEngine`: the facade (engine.py).
- `EngineConfig`: its limits and switches (state.py).
"""

from ephemeral_context.context.engine import ContextEngine, EngineConfig

__all__ = ["ContextEngine", "EngineConfig"]
