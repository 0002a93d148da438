"""Claude Code itself as the ground truth for `cc-dedup`: what a repeated Read sends back.

Each test runs the real CLI (tests/claude_code.py) against tests/fakes: the scripted model
reads app.py, then reads it again, and the fake keeps the tool_result text Claude Code sent
for the second Read. Releases 2.1.97 to 2.1.197 send a short stub when the second Read has
the same offset and limit as the last one and the file is unchanged since (not edited, its
modification time the same); 2.1.22 and today's 2.1.332 send the file again. The stub's text
changed: 2.1.97 sends "File unchanged since last read. ..." (unless a server-side flag, off
with no network, picks the newer text), 2.1.197 "Wasted call — ...", which cc-dedup sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from ephemeral_context.replay.files import FileTracker
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.strategies import UNCHANGED_STUB, DedupLayout, cache_block

from tests.claude_code import (
    CURRENT_RELEASE,
    INFERRED_RELEASE,
    OLDER_RELEASE,
    SKILL_TOOL_RELEASE,
    ClaudeCode,
    ClaudeCodeRun,
    claude_code_binary,
)
from tests.fakes.messages_api import TurnSource

pytestmark = pytest.mark.e2e

OLDER_STUB = (
    "File unchanged since last read. The content from the earlier Read tool_result in this "
    "conversation is still current \u2014 refer to that instead of re-reading."
)
"""2.1.97's default stub text."""

STUB_SENT = {
    CURRENT_RELEASE: None,
    INFERRED_RELEASE: UNCHANGED_STUB,
    OLDER_RELEASE: OLDER_STUB,
    SKILL_TOOL_RELEASE: None,
}
"""What each release sends for a Read it deduplicates (None: it has no such rule)."""

APP = "".join(f"line {n}\n" for n in range(1, 41))


@dataclass(frozen=True)
class Reread:
    """Two Reads of app.py with these arguments, and whether the model edits it between."""

    first: Mapping[str, int]
    second: Mapping[str, int]
    edit_between: bool = False
    deduplicated: bool = True
    """Whether a release with the rule sends the stub for the second Read."""


REREADS = {
    "whole file twice": Reread({}, {}),
    "same offset and limit": Reread({"offset": 5, "limit": 10}, {"offset": 5, "limit": 10}),
    "edited between": Reread({}, {}, edit_between=True, deduplicated=False),
    "same lines, other arguments": Reread({}, {"limit": 2000}, deduplicated=False),
}
CASES = pytest.mark.parametrize("case", list(REREADS.values()), ids=list(REREADS))


def run_reread(claude_code: ClaudeCode, case: Reread) -> ClaudeCodeRun:
    app = claude_code.workspace / "app.py"
    app.write_text(APP, encoding="utf-8")

    def read(arguments: Mapping[str, int]) -> dict[str, Any]:
        return {"tool_use": [{"name": "Read", "input": {"file_path": str(app), **arguments}}]}

    edit = {"file_path": str(app), "old_string": "line 3\n", "new_string": "line three\n"}
    between = [{"tool_use": [{"name": "Edit", "input": edit}]}] if case.edit_between else []
    script: list[TurnSource] = [read(case.first), *between, read(case.second), "Done."]
    run = claude_code.run("Look at app.py.", script, allowed_tools=("Read", "Edit"))
    assert run.returncode == 0, run.stderr
    return run


def read_results(run: ClaudeCodeRun) -> list[str]:
    """The text of every Read result the last request carried, in order."""
    messages: Sequence[Mapping[str, Any]] = run.requests[-1].body["messages"]
    read_ids = {
        block["id"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use" and block.get("name") == "Read"
    }
    return [
        _text(block["content"])
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") in read_ids
    ]


def _text(content: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(item.get("text", "")) for item in content)


@pytest.mark.parametrize("claude_code", list(STUB_SENT), indirect=True)
@CASES
def test_a_repeated_read_is_stubbed_only_where_the_release_has_the_rule(
    claude_code: ClaudeCode, case: Reread
) -> None:
    first, second = read_results(run_reread(claude_code, case))
    assert "line 5" in first
    stub = STUB_SENT[claude_code.release]
    if stub is not None and case.deduplicated:
        assert second == stub
    else:
        shown = first.replace("line 3\n", "line three\n") if case.edit_between else first
        assert second == shown


@pytest.mark.parametrize("claude_code", [INFERRED_RELEASE], indirect=True)
@CASES
def test_cc_dedup_stubs_the_reads_claude_code_stubbed(
    claude_code: ClaudeCode, case: Reread, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """cc-dedup on a transcript of today's release (which sends every Read in full) stubs
    exactly the Reads 2.1.197 stubbed in the same session, with the text it sent."""
    sent = read_results(run_reread(claude_code, case))
    binary = claude_code_binary(CURRENT_RELEASE)
    if binary is None:
        pytest.skip(f"Claude Code {CURRENT_RELEASE} is not installed: run `make e2e-deps`")
    today = ClaudeCode(binary, tmp_path_factory.mktemp("today"), CURRENT_RELEASE)
    session = read_session(run_reread(today, case).transcript)

    layout = DedupLayout(session)
    tracker = FileTracker()
    (thread,) = session.threads.values()
    stubbed = []
    for block in (block for message in thread.messages for block in message.blocks):
        sent_for = layout.rewrite(block, tracker)
        if block.file_view is not None:
            stubbed.append(sent_for != (cache_block(block),))
    assert stubbed == [text == UNCHANGED_STUB for text in sent]
