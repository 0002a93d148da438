"""Search benchmark: the model's `search` over a large real tree, and what the timeout costs.

The tree is a copy of the Python standard library (its tests and installed packages left
out: files nobody here wrote, in a folder outside any git work tree). Three figures per
pattern: the whole `search_workspace` call (walk, reads, secret checks, matching; it stops
at SEARCH_MAX_MATCHES lines, so the pattern that matches nothing reads every file), and the
matching alone over the same lines read once, with the `regex` module as the search calls
it (per line, `concurrent=True` and a timeout: what keeps a runaway pattern from stopping
the server) against Python's `re` in the same process (what it used before: no timeout,
the GIL held). The ratio is the price of that safety per line.
"""

from __future__ import annotations

import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model import search
from ephemeral_context.model.secrets import SecretPolicy, Workspace
from ephemeral_context.patterns import compile_pattern

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
LEFT_OUT = ("site-packages", "dist-packages", "test", "tests", "idlelib", "__pycache__")
PATTERNS = [r"zz_no_such_name_zz", r"class \w+\(Exception\)", r"def main\("]
ROUNDS = 3


def _tree(folder: Path) -> Path:
    """The standard library's Python files, copied under `folder`."""
    tree = folder / "stdlib"
    shutil.copytree(STDLIB, tree, ignore=shutil.ignore_patterns(*LEFT_OUT, "*.pyc", "*.so"))
    return tree


def _lines(tree: Path) -> list[str]:
    """Every line of the tree's Python files, read once."""
    lines: list[str] = []
    for path in sorted(tree.rglob("*.py")):
        try:
            lines += path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
    return lines


def _best(job: Callable[[], object]) -> float:
    """The fastest of ROUNDS runs, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return min(times)


def run() -> str:
    with tempfile.TemporaryDirectory() as folder:
        return _measured(_tree(Path(folder)))


def _pattern_row(pattern: str, tree: Path, lines: list[str]) -> tuple[str, float, float]:
    """One pattern's table row, its matching time with the timeout, and the whole call's."""
    ours, plain = compile_pattern(pattern), re.compile(pattern)
    workspace, limit = Workspace.of([tree]), search.SEARCH_MATCH_CHARS
    whole = _best(
        lambda: search.search_workspace(workspace, DocumentMirror(), SecretPolicy(), pattern, "")
    )
    guarded = _best(
        lambda: [ours.search(x, 0, limit, concurrent=True, timeout=60.0) for x in lines]
    )
    bare = _best(lambda: [plain.search(x, 0, limit) for x in lines])
    ratio = guarded / bare
    row = f"| `{pattern}` | {whole:.2f} s | {guarded:.3f} s | {bare:.3f} s | {ratio:.1f}x |"
    return row, guarded, whole


def _measured(tree: Path) -> str:
    lines = _lines(tree)
    rows = [
        "| pattern | `search` call | matching, `regex` + timeout | matching, `re` | ratio |",
        "|---|---|---|---|---|",
    ]
    guarded_times, shares = [], []
    for pattern in PATTERNS:
        row, guarded, whole = _pattern_row(pattern, tree, lines)
        rows.append(row)
        guarded_times.append(guarded)
        shares.append(guarded / whole)
    per_line = statistics.median(guarded_times) / len(lines)
    return "\n".join(
        [
            f"{len(lines):,} lines of the standard library's Python files ({STDLIB.name}, its "
            f"tests and installed packages left out); a `search` call stops at "
            f"{search.SEARCH_MAX_MATCHES} matching lines, so only the first pattern, which "
            "matches nothing, makes it read them all.",
            "",
            *rows,
            "",
            f"Matching with the timeout costs about {per_line * 1e6:.1f} µs a line "
            f"({per_line * 1e6:.1f} s per million lines; {shares[0]:.0%} of the call that reads "
            "every file, the rest being the walk, the reads and the secret checks): the price "
            "of a search that a runaway pattern cannot stop. It ends after "
            f"{search.SEARCH_SECONDS:g} s with a note, and the server goes on meanwhile.",
        ]
    )
