"""`ectx --help` and every subcommand's `--help` say what the command is for.

argparse shows a subcommand's `help=` only in its parent's list; the subcommand's own
`--help` shows its `description=` or nothing. Walking the parser catches a new subcommand
added without one (or without a handler, which would fail only when it is run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest
from ephemeral_context import __version__
from ephemeral_context.cli import build_parser, main


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every subcommand below `parser` with its words (`("store", "gc")`), depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name), child
                yield from commands(child, (*path, name))


COMMANDS = {(): build_parser(), **dict(commands(build_parser()))}


def is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def test_every_subcommand_has_a_description_and_every_leaf_a_handler() -> None:
    assert {words[0] for words in COMMANDS if words} >= {"serve", "ask", "status", "store"}
    undescribed = [" ".join(words) for words, parser in COMMANDS.items() if not parser.description]
    unhandled = [
        " ".join(words)
        for words, parser in COMMANDS.items()
        if is_leaf(parser) and not callable(parser.get_default("handler"))
    ]
    assert (undescribed, unhandled) == ([], [])


@pytest.mark.parametrize("words", list(COMMANDS), ids=lambda words: " ".join(words) or "ectx")
def test_help_prints_usage_and_description(
    words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*words, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(" ".join(("usage: ectx", *words)))
    description = COMMANDS[words].description or ""
    assert " ".join(description.split()[:3]) in " ".join(out.split())


def test_version_from_the_module_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ectx {__version__}"
