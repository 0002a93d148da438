"""Language server figures: start to initialize result, didChange to usage notification on a
10k-line file, and resident memory with 50 files / 5 MB pinned into the context.

Each figure is the median of repeated runs against a real `ectx serve` subprocess over
stdio, with a baseline measured the same way in the same run: a bare pygls server for the
start, a no-op request round trip for the didChange latency, the idle server for memory.
The server runs with a temporary HOME and EPHEMERAL_CONTEXT_HOME.
"""

from __future__ import annotations

import contextlib
import os
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.lsp.raw_rpc import SERVE, RawServer

USAGE = "ephemeralContext/usage"
STARTS = 5
EDITS = 50
BURST = 200
FILES = 50
FILE_BYTES = 99_000  # 50 x 99 kB: just under the ledger's default 5 MB total
BARE_PYGLS = "from pygls.lsp.server import LanguageServer; LanguageServer('bare', '0').start_io()"


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(home), EPHEMERAL_CONTEXT_HOME=str(home / "data"))
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def _initialize_params(root: Path, options: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "capabilities": {},
        "initializationOptions": options or {},
    }


def _time_to_initialize(command: list[str], env: dict[str, str], root: Path) -> float:
    start = time.perf_counter()
    with RawServer.start(env=env, command=command) as server:
        answer = server.request("initialize", _initialize_params(root))
        elapsed = time.perf_counter() - start
        assert "result" in answer, answer
        server.request("shutdown", None)
        server.notify("exit", None)
        server.wait()
    return elapsed


def _big_file(lines: int) -> str:
    return "".join(
        f"def function_{n}(x):\n    return x * {n}  # line {n}\n" for n in range(lines // 2)
    )


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "project"
        root.mkdir()
        env = _env(base / "home")

        ours = [_time_to_initialize(SERVE, env, root) for _ in range(STARTS)]
        bare = [
            _time_to_initialize([sys.executable, "-c", BARE_PYGLS], env, root)
            for _ in range(STARTS)
        ]

        big = root / "big.py"
        text = _big_file(10_000)
        big.write_text(text, encoding="utf-8")
        with RawServer.start(env=env) as server:
            _open_after_initialize(server, _initialize_params(root, {"usageThrottleMs": 0}), big)
            latencies, round_trips = [], []
            for n in range(EDITS):
                line = 5_000 + n
                start = time.perf_counter()
                server.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": big.as_uri(), "version": n + 2},
                        "contentChanges": [
                            {
                                "range": {
                                    "start": {"line": line, "character": 0},
                                    "end": {"line": line, "character": 0},
                                },
                                "text": "# typed\n",
                            }
                        ],
                    },
                )
                server.next_notification("ephemeralContext/usage")
                latencies.append(time.perf_counter() - start)
                start = time.perf_counter()
                server.request("ephemeralContext/status", {})
                round_trips.append(time.perf_counter() - start)

        with RawServer.start(env=env) as server:
            _open_after_initialize(server, _initialize_params(root), big)  # throttle 100 ms
            start = time.perf_counter()
            for n in range(BURST):
                server.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": big.as_uri(), "version": n + 2},
                        "contentChanges": [
                            {
                                "range": {
                                    "start": {"line": 100, "character": 0},
                                    "end": {"line": 100, "character": 0},
                                },
                                "text": "x",
                            }
                        ],
                    },
                )
            server.request("ephemeralContext/status", {})  # every edit has been handled
            burst_handled = time.perf_counter() - start
            with contextlib.suppress(queue.Empty):  # the trailing notification, if still due
                server.next_notification("ephemeralContext/usage", timeout=1.0)
            usage_times = [t for t, m in server.arrivals if m == USAGE and t > start]
            burst_total = usage_times[-1] - start
            sent = len(usage_times)

        files = []
        for n in range(FILES):
            path = root / f"module_{n:02}.py"
            body = "".join(
                f"value_{n}_{i} = {i}  # padding padding padding\n" for i in range(FILE_BYTES // 48)
            )
            path.write_text(body[:FILE_BYTES], encoding="utf-8")
            files.append(path)
        with RawServer.start(env=env) as server:
            server.request("initialize", _initialize_params(root))
            server.notify("initialized", {})
            server.request("ephemeralContext/status", {})
            idle = _rss_kb(server.process.pid)
            for path in files:
                server.notify(
                    "textDocument/didOpen",
                    {
                        "textDocument": {
                            "uri": path.as_uri(),
                            "languageId": "python",
                            "version": 1,
                            "text": path.read_text(encoding="utf-8"),
                        }
                    },
                )
                answer = server.request("ephemeralContext/pin", {"uri": path.as_uri()})
                assert "result" in answer, answer
            status = server.request("ephemeralContext/status", {})["result"]
            loaded = _rss_kb(server.process.pid)
        total_mb = sum(p.stat().st_size for p in files) / 1e6

    start_ms, bare_ms = statistics.median(ours), statistics.median(bare)
    edit, trip = statistics.median(latencies), statistics.median(round_trips)
    return "\n".join(
        [
            "| figure | ours | baseline | ratio |",
            "|---|---|---|---|",
            f"| start to initialize result (median of {STARTS}) | {_ms(start_ms)} | "
            f"{_ms(bare_ms)} (bare pygls server) | {start_ms / bare_ms:.2f}x |",
            f"| didChange to usage notification, 10k-line file (median of {EDITS}, throttle off) "
            f"| {_ms(edit)} | {_ms(trip)} (status request round trip) | {edit / trip:.2f}x |",
            f"| resident memory, {FILES} files / {total_mb:.1f} MB open and pinned "
            f"({status['items']} items, {status['breakdown']['full']:,} tokens full) "
            f"| {loaded / 1024:.0f} MB | {idle / 1024:.0f} MB (idle server) | "
            f"+{(loaded - idle) / 1024:.0f} MB |",
            "",
            f"A burst of {BURST} single-character edits sent back to back with the default "
            f"100 ms throttle: handled in {_ms(burst_handled)}, the last usage notification "
            f"{_ms(burst_total)} after the first edit, {sent} usage notifications in all "
            f"(at most one per 100 ms).",
        ]
    )


if __name__ == "__main__":
    print(run())


def _open_after_initialize(server: RawServer, initialize: dict[str, object], path: Path) -> None:
    """Initialize, open `path` and wait for the usage notification the open sends."""
    server.request("initialize", initialize)
    server.notify("initialized", {})
    document = {"uri": path.as_uri(), "languageId": "python", "version": 1}
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {**document, "text": path.read_text(encoding="utf-8")}},
    )
    server.next_notification("ephemeralContext/usage")
