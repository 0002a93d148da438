"""Claude Code itself as the ground truth for `ectx replay`: scripted sessions, call by call.

Each test runs the real Claude Code CLI (tests/claude_code.py) against tests/fakes with a
script for "the model"; Claude Code runs the tools, writes its transcript, and the fake keeps
every request as sent. The reader's reconstruction of that transcript is then compared with
those requests: how many calls, which messages in which order with which roles, which blocks
with which tool ids and what content, the usage each call recorded and the TTL its cache
writes asked for.

What a transcript cannot hold is left out of the comparison, each for a stated reason:
the context reminder Claude Code puts before the first prompt (today's date, CLAUDE.md: it
is part of what the reader infers as the thread's prefix), and in a sub-agent the agent
listing Claude Code adds (a system message, or a reminder after the first tool result for
models before Opus 4.8) that the sub-agent's file never records; before 2.1.154 the skill
listing rides there too, unrecorded. 2.1.332 records all of these (the date and
environment are attachments now), and adds one thing no record holds: a system message
that only carries the turn's `output_config` (a per-turn control), which holds no text.

The reconstruction tests run on three releases: today's (2.1.332, whose attachment records
hold the text and role they were sent as), 2.1.197 (whose records hold neither: the reader
infers them) and 2.1.97, the release that wrote much of ../shared/corpus (attachments as
reminders on every model).
"""

from __future__ import annotations

import json
import shlex
import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.cache_sim import Usage, content_order, usage_from_dict
from ephemeral_context.replay.flow import Block, Call, Replacement, Session, Unanswered
from ephemeral_context.replay.reader import (
    AGENT_LISTING,
    INTERRUPTED,
    SKILL_LISTING,
    read_session,
    takes_system_messages,
)
from ephemeral_context.replay.simulate import fidelity
from ephemeral_context.replay.strategies import STRATEGIES

from tests.claude_code import (
    CURRENT_RELEASE,
    INFERRED_RELEASE,
    OLDER_RELEASE,
    SKILL_TOOL_RELEASE,
    ClaudeCode,
    ClaudeCodeRun,
)
from tests.fakes import FakeMessagesAPI, RecordedRequest
from tests.fakes.messages_api import TurnSource

pytestmark = pytest.mark.e2e

CONTEXT_REMINDER = "<system-reminder>\nAs you answer the user's questions"
"""How Claude Code's context reminder (date, CLAUDE.md) starts: never in the transcript."""

SUB_AGENT_LISTINGS = tuple("<system-reminder>\n" + text for text in (AGENT_LISTING, SKILL_LISTING))
"""Listings a sub-agent is sent as reminders its file never records: the agent listing (a
block of its own or, like the skill listing before 2.1.154, riding on the first result)."""

RELEASES = pytest.mark.parametrize(
    "claude_code", [CURRENT_RELEASE, INFERRED_RELEASE, OLDER_RELEASE], indirect=True
)

OPUS_48 = "claude-opus-4-8"
"""The first model Claude Code sends role "system" messages (2.1.154 and later)."""
SONNET_46 = "claude-sonnet-4-6"
"""A model Claude Code sends no role "system" message, on every release."""
MODELS = pytest.mark.parametrize("model", [OPUS_48, SONNET_46])

RECORDED_RELEASES = (CURRENT_RELEASE, INFERRED_RELEASE, OLDER_RELEASE, SKILL_TOOL_RELEASE)
"""Every release installed here (2.1.22: how much of the corpus was written)."""
EVERY_RELEASE = pytest.mark.parametrize("claude_code", RECORDED_RELEASES, indirect=True)

Shape = list[tuple[str, list[str]]]
"""A request as compared: each message's role and one line per content block."""


def read_turn(path: Path) -> dict[str, Any]:
    return {"tool_use": [{"name": "Read", "input": {"file_path": str(path)}}]}


def write_png(path: Path, width: int = 64, height: int = 64) -> None:
    """A real gradient PNG (Claude Code decodes what Read sends as an image), made with zlib
    and struct: no imaging dependency for one small file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\0" + b"".join(bytes([x * 4 % 256, y * 4 % 256, 128]) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    png = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png)


def _block_line(kind: str, ident: str, body: str) -> str:
    return f"{kind} {ident} {' '.join(body.split())}".rstrip()


def sent_shape(body: Mapping[str, Any], *, sub_agent: bool = False) -> Shape:
    """What Claude Code sent, block by block, without what no transcript holds, parallel
    tool results in the order the API renders them (that of their tool uses), consecutive
    user messages as one (as the API joins them; 2.1.332 sends a re-attached file after a
    compaction as a message of its own). A system message that only carries a per-turn
    control (2.1.332's `output_config`, nothing in it) is no block."""
    shape: Shape = []
    asked: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        role = message["role"]
        if role == "system" and not content:
            continue
        if role == "system":
            text = content if isinstance(content, str) else "".join(b["text"] for b in content)
            if not (sub_agent and text.startswith(AGENT_LISTING)):
                shape.append((role, [_block_line("text", "", text)]))
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if role == "assistant":
            asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
        else:
            blocks = [blocks[i] for i in content_order(blocks, asked)]
        lines = []
        for block in blocks:
            kind = block["type"]
            unrecorded = sub_agent and block.get("text", "").startswith(SUB_AGENT_LISTINGS[0])
            if kind == "text" and not block["text"].startswith(CONTEXT_REMINDER) and not unrecorded:
                lines.append(_block_line("text", "", block["text"]))
            elif kind == "tool_use":
                lines.append(_block_line("tool_use", block["id"], block["name"]))
            elif kind == "tool_result":
                result = block["content"]
                text = (
                    result
                    if isinstance(result, str)
                    else "\n".join(b["text"] for b in result if b["type"] == "text")
                )
                if sub_agent:  # the listings ride at the end of the result
                    for listing in SUB_AGENT_LISTINGS:
                        text = text.split(listing)[0]
                lines.append(_block_line("tool_result", block["tool_use_id"], text))
        if shape and shape[-1][0] == role == "user":
            shape[-1][1].extend(lines)
        else:
            shape.append((role, lines))
    return shape


def _reader_line(block: Block) -> str:
    if block.type == "tool_use":
        return _block_line("tool_use", block.tool_use_id or "", block.tool or "")
    if block.type == "tool_result":
        return _block_line("tool_result", block.tool_use_id or "", block.text)
    return _block_line(block.type, "", block.text)


def read_shape(session: Session, request: Call | Unanswered) -> Shape:
    """The reader's reconstruction of a request, in the same form."""
    shape: Shape = []
    for message in session.request(request):
        if message.role == "system":  # one message: Claude Code joins its attachments
            text = "\n\n".join(block.text for block in message.blocks)
            shape.append(("system", [_block_line("text", "", text)]))
        else:
            shape.append((message.role, [_reader_line(block) for block in message.blocks]))
    return shape


def cache_ttls(body: Mapping[str, Any]) -> set[str]:
    """The TTLs the request's cache_control breakpoints asked for ("5m" when none is named)."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, Mapping):
            control = value.get("cache_control")
            if isinstance(control, Mapping):
                found.add(str(control.get("ttl", "5m")))
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit({k: body.get(k) for k in ("tools", "system", "messages")})
    return found


def assert_reconstructs(
    session: Session, requests: Sequence[RecordedRequest], *, sub_agent: bool = False
) -> None:
    """Call by call: the same requests, the usage the fake billed, the TTL that was asked."""
    assert session.problems == []
    assert len(session.calls) == len(requests)
    for index, (call, request) in enumerate(zip(session.calls, requests, strict=True)):
        assert read_shape(session, call) == sent_shape(request.body, sub_agent=sub_agent), index
        assert call.model == request.body["model"]
        billed = request.usage or {}
        assert call.usage is not None
        assert call.usage.input_tokens == billed["input_tokens"]
        assert call.usage.cache_read_input_tokens == billed["cache_read_input_tokens"]
        assert call.usage.cache_creation_input_tokens == billed["cache_creation_input_tokens"]
        ttl = billed["cache_creation"]
        assert call.usage.ephemeral_1h_input_tokens == ttl["ephemeral_1h_input_tokens"]
        if call.usage.cache_creation_input_tokens:
            written = "1h" if call.usage.ephemeral_1h_input_tokens else "5m"
            assert written in cache_ttls(request.body)


Usages = list[tuple[int, int, int]]
"""Per call: plain input, cache reads, cache writes."""


def replayed_and_billed(
    session: Session, requests: Sequence[RecordedRequest]
) -> tuple[Usages, Usages]:
    """What the `recorded` replay of the session bills, call by call, and what the fake
    billed for the requests Claude Code sent."""
    modelled = [call.usage for call in STRATEGIES["recorded"].replay(session).calls]
    billed = [usage_from_dict(request.usage or {}) for request in requests]
    return [_split(usage) for usage in modelled], [_split(usage) for usage in billed]


def _split(usage: Usage) -> tuple[int, int, int]:
    return usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens


def main_requests(run: ClaudeCodeRun, session_id: str) -> list[RecordedRequest]:
    """The requests of the main session (a sub-agent's carry the same session id header)."""
    main_tools = max(len(request.body.get("tools") or []) for request in run.requests)
    return [
        request
        for request in run.requests
        if request.headers.get("x-claude-code-session-id") == session_id
        and len(request.body.get("tools") or []) == main_tools
    ]


def test_claude_code_runs_against_the_fake_and_writes_a_transcript(
    claude_code: ClaudeCode,
) -> None:
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    run = claude_code.run("What does app.py do?", [read_turn(app), "It prints hello."])

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "It prints hello."
    assert [request.status for request in run.requests] == [200, 200]
    body = run.requests[0].body
    # The request shapes the fake must take as the API does (see tests/fakes).
    assert body["thinking"]["type"] == "adaptive"
    assert "context_management" in body and "output_config" in body
    assert "system" in [message["role"] for message in body["messages"]]
    assert run.transcript.parent.parent == run.projects


@RELEASES
@MODELS
def test_reads_and_edits_are_reconstructed_call_by_call(
    claude_code: ClaudeCode, model: str
) -> None:
    """Opus 4.8 gets attachments as system messages (since 2.1.154); other models, and every
    model before, as reminders in the prompt."""
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    edit = {"file_path": str(app), "old_string": '"hello"', "new_string": '"goodbye"'}
    script: list[TurnSource] = [
        read_turn(app),
        {"tool_use": [{"name": "Edit", "input": edit}]},
        "Done.",
    ]
    run = claude_code.run(
        "Make app.py say goodbye.", script, allowed_tools=("Read", "Edit"), args=("--model", model)
    )
    assert run.returncode == 0, run.stderr
    assert '"goodbye"' in app.read_text(encoding="utf-8")

    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    roles = [m.role for m in session.request(session.calls[0])]
    system = model == OPUS_48 and claude_code.release != OLDER_RELEASE
    assert takes_system_messages(model, claude_code.release) == system
    assert roles == (["user", "system"] if system else ["user"])
    [*_, edited] = [m for m in session.request(session.calls[2]) if m.role == "user"]
    change = edited.blocks[0].file_change
    assert change is not None and change.replacements == (Replacement('"hello"', '"goodbye"'),)


@RELEASES
def test_parallel_reads_are_one_message_each_way(claude_code: ClaudeCode) -> None:
    """Two Reads in one turn: Claude Code links each result to its own tool use and goes on
    from the one written last, so the chain misses a tool use or a result, or both."""
    for name in ("a.py", "b.py"):
        (claude_code.workspace / name).write_text(f"{name[0].upper()} = 1\n", encoding="utf-8")
    reads: list[dict[str, Any]] = [
        {"name": "Read", "input": {"file_path": str(claude_code.workspace / n)}}
        for n in ("a.py", "b.py")
    ]
    run = claude_code.run("Read a.py and b.py.", [{"tool_use": reads}, "Both are 1."])
    assert run.returncode == 0, run.stderr
    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    results = session.request(session.calls[1])[-1].blocks
    # in the order the results were written, which is the order the tools finished
    assert sorted(b.file_view.path for b in results if b.file_view) == sorted(
        r["input"]["file_path"] for r in reads
    )


def test_one_hour_caching_is_what_the_calls_record(claude_code: ClaudeCode) -> None:
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    run = claude_code.run(
        "What is X?", [read_turn(app), "X is 1."], env={"ENABLE_PROMPT_CACHING_1H": "1"}
    )
    assert run.returncode == 0, run.stderr
    assert all(cache_ttls(request.body) == {"1h"} for request in run.requests)
    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    assert all(c.usage and c.usage.ephemeral_1h_input_tokens for c in session.calls)


@RELEASES
@MODELS
def test_a_sub_agent_is_its_own_session_linked_to_its_parent(
    claude_code: ClaudeCode, model: str
) -> None:
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    task = "Read app.py and report what it does."
    agent: dict[str, Any] = {
        "description": "Read app",
        "prompt": task,
        "subagent_type": "general-purpose",
    }
    if claude_code.release == CURRENT_RELEASE:
        # 2.1.332 starts a sub-agent in the background unless told not to: its requests and
        # the main session's next one would race for the scripted turns
        agent["run_in_background"] = False
    script: list[TurnSource] = [
        {"tool_use": [{"name": "Agent", "input": agent}]},
        read_turn(app),  # the sub-agent's turns
        "app.py prints hello.",
        "The sub-agent says it prints hello.",  # the main session again
    ]
    run = claude_code.run(
        "Use an agent to look at app.py.",
        script,
        allowed_tools=("Read", "Agent"),
        args=("--model", model),
    )
    assert run.returncode == 0, run.stderr

    main = read_session(run.transcript)
    [agent_file] = run.subagent_transcripts
    sub = read_session(agent_file)
    assert sub.parent == str(run.transcript) and main.parent is None
    session_id = run.transcript.stem
    ours = main_requests(run, session_id)
    theirs = [r for r in run.requests if r not in ours]
    assert len(ours) == 2 and len(theirs) == 2
    assert_reconstructs(main, ours)
    # 2.1.332 records the listings it sends the sub-agent (attachments with their text)
    assert_reconstructs(sub, theirs, sub_agent=claude_code.release != CURRENT_RELEASE)
    # and both bill what the fake billed, to the token, but for what no file holds: 2.1.197
    # sends Opus 4.8's sub-agent its agent listing as a system message after the first
    # tool result, left after the breakpoint (plain input where the replay writes it)
    for session, requests in ((main, ours), (sub, theirs)):
        replayed, billed = replayed_and_billed(session, requests)
        if session is sub and claude_code.release == INFERRED_RELEASE and model == OPUS_48:
            assert [sum(u) for u in replayed] == [sum(u) for u in billed]
            assert replayed[1][0] == 0 < billed[1][0]
        else:
            assert replayed == billed
    assert sub.request(sub.calls[0])[0].blocks[-1].text == task
    assert json.dumps(run.requests[1].body["messages"][0]).count(task) == 1


def test_a_compaction_is_reconstructed_with_what_it_kept(claude_code: ClaudeCode) -> None:
    """`/compact` between two prompts: the summary, the kept messages, the files re-attached.

    The compaction call itself is not in the transcript (its answer becomes the summary line),
    so the reader's calls are the first run's and the third's.
    """
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    first = claude_code.run("What does app.py do?", [read_turn(app), "It prints hello."])
    summary = "<summary>The user asked about app.py; it prints hello.</summary>"
    compact = claude_code.run("/compact", [summary], home=first.home, args=("--continue",))
    after = claude_code.run("And now?", ["Still hello."], home=first.home, args=("--continue",))
    assert [r.returncode for r in (first, compact, after)] == [0, 0, 0], after.stderr
    assert len(compact.requests) == 1

    session = read_session(after.transcript)
    assert_reconstructs(session, [*first.requests, *after.requests])
    replayed, billed = replayed_and_billed(session, [*first.requests, *after.requests])
    assert replayed == billed
    resumed = session.request(session.calls[-1])
    assert resumed[0].blocks[0].text.startswith("This session is being continued")
    assert any("Result of calling the Read tool" in b.text for m in resumed for b in m.blocks)


def test_a_tool_loaded_by_tool_search_keeps_the_cache(claude_code: ClaudeCode) -> None:
    """2.1.332 offers ToolSearch: its result references the tool, the next request adds it
    to `tools` with `defer_loading` and says "Tool loaded." after the result. The prefix
    stays cached (the fake bills the definition where it is referenced, as the API does)."""
    search = {"name": "ToolSearch", "input": {"query": "select:WebFetch"}}
    run = claude_code.run(
        "Load WebFetch.", [{"tool_use": [search]}, "Loaded."], allowed_tools=("ToolSearch",)
    )
    assert run.returncode == 0, run.stderr
    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    [before, after] = [request.body for request in run.requests]
    [added] = [t for t in after["tools"] if t not in before["tools"]]
    assert added["name"] == "WebFetch" and added["defer_loading"] is True
    assert session.request(session.calls[1])[-1].blocks[-1].text == "Tool loaded."
    assert (run.requests[1].usage or {})["cache_read_input_tokens"] > 0


@pytest.mark.parametrize("claude_code", [CURRENT_RELEASE, INFERRED_RELEASE], indirect=True)
def test_a_nested_claude_md_and_a_continued_session(claude_code: ClaudeCode) -> None:
    """Reading a file next to a CLAUDE.md attaches it; `--continue` appends to the same file.
    2.1.332 sends it as a reminder beside the Read's result, where 2.1.197 sent Opus 4.8 a
    system message: the record names the role (`renderedRole`)."""
    package = claude_code.workspace / "pkg"
    package.mkdir()
    (package / "CLAUDE.md").write_text("# pkg rules\nAlways use tabs.\n", encoding="utf-8")
    app = package / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    first = claude_code.run("What does pkg/app.py do?", [read_turn(app), "It prints hello."])
    again = claude_code.run("And now?", ["Still hello."], home=first.home, args=("--continue",))
    assert first.returncode == 0 and again.returncode == 0, again.stderr

    session = read_session(again.transcript)
    assert_reconstructs(session, [*first.requests, *again.requests])
    memory = f"Contents of {package / 'CLAUDE.md'}:"
    request = session.request(session.calls[-1])
    if claude_code.release == INFERRED_RELEASE:
        assert request[4].role == "system"
        assert request[4].blocks[0].text.startswith(memory)
        return
    [read] = [m for m in request if m.role == "user"][1:2]
    assert [b.type for b in read.blocks] == ["tool_result", "text"]
    assert read.blocks[1].text.startswith("<system-reminder>\n" + memory)


@pytest.mark.parametrize("claude_code", [SKILL_TOOL_RELEASE, OLDER_RELEASE], indirect=True)
def test_a_skill_written_mid_session_changes_the_tools_where_the_reader_says(
    claude_code: ClaudeCode,
) -> None:
    """Claude Code re-reads skill files about a second after one is written (a file watcher).
    2.1.22 lists skills in the Skill tool's description, so the tools change from the first
    request sent after that (not the one sent right after the Write); later releases tell
    the model in the conversation and the tools stay as they were."""
    home = claude_code.root / "home-skills"
    skills = home / ".claude" / "skills"
    (skills / "alpha").mkdir(parents=True)
    (skills / "alpha" / "SKILL.md").write_text(
        "---\nname: alpha\ndescription: Use for alpha\n---\nDo alpha.\n", encoding="utf-8"
    )
    files = [claude_code.workspace / f"{name}.txt" for name in "ab"]
    for path in files:
        path.write_text(path.stem * 40, encoding="utf-8")
    beta = {
        "file_path": str(skills / "beta" / "SKILL.md"),
        "content": "---\nname: beta\ndescription: Use for beta\n---\nDo beta.\n",
    }
    script: list[TurnSource] = [
        # the Write waits a few seconds, so that the watcher, set up after start-up, is in
        # place when the skill is written (on a quiet machine it was not, once)
        {"tool_use": [{"name": "Write", "input": beta}], "delay": 0.5},
        # the request sent right after the Write goes well inside the watcher's second; this
        # answer's 15 or so events take seconds, so the next one goes well outside it (a
        # loaded machine delays the watcher: no request may be sent near the second; at 0.1 s
        # between events it went 1.1 to 1.6 s after the Write)
        {**read_turn(files[0]), "delay": 0.5},
        read_turn(files[1]),
        "Done.",
    ]
    run = claude_code.run("Add a beta skill.", script, allowed_tools=("Read", "Write"), home=home)
    assert run.returncode == 0, run.stderr
    tools = [json.dumps(request.body.get("tools"), sort_keys=True) for request in run.requests]
    listings = [len(set(tools[: i + 1])) - 1 for i in range(len(tools))]
    assert listings[-1] == (1 if claude_code.release == SKILL_TOOL_RELEASE else 0)
    session = read_session(run.transcript)
    assert [call.prefix.skills for call in session.calls] == listings


@RELEASES
def test_a_request_interrupted_after_a_tool_result_is_the_unanswered_one(
    claude_code: ClaudeCode,
) -> None:
    """Stopped while the request that carries a tool result waits for its answer, Claude
    Code records the result and the notice and no response; the request was sent all the
    same, and the reader's unanswered request is that request, so the next call reads what
    it wrote, as the fake billed it."""
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    script: list[TurnSource] = [
        read_turn(app),
        {"text": "It prints hello.", "delay": 4},
        "Going on.",
    ]
    run = claude_code.stream(
        ["What does app.py do?", "Go on."], script, interrupt_after_tool_result=True
    )
    assert run.returncode == 0, run.stderr
    assert len(run.requests) == 3
    session = read_session(run.transcript)
    assert INTERRUPTED in run.transcript.read_text(encoding="utf-8")
    [first, after] = session.calls
    [stopped] = session.unanswered
    assert read_shape(session, stopped) == sent_shape(run.requests[1].body)
    assert read_shape(session, after) == sent_shape(run.requests[2].body)
    recorded = STRATEGIES["recorded"].replay(session).calls
    read = (run.requests[2].usage or {})["cache_read_input_tokens"]
    assert first.usage is not None and read > first.usage.total_input_tokens
    # the same prefix, its tokens as the anchoring spreads them (estimates within one call)
    assert abs(recorded[1].usage.cache_read_input_tokens - read) <= 0.01 * read


@EVERY_RELEASE
def test_a_forked_session_starts_from_its_parents_calls_and_cache(
    claude_code: ClaudeCode,
) -> None:
    """`claude --resume ID --fork-session`: the new session's file starts with the parent's
    lines, copied unchanged but for the session id (no `forkedFrom`, which `/fork` writes),
    after the queue operation of its own prompt. The reader takes the copies as what the
    fork inherits, not as its calls. One fake serves both runs, so its cache is shared by
    content as Anthropic's is: where the fork sends the parent's prefix (2.1.22, 2.1.97),
    its first call reads what the parent wrote, as the replay models it; 2.1.197 resumed
    names the model without "(1M context)" in the system prompt and the Bash tool, so its
    fork's first call reads nothing (docs/cost-model.md)."""
    app = claude_code.workspace / "app.py"
    app.write_text('def main():\n    print("hello")\n', encoding="utf-8")
    with FakeMessagesAPI([read_turn(app), "It prints hello.", "Hello."]) as api:
        first = claude_code.run("What does app.py do?", api=api)
        parent_file = first.transcript
        resume = ("--resume", parent_file.stem, "--fork-session")
        fork = claude_code.run("And in one word?", api=api, home=first.home, args=resume)
    assert first.returncode == 0 and fork.returncode == 0, fork.stderr
    [fork_file] = [path for path in fork.transcripts if path != parent_file]
    assert "forkedFrom" not in fork_file.read_text(encoding="utf-8")

    parent = read_session(parent_file)
    forked = read_session(fork_file)
    assert_reconstructs(parent, first.requests)
    assert_reconstructs(forked, fork.requests)  # its own call only
    assert [c.usage for c in forked.inherited] == [c.usage for c in parent.calls]

    last, own = first.requests[-1].body, fork.requests[0].body
    same_prefix = all(last[key] == own[key] for key in ("tools", "system"))
    assert same_prefix == (claude_code.release != INFERRED_RELEASE)
    read = (fork.requests[0].usage or {})["cache_read_input_tokens"]
    if not same_prefix:
        assert read == 0
        return
    written = parent.calls[-1].usage
    assert written is not None and read >= written.cache_read_input_tokens > 0
    [modelled] = STRATEGIES["recorded"].replay(forked).calls
    # the same prefix, its tokens as the anchoring spreads them (estimates within one call)
    assert abs(modelled.usage.cache_read_input_tokens - read) <= 0.01 * read


@pytest.mark.parametrize(
    ("claude_code", "one_hour"),
    [
        *((release, False) for release in RECORDED_RELEASES),
        (CURRENT_RELEASE, True),  # ENABLE_PROMPT_CACHING_1H: 2.1.197 and later
        (INFERRED_RELEASE, True),
    ],
    indirect=["claude_code"],
)
def test_the_recorded_replay_bills_what_the_fake_billed(
    claude_code: ClaudeCode, one_hour: bool
) -> None:
    """The yardstick end to end: Claude Code's transcript replayed as `recorded` bills what
    the fake billed for the requests Claude Code really sent, call by call and to the token.
    Two results of different sizes come back in whichever order their tools finish (the API
    renders them in the order of the tool uses; what follows the marked one is plain input),
    and on Opus 4.8 2.1.197 leaves its role "system" message after the breakpoint, 2.1.332
    marks it. The plain input sizes what follows the breakpoint (2.1.197's attachment texts,
    which the reader infers, among them), the growth between calls the rest."""
    big, small, edited = (claude_code.workspace / name for name in ("big.py", "small.py", "e.py"))
    big.write_text("".join(f"def f{j}(x):\n    return x * {j}\n\n" for j in range(300)))
    small.write_text("Y = 2\n", encoding="utf-8")
    edited.write_text("def main():\n    return 1\n", encoding="utf-8")
    reads = [{"name": "Read", "input": {"file_path": str(path)}} for path in (big, small)]
    edit = {"file_path": str(edited), "old_string": "return 1", "new_string": "return 2"}
    script: list[TurnSource] = [
        read_turn(edited),
        {"tool_use": reads},
        {"tool_use": [{"name": "Edit", "input": edit}]},
        "Done.",
    ]
    env = {"ENABLE_PROMPT_CACHING_1H": "1"} if one_hour else None
    run = claude_code.run(
        "Read the modules, then make main return 2.",
        script,
        allowed_tools=("Read", "Edit"),
        args=("--model", OPUS_48),
        env=env,
    )
    assert run.returncode == 0, run.stderr
    session = read_session(run.transcript)
    assert session.cache_ttl == ("1h" if one_hour else "5m")
    replayed, billed = replayed_and_billed(session, run.requests)
    assert replayed == billed
    found = fidelity(session, STRATEGIES["recorded"].replay(session))
    assert found is not None and found.billed_input_error == 0.0


@EVERY_RELEASE
def test_an_image_read_keeps_the_messages_before_it_cached(claude_code: ClaudeCode) -> None:
    """Read of a PNG sends an image block as the tool's result. The session's first image
    does not invalidate the messages before it (real billing in the corpus sessions that
    send one, 2.1.22 and 2.1.97), so its call reads them all, as the replay bills it."""
    picture = claude_code.workspace / "picture.png"
    write_png(picture)
    run = claude_code.run("What is in picture.png?", [read_turn(picture), "A gradient."])
    assert run.returncode == 0, run.stderr
    [result] = [b for b in run.requests[1].body["messages"][-1]["content"] if "content" in b]
    assert [block["type"] for block in result["content"]] == ["image"]
    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    replayed, billed = replayed_and_billed(session, run.requests)
    assert replayed == billed
    [(_, read, written), (_, read_again, _)] = billed
    assert read_again == read + written  # all the first call cached, its messages included


HOOK_CONTEXT = "HOOK CONTEXT: be brief"
ADDED_CONTEXT = {"hookEventName": "PostToolUse", "additionalContext": "POST HOOK NOTE"}


def _command(line: str) -> dict[str, str]:
    return {"type": "command", "command": line}


HOOKS = {
    "UserPromptSubmit": [{"hooks": [_command(f"echo '{HOOK_CONTEXT}'")]}],
    "PostToolUse": [
        {
            "matcher": "Read",
            "hooks": [
                _command("echo " + shlex.quote(json.dumps({"hookSpecificOutput": ADDED_CONTEXT}))),
                _command("seq 1 300"),
            ],
        }
    ],
}
"""Hooks whose output Claude Code sends (a prompt's hook's stdout, a tool's hook's added
context) and one whose long stdout it records and does not send (a formatter's, say)."""


def _differs(release: str, model: str | None, reason: str) -> object:
    """A release (and model) whose requests the reader does not reconstruct, and why."""
    return pytest.param(release, model, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.parametrize(
    ("claude_code", "model"),
    [
        (CURRENT_RELEASE, None),
        (INFERRED_RELEASE, OPUS_48),
        (INFERRED_RELEASE, SONNET_46),
        (OLDER_RELEASE, None),
        _differs(
            SKILL_TOOL_RELEASE,
            None,
            "2.1.22 in print mode records no hook attachment: what its hooks add is sent "
            "and in no record",
        ),
    ],
    indirect=["claude_code"],
)
def test_hooks_are_read_as_claude_code_sends_them(
    claude_code: ClaudeCode, model: str | None
) -> None:
    """A prompt's hook's output and a Read's hook's added context are sent; a Read's hook's
    plain stdout (300 lines here) is recorded and not sent. The reader's requests are those
    Claude Code sent, and the replay bills what the fake billed."""
    home = claude_code.root / "home-hooks"
    (home / ".claude").mkdir(parents=True)
    settings = json.dumps({"hooks": HOOKS})
    (home / ".claude" / "settings.json").write_text(settings, encoding="utf-8")
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    args = ("--model", model) if model else ()
    run = claude_code.run("What is X?", [read_turn(app), "X is 1."], home=home, args=args)
    assert run.returncode == 0, run.stderr

    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    replayed, billed = replayed_and_billed(session, run.requests)
    assert replayed == billed
    sent = json.dumps(run.requests[-1].body["messages"])
    assert HOOK_CONTEXT in sent and ADDED_CONTEXT["additionalContext"] in sent
    assert "299\\n300" in run.transcript.read_text(encoding="utf-8")
    assert "299\\n300" not in sent


@pytest.mark.parametrize("claude_code", [INFERRED_RELEASE], indirect=True)
def test_a_tools_hook_context_moves_to_a_system_message_in_the_next_turn(
    claude_code: ClaudeCode,
) -> None:
    """2.1.197 sends Opus 4.8 what a Read's hook adds as a reminder after the result while the
    turn that read runs, and as a system message after it once `--continue` rebuilds the
    conversation from the transcript (as its sources do). One fake serves both runs (one
    cache, as Anthropic's is shared): the continued request reads up to the changed result,
    as the replay's fork of the thread does."""
    home = claude_code.root / "home-hooks-continued"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": HOOKS}), "utf-8")
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    args = ("--model", OPUS_48)
    with FakeMessagesAPI([read_turn(app), "X is 1.", "Still 1."]) as api:
        first = claude_code.run("What is X?", api=api, home=home, args=args)
        again = claude_code.run("And now?", api=api, home=home, args=(*args, "--continue"))
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert (again.requests[0].usage or {})["cache_read_input_tokens"] > 0

    session = read_session(again.transcript)
    assert_reconstructs(session, [*first.requests, *again.requests])
    replayed, billed = replayed_and_billed(session, [*first.requests, *again.requests])
    assert replayed == billed
    added = "PostToolUse:Read hook additional context: " + ADDED_CONTEXT["additionalContext"]
    roles = [
        [m["role"] for m in request.body["messages"] if added in json.dumps(m)]
        for request in (first.requests[-1], again.requests[-1])
    ]
    assert roles == [["user"], ["system"]]


PRE_CONTEXT = {"hookEventName": "PreToolUse", "additionalContext": "PRE HOOK NOTE"}
PRE_HOOKS = {
    "PreToolUse": [
        {
            "matcher": "Read",
            "hooks": [
                _command("echo " + shlex.quote(json.dumps({"hookSpecificOutput": PRE_CONTEXT})))
            ],
        }
    ]
}
"""A Read's hook that adds context before it runs: Claude Code records it beside the chain (it
links to the tool use, and the result links past it to the tool use too)."""


@pytest.mark.parametrize(
    ("claude_code", "model"),
    [
        (CURRENT_RELEASE, None),
        (CURRENT_RELEASE, SONNET_46),
        (INFERRED_RELEASE, OPUS_48),
        (INFERRED_RELEASE, SONNET_46),
        (OLDER_RELEASE, None),
    ],
    indirect=["claude_code"],
)
def test_a_tools_pre_hook_context_is_sent_after_its_result(
    claude_code: ClaudeCode, model: str | None
) -> None:
    """What a Read's PreToolUse hook adds is sent after the Read's result, in the turn that
    read and in the next (one process, as a person's session runs), though the result's record
    links past it to the tool use. The reader's requests are those Claude Code sent, and the
    replay bills what the fake billed: where 2.1.197 turns the reminder Opus 4.8 got into a
    system message in the next turn, the thread forks there with the prefix it had, and the
    cache keeps what comes before (until 2026-12-07 the fork inferred a prefix of its own,
    and read 20,042 tokens where the fake read 20,429)."""
    home = claude_code.root / "home-tool-hooks"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": PRE_HOOKS}), "utf-8")
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    args = ("--model", model) if model else ()
    script: list[TurnSource] = [read_turn(app), "X is 1.", "Still 1."]
    run = claude_code.stream(["What is X?", "And now?"], script, home=home, args=args)
    assert run.returncode == 0, run.stderr

    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    replayed, billed = replayed_and_billed(session, run.requests)
    assert replayed == billed
    for request in run.requests[1:]:
        assert PRE_CONTEXT["additionalContext"] in json.dumps(request.body["messages"])


def read_then_resume(
    claude_code: ClaudeCode, hooks: Mapping[str, Any], app: Path, model: str
) -> tuple[Session, list[RecordedRequest], int]:
    """A Read of `app` in one process and a prompt in another that resumes the session
    (`--resume`), with these hooks, against one fake (one cache, as sessions share
    Anthropic's): the session read, every request, and how many the first process sent."""
    home = claude_code.root / "home-resumed"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}), "utf-8")
    args = ("--model", model)
    with FakeMessagesAPI([read_turn(app), "X is 1.", "Still 1."]) as api:
        first = claude_code.run("What is X?", api=api, home=home, args=args)
        resume = ("--resume", first.transcript.stem)
        again = claude_code.run("And now?", api=api, home=home, args=(*args, *resume))
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    session = read_session(again.transcript)
    return session, [*first.requests, *again.requests], len(first.requests)


@pytest.mark.parametrize(
    "claude_code", [CURRENT_RELEASE, INFERRED_RELEASE, OLDER_RELEASE], indirect=True
)
def test_a_reminder_after_a_tool_result_rides_in_its_text(claude_code: ClaudeCode) -> None:
    """To a model that takes no system messages, what Claude Code attaches after a tool
    result (a nested CLAUDE.md the Read found, what a tool's hook added) goes into the
    result's text: the API messages are made from the conversation with each attachment
    joined to the user message before it, a string result and the reminder trimmed and
    joined by a blank line (2.1.22 to 2.1.332). While the turn that ran the tool goes on,
    its hooks' context is a block of its own after the result (`_made_alone`); a later
    process, resuming the session, joins it too, so its first request reads the cache only
    up to that result."""
    package = claude_code.workspace / "pkg"
    package.mkdir()
    (package / "CLAUDE.md").write_text("# pkg rules\nAlways use tabs.\n", encoding="utf-8")
    app = package / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    session, requests, _ = read_then_resume(claude_code, HOOKS, app, SONNET_46)

    assert_reconstructs(session, requests)
    replayed, billed = replayed_and_billed(session, requests)
    assert replayed == billed
    [result] = [b for b in requests[-1].body["messages"][2]["content"] if "tool_use_id" in b]
    assert f"Contents of {package / 'CLAUDE.md'}:" in result["content"]
    assert ADDED_CONTEXT["additionalContext"] in result["content"]


@pytest.mark.parametrize(
    ("claude_code", "model"),
    [
        (CURRENT_RELEASE, SONNET_46),
        (INFERRED_RELEASE, SONNET_46),
        (INFERRED_RELEASE, OPUS_48),
        (OLDER_RELEASE, SONNET_46),
    ],
    indirect=["claude_code"],
)
def test_a_tools_pre_hook_context_is_not_sent_once_the_session_is_resumed(
    claude_code: ClaudeCode, model: str
) -> None:
    """What a Read's PreToolUse hook added is recorded off the chain (it links to the tool
    use, the result past it). 2.1.97 and 2.1.197 resumed (`--resume`) rebuild the
    conversation from the chain and send it no more; 2.1.332 still sends it. A process
    that ends writes `last-prompt`, which tells the reader where the resumed one began."""
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    session, requests, first_run = read_then_resume(claude_code, PRE_HOOKS, app, model)

    assert_reconstructs(session, requests)
    replayed, billed = replayed_and_billed(session, requests)
    assert replayed == billed
    note = PRE_CONTEXT["additionalContext"]
    assert note in json.dumps(requests[first_run - 1].body["messages"])
    kept = note in json.dumps(requests[-1].body["messages"])
    assert kept == (claude_code.release == CURRENT_RELEASE)


def sent_texts(body: Mapping[str, Any]) -> list[str]:
    """The texts of the user messages' text blocks and string tool results, as sent, to the
    character (the context reminder aside)."""
    texts: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        if message["role"] != "user":
            continue
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block["type"] == "text" and not block["text"].startswith(CONTEXT_REMINDER):
                texts.append(block["text"])
            elif block["type"] == "tool_result" and isinstance(block["content"], str):
                texts.append(block["content"])
    return texts


def read_texts(session: Session, call: Call) -> list[str]:
    """The reader's texts of the same blocks."""
    return [
        block.text
        for message in session.request(call)
        if message.role == "user"
        for block in message.blocks
        if block.type in ("text", "tool_result")
    ]


NEWLINE_JOIN = (
    "2.1.78 and later end a user message's last text with a newline where another user "
    "message joins it (a prompt after the reminders moved up before it); the reader does "
    "not: the request it would rebuild for an interrupted prompt needs the text without it "
    "(docs/cost-model.md)"
)


@pytest.mark.parametrize(
    "claude_code",
    [
        pytest.param(CURRENT_RELEASE, marks=pytest.mark.xfail(strict=True, reason=NEWLINE_JOIN)),
        INFERRED_RELEASE,  # Opus 4.8, its default: the listings are system messages
        pytest.param(OLDER_RELEASE, marks=pytest.mark.xfail(strict=True, reason=NEWLINE_JOIN)),
        SKILL_TOOL_RELEASE,
    ],
    indirect=True,
)
def test_the_user_texts_are_read_to_the_character(claude_code: ClaudeCode) -> None:
    """The reader's texts of user messages are the sent ones, whitespace and all. Where a
    user line joins a message whose last block is text (a prompt after the reminders moved
    up before it), 2.1.78 and later end that text with a newline (their function that joins
    two user messages; 2.1.77's and 2.1.22's join them as they are), which the reader
    leaves out: a token a turn, which the anchored counts absorb."""
    app = claude_code.workspace / "app.py"
    app.write_text("X = 1\n", encoding="utf-8")
    run = claude_code.run("What is X?", [read_turn(app), "X is 1."])
    assert run.returncode == 0, run.stderr
    session = read_session(run.transcript)
    assert_reconstructs(session, run.requests)
    for call, request in zip(session.calls, run.requests, strict=True):
        assert read_texts(session, call) == sent_texts(request.body)
