"""Random runs of the invariants, with fresh seeds: what CI's fixed examples cannot find.

CI replays the same derandomized examples every run (test_generated.py, test_perturbed.py).
This draws new ones each time, from the same generators, and keeps going past a finding:
each session whose invariants break is printed with the case that rebuilds it, so a bug
can be shrunk and pinned as an `@example`. The do-no-harm bound is reported only above
`--harm` (default 1.05x `recorded`): the smaller excesses are the bets
docs/cost-model.md leaves unbounded ("Known limits").

    python -m tests.property.fuzz generated --examples 3000 --steps 60
    python -m tests.property.fuzz damaged --examples 500 --cut 3000 --damages 6

`damaged` takes the first `--cut` lines of a transcript of the repository or of the shared
traces and corpus (tests/transcripts.py) and one to `--damages` damages
(tests/property/perturb.py). `cut` is not random: every such transcript cut after 15%,
30%, ... 90% of its lines, as sessions end where their users stop (a bet not yet paid back).

    python -m tests.property.fuzz cut --harm 1.01
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ephemeral_context.replay.reader import read_session
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tests.property.invariants import replay_invariants
from tests.property.perturb import damaged, damages
from tests.property.sessions import plans, write_session
from tests.transcripts import found_transcripts

CUT_SHARES = (0.15, 0.3, 0.45, 0.6, 0.75, 0.9)
"""Where `cut` ends each transcript: shares of its lines."""


def findings(path: Path, harm: float) -> dict[str, list[str]]:
    """The invariants `path`'s replay breaks, the do-no-harm bound only above `harm`."""
    session = read_session(path)
    if not session.calls:
        return {}
    found = replay_invariants(session)
    broken = found.broken()
    if found.ours_billed <= harm * found.recorded_billed:
        broken.pop("harm", None)
    return broken


def _run(test: Callable[..., None], examples: int, seed: int | None) -> None:
    run = settings(
        max_examples=examples,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )(test)
    (run if seed is None else hypothesis_seed(seed)(run))()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("generated", "damaged", "cut"))
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--steps", type=int, default=40, help="generated: steps at most")
    parser.add_argument("--cut", type=int, default=400, help="damaged: lines at most")
    parser.add_argument("--damages", type=int, default=3, help="damaged: damages at most")
    parser.add_argument("--harm", type=float, default=1.05)
    parser.add_argument("--seed", type=int, help="the same examples again (default: fresh)")
    args = parser.parse_args(argv)
    found: list[tuple[Any, dict[str, list[str]]]] = []

    def report(case: Any, broken: dict[str, list[str]]) -> None:
        if broken:
            found.append((case, broken))
            print(f"{case!r}\n{broken!r}\n", flush=True)

    with tempfile.TemporaryDirectory(prefix="ectx-fuzz-") as folder:
        if args.kind == "generated":

            @given(plan=plans(args.steps))
            def generated(plan: Any) -> None:
                report(plan, findings(write_session(plan, Path(folder) / "s.jsonl"), args.harm))

            _run(generated, args.examples, args.seed)
        elif args.kind == "cut":
            args.examples = 0
            for source in (p for group in found_transcripts() for p in group):
                text = source.read_text(encoding="utf-8", errors="replace").splitlines()
                for share in CUT_SHARES:
                    path = Path(folder) / source.name
                    path.write_text("\n".join(text[: max(2, int(len(text) * share))]) + "\n")
                    report((str(source), share), findings(path, args.harm))
                    args.examples += 1
        else:
            sources = [p for group in found_transcripts() for p in group]
            lines: dict[Path, list[str]] = {}

            def first_lines(source: Path, cut: int) -> list[str]:
                if source not in lines:
                    text = source.read_text(encoding="utf-8", errors="replace")
                    lines[source] = text.splitlines()
                return lines[source][:cut]

            @given(
                source=st.sampled_from(sources),
                cut=st.integers(20, args.cut),
                hurt=st.lists(damages(), min_size=1, max_size=args.damages),
            )
            def damaged_run(source: Path, cut: int, hurt: list[Any]) -> None:
                path = Path(folder) / source.name
                path.write_bytes(damaged(first_lines(source, cut), hurt))
                report((str(source), cut, hurt), findings(path, args.harm))

            _run(damaged_run, args.examples, args.seed)
    print(f"{len(found)} of {args.examples} examples broke an invariant", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
