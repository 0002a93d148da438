"""The model side: Anthropic client, tool schemas and handlers, and the agent loop."""
