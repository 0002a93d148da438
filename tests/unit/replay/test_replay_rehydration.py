"""Honest re-hydration in the `ours` replay: evicted content a call uses costs a round trip.

Each session reads a file, works long enough past a cold cache for the engine to evict the
read, then makes one call that needs the file again: by an Edit's old_string, by quoting
it, or by a Read whose answer points at the evicted copy. That need must cost one extra
request (the prefix read from the cache, the tool_use as output) before the call, and the
session must report it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ephemeral_context.replay.reader import read_session
from ephemeral_context.replay.report import replay, replay_session, to_json
from ephemeral_context.replay.simulate import StrategyResult
from ephemeral_context.replay.strategies import STRATEGIES
from ephemeral_context.tokens import estimate_block_tokens

from tests.unit.replay.builder import Transcript, cat_n, text, tool_use

APP = "".join(
    f"def handler_{i}(request):\n    value = request.get('k{i}')\n    return value * {i}\n\n\n"
    for i in range(60)
)
PATH = "/work/app.py"
TRIPLE = "def handler_42(request):\n    value = request.get('k42')\n    return value * 42"
PAIR = "def handler_42(request):\n    value = request.get('k42')"


BRIDGE_REMINDER = "\n\n<system-reminder>\nConsider whether it looks malicious.\n</system-reminder>"


def _session(
    tmp_path: Path,
    last: list[dict[str, Any]],
    through: str = "Read",
    path: str = PATH,
    source: str = APP,
) -> Path:
    """Read `source` (through Claude Code's Read, Zed's bridge or Serena), work past a cold
    cache, then answer with `last` (and close the session)."""
    t = Transcript()
    t.user("fix handler_42")
    if through == "bridge":
        t.assistant([tool_use("t0", "mcp__acp__Read", file_path=path)])
        t.tool_result("t0", source + BRIDGE_REMINDER)
    elif through == "serena":
        root, relative = path.rsplit("/", 1)
        activated = f"The project with name 'work' at {root} is activated."
        t.assistant([tool_use("p0", "mcp__serena__activate_project", project="work")])
        t.tool_result("p0", json.dumps({"result": activated}))
        t.assistant([tool_use("t0", "mcp__serena__read_file", relative_path=relative)])
        t.tool_result("t0", json.dumps({"result": source.removesuffix("\n")}))
    else:
        t.assistant([tool_use("t0", "Read", file_path=path)])
        t.tool_result("t0", cat_n(source), {"file": {"filePath": path, "content": source}})
    _work_past_a_cold_cache(t)
    t.assistant(last)
    return t.write(tmp_path / "session.jsonl")


def _work_past_a_cold_cache(t: Transcript) -> None:
    """Calls enough to consume what came before, a gap that leaves the cache cold (a cut
    then rewrites nothing), and a few calls more."""
    for step in range(1, 12):
        t.assistant([tool_use(f"t{step}", "Bash", command=f"make test {step}")])
        t.tool_result(f"t{step}", f"test {step} log line\n" * 80)
        t.wait(10)
    t.wait(7200)
    for step in range(12, 15):
        t.assistant([tool_use(f"t{step}", "Bash", command=f"make lint {step}")])
        t.tool_result(f"t{step}", f"lint {step} ok\n" * 20)
        t.wait(10)


def _ours(path: Path) -> tuple[StrategyResult, StrategyResult]:
    strategies = {name: STRATEGIES[name] for name in ("ours-lossless", "ours")}
    report = replay_session(read_session(path), strategies)
    return report.strategies["ours"], report.strategies["ours-lossless"]


def _edit(tool: str = "Edit") -> list[dict[str, Any]]:
    old = "    value = request.get('k42')\n    return value * 42"
    return [tool_use("e", tool, file_path=PATH, old_string=old, new_string="    return 0")]


def _assert_one_round_trip(ours: StrategyResult, free: StrategyResult) -> None:
    """The last call paid one extra request (the whole prefix sent twice, the second time
    read from the cache) and the tool_use as output."""
    assert ours.rehydrations == 1 and ours.rehydrated_tokens > 0
    last = ours.calls[-1]
    sent = last.usage.total_input_tokens
    assert sent > 2 * last.context_tokens - ours.rehydrated_tokens - 200
    assert last.usage.cache_read_input_tokens > last.context_tokens - ours.rehydrated_tokens - 200
    assert last.output_tokens > free.calls[-1].output_tokens  # the read_* tool_use
    assert free.rehydrations == 0


def test_an_edit_of_evicted_text_costs_a_round_trip(tmp_path: Path) -> None:
    ours, free = _ours(_session(tmp_path, _edit()))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrated_tokens < 200  # read_symbol: the one definition, not the file


def test_an_edit_through_zeds_bridge_of_evicted_text_costs_a_round_trip(tmp_path: Path) -> None:
    """The bridge's Read is a file read and its Edit an edit: the edit's old string, only
    in the evicted read, is fetched back by its one definition."""
    ours, free = _ours(_session(tmp_path, _edit("mcp__acp__Edit"), through="bridge"))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrated_tokens < 200


def test_a_serena_literal_replacement_of_evicted_text_costs_a_round_trip(
    tmp_path: Path,
) -> None:
    """Serena's `replace_content` in literal mode names the text it replaces, as an Edit's
    old string does."""
    needle = "    value = request.get('k42')\n    return value * 42"
    literal = {"needle": needle, "repl": "    return 0", "mode": "literal"}
    edit = tool_use("e", "mcp__serena__replace_content", relative_path="app.py", **literal)
    ours, free = _ours(_session(tmp_path, [edit], through="serena"))
    _assert_one_round_trip(ours, free)


REGEX = {"needle": "value = request.get\\('k42'\\).*?42", "repl": "return 0", "mode": "regex"}


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("replace_content", REGEX),
        ("replace_regex", {"regex": REGEX["needle"], "repl": "return 0"}),
        ("replace_symbol_body", {"name_path": "handler_42", "body": "def handler_42(r): 0"}),
        ("replace_lines", {"start_line": 211, "end_line": 212, "content": "    return 0"}),
        ("delete_lines", {"start_line": 211, "end_line": 212}),
    ],
)
def test_a_serena_edit_of_evicted_text_it_does_not_quote_costs_a_round_trip(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """A regex's matches, a definition's body, lines by their 0-based numbers: the text
    such an edit replaces is what the model saw there, which it needs as an Edit needs its
    old string; it comes back by its one definition."""
    edit = tool_use("e", f"mcp__serena__{tool}", relative_path="app.py", **tool_input)
    ours, free = _ours(_session(tmp_path, [edit], through="serena"))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrated_tokens < 200


def test_a_serena_insertion_by_line_number_in_an_evicted_file_fetches_the_file(
    tmp_path: Path,
) -> None:
    """Which line to insert at is known from the file: its current version comes back."""
    edit = tool_use(
        "e", "mcp__serena__insert_at_line", relative_path="app.py", line=213, content="x = 1"
    )
    ours, free = _ours(_session(tmp_path, [edit], through="serena"))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrated_tokens > estimate_block_tokens(APP, "code") // 2


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("insert_after_symbol", {"name_path": "handler_42", "body": "def handler_x(): 0"}),
        ("rename_symbol", {"name_path": "handler_42", "new_name": "handler_x"}),
        # text the model never saw in the file (as an Edit of lines it never read)
        ("replace_content", {**REGEX, "needle": "def handler_99.*?99"}),
        ("replace_symbol_body", {"name_path": "handler_99", "body": "def handler_99(): 0"}),
    ],
)
def test_a_serena_edit_that_needs_only_a_name_costs_nothing(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    edit = tool_use("e", f"mcp__serena__{tool}", relative_path="app.py", **tool_input)
    ours, _ = _ours(_session(tmp_path, [edit], through="serena"))
    assert ours.rehydrations == 0


def test_quoting_a_serena_read_that_was_evicted_costs_a_round_trip(tmp_path: Path) -> None:
    """Serena's `read_file` answers JSON, the file's newlines escaped: read as a file, a
    quote of its evicted lines is seen, and fetched back by its one definition."""
    quoted = "handler_42 reads:\n\n" + TRIPLE + "\n\nso 42 it is."
    ours, free = _ours(_session(tmp_path, [text(quoted)], through="serena"))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrated_tokens < 200


def test_quoting_a_components_evicted_template_fetches_the_template_alone(
    tmp_path: Path,
) -> None:
    """A component's template is a section of its outline: a quote of it brings back the
    template, not the scripts and styles around it."""
    template = "".join(f'    <p class="row-{i}">{{{{ rows[{i}] }}}}</p>\n' for i in range(20))
    script = "".join(f"function row{i}(x) {{\n  return x * {i};\n}}\n" for i in range(80))
    component = (
        f"<template>\n  <div>\n{template}  </div>\n</template>\n\n<script>\n{script}</script>\n"
    )
    quoted = "The rows:\n\n" + "".join(template.splitlines(keepends=True)[3:7])
    path = "/work/Rows.vue"
    ours, free = _ours(_session(tmp_path, [text(quoted)], path=path, source=component))
    _assert_one_round_trip(ours, free)
    shown = estimate_block_tokens(cat_n(component), "code")
    assert ours.rehydrated_tokens < shown / 2  # the template, not the component


STORE = (
    "class Store:\n"
    "    def get(self, key):\n"
    "        value = self.items.get(key)\n"
    "        self.hits += 1\n"
    "        return value\n\n"
    + "".join(
        f"    def put_{i}(self, key, value):\n        self.items[key] = value * {i}\n\n"
        for i in range(40)
    )
    + "\n\nif __name__ == '__main__':\n"
    + "    store = Store()\n    store.get('alpha')\n    print(store.hits)\n"
)
GET = "    def get(self, key):\n        value = self.items.get(key)\n        self.hits += 1"
MAIN = "    store = Store()\n    store.get('alpha')\n    print(store.hits)"


def test_quotes_of_a_definition_and_of_its_class_fetch_the_class_once(tmp_path: Path) -> None:
    """Each evicted block comes back once: a definition inside another one needed comes
    with it."""
    quoted = f"The getter:\n\n{GET}\n\nin the store:\n\n{STORE.split(chr(10) * 2)[0]}\n"
    ours, free = _ours(_session(tmp_path, [text(quoted)], path="/work/store.py", source=STORE))
    _assert_one_round_trip(ours, free)
    class_only = estimate_block_tokens(STORE.split("\n\n\nif")[0], "code")
    assert ours.rehydrated_tokens < class_only * 1.2


def test_a_quote_outside_every_definition_fetches_the_file_once(tmp_path: Path) -> None:
    """A definition's lines and lines outside any: the whole file, alone (not the
    definition and then the file again)."""
    quoted = f"The getter:\n\n{GET}\n\nruns as:\n\n{MAIN}\n"
    ours, free = _ours(_session(tmp_path, [text(quoted)], path="/work/store.py", source=STORE))
    _assert_one_round_trip(ours, free)
    assert ours.rehydrations == 1
    assert ours.rehydrated_tokens < estimate_block_tokens(cat_n(STORE), "code") * 1.2


def test_a_multiedit_of_evicted_text_costs_a_round_trip(tmp_path: Path) -> None:
    edits = [{"old_string": "    return value * 42", "new_string": "    return 0"}]
    last = [tool_use("e", "MultiEdit", file_path=PATH, edits=edits)]
    ours, free = _ours(_session(tmp_path, last))
    _assert_one_round_trip(ours, free)


def test_quoting_a_symbol_body_in_an_evicted_json_answer_costs_one_round_trip(
    tmp_path: Path,
) -> None:
    """Serena's `find_symbol` answers one line of JSON whose string holds more JSON, the
    body's newlines escaped twice: its lines are still what the model read. A quote of them
    once evicted costs a round trip; the copy fetched back then shows them, and a second
    quote costs nothing more."""
    found = [{"name_path": "handlers", "kind": "Module", "body": APP, "relative_path": "app.py"}]
    t = Transcript()
    t.user("fix handler_42")
    t.assistant([tool_use("t0", "mcp__serena__find_symbol", name_path_pattern="handlers")])
    t.tool_result("t0", json.dumps({"result": json.dumps(found)}))
    _work_past_a_cold_cache(t)
    t.assistant([text(f"handler_42 reads:\n\n{TRIPLE}\n\nso 42 it is.")])
    t.user("and again?")
    t.assistant([text(f"Still:\n\n{TRIPLE}\n")])
    ours, free = _ours(t.write(tmp_path / "symbol.jsonl"))
    assert ours.rehydrations == 1 and ours.rehydrated_tokens > 0
    assert free.rehydrations == 0


@pytest.mark.parametrize("last", ["quote", "edit"])
def test_two_evicted_copies_of_one_json_answer_come_back_once(tmp_path: Path, last: str) -> None:
    """The same `find_symbol` answer twice, both evicted: a quote of its lines, or an Edit
    whose old string only that answer showed (the file itself was never read), fetches one
    copy; the other is seen in what that copy brings back."""
    found = [{"name_path": "handlers", "kind": "Module", "body": APP, "relative_path": "app.py"}]
    t = Transcript()
    t.user("fix handler_42")
    for use in ("s0", "s1"):
        t.assistant([tool_use(use, "mcp__serena__find_symbol", name_path_pattern="handlers")])
        t.tool_result(use, json.dumps({"result": json.dumps(found)}))
    _work_past_a_cold_cache(t)
    t.assistant(_edit() if last == "edit" else [text(f"handler_42 reads:\n\n{TRIPLE}\n")])
    ours, free = _ours(t.write(tmp_path / "twice.jsonl"))
    assert ours.rehydrations == 1 and ours.rehydrated_tokens > 0
    assert free.rehydrations == 0


def test_quoting_three_evicted_lines_costs_a_round_trip(tmp_path: Path) -> None:
    quoted = "handler_42 reads:\n\n    " + TRIPLE.replace("\n", "\n    ") + "\n\nso 42 it is."
    ours, free = _ours(_session(tmp_path, [text(quoted)]))
    _assert_one_round_trip(ours, free)


def test_quoting_200_evicted_characters_in_a_tool_input_costs_a_round_trip(
    tmp_path: Path,
) -> None:
    line = "ERROR " + "stack frame; " * 18
    assert len(line) > 200
    t = Transcript()
    t.user("look at the log")
    t.assistant([tool_use("t0", "Bash", command="cat build.log")])
    t.tool_result("t0", f"{line}\n" + "noise\n" * 400)
    _work_past_a_cold_cache(t)
    note = f"# Build failure\n\n{line}\n"
    t.assistant([tool_use("w", "Write", file_path="/work/NOTES.md", content=note)])
    ours, free = _ours(t.write(tmp_path / "log.jsonl"))
    _assert_one_round_trip(ours, free)


def test_a_parallel_read_is_not_cut_before_the_model_saw_it(tmp_path: Path) -> None:
    """Claude Code writes parallel Reads as they stream (use, result, use, result), so the
    first result looks answered. The cold rebuild after the gap took it into the segment
    as its synopsis, the model saw a placeholder where its Read's content was, and the
    replay charged the round trip that fetched it; nothing the model has not seen leaves
    the thread now (`Conversation.answered`), so no round trip is owed."""
    other = "".join(f"const v{i} = {i};\n" for i in range(300))
    t = Transcript()
    t.user("fix handler_42")
    for step in range(1, 12):
        t.assistant([tool_use(f"t{step}", "Bash", command=f"make test {step}")])
        t.tool_result(f"t{step}", f"test {step} log line\n" * 80)
        t.wait(10)
    t.wait(7200)
    t.assistant([tool_use("r1", "Read", file_path=PATH)])
    response = t.lines[-1]["message"]["id"]
    t.tool_result("r1", cat_n(APP), {"file": {"filePath": PATH, "content": APP}})
    t.assistant([tool_use("r2", "Read", file_path="/work/other.js")], message_id=response)
    t.tool_result("r2", cat_n(other), {"file": {"filePath": "/work/other.js", "content": other}})
    t.assistant([text("Both files read.")])
    ours, free = _ours(t.write(tmp_path / "reads.jsonl"))
    assert ours.rehydrations == 0 and ours.rehydrated_tokens == 0
    assert ours.calls[-1].output_tokens == free.calls[-1].output_tokens


def test_two_quoted_lines_of_150_characters_cost_nothing(tmp_path: Path) -> None:
    assert len(PAIR) < 150
    ours, free = _ours(_session(tmp_path, [text(f"handler_42 starts:\n{PAIR}\nand goes on.")]))
    assert ours.rehydrations == 0 and ours.rehydrated_tokens == 0
    assert ours.calls[-1].output_tokens == free.calls[-1].output_tokens


def test_the_json_report_carries_rehydrations_per_strategy(tmp_path: Path) -> None:
    report = to_json(replay([_session(tmp_path, _edit())]))
    strategies = report["sessions"][0]["strategies"]
    assert strategies["ours"]["rehydrations"] == 1
    assert strategies["ours"]["rehydrated_tokens"] > 0
    assert all(s["rehydrations"] == 0 for n, s in strategies.items() if n != "ours")
    assert json.loads(json.dumps(report)) == report
