"""The context engine: ledger (items, limits), policy (cost gate, TTL), layout (request shape).

`ContextEngine` (engine.py) ties them together for the server, the agent loop and the `ours`
replay strategy.
"""

from ephemeral_context.context.engine import ContextEngine, EngineConfig

__all__ = ["ContextEngine", "EngineConfig"]
