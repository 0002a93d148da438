"""The replay plot: context tokens per call and cumulative billed input, per strategy.

Calls of several sessions are laid end to end, in report order. matplotlib runs with the
Agg backend, so no display is needed.

API:
- `plot(report, path)`: write the figure.
"""

from __future__ import annotations

from itertools import accumulate
from pathlib import Path

from ephemeral_context.replay.report import Report


def plot(report: Report, path: Path) -> Path:
    """Write the figure to `path` (PNG, or any format matplotlib knows by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report.sessions[0].strategies) if report.sessions else []
    figure, (context_axis, billed_axis) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    for name in names:
        calls = [c for s in report.sessions for c in s.strategies[name].calls]
        x = range(1, len(calls) + 1)
        context_axis.plot(x, [c.context_tokens for c in calls], label=name, linewidth=1.2)
        billed = list(accumulate(c.billed_input for c in calls))
        billed_axis.plot(x, billed, label=name, linewidth=1.2)
    start = 0
    for session in report.sessions[:-1]:  # dotted lines where one session ends
        start += len(session.session.calls)
        for axis in (context_axis, billed_axis):
            axis.axvline(start + 0.5, color="grey", linestyle=":", linewidth=0.8)
    context_axis.set_ylabel("context tokens per call")
    billed_axis.set_ylabel("cumulative billed input\n(base-token equivalents)")
    billed_axis.set_xlabel("call")
    sessions = len(report.sessions)
    context_axis.set_title(f"Replay of {sessions} session{'s' if sessions != 1 else ''}")
    for axis in (context_axis, billed_axis):
        axis.grid(alpha=0.3)
        axis.legend(loc="upper left", fontsize="small")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
