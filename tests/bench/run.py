"""Run the benchmarks (tests/bench/bench_*.py) and write their figures into docs/benchmarks.md.

Each module exposes `run() -> str`, a Markdown section with its figures. The text lands between
`<!-- bench:NAME -->` and `<!-- /bench:NAME -->` markers, so each benchmark owns its own block
and the prose around the blocks stays as written. `run.py NAME ...` runs only those modules.
"""

from __future__ import annotations

import importlib.util
import platform
import re
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
DOC = BENCH_DIR.parent.parent / "docs" / "benchmarks.md"


def machine_line() -> str:
    import os

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}"
    )


def replace_block(doc: str, name: str, body: str) -> str:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n_Machine: {machine_line()}_\n\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(doc):
        return pattern.sub(lambda _match: block, doc)
    return f"{doc.rstrip()}\n\n## {name}\n\n{block}\n"


def main(names: list[str]) -> int:
    modules = sorted(BENCH_DIR.glob("bench_*.py"))
    doc = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n"
    for path in modules:
        name = path.stem.removeprefix("bench_")
        if names and name not in names:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while it loads
        spec.loader.exec_module(module)
        print(f"== {name}", file=sys.stderr)
        body = module.run()
        print(body)
        doc = replace_block(doc, name, body)
    DOC.write_text(doc, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
