"""Fit tokens.py's constants to the input totals real transcripts record.

Between two consecutive calls of one thread on one model, the recorded input total grows by
exactly the tokens of what was added: the previous response and the new user message. So
each such step is one equation: recorded growth = sum over added blocks of (characters of
the block's kind / chars-per-token of that kind) + a fixed cost per block. Least squares
over every step of every transcript gives the constants; `ectx replay --fit-tokens PATH...`
runs it, and docs/cost-model.md records the result and its error. Steps are used instead of
whole calls because the unrecorded prefix (tools, system prompt) cancels out.

API:
- `fit_paths(paths)`: the fit over transcripts.
- `describe(result)`: the fit as docs/cost-model.md quotes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ephemeral_context.replay.billing import Billing, classify
from ephemeral_context.replay.flow import Call, Session
from ephemeral_context.replay.reader import TranscriptError, read_session
from ephemeral_context.tokens import KINDS, script_counts

SCRIPTS = ("wide", "other")
"""CJK characters, and other non-ASCII ones: each has one cost per character, any kind."""

FEATURES = (*KINDS, *SCRIPTS, "blocks")

TRIM_ROUNDS = 3
TRIM_FACTOR = 4.0
TRIM_FLOOR_TOKENS = 100
"""Steps whose growth the fit cannot explain (Claude Code attached context it did not
record: a skill listing, a re-read file after a compaction) are left out of the next round
when their residual exceeds TRIM_FACTOR times the median residual plus the floor, so that a
few such steps do not pull every constant."""


@dataclass(frozen=True)
class Step:
    """One call-to-call step: characters added per kind, blocks added, recorded growth."""

    path: str
    chars: tuple[float, ...]
    tokens: int


@dataclass(frozen=True)
class TokenFit:
    """Fitted constants and how well they explain the steps they were fitted on."""

    chars_per_token: dict[str, float]
    """Per kind, for ASCII characters."""
    tokens_per_char: dict[str, float]
    """Per script (SCRIPTS), for the non-ASCII characters of every kind."""
    block_overhead: float
    steps: int
    median_step_error: float
    """Median absolute error per step, in tokens."""
    total_error: dict[str, float]
    """Per transcript: (sum of predicted growth) / (sum of recorded growth) - 1."""
    script_error: dict[str, tuple[int, float]]
    """Per dominant script of a step's added text: (steps, median |predicted/recorded - 1|)."""


def steps(session: Session) -> list[Step]:
    """The call-to-call steps of one session (same thread, same model, both recorded)."""
    out: list[Step] = []
    last: dict[str, Call] = {}
    for call in session.calls:
        previous = last.get(call.thread)
        last[call.thread] = call
        if previous is None or previous.model != call.model:
            continue
        if previous.usage is None or call.usage is None:
            continue
        added = session.threads[call.thread].messages[previous.n_messages : call.n_messages]
        chars = dict.fromkeys(FEATURES, 0.0)
        for message in added:
            for block in message.blocks:
                if block.kind not in chars:
                    continue
                cut = len(block.text) - block.joined  # reminders joined in count as prose
                for kind, text in ((block.kind, block.text[:cut]), ("prose", block.text[cut:])):
                    ascii_chars, wide, other = script_counts(text)
                    chars[kind] += ascii_chars
                    chars["wide"] += wide
                    chars["other"] += other
                chars["blocks"] += 1
        growth = call.usage.total_input_tokens - previous.usage.total_input_tokens
        out.append(Step(session.path, tuple(chars[f] for f in FEATURES), growth))
    return out


def fit(all_steps: Sequence[Step]) -> TokenFit:
    """Least-squares constants for the given steps."""
    import numpy as np

    if len(all_steps) < len(FEATURES):
        raise ValueError(f"need at least {len(FEATURES)} call-to-call steps, got {len(all_steps)}")
    features = np.array([s.chars for s in all_steps], dtype=float)
    growth = np.array([s.tokens for s in all_steps], dtype=float)
    used = features.any(axis=0)
    coefficients = np.zeros(len(FEATURES))
    keep = np.ones(len(all_steps), dtype=bool)
    for _ in range(TRIM_ROUNDS + 1):
        coefficients[used] = np.linalg.lstsq(features[keep][:, used], growth[keep], rcond=None)[0]
        residual = np.abs(features @ coefficients - growth)
        keep = residual <= TRIM_FACTOR * float(np.median(residual[keep])) + TRIM_FLOOR_TOKENS
    predicted = features @ coefficients
    totals: dict[str, float] = {}
    for path in dict.fromkeys(s.path for s in all_steps):
        mask = np.array([s.path == path for s in all_steps])
        recorded = float(growth[mask].sum())
        totals[Path(path).name] = float(predicted[mask].sum()) / recorded - 1 if recorded else 0.0
    ratios = {
        kind: round(1 / float(c), 2) if c > 0 else float("inf")
        for kind, c in zip(KINDS, coefficients, strict=False)
    }
    per_char = {
        script: round(float(c), 3)
        for script, c in zip(SCRIPTS, coefficients[len(KINDS) :], strict=False)
    }
    return TokenFit(
        chars_per_token=ratios,
        tokens_per_char=per_char,
        script_error=_script_error(features, predicted, growth),
        block_overhead=round(float(coefficients[-1]), 1),
        steps=len(all_steps),
        median_step_error=float(np.median(np.abs(predicted - growth))),
        total_error=totals,
    )


def dominant_script(chars: Sequence[float]) -> str:
    """ "cjk" when a fifth of a step's characters are CJK, "other" for other non-ASCII, or
    "ascii"."""
    total = sum(chars[: len(KINDS) + len(SCRIPTS)]) or 1.0
    wide, other = chars[len(KINDS)], chars[len(KINDS) + 1]
    if wide / total >= 0.2:
        return "cjk"
    return "other" if other / total >= 0.2 else "ascii"


def _script_error(features: Any, predicted: Any, growth: Any) -> dict[str, tuple[int, float]]:
    import numpy as np

    groups: dict[str, list[float]] = {}
    for row, guess, real in zip(features, predicted, growth, strict=True):
        if real > 0:
            groups.setdefault(dominant_script(row), []).append(abs(guess / real - 1))
    return {name: (len(e), float(np.median(e))) for name, e in sorted(groups.items())}


def fit_paths(paths: Sequence[Path], unreadable: list[str] | None = None) -> TokenFit:
    """Read the transcripts and fit the constants on all their steps together; a file that
    cannot be read is left out, its error added to `unreadable` when given (raised when
    not), and so is a session whose usage Anthropic did not bill (`billing.classify`: a
    gateway's counts are another tokenizer's, or none). ValueError when too few steps are
    left to fit."""
    found: list[Step] = []
    for path in paths:
        try:
            session = read_session(path)
            if classify(session) is Billing.OTHER:
                raise TranscriptError(f"{path}: {NOT_ANTHROPIC}")
            found += steps(session)
        except TranscriptError as error:
            if unreadable is None:
                raise
            unreadable.append(str(error))
    return fit(found)


NOT_ANTHROPIC = "left out of the fit: its usage was not billed by Anthropic (billing other)"


def describe(result: TokenFit) -> str:
    """The fit as text, in the form docs/cost-model.md quotes it."""
    lines = [f"steps: {result.steps}", "chars per token:"]
    lines += [
        f"  {kind}: {ratio}" if ratio != float("inf") else f"  {kind}: not fitted (none seen)"
        for kind, ratio in result.chars_per_token.items()
    ]
    lines.append("tokens per non-ASCII character:")
    lines += [f"  {script}: {cost}" for script, cost in result.tokens_per_char.items()]
    lines.append(f"per-block overhead: {result.block_overhead} tokens")
    lines.append(f"median absolute error per step: {result.median_step_error:.0f} tokens")
    lines.append("median relative error per step, by the script of what was added:")
    lines += [
        f"  {name}: {error:.1%} over {count} steps"
        for name, (count, error) in result.script_error.items()
    ]
    lines += [f"  {name}: summed growth {error:+.1%}" for name, error in result.total_error.items()]
    return "\n".join(lines)
