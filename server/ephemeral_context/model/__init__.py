"""The model side: Anthropic client, tool schemas and handlers, and the agent loop.

This file stays free of imports so that `ectx --help` and `ectx serve` can read the
default model without loading the anthropic SDK.

API:
- `DEFAULT_MODEL`: the model an ask uses unless configured.
"""

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model an ask uses unless configured (claude-sonnet-4-5 is deprecated, EOL 2026-11-30)."""
