"""Replay real Claude Code transcripts under several context strategies, through the cache model.

reader.py turns a transcript into an information flow (flow.py: threads, calls, blocks with
their meaning); strategies.py lays that flow out as today's tools would; simulate.py drives
the cache model and gathers the figures; report.py compares strategies across sessions,
parallel.py runs a large batch one file per core.
"""
