"""Hard inputs for the syntax layer: does the work grow with the input, or with its square?

Each case is an input shape that once took time quadratic in its size (the fix is named in
the test that keeps its result right); the tests check results only, so this is where a
slowdown shows. Every case runs at size n and 2n in this process: the ratio of the two
times is about 2 when the work is linear and about 4 when it is quadratic, whatever the
machine's speed. Plain functions, outlined the same way, are the linear reference.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from ephemeral_context.syntax import IncrementalSyntax, find_symbol, outline_text
from ephemeral_context.syntax.symbols import address

from tests.replace_all import replace_all

REPEAT = 5


@dataclass(frozen=True)
class Case:
    """One input shape: what it is, its size n, and the work done on an input of size k."""

    label: str
    n: int
    work: Callable[[int], object]


def _outline(path: str, text: Callable[[int], str]) -> Callable[[int], object]:
    return lambda k: outline_text(text(k), path)


def _addresses(k: int) -> list[str]:
    text = "def f(): pass\n" * k
    outline = outline_text(text, "twins.py")
    return [address(c, outline) for c in find_symbol(text, outline, "f").candidates]


def _replace_all(k: int) -> object:
    old, edits, new = replace_all(k)
    return IncrementalSyntax(old, "a.py").apply(edits, new)


CASES = [
    Case(
        "plain functions (reference)",
        10_000,
        _outline("plain.py", lambda k: "".join(f"def f{i}(x):\n    return x\n" for i in range(k))),
    ),
    Case(
        "unmatched `(` lines (Python)",
        100_000,
        _outline("brackets.py", lambda k: "def f():\n    pass\n" + "(\n" * k),
    ),
    Case(
        "a run of `#` comment lines (Python)",
        100_000,
        _outline("comments.py", lambda k: "def f():\n    pass\n" + "# c\n" * k + "X = 1\n"),
    ),
    Case(
        "names in one declaration (Java)",
        2_000,
        _outline(
            "K.java",
            lambda k: (
                "class K { static final int " + ", ".join(f"A{i} = {i}" for i in range(k)) + "; }\n"
            ),
        ),
    ),
    Case("same-named definitions, every address (Python)", 10_000, _addresses),
    Case(
        "script blocks (.vue)",
        10_000,
        _outline("Junk.vue", lambda k: "<script>\nvar a;\n</script>\n" * k),
    ),
    Case("unclosed `<script` tags (.vue)", 200_000, _outline("Open.vue", lambda k: "<script " * k)),
    Case("replace-all: one edit per function (Python)", 3_000, _replace_all),
]


def _seconds(work: Callable[[int], object], size: int) -> float:
    """The median of REPEAT timed runs."""
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        work(size)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run() -> str:
    rows = []
    for case in CASES:
        once, twice = _seconds(case.work, case.n), _seconds(case.work, 2 * case.n)
        rows.append(
            f"| {case.label} | {case.n:,} | {once * 1e3:.0f} | {twice * 1e3:.0f} "
            f"| {twice / once:.1f} |"
        )
    return "\n".join(
        [
            f"Each shape at size n and 2n (median of {REPEAT} runs each, in one process): "
            "*2n/n* is about 2 when the work grows with the input, about 4 when it grows with "
            "its square. Outlines from scratch (`outline_text`) unless said. Script blocks "
            "stay above 2: tree-sitter's own parse over thousands of included ranges grows "
            "with their square (10,000 blocks: 0.14 s, 40,000: 2.3 s, past the 2 s parse "
            "budget, so 1 MB of them falls back); a real component has one to three.",
            "",
            "| input | n | n: ms | 2n: ms | 2n/n |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    print(run())
