"""The `ectx` command: parses arguments and hands off to the core modules.

Each subcommand is one small function that imports what it needs, so `ectx --help`
stays fast and a broken optional part never stops the others from running.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ephemeral_context import __version__


def build_parser() -> argparse.ArgumentParser:
    """The whole command line in one place, so `--help` is complete everywhere."""
    parser = argparse.ArgumentParser(
        prog="ectx",
        description="Ephemeral Context: keep each file once, send references, evict by cost.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output on stderr (-vv for debug)"
    )
    parser.add_argument("--log-file", help="write logs to this file instead of stderr")
    parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    return parser


def _configure_logging(verbose: int, log_file: str | None) -> None:
    """Logs go to stderr or a file, never stdout: stdout is the LSP channel under `serve`."""
    level = logging.WARNING - 10 * min(verbose, 2)
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    logging.basicConfig(level=level, handlers=[handler], format="%(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.log_file)
    result: int = args.handler(args)
    return result
