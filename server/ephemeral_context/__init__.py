"""Ephemeral Context: a language server that owns what an AI coding assistant sends to Claude."""

__version__ = "0.1.0"
