"""A sub-agent's brief: references to what the main agent has seen, against pasting it.

A scripted model (tests/fakes, real HTTP) reads four of this project's own modules, then
delegates a task that pastes 40 lines of one of them. Figures: the input tokens of the
sub-agent's first request as the fake Messages API counted them, against the same request
with the task as written (paste kept) and the four files pasted in, counted by the same
server's count_tokens endpoint; and the tokens the sub-agent then hydrated (it reads one
definition by id range, not the files).
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anthropic
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror
from ephemeral_context.model.agent import AgentSettings, run_agent
from ephemeral_context.model.client import ClientSettings, ModelClient
from ephemeral_context.model.secrets import Workspace
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store

from tests.fakes.messages_api import FakeMessagesAPI, RecordedRequest, Reply, ToolCall

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["store.py", "documents/mirror.py", "cache_sim.py", "tokens.py"]
MODEL = "claude-sonnet-4-6"
PASTED = slice(100, 140)


def task_text(workspace: Path) -> str:
    lines = (workspace / "store.py").read_text().splitlines(keepends=True)
    return f"Is this id handling right?\n{''.join(lines[PASTED])}Answer in two sentences."


def hydrate_pasted(request: RecordedRequest) -> Reply:
    """The sub-agent reads exactly the pasted range, by the reference its brief carried."""
    text = json.dumps(request.body["messages"][0])
    found = re.search(r"read_session_file\('([0-9a-f]+)', offset=(\d+), limit=(\d+)\)", text)
    assert found is not None, "the pasted chunk was not replaced by a reference"
    args = {"id": found[1], "offset": int(found[2]), "limit": int(found[3])}
    return Reply(tool_calls=(ToolCall("read_session_file", args),))


def input_of(request: RecordedRequest) -> int:
    usage = request.usage or {}
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


async def measure(work: Path) -> dict[str, int]:
    workspace = work / "ws"
    workspace.mkdir(parents=True)
    for name in SOURCES:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "server" / "ephemeral_context" / name, workspace / name)
    task = task_text(workspace)
    script: list[Any] = [
        *({"tool_use": [{"name": "read_file", "input": {"path": n}}]} for n in SOURCES),
        {"tool_use": [{"name": "delegate", "input": {"task": task}}]},
        hydrate_pasted,
        "The ids are hex prefixes of the hash; it is right.",
        "Checked: it is right.",
    ]
    with FakeMessagesAPI(script) as api, Store(work / "store") as store:
        engine = ContextEngine(store)
        client = ModelClient(ClientSettings(api_key="bench", base_url=api.base_url))
        env = ToolEnv(workspace=Workspace.of([workspace]), mirror=DocumentMirror(), engine=engine)
        try:
            await run_agent(
                "Check the store's ids",
                engine=engine,
                conversation="bench",
                client=client,
                env=env,
                settings=AgentSettings(model=MODEL),
            )
        finally:
            await client.close()
        recorded = api.message_requests
        sub_first, sub_second = recorded[len(SOURCES) + 1], recorded[len(SOURCES) + 2]
        pasted_body = copy.deepcopy(sub_first.body)
        files = "\n\n".join(f"{n}:\n{(workspace / n).read_text()}" for n in SOURCES)
        pasted_body["messages"][0]["content"] = [
            {"type": "text", "text": f"Task from the main agent:\n{task}\n\n{files}"}
        ]
        sdk = anthropic.Anthropic(api_key="bench", base_url=api.base_url)

        def count(body: dict[str, Any]) -> int:
            keys = ("system", "tools", "messages")
            return sdk.messages.count_tokens(model=MODEL, **{k: body[k] for k in keys}).input_tokens

        try:
            return {
                "brief": count(sub_first.body),
                "pasted": count(pasted_body),
                "reported": input_of(sub_first),
                "hydrated": input_of(sub_second) - input_of(sub_first),
            }
        finally:
            sdk.close()


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        got = asyncio.run(measure(Path(tmp)))
    saved = 1 - got["brief"] / got["pasted"]
    return (
        "| sub-agent's first request | input tokens |\n|---|---:|\n"
        f"| brief with `[[file:<id>]]` references (what is sent) | {got['brief']:,} |\n"
        f"| the same with the four files and the 40-line paste inline | {got['pasted']:,} |\n\n"
        f"The brief carries {saved:.0%} fewer input tokens; the sub-agent then hydrated only "
        f"the pasted range by id (+{got['hydrated']:,} tokens on its next request). "
        f"Both forms counted by the fake Messages API's count_tokens (tests/fakes); the "
        f"usage it reported for the request actually sent: {got['reported']:,}.\n"
    )


if __name__ == "__main__":
    print(run())
