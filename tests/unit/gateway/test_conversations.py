"""Which thread a request continues, and what its tool results name, in the gateway's core
(no HTTP: `GatewayCore.prepare` on request bodies, a real engine over a store on disk)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.context.fetching import FETCH_ROOT, READ_SESSION_FILE
from ephemeral_context.gateway import GatewayCore
from ephemeral_context.gateway import core as gateway_core
from ephemeral_context.gateway.conversations import working_directory
from ephemeral_context.gateway.core import Plan
from ephemeral_context.model.secrets import SecretPolicy
from ephemeral_context.store import Store

SERENA = "mcp__plugin_serena_serena__"
ENVIRONMENT = (
    "# Environment\nYou have been invoked in the following environment: \n"
    " - Primary working directory: /w/here\n - Is a git repository: false\n"
)
TOOLS = [
    {
        "name": SERENA + name,
        "description": name,
        "input_schema": {"type": "object", "properties": {}},
    }
    for name in ("read_file", "activate_project")
]


@pytest.fixture
def core(tmp_path: Path) -> Iterator[GatewayCore]:
    store = Store(tmp_path / "store")
    yield GatewayCore(ContextEngine(store))
    store.close()


def request(
    messages: list[dict[str, Any]], environment: str = ENVIRONMENT, session: str = "s-1"
) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "system": [{"type": "text", "text": "You are a coding agent.\n" + environment}],
        "tools": TOOLS,
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": session})},
    }


def call(use_id: str, tool: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": use_id, "name": SERENA + tool, "input": tool_input}],
    }


def answer(use_id: str, result: str) -> dict[str, Any]:
    content = json.dumps({"result": result})
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use_id, "content": content}],
    }


def read(use_id: str, path: str) -> list[dict[str, Any]]:
    return [call(use_id, "read_file", relative_path=path), answer(use_id, f"# {path}\nx = 1")]


def files(core: GatewayCore, plan: Any) -> list[str]:
    assert isinstance(plan, Plan), plan
    return sorted(view.uri for view in core.engine.file_views(plan.thread.conv))


def test_serenas_paths_resolve_where_the_branch_left_off(core: GatewayCore) -> None:
    """Before any activation a relative path is under the working directory the system prompt
    names; a branch from before the activation resolves under it still, not under the
    project its source activated later."""
    shared = [{"role": "user", "content": "tidy the store"}, *read("r1", "src/a.js")]
    activated = "The project with name 'shop' at /w/shop is activated."
    first = [*shared, call("p1", "activate_project", project="shop"), answer("p1", activated)]
    first += read("r2", "src/b.js")
    assert files(core, core.prepare(request(first), {})) == [
        "file:///w/here/src/a.js",
        "file:///w/shop/src/b.js",
    ]
    branch = core.prepare(request([*shared, *read("r3", "src/c.js")]), {})
    assert len(core.engine.conversations()) == 2
    assert files(core, branch) == ["file:///w/here/src/a.js", "file:///w/here/src/c.js"]
    # a branch after the activation resolves under it, whatever its source did since;
    # one whose prompt names no directory keeps its source's
    other = "The project with name 'kiosk' at /w/kiosk is activated."
    later = [*first, call("p2", "activate_project", project="kiosk"), answer("p2", other)]
    core.prepare(request([*later, *read("r4", "src/d.js")]), {})
    after = core.prepare(request([*first, *read("r5", "src/e.js")], environment=""), {})
    assert "file:///w/shop/src/e.js" in files(core, after)
    before = core.prepare(request([*shared, *read("r6", "src/f.js")], environment=""), {})
    assert "file:///w/here/src/f.js" in files(core, before)


async def test_with_no_working_directory_each_relative_path_stays_one_file_of_its_own(
    core: GatewayCore,
) -> None:
    """No directory in the system prompt and no activation: the project Serena's paths are
    under is unknown, and a guessed one could make two files one (a re-read then answered
    "unchanged" from another file's text). So a relative path stays relative: one file per
    path however it is spelled, never another path's, and its reference fetches it back."""
    text = "\n".join(f"def f{i}(x):\n    return x * {i}" for i in range(60))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for use_id, path in (("r1", "src/a.js"), ("r2", "lib/a.js"), ("r3", "./src/a.js")):
        messages += [call(use_id, "read_file", relative_path=path), answer(use_id, text)]
    plan = core.prepare(request(messages, environment=""), {})
    assert isinstance(plan, Plan)
    assert files(core, plan) == ["file://lib/a.js", "file://src/a.js"]
    results = {
        block["tool_use_id"]: json.dumps(block["content"])
        for message in plan.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    assert "return x * 59" in results["r2"]  # the same text in another file: read whole
    [item_id] = {view.item_id for view in core.engine.file_views(plan.thread.conv)}
    assert results["r3"].startswith(f'"unchanged since [[file:{item_id}]]')
    assert await core.answer_hydrations(plan, hydrate(item_id))
    assert "return x * 59" in json.dumps(hydrated(plan))


@pytest.mark.parametrize(
    ("system", "directory"),
    [
        (ENVIRONMENT, "/w/here"),
        ("<env>\nWorking directory: /w/old\nIs directory a git repo: Yes\n</env>", "/w/old"),
        ("You are a coding agent.", None),
        ("Output style: say 'Working directory: /a' first.\n" + ENVIRONMENT, "/w/here"),
    ],
)
def test_the_working_directory_is_read_from_each_releases_environment_section(
    system: str, directory: str | None
) -> None:
    assert working_directory(system) == directory


def hydrate(item_id: str) -> list[dict[str, Any]]:
    """An upstream answer that only calls the hydration tool."""
    call = {
        "type": "tool_use",
        "id": "h1",
        "name": READ_SESSION_FILE["name"],
        "input": {"id": item_id},
    }
    return [call]


def hydrated(plan: Plan) -> dict[str, Any]:
    """The answer the gateway gave the hydration call, as the next upstream request sends it."""
    results: list[dict[str, Any]] = [
        block
        for message in plan.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") == "h1"
    ]
    [result] = results
    return result


async def test_a_conversation_fetches_back_only_what_it_was_shown(core: GatewayCore) -> None:
    """The store behind the gateway is shared by every conversation it carries: an id that
    another session's conversation was shown is unknown to this one, whole or in part."""
    mine = core.prepare(request([{"role": "user", "content": "go"}, *read("r1", "a.js")]), {})
    theirs = core.prepare(
        request([{"role": "user", "content": "other"}, *read("r2", "b.js")], session="s-2"), {}
    )
    assert isinstance(mine, Plan) and isinstance(theirs, Plan)
    [own] = core.engine.file_views(mine.thread.conv)
    [foreign] = core.engine.file_views(theirs.thread.conv)
    assert await core.answer_hydrations(mine, hydrate(own.item_id))
    result = hydrated(mine)
    assert not result.get("is_error") and "# a.js" in json.dumps(result)
    asked = (foreign.item_id, f"[[file:{foreign.item_id}]]", f"{foreign.item_id}@1000000")
    for n, item_id in enumerate(asked):
        # a third session with the first one's history: its fork was shown a.js, not b.js
        other = core.prepare(
            request([{"role": "user", "content": "go"}, *read("r1", "a.js")], session=f"s{n}"), {}
        )
        assert isinstance(other, Plan)
        wanted, _, offset = item_id.partition("@")  # past the end of what it holds
        call = hydrate(wanted)
        call[0]["input"] |= {"offset": int(offset)} if offset else {}
        assert await core.answer_hydrations(other, call)
        refused = hydrated(other)
        assert refused.get("is_error") and "# b.js" not in json.dumps(refused)
        assert "no stored content has id" in json.dumps(refused)  # its size not told either


def test_another_sessions_history_forks_from_it_and_leaves_it_as_it_was(
    core: GatewayCore,
) -> None:
    """A session that opens with another one's messages (a `--fork-session` copy, the same
    first prompt) starts from the prefix they share, in a conversation of its own: the
    other session's goes on where it was, with nothing of the newcomer's in it."""
    shared = [{"role": "user", "content": "tidy the store"}, *read("r1", "src/a.js")]
    first = core.prepare(request(shared), {})
    newcomer = core.prepare(request([*shared, *read("r2", "src/b.js")], session="s-2"), {})
    assert isinstance(first, Plan) and isinstance(newcomer, Plan)
    assert newcomer.thread is not first.thread and newcomer.thread.session == "s-2"
    assert files(core, newcomer) == ["file:///w/here/src/a.js", "file:///w/here/src/b.js"]
    assert files(core, first) == ["file:///w/here/src/a.js"]
    core.release(first)  # accounted: its answer ended
    going_on = core.prepare(request([*shared, *read("r3", "src/c.js")]), {})
    assert isinstance(going_on, Plan) and going_on.thread is first.thread
    assert files(core, going_on) == ["file:///w/here/src/a.js", "file:///w/here/src/c.js"]


def test_the_conversation_used_least_of_too_many_is_dropped_with_its_engine_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway runs for days: past KEPT_CONVERSATIONS, the conversation no request went
    on in for longest is forgotten, the engine's copy too; one that comes back after that
    starts again from its messages. No clock forgets one: a day idle, it goes on."""
    monkeypatch.setattr(gateway_core, "KEPT_CONVERSATIONS", 2)
    now = [1000.0]
    store = Store(tmp_path / "store")
    core = GatewayCore(ContextEngine(store), clock=lambda: now[0])

    def answered(body: dict[str, Any]) -> Plan:
        """A request prepared, then accounted once its answer ended (as server.py does)."""
        plan = core.prepare(body, {})
        assert isinstance(plan, Plan)
        core.record(plan.thread.session, plan.pricing, [], plan)
        return plan

    old = [{"role": "user", "content": "old work"}, *read("r1", "a.js")]
    first = answered(request(old, session="s-old"))
    now[0] += 60
    busy = [{"role": "user", "content": "busy"}, *read("r2", "b.js")]
    answered(request(busy))
    now[0] += 24 * 3600  # a day later, both go on
    old_on = answered(request([*old, *read("r5", "e.js")], session="s-old"))
    assert old_on.thread is first.thread
    assert len(core.engine.conversations()) == 2
    now[0] += 60
    third = [{"role": "user", "content": "third"}, *read("r6", "f.js")]
    answered(request(third, session="s-3"))  # one too many: busy goes
    assert len(core.engine.conversations()) == 2
    assert first.thread.conv in core.engine.conversations()
    now[0] += 60
    back = answered(request([*busy, *read("r3", "c.js")]))
    assert files(core, back) == [
        "file:///w/here/b.js",
        "file:///w/here/c.js",
    ]
    assert len(core.engine.conversations()) == 2
    store.close()


async def test_a_conversation_dropped_on_a_failure_is_not_made_again_by_its_usage(
    core: GatewayCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine failed in a hydration round: the conversation is forgotten, the engine's
    copy too, and the usage the server then records for the calls made does not bring an
    empty one back (which no idle expiry could reach)."""
    plan = core.prepare(request([{"role": "user", "content": "go"}, *read("r1", "a.js")]), {})
    assert isinstance(plan, Plan)
    [view] = core.engine.file_views(plan.thread.conv)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the engine failed")

    monkeypatch.setattr(core.engine, "round_trip", broken)
    assert not await core.answer_hydrations(plan, hydrate(view.item_id))
    usage = {"input_tokens": 10, "output_tokens": 5}
    core.record(plan.thread.session, plan.pricing, [usage], plan)
    assert core.engine.conversations() == []


async def test_a_conversation_with_a_request_in_flight_is_never_the_one_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past KEPT_CONVERSATIONS while one request's answer is still coming (the model fetches
    by id, the gateway asks again): other sessions' requests drop the least used of the
    rest, never that one, whose next upstream call still carries its whole history."""
    monkeypatch.setattr(gateway_core, "KEPT_CONVERSATIONS", 1)
    now = [1000.0]
    store = Store(tmp_path / "store")
    core = GatewayCore(ContextEngine(store), clock=lambda: now[0])
    plan = core.prepare(request([{"role": "user", "content": "go"}, *read("r1", "a.js")]), {})
    assert isinstance(plan, Plan)
    [view] = core.engine.file_views(plan.thread.conv)
    now[0] += 1
    other = [{"role": "user", "content": "other"}, *read("r2", "b.js")]
    assert isinstance(core.prepare(request(other, session="s-2"), {}), Plan)
    assert await core.answer_hydrations(plan, hydrate(view.item_id))
    assert plan.body["messages"][0]["content"][0]["text"] == "go"
    assert "# a.js" in json.dumps(hydrated(plan))
    store.close()


def test_the_conversation_a_request_goes_on_in_is_kept_whatever_the_clock_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock set back (time.time is no monotonic clock): the conversation a request
    goes on in is never the least used, whatever the times say; the next request of it
    goes on in it, and no engine conversation outlives its thread."""
    monkeypatch.setattr(gateway_core, "KEPT_CONVERSATIONS", 2)
    now = [1000.0]
    store = Store(tmp_path / "store")
    core = GatewayCore(ContextEngine(store), clock=lambda: now[0])
    for session in ("s-1", "s-2"):
        plan = core.prepare(request([{"role": "user", "content": session}], session=session), {})
        assert isinstance(plan, Plan)
        core.record(plan.thread.session, plan.pricing, [], plan)
        now[0] += 60
    now[0] -= 3600
    first = [{"role": "user", "content": "go"}, *read("r1", "a.js")]
    plan = core.prepare(request(first, session="s-3"), {})
    assert isinstance(plan, Plan)
    core.record(plan.thread.session, plan.pricing, [], plan)
    again = core.prepare(request([*first, *read("r2", "b.js")], session="s-3"), {})
    assert isinstance(again, Plan) and again.thread is plan.thread
    assert len(core.engine.conversations()) == 2
    store.close()


async def test_an_answer_owed_with_the_clients_results_is_fed_by_the_route_that_asked(
    core: GatewayCore,
) -> None:
    """The last round fetched by the client's Read (a path of the engine's) beside a Read of
    the client's own; the client's next request comes with other tools (no Read now): the
    fetch goes in once, as the round trip that answered it, every call with one result."""
    plan, again = await _owed_beside_the_clients_call(core)
    assert again.thread is plan.thread
    blocks = [
        b for m in again.body["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
    assert sorted(uses) == sorted(results) == ["c", "h", "r1"]


@pytest.mark.xfail(
    strict=True,
    reason="a fetch answered with the client's results goes in as a round trip after the "
    "answer's visible calls (rehydration.round_trip appends), not where the model made it",
)
async def test_an_answer_owed_with_the_clients_results_keeps_the_models_order(
    core: GatewayCore,
) -> None:
    """The model called the engine's path first, then the client's Read: the history sent
    upstream has its calls in that order, as the model made them."""
    _, again = await _owed_beside_the_clients_call(core)
    answer = [m for m in again.body["messages"] if m["role"] == "assistant"][-1]
    assert [b["id"] for b in answer["content"] if b.get("type") == "tool_use"] == ["h", "c"]


async def _owed_beside_the_clients_call(core: GatewayCore) -> tuple[Plan, Plan]:
    """A plan whose last round called the engine's path ("h") and the client's Read ("c"),
    and the plan for the client's next request, which brings its result for "c"."""
    read_tool = {
        "name": "Read",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
    bash = {"name": "Bash", "description": "Run", "input_schema": {"type": "object"}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/a.py"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "r1", "content": "     1\tx = 1\n"}
        ]},
    ]  # fmt: skip
    plan = core.prepare({**request(history), "tools": [read_tool]}, {})
    assert isinstance(plan, Plan)
    [view] = core.engine.file_views(plan.thread.conv)
    last = [
        {"type": "tool_use", "id": id_, "name": "Read", "input": {"file_path": path}}
        for id_, path in (("h", f"{FETCH_ROOT}{view.item_id}"), ("c", "/w/b.py"))
    ]
    shown = [dict(last[1])]
    await core.finish(plan, shown, last)
    core.release(plan)  # accounted: its answer ended
    result = {"type": "tool_result", "tool_use_id": "c", "content": "     1\ty = 2\n"}
    following = [
        *history,
        {"role": "assistant", "content": shown},
        {"role": "user", "content": [result]},
    ]
    again = core.prepare({**request(following), "tools": [bash]}, {})
    assert isinstance(again, Plan)
    return plan, again


async def test_content_not_shown_names_the_call_the_model_has(core: GatewayCore) -> None:
    """A Read the engine does not show (binary here) says how to read a part of it with
    the call the model has: Claude Code's Read at the engine's path, whose offset and
    limit are lines; the gateway answers that call with those lines."""
    read_tool = {
        "name": "Read",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
    use = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/x.bin"}}
    numbered = "     1\tab\x00cd\n     2\tef\n     3\tgh\n"  # as Claude Code's Read shows it
    result = {"type": "tool_result", "tool_use_id": "r1", "content": numbered}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    plan = core.prepare({**request(messages), "tools": [read_tool]}, {})
    assert isinstance(plan, Plan) and plan.body["tools"] == [read_tool]
    shown = plan.body["messages"][-1]["content"][-1]["content"]
    item_id = shown.split("]]")[0].removeprefix("[[file:")
    assert f'Read "{FETCH_ROOT}{item_id}" with offset and limit (lines) reads a part.' in shown
    fetch = {"file_path": f"{FETCH_ROOT}{item_id}", "offset": 2, "limit": 1}
    asked = [{"type": "tool_use", "id": "h1", "name": "Read", "input": fetch}]
    assert await core.answer_hydrations(plan, asked)
    answer = plan.body["messages"][-1]["content"][-1]
    assert (
        answer["tool_use_id"] == "h1" and answer["content"] == f"[{item_id}: lines 2-2 of 3]\nef\n"
    )
    # Claude Code's Read takes offset 0 for the first line (2.1.332, checked with the real
    # CLI): so does the gateway's answer, never an error the model cannot explain
    fetch = {"file_path": f"{FETCH_ROOT}{item_id}", "offset": 0, "limit": 2}
    asked = [{"type": "tool_use", "id": "h2", "name": "Read", "input": fetch}]
    assert await core.answer_hydrations(plan, asked)
    answer = plan.body["messages"][-1]["content"][-1]
    assert answer["content"] == f"[{item_id}: lines 1-2 of 3]\nab\x00cd\nef\n"
    # what it cannot answer is said in the words of the call the model made: Claude Code's
    # Read, not the engine's tool it does not have (it would call that next, and fail)
    reads: list[dict[str, Any]] = [{"file_path": f"{FETCH_ROOT}ffffffff"}, {**fetch, "offset": -2}]
    asked = [_use(f"e{n}", "Read", r) for n, r in enumerate(reads)]
    assert await core.answer_hydrations(plan, asked)
    unknown, negative = (a["content"] for a in plan.body["messages"][-1]["content"][-2:])
    assert unknown.startswith("no stored content has id ffffffff")
    assert negative == "'offset' must be an integer >= 1"


@pytest.mark.parametrize("secret", ["/w/.env", r"C:\w\.env.local", r"\\host\w\id_rsa"])
def test_what_holds_a_secret_stays_as_the_client_sent_it_and_is_never_stored(
    core: GatewayCore, secret: str
) -> None:
    """Claude Code reads a `.env` (a secret by its name, on Windows too: a gateway in WSL
    serves Claude Code on the Windows host) and a Bash output holds an AWS key id (by its
    content): the engine sends both as the client did and keeps them so, never writes them
    to its store on disk, and so has no id that a Read of /.ectx/ would fetch them by
    (model/secrets.py says what a secret is)."""
    read_tool = {
        "name": "Read",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
    bash = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}}}}
    env = "".join(f"{n}\tOPTION_{n}=value-{n}\n" for n in range(1, 400)) + "400\tDB=hunter2\n"
    key = "".join(f"line {n}\n" for n in range(400)) + "AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\n"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "check the settings"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": secret}},
                {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "env"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "r1", "content": env},
                {"type": "tool_result", "tool_use_id": "b1", "content": key},
            ],
        },
    ]
    plan = core.prepare({**request(messages), "tools": [read_tool, bash]}, {})
    assert isinstance(plan, Plan)
    sent = [b["content"] for b in plan.body["messages"][-1]["content"]]
    assert sent == [env, key]
    store = core.engine.store
    assert isinstance(store, Store)
    stored = [store.get(e.id).text for e in store.entries()]
    assert not [text for text in stored if "hunter2" in text or "AKIA" in text]


def test_the_models_write_of_a_secret_is_never_stored(core: GatewayCore) -> None:
    """The model writes a `.env` (a secret by its name) and a module holding a GitHub token
    (by its content): its calls go upstream as the client sent them, and neither content is
    written to the store, where a Read of /.ectx/ could fetch it by id."""
    tools = [
        {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {}}}},
        {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {}}}},
    ]
    settings = "".join(f"OPTION_{n}=value-{n}\n" for n in range(300)) + "DB=hunter2\n"
    token = "ghp_" + "a1B2" * 10
    module = "".join(f"VALUE_{n} = {n}\n" for n in range(300)) + f"TOKEN = {token!r}\n"
    writes = [("w1", "/w/.env", settings), ("w2", "/w/config.py", module)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "write the settings"}]
    for use_id, path, content in writes:
        write = {"file_path": path, "content": content}
        done = f"File created successfully at: {path}"
        result = {"type": "tool_result", "tool_use_id": use_id, "content": done}
        messages += [
            {"role": "assistant", "content": [_use(use_id, "Write", write)]},
            {"role": "user", "content": [result]},
        ]
    plan = core.prepare({**request(messages), "tools": tools}, {})
    assert isinstance(plan, Plan)
    sent = [m["content"][0]["input"]["content"] for m in plan.body["messages"][1::2]]
    assert sent == [settings, module]
    store = core.engine.store
    assert isinstance(store, Store)
    stored = [store.get(e.id).text for e in store.entries()]
    assert not [text for text in stored if "hunter2" in text or token in text]


def _use(use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": tool_input}


async def test_the_users_secret_patterns_are_never_stored_nor_fetched(tmp_path: Path) -> None:
    """The hosted gateway follows the editor's `secretPatterns` as they are now: a file they
    name is sent as the client sent it and never stored, and one stored before they named it
    is refused to a fetch by id, as a read of it would be now (both went by the built-in
    names only)."""
    patterns: list[str] = ["*.conf"]
    with Store(tmp_path / "store") as store:
        core = GatewayCore(
            ContextEngine(store), secrets=lambda: SecretPolicy.configured(patterns, [])
        )
        conf = "".join(f"option_{n} = {n}\n" for n in range(300)) + "password = hunter2\n"
        messages = [
            {"role": "user", "content": "go"},
            call("r1", "read_file", relative_path="/w/app.conf"),
            answer("r1", conf),
            *read("r2", "/w/a.js"),
        ]
        plan = core.prepare(request(messages), {})
        assert isinstance(plan, Plan)
        assert not [e for e in store.entries() if "hunter2" in store.get(e.id).text]
        [view] = core.engine.file_views(plan.thread.conv)
        patterns.append("a.js")
        assert await core.answer_hydrations(plan, hydrate(view.item_id))
        refused = json.dumps(hydrated(plan))
        assert "x = 1" not in refused and "matches the secret pattern 'a.js'" in refused


async def test_a_request_beside_another_in_its_thread_never_carries_its_fetches(
    core: GatewayCore,
) -> None:
    """Two requests with the same messages at once (a retry beside its first try): the
    second is forked where the first began, so the round of fetches the first is given
    goes upstream with the first only (it went with both)."""
    messages = [{"role": "user", "content": "go"}, *read("r1", "a.js")]
    first = core.prepare(request(messages), {})
    assert isinstance(first, Plan)
    [view] = core.engine.file_views(first.thread.conv)
    assert await core.answer_hydrations(first, hydrate(view.item_id))
    second = core.prepare(request(messages), {})
    assert isinstance(second, Plan)
    assert "h1" in json.dumps(first.body) and "h1" not in json.dumps(second.body)
    assert second.thread is not first.thread
    core.release(first)
    core.release(second)
    again = core.prepare(request([*messages, {"role": "assistant", "content": "ok"}]), {})
    assert isinstance(again, Plan) and again.thread in (first.thread, second.thread)


async def test_a_retry_after_a_round_its_client_never_received_is_forked_before_it(
    core: GatewayCore,
) -> None:
    """A round of fetches, then the client never got the answer (a 429 on the re-ask, the
    client gone): its retry goes from the client's messages, without that round (it was
    sent the round, which the model then saw in every later request)."""
    messages = [{"role": "user", "content": "go"}, *read("r1", "a.js")]
    first = core.prepare(request(messages), {})
    assert isinstance(first, Plan)
    [view] = core.engine.file_views(first.thread.conv)
    assert await core.answer_hydrations(first, hydrate(view.item_id))
    core.release(first)  # its answer ended without reaching the client
    retry = core.prepare(request(messages), {})
    assert isinstance(retry, Plan)
    assert "h1" not in json.dumps(retry.body)
    said = [{"type": "text", "text": "ok"}]
    await core.finish(retry, said, said)
    core.release(retry)
    answer = {"role": "assistant", "content": said}
    answered = [*messages, answer, {"role": "user", "content": "on"}]
    going_on = core.prepare(request(answered), {})
    assert isinstance(going_on, Plan) and going_on.thread is retry.thread


async def test_an_answer_whose_only_blocks_were_the_gateways_comes_back_empty_and_goes_on(
    core: GatewayCore,
) -> None:
    """The model's answer was a fetch only, cut there (max_tokens): the client got an empty
    message, which it sends back; the engine holds the call and its answer, so the
    conversation goes on through it (an empty message of the client's own goes as it came,
    for the API to refuse)."""
    messages = [{"role": "user", "content": "go"}, *read("r1", "a.js")]
    plan = core.prepare(request(messages), {})
    assert isinstance(plan, Plan)
    [view] = core.engine.file_views(plan.thread.conv)
    await core.finish(plan, [], hydrate(view.item_id))
    core.release(plan)
    empty: dict[str, Any] = {"role": "assistant", "content": []}
    again = core.prepare(request([*messages, empty, {"role": "user", "content": "on"}]), {})
    assert isinstance(again, Plan) and again.thread is plan.thread
    assert "h1" in json.dumps(again.body)


@pytest.mark.parametrize(
    ("command", "stored"),
    [
        ("head -5 .env.dev .env.dev.cloudsight", False),
        ("cd /w && git diff packages/app/.env", False),
        ('cat "$HOME/.ssh/id_rsa"', False),
        ("ls -la src", True),
        ("cat > notes.md <<'EOF'\nkeep .env out of git\nEOF", True),  # a heredoc is data
    ],
)
def test_a_shell_command_that_shows_a_secret_file_is_never_stored(
    core: GatewayCore, command: str, stored: bool
) -> None:
    """Claude Code's Bash shows a `.env` (commands of the corpus): its output goes upstream
    as sent and never into the store, as a Read of it (it was stored, fetchable by id)."""
    bash = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}}}}
    output = "".join(f"OPTION_{n}=value-{n}\n" for n in range(400)) + "DB_PASSWORD=hunter2\n"
    shown = {"content": output}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "show the settings"},
        {"role": "assistant", "content": [_use("b1", "Bash", {"command": command})]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b1", **shown}]},
    ]
    plan = core.prepare({**request(messages), "tools": [bash]}, {})
    assert isinstance(plan, Plan)
    store = core.engine.store
    assert isinstance(store, Store)
    held = [e for e in store.entries() if "hunter2" in store.get(e.id).text]
    assert bool(held) == stored
