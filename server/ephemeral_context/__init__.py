"""Ephemeral Context: a language server that owns what an AI coding assistant sends to Claude.

API:
- `__version__`: the package version (pyproject reads it from here).
"""

__version__ = "0.1.0"
