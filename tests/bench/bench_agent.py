"""The agent loop on a scripted coding session: what it sends, what that costs, how long it takes.

A scripted model (tests/fakes, real HTTP, usage from cache_sim) works on copies of four of
this project's own modules: it reads two files, searches, reads one symbol, re-reads a file,
edits it, reads it again, re-reads the other file and outlines a third (10 model calls).
Figures: billed input (base-token equivalents: uncached + 1.25 x cache writes + 0.1 x cache
reads) as the API reported it, what the engine's own cache model predicted for the same
requests, and the engine's recorded-style baseline for the same session (every read
re-sent in full, one breakpoint at the end); how many file contents
actually went out; and the wall time of the whole ask on localhost (median of 5 runs),
which is the loop's own overhead since the fake answers at once.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ephemeral_context.cache_sim import Usage, usage_from_dict
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model.agent import AgentSettings, run_agent
from ephemeral_context.model.client import ClientSettings, ModelClient
from ephemeral_context.model.secrets import Workspace
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.prices import lookup
from ephemeral_context.store import Store

from tests.fakes.messages_api import FakeMessagesAPI

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["store.py", "documents/mirror.py", "cache_sim.py", "tokens.py"]
MODEL = "claude-sonnet-4-6"
PRICE = lookup(MODEL)
RUNS = 5


def script() -> list[Any]:
    def call(name: str, **args: Any) -> dict[str, Any]:
        return {"tool_use": [{"name": name, "input": args}]}

    edit = {
        "path": "store.py",
        "old_string": "MIN_ID_LENGTH = 8",
        "new_string": "MIN_ID_LENGTH = 10",
    }
    return [
        call("read_file", path="store.py"),
        call("read_file", path="documents/mirror.py"),
        call("search", pattern=r"def put\("),
        call("read_symbol", path="store.py", symbol="Store.put"),
        call("read_file", path="store.py"),
        {
            "text": "Raising the minimum id length.",
            "tool_use": [{"name": "edit_file", "input": edit}],
        },
        call("read_file", path="store.py"),
        call("read_file", path="documents/mirror.py"),
        call("outline", path="cache_sim.py"),
        "Done: ids are at least 10 hex digits now.",
    ]


async def one_run(work: Path) -> dict[str, float]:
    workspace = work / "ws"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    for name in SOURCES:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "server" / "ephemeral_context" / name, workspace / name)
    originals = {name: (workspace / name).read_text() for name in SOURCES}
    with FakeMessagesAPI(script()) as api, Store(work / f"store-{time.monotonic_ns()}") as store:
        engine = ContextEngine(store)
        client = ModelClient(ClientSettings(api_key="bench", base_url=api.base_url))
        env = ToolEnv(workspace=Workspace.of([workspace]), mirror=DocumentMirror(), engine=engine)
        started = time.perf_counter()
        result = await run_agent(
            "Raise the minimum id length to 10",
            engine=engine,
            conversation="bench",
            client=client,
            env=env,
            settings=AgentSettings(model=MODEL),
        )
        elapsed = time.perf_counter() - started
        await client.close()
        recorded = await api.wait_for_message_requests(result.calls)
        ours = sum((usage_from_dict(r.usage) for r in recorded if r.usage), Usage())
        bills = engine.conversation("bench").accounting
        last = json.dumps(recorded[-1].body)
        sent = sum(last.count(json.dumps(text)[1:-1]) for text in originals.values())
        return {
            "calls": result.calls,
            "ours": PRICE.billed_input(ours),
            "ours_engine": PRICE.billed_input(bills.ours),
            "baseline": PRICE.billed_input(bills.baseline),
            "contents": sent,
            "seconds": elapsed,
            "hit": ours.cache_read_input_tokens / max(1, ours.total_input_tokens),
        }


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        runs = [asyncio.run(one_run(Path(tmp) / f"run{n}")) for n in range(RUNS)]
    first = runs[0]
    seconds = statistics.median(r["seconds"] for r in runs)
    saving = 1 - first["ours"] / first["baseline"]
    agreement = first["ours_engine"] / first["ours"] - 1
    rows = [
        ("billed input, ours (API usage via cache_sim)", f"{first['ours']:,.0f} base-token eq."),
        (
            "billed input, ours as the engine's cache model predicted it",
            f"{first['ours_engine']:,.0f} ({agreement:+.1%})",
        ),
        ("billed input, recorded-style baseline (engine)", f"{first['baseline']:,.0f}"),
        ("saved", f"{saving:.0%}"),
        ("cache hit rate (read / all input)", f"{first['hit']:.0%}"),
        ("full file contents in the last request", f"{first['contents']:.0f} (each read once)"),
        ("wall time of the whole ask on localhost", f"{seconds * 1000:.0f} ms (median of {RUNS})"),
    ]
    head = (
        f"Scripted session: {first['calls']:.0f} model calls over copies of {', '.join(SOURCES)} "
        "(reads, a search, a symbol, a re-read, an edit, reads after it)."
    )
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return f"{head}\n\n| figure | value |\n|---|---|\n{table}\n"


if __name__ == "__main__":
    print(run())
