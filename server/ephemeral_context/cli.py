"""The `ectx` command: parses arguments and hands off to the core modules.

Each subcommand is one small function that imports what it needs, so `ectx --help`
stays fast and a broken optional part never stops the others from running.

API:
- `main(argv)`: the `ectx` command; `build_parser()` lists its subcommands.
"""

from __future__ import annotations

import argparse
import errno
import io
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeAlias

from ephemeral_context import __version__
from ephemeral_context.store import StoreError

Subcommands: TypeAlias = Callable[..., argparse.ArgumentParser]
"""What build_parser hands each `_add_<name>_command`: `add_parser` of its subparsers (so no
code names argparse's private action class)."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line in one place, so `--help` is complete everywhere."""
    parser = argparse.ArgumentParser(
        prog="ectx",
        description="Ephemeral Context: keep each file once, send references, evict by cost.",
        epilog="Run `ectx COMMAND --help` for what a command does and its options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more log output on stderr (-vv for debug)",
    )
    parser.add_argument("--log-file", help="write logs to this file instead of stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True).add_parser
    _add_serve_command(sub)
    _add_ask_command(sub)
    _add_status_command(sub)
    _add_store_command(sub)
    _add_index_command(sub)
    _add_replay_command(sub)
    _add_outline_command(sub)
    _add_gateway_command(sub)
    return parser


def _add_serve_command(sub: Subcommands) -> None:
    serve = sub(
        "serve",
        help="run the language server (stdio unless --tcp)",
        description="Run the Ephemeral Context language server for an editor: JSON-RPC on "
        "stdin/stdout, or on a TCP socket with --tcp. Logs go to stderr, or to a file with "
        "`ectx --log-file FILE serve`.",
    )
    serve.add_argument(
        "--tcp", metavar="HOST:PORT", type=_host_port, help="listen on TCP instead of stdio"
    )
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=64 * 1024 * 1024,
        help="larger JSON-RPC messages are discarded and answered with an error (default 64 MiB)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="a message body with no byte for this long is discarded with an error (default 30)",
    )
    serve.add_argument(
        "--gateway",
        metavar="PORT",
        type=_port,
        default=_env_port("ECTX_GATEWAY_PORT"),
        help="also host `ectx gateway` on 127.0.0.1:PORT over the server's engine, so the "
        "editor's status shows what Claude Code sessions through it saved (default "
        "$ECTX_GATEWAY_PORT: how an editor that starts the server passes it)",
    )
    serve.set_defaults(handler=_serve)


def _env_port(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


def _port(value: str) -> int:
    """A TCP port number (0: any free one); out of range, argparse's one-line error (the
    listening socket had raised OverflowError: a traceback)."""
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, got {value!r}")
    return int(value)


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def _serve(args: argparse.Namespace) -> int:
    from ephemeral_context.lsp.server import SERVER, serve

    result: int = serve(
        SERVER,
        tcp=args.tcp,
        max_message_bytes=args.max_message_bytes,
        body_timeout=args.body_timeout,
        gateway_port=args.gateway,
    )
    return result


def _add_gateway_command(sub: Subcommands) -> None:
    gateway = sub(
        "gateway",
        help="a local Messages API gateway for Claude Code, through the context engine",
        description="Run a local Messages API that sends each request of Claude Code (or any "
        "client of the API) through the context engine, then upstream. Point the client at "
        "it with ANTHROPIC_BASE_URL=<the URL printed first>. Its auth headers go upstream "
        "only. GET /ectx/status reports what was saved.",
    )
    gateway.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    gateway.add_argument(
        "--port", type=_port, default=8787, help="the port (default 8787; 0 picks a free one)"
    )
    gateway.add_argument(
        "--upstream",
        metavar="URL",
        help="the real Messages API (default $ECTX_UPSTREAM_URL, else https://api.anthropic.com; "
        "never $ANTHROPIC_BASE_URL)",
    )
    gateway.set_defaults(handler=_gateway)


def _gateway(args: argparse.Namespace) -> int:
    from ephemeral_context.gateway import run_gateway, upstream_url

    return run_gateway(args.host, args.port, upstream_url(args.upstream))


def _add_ask_command(sub: Subcommands) -> None:
    from ephemeral_context.model import DEFAULT_MODEL

    ask = sub(
        "ask",
        help="ask Claude about a workspace; the answer streams to stdout, edits go to disk",
        description="Ask Claude about the files under --workspace. The model reads and edits "
        "them through the context engine; its answer streams to stdout and its edits are "
        "written to disk. Needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN). Files that look "
        "like secrets are withheld unless named with --allow-secret. Exits 0 for a finished "
        "answer, 3 for one that stopped before its end (--max-steps reached, max_tokens, a "
        "refusal), 1 for a model error, 130 for Ctrl-C.",
    )
    ask.add_argument("prompt", help="what to ask")
    ask.add_argument("--workspace", default=".", help="the folder the model may read and edit")
    ask.add_argument("--model", default=DEFAULT_MODEL, help=f"model id (default {DEFAULT_MODEL})")
    ask.add_argument(
        "--allow-secret",
        action="append",
        default=[],
        metavar="PATH",
        help="send this secret-looking file anyway (repeatable; a path from the current "
        "folder, or a glob)",
    )
    ask.add_argument("--skills", metavar="DIR", help="folder of SKILL.md skills")
    ask.add_argument("--max-steps", type=int, default=20, help="model calls at most (default 20)")
    ask.add_argument(
        "--stall-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="a model call that sends nothing for this long is retried (default 60)",
    )
    ask.set_defaults(handler=_ask)


def _ask(args: argparse.Namespace) -> int:
    from ephemeral_context.model.terminal import run_ask

    return run_ask(
        args.prompt,
        args.workspace,
        args.model,
        allow_secret=args.allow_secret,
        skills=args.skills,
        max_steps=args.max_steps,
        stall_timeout=args.stall_timeout,
        out=sys.stdout,
        err=sys.stderr,
    )


def _add_status_command(sub: Subcommands) -> None:
    status = sub(
        "status",
        help="what the store holds: entries, bytes, tokens, expired, data directory",
        description="Show what the persist-once store holds and where it lives "
        "($EPHEMERAL_CONTEXT_HOME, else the platform's user data directory).",
    )
    status.add_argument(
        "--entries", type=int, metavar="N", default=0, help="also list the N most recent entries"
    )
    status.set_defaults(handler=_status)


def _status(args: argparse.Namespace) -> int:
    from ephemeral_context.store_command import run_status

    return run_status(args.entries)


def _add_store_command(sub: Subcommands) -> None:
    store = sub(
        "store",
        help="maintain or read the persist-once store",
        description="Maintain or read the persist-once store.",
    )
    actions = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    gc = actions.add_parser(
        "gc",
        help="remove expired content, orphan blobs and stale temp files",
        description="Remove the content of entries not read within the expiry time (their ids "
        "then answer 'expired'), blobs no entry names and leftovers of interrupted writes.",
    )
    gc.set_defaults(handler=_store_gc)
    get = actions.add_parser(
        "get",
        help="print stored content by id (whole or a character range)",
        description="Print the text stored under ID to stdout; --offset/--limit in characters.",
    )
    get.add_argument("id", help="a store id (hex, as shown by `ectx index` or `ectx status`)")
    get.add_argument("--offset", type=int, default=0, help="first character (default 0)")
    get.add_argument("--limit", type=int, help="at most this many characters")
    get.set_defaults(handler=_store_get)


def _store_gc(args: argparse.Namespace) -> int:
    from ephemeral_context.store_command import run_gc

    return run_gc()


def _store_get(args: argparse.Namespace) -> int:
    from ephemeral_context.store_command import run_get

    return run_get(args.id, args.offset, args.limit)


def _add_index_command(sub: Subcommands) -> None:
    index = sub(
        "index",
        help="load files into the mirror and the store, and show what they hold",
        description="Read files through the document mirror into the persist-once store and "
        "print each file's id, bytes and estimated tokens, plus the files skipped and why "
        "(binary, too large, unreadable). Without PATH: the current repository's tracked "
        "files (git ls-files), or the current directory outside git.",
    )
    index.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or directories to load"
    )
    index.add_argument(
        "--max-bytes",
        type=int,
        default=1_000_000,
        help="files larger than this are skipped (default 1000000)",
    )
    index.add_argument(
        "--summary", action="store_true", help="print only the totals, not one row per file"
    )
    index.set_defaults(handler=_index)


def _index(args: argparse.Namespace) -> int:
    from ephemeral_context.store_command import run_index

    return run_index(args.paths, args.max_bytes, summary=args.summary)


def _add_replay_command(sub: Subcommands) -> None:
    replay = sub(
        "replay",
        help="replay Claude Code transcripts under several context strategies, side by side",
        description="Replay Claude Code session transcripts through the prompt-cache model "
        "under each strategy and compare context size, billed input, dollars, cache hits and "
        "what stays retrievable. With no PATH: your newest ~/.claude/projects sessions "
        "(sub-agents included) if any, else the bundled demo session; the table ends with "
        "what the sessions cost at list prices and what each strategy would have cost.",
    )
    replay.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="session file or folder"
    )
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.add_argument("--plot", type=Path, metavar="FILE.png", help="write a plot")
    replay.add_argument("--demo", action="store_true", help="replay the bundled demo session")
    replay.add_argument(
        "--project",
        metavar="NAME",
        help="only your sessions in projects whose path contains NAME (a folder name or path)",
    )
    replay.add_argument(
        "--since",
        type=_since,
        metavar="WHEN",
        help="only your sessions changed since WHEN: a date (2026-11-30), date-time or age (7d)",
    )
    replay.add_argument(
        "--limit",
        type=_positive,
        metavar="N",
        help="newest sessions to take (default 10)",
    )
    replay.add_argument(
        "--fit-tokens",
        action="store_true",
        help="fit the token-estimate constants to the usage the transcripts record",
    )
    replay.set_defaults(handler=_replay)


def _positive(text: str) -> int:
    """A count of at least one (`--limit`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {value}")
    return value


def _since(text: str) -> datetime:
    from ephemeral_context.replay.projects import parse_since

    try:
        return parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _replay(args: argparse.Namespace) -> int:
    from ephemeral_context.replay.command import run

    return run(
        args.paths,
        as_json=args.json,
        plot_path=args.plot,
        demo=args.demo,
        fit_tokens=args.fit_tokens,
        project=args.project,
        since=args.since,
        limit=args.limit,
    )


def _add_outline_command(sub: Subcommands) -> None:
    outline = sub(
        "outline",
        help="a file's synopsis (one line per definition), or one symbol's text",
        description="Print the synopsis of PATH: a header (path, language, lines, estimated "
        "tokens) and one line per definition with its line range, kind, qualified name and "
        "signature. PATH::Qualified.name prints that definition's text instead (Name#2 for "
        "the second of several same-named definitions).",
    )
    outline.add_argument("reference", metavar="PATH[::SYMBOL]", help="a file, or file::Symbol")
    outline.add_argument("--json", action="store_true", help="print JSON instead of text")
    outline.add_argument(
        "--language", metavar="LANGUAGE_ID", help="LSP language id, when the file name says nothing"
    )
    outline.set_defaults(handler=_outline)


def _outline(args: argparse.Namespace) -> int:
    from ephemeral_context.syntax.command import run_outline

    return run_outline(
        args.reference, as_json=args.json, language_id=args.language, out=sys.stdout, err=sys.stderr
    )


def _configure_logging(verbose: int, log_file: str | None) -> None:
    """Logs go to stderr or a file, never stdout: stdout is the LSP channel under `serve`."""
    level = logging.WARNING - 10 * min(verbose, 2)
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    logging.basicConfig(
        level=level, handlers=[handler], format="%(levelname)s %(name)s: %(message)s"
    )


EXIT_INTERRUPTED = 130
"""The status after Ctrl-C, as a shell reports a command SIGINT ended (128 + 2)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.log_file)
    if sys.stdout is None:  # started with it closed (`>&-`): what is printed goes nowhere
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's)
    # stdout escapes what it cannot encode, as stderr does: half a surrogate pair read from
    # JSON, in a model id the table shows, would otherwise end the command mid-table
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        result: int = args.handler(args)
        if not sys.stdout.closed:  # the language server closes it at `exit`
            sys.stdout.flush()  # here, where a reader gone away is handled, not at exit
    except StoreError as error:  # busy, read-only, full, an unknown id: one line, status 1
        print(f"ectx: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback from wherever it landed
        print("ectx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ectx ... | head`: the reader has all it wanted
        _discard_stdout()
        return 1
    except OSError as error:
        if error.errno not in _FULL:
            raise
        print(f"ectx: cannot write the output: {error.strerror}", file=sys.stderr)
        _discard_stdout()  # what is still buffered would fail again at exit
        return 1
    return result


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
"""A full disk or quota under `ectx ... > file` (the store's own writes say so as StoreError)."""


def _discard_stdout() -> None:
    """Point stdout at the null device, so that the output still buffered when the reader
    went away is not written (and fails again) when the interpreter exits."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
