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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_serve_command(sub)
    return parser


def _add_serve_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run the language server (stdio unless --tcp)")
    serve.add_argument(
        "--tcp", metavar="HOST:PORT", type=_host_port, help="listen on TCP instead of stdio"
    )
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=64 * 1024 * 1024,
        help="larger JSON-RPC messages are discarded and answered with an error (stdio)",
    )
    serve.set_defaults(handler=_serve)


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def _serve(args: argparse.Namespace) -> int:
    from ephemeral_context.lsp.server import SERVER, serve

    result: int = serve(SERVER, tcp=args.tcp, max_message_bytes=args.max_message_bytes)
    return result


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
