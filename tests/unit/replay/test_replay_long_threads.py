"""The reader takes each call's request up from the one before it (reader.py, `_Read`): a
thread is read in time about linear in its length. What it reads must be what reading every
request whole gives, which `READ_KEPT = 0` (nothing kept) does."""

from __future__ import annotations

from pathlib import Path

import pytest
from ephemeral_context.replay import reader
from ephemeral_context.replay.flow import Session
from ephemeral_context.replay.reader import read_session

from tests.transcripts import found_transcripts
from tests.unit.replay.builder import Transcript, bash_thread, text, tool_use


def _read_whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    """The session as read with every request built from its chain alone."""
    with monkeypatch.context() as patch:
        patch.setattr(reader, "READ_KEPT", 0)
        return read_session(path)


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _read_whole(path, monkeypatch)
    taken_up = read_session(path)
    assert repr(taken_up.threads) == repr(whole.threads)
    assert repr(taken_up.calls) == repr(whole.calls)
    assert taken_up.problems == whole.problems


def _parallel_with_hooks(version: str, model: str) -> Transcript:
    """Responses with two tool uses each, written as Claude Code writes them: each result
    linked to its own tool use (one of them off the next request's chain), a PreToolUse
    hook's context linked to the second; prompts between turns, each in a folder of its
    own, one after an empty answer (it joins the results' message); a process that ends and
    one that takes the session up."""
    t = Transcript(model=model)
    t.user("look around", version=version, cwd="/repo")
    for n in range(6):
        if n == 4:  # the process ends; the next one reads the conversation back from the file
            t.lines.append({"type": "last-prompt", "lastPrompt": "go on"})  # no uuid
        uses = [tool_use(f"a{n}", "Bash", command="ls"), tool_use(f"b{n}", "Bash", command="pwd")]
        t.assistant(uses, usage={"write": 100 * n}, version=version)
        first, second = t.lines[-2]["uuid"], t.lines[-1]["uuid"]
        pre = {"hookName": "PreToolUse:Bash", "hookEvent": "PreToolUse", "toolUseID": f"b{n}"}
        t.other(
            "attachment", attachment={"type": "hook_additional_context", "content": ["PRE"], **pre}
        )
        t.parent = first
        t.tool_result(f"a{n}", f"listing {n}")
        t.parent = second
        t.tool_result(f"b{n}", "/repo")
        if n in (1, 3):
            t.assistant([text("" if n == 1 else "half way")], usage={"read": 300}, version=version)
            t.user("go on", version=version, cwd=f"/repo/{n}")
    t.assistant([text("done")], usage={"read": 900}, version=version)
    return t


@pytest.mark.parametrize(
    ("version", "model"),
    [
        ("2.1.22", "claude-sonnet-4-5-20250929"),
        ("2.1.97", "claude-sonnet-4-5-20250929"),
        ("2.1.197", "claude-opus-4-8"),
        ("2.1.332", "claude-opus-4-8"),
    ],
)
def test_parallel_tool_calls_and_their_hooks_read_as_whole_requests_do(
    version: str, model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Results off the chain and what hooks added off it join each request as before, in
    releases that send those hooks' lines on their own and that do not, as system messages
    and not, with the system prompt rebuilt per turn (2.1.22) and not."""
    path = _parallel_with_hooks(version, model).write(tmp_path / "parallel.jsonl")
    _same(path, monkeypatch)
    session = read_session(path)
    request = session.request(session.calls[-1])
    blocks = [b for m in request for b in m.blocks]
    assert sum(b.type == "tool_result" for b in blocks) == 12
    # a later process of a release before 2.1.332 sends no hook lines off the chain before it
    hooks = 6 if version == "2.1.332" else 2
    assert sum("hook additional context: PRE" in b.text for b in blocks) == hooks


@pytest.mark.parametrize("version", ["2.1.97", None])
def test_a_long_bash_thread_reads_as_whole_requests_do(
    version: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request of a long thread holds every call before it, in order, whether its lines
    name their release or not."""
    path = bash_thread(40, version).write(tmp_path / "bash.jsonl")
    _same(path, monkeypatch)
    session = read_session(path)
    assert [call.n_messages for call in session.calls] == list(range(1, 82, 2))


def test_every_transcript_at_hand_reads_as_whole_requests_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The repository's transcripts, and the shared traces and corpus where they are:
    forks, sub-agents side by side, compactions, microcompactions, resumed processes."""
    ours, shared = found_transcripts()
    for path in [*ours, *shared]:
        _same(path, monkeypatch)
