"""Regular expressions as Python's `re` reads them, matched by `regex`, which can stop one
that backtracks without end (`timeout=`) and lets go of the GIL while it matches.

Patterns come from the model (`search`) and from transcripts (a Serena regex edit the
replay applies): either may be written to backtrack for hours.

API:
- `compile_pattern(text, flags)`: the pattern, read as `re` reads it.
- `time_left(deadline)`: the `timeout=` that keeps several matches within one deadline.
"""

from __future__ import annotations

import re
import time
import warnings

import regex

_REPEAT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
"""A brace `re` reads as a repeat ({3}, {2,}, {,4}, {2,4}); any other brace is a literal."""


def compile_pattern(text: str, flags: int = 0) -> regex.Pattern[str]:
    """The model's pattern as Python's `re` reads it (what the tool's description promises),
    matched by `regex`, which can stop a search that backtracks without end (`timeout`):
    what `re` refuses is refused (regex.error, with `re`'s reason); a brace `re` takes
    literally stays literal (`regex` reads `{e}` as a fuzzy match), and so does a `[`
    inside a set (`regex` reads `[[:alpha:]]` as a POSIX class). `flags`: `re`'s flags
    (`regex` gives DOTALL, MULTILINE and IGNORECASE the same values)."""
    try:
        with warnings.catch_warnings():  # re's FutureWarning on "[[": the reading is kept
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(text, flags)
    except (re.error, OverflowError, RecursionError) as error:  # a{10**20}, 3,000 nested groups
        raise regex.error(str(error) or type(error).__name__) from None
    out: list[str] = []
    at, in_set, first = 0, False, 0  # first: where a set's members start ("]" there is one)
    while at < len(text):
        char = text[at]
        if char == "\\":
            out.append(text[at : at + 2])
            at += 2
            continue
        if in_set:
            in_set = char != "]" or at == first
            out.append("\\[" if char == "[" else char)
        elif char == "[":
            in_set, first = True, at + 2 if text[at + 1 : at + 2] == "^" else at + 1
            out.append(char)
        elif char == "{" and not _REPEAT.match(text, at):
            out.append("\\{")
        else:
            out.append(char)
        at += 1
    return regex.compile("".join(out), flags)


def time_left(deadline: float) -> float:
    """Seconds until `deadline` (a `time.monotonic()` value), for `regex`'s `timeout=`;
    TimeoutError once it has passed (a timeout of 0 or less is none at all to `regex`)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left
