"""`ectx replay` as a user runs it: demo, JSON shape, plot, own sessions, bad files.

Own sessions are copies of fixture transcripts under the temporary HOME, never ~/.claude.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import ephemeral_context
import pytest
from ephemeral_context.cli import main
from ephemeral_context.replay.demo import DEMO_SESSION
from ephemeral_context.replay.strategies import STRATEGIES

from tests.conftest import REPO_ROOT
from tests.transcripts import DRMACIVER, SUBAGENT, VIEWER, transcript
from tests.unit.replay.builder import Transcript, text, tool_use

STRATEGY_KEYS = {
    "peak_context",
    "total_context",
    "billed_input",
    "cost_usd",
    "cache_hit_rate",
    "retrievable",
    "rehydrations",
    "rehydrated_tokens",
}


def demo_folder(tmp_path: Path) -> Path:
    """A folder of transcripts holding one, the demo session as `a.jsonl`."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(DEMO_SESSION, folder / "a.jsonl")
    return folder


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["replay", "--json", *argv]) == 0
    out = capsys.readouterr().out
    result: dict[str, Any] = json.loads(out)
    return result


def test_demo_json_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "--demo")
    assert list(report) == ["sessions", "errors"]
    assert report["errors"] == []
    (session,) = report["sessions"]
    assert list(session) == [
        "path",
        "parent",
        "calls",
        "model",
        "billing",
        "recorded_usage",
        "fidelity",
        "strategies",
    ]
    assert session["path"] == str(DEMO_SESSION)
    assert session["calls"] == 80
    assert session["model"] == "claude-opus-4-5-20251101"
    assert session["billing"] == "anthropic"  # a real session: what Anthropic billed, per call
    recorded = session["recorded_usage"]
    assert (recorded["input_tokens"], recorded["cache_read_input_tokens"]) == (656, 7_164_252)
    assert set(session["fidelity"]) == {"billed_input_error", "median_call_error"}
    assert list(session["strategies"]) == list(STRATEGIES)
    for figures in session["strategies"].values():
        assert set(figures) == STRATEGY_KEYS
        assert 0 < figures["peak_context"] <= figures["total_context"]
        assert 0 <= figures["cache_hit_rate"] <= 1
        assert 0 <= figures["retrievable"] <= 1
        assert figures["rehydrations"] >= 0 and figures["rehydrated_tokens"] >= 0
        assert (figures["rehydrations"] == 0) == (figures["rehydrated_tokens"] == 0)


def test_real_transcript_json_carries_recorded_usage_and_fidelity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = transcript(DRMACIVER)
    (session,) = run_json(capsys, str(path))["sessions"]
    assert session["recorded_usage"] == {
        "input_tokens": 38,
        "cache_creation_input_tokens": 22988,
        "cache_read_input_tokens": 1114040,
        "billed_input": pytest.approx(38 + 1.25 * 22988 + 0.1 * 1114040, abs=0.1),
    }
    assert abs(session["fidelity"]["billed_input_error"]) < 0.10
    assert session["model"] == "claude-opus-4-5-20251101"


def test_plot_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plots" / "replay.png"
    assert main(["replay", "--demo", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr()
    assert "recorded" in printed.out
    assert "plot written to" in printed.err


@pytest.mark.parametrize("name", ["replay.jsonl", "replay.xyz", "replay"])
def test_a_plot_file_of_no_format_is_refused_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """`--plot` followed by a transcript (its file name forgotten), or a name with no
    format: one clear error at once, not a traceback after the whole replay."""
    assert main(["replay", "--demo", "--plot", str(tmp_path / name)]) == 1
    printed = capsys.readouterr()
    assert "error: --plot" in printed.err and ".png" in printed.err
    assert printed.out == "" and "Traceback" not in printed.err


def test_a_plot_folder_that_cannot_be_made_is_refused_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file where `--plot`'s folder would go: one clear error at once, not after the
    whole replay."""
    (tmp_path / "notes").write_text("a file, not a folder")
    target = tmp_path / "notes" / "replay.png"
    assert main(["replay", "--demo", "--plot", str(target)]) == 1
    printed = capsys.readouterr()
    assert printed.err == f"error: --plot {target}: cannot make its folder: File exists\n"
    assert printed.out == ""


@pytest.mark.parametrize("argv", [["--limit", "0"], ["--limit", "-1"], ["--limit", "x"]])
def test_a_limit_below_one_is_refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["replay", *argv])
    assert exit.value.code == 2 and "--limit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["--limit", "2"], ["--since", "7d"], ["--project", "shop"], ["--demo", "--limit", "1"]]
)
def test_the_own_session_filters_are_refused_with_a_path_or_the_demo(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """They choose among the user's own sessions; given with a PATH or --demo they would
    silently do nothing."""
    paths = [] if "--demo" in argv else [str(DEMO_SESSION)]
    assert main(["replay", *argv, *paths]) == 1
    assert "do not apply to a PATH or --demo" in capsys.readouterr().err


def test_a_transcript_named_twice_is_replayed_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = demo_folder(tmp_path)
    again = folder / ".." / "sessions" / "a.jsonl"
    (session,) = run_json(capsys, str(folder / "a.jsonl"), str(again), str(folder))["sessions"]
    assert session["path"] == str(folder / "a.jsonl")


def test_a_link_loop_in_a_folder_is_one_error_and_the_rest_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = demo_folder(tmp_path)
    (folder / "loop1.jsonl").symlink_to(folder / "loop2.jsonl")
    (folder / "loop2.jsonl").symlink_to(folder / "loop1.jsonl")
    assert main(["replay", "--json", str(folder)]) == 0
    printed = capsys.readouterr()
    report = json.loads(printed.out)
    assert [s["path"] for s in report["sessions"]] == [str(folder / "a.jsonl")]
    assert [e["path"] for e in report["errors"]] == [
        str(folder / "loop1.jsonl"),
        str(folder / "loop2.jsonl"),
    ]
    assert "Traceback" not in printed.err


def test_the_tables_left_out_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(8):
        shutil.copy(DEMO_SESSION, tmp_path / f"s{n}.jsonl")
    assert main(["replay", str(tmp_path)]) == 0
    assert "2 more transcripts: each is in --json" in capsys.readouterr().out


def test_fit_tokens_leaves_out_what_it_cannot_read_and_says_when_too_little_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"type": "user"}\n' * 50)[:40])
    empty = tmp_path / "zero.jsonl"
    empty.write_bytes(b"")
    assert main(["replay", "--fit-tokens", str(transcript(VIEWER)), str(cut)]) == 0
    printed = capsys.readouterr()
    assert f"error: {cut}: cannot read" in printed.err
    assert printed.out.startswith("steps: ") and "Traceback" not in printed.err
    assert main(["replay", "--fit-tokens", str(empty)]) == 1
    printed = capsys.readouterr()
    assert "error: need at least" in printed.err and printed.out == ""


def test_fit_tokens_leaves_out_a_session_a_gateway_billed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gateway's usage counts another tokenizer's tokens (or none at all: 0 for every
    count, which had pulled every constant towards zero tokens a character)."""
    zero = tmp_path / "gateway.jsonl"
    lines = [json.loads(line) for line in transcript(VIEWER).read_text().splitlines()]
    for line in lines:
        usage = line.get("message", {}).get("usage") if isinstance(line, dict) else None
        if isinstance(usage, dict):
            usage.update(dict.fromkeys(usage, 0), cache_creation={})
    zero.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["replay", "--fit-tokens", str(transcript(VIEWER))]) == 0
    alone = capsys.readouterr().out
    assert main(["replay", "--fit-tokens", str(transcript(VIEWER)), str(zero)]) == 0
    printed = capsys.readouterr()
    assert f"error: {zero}: left out of the fit: its usage was not billed by" in printed.err
    assert printed.out == alone


def test_no_path_and_no_own_sessions_replays_the_demo(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (session,) = run_json(capsys)["sessions"]
    assert session["path"] == str(DEMO_SESSION)


def own_session(home: Path, project: str, session: str, name: str, mtime: float) -> Path:
    """A copy of a fixture transcript where Claude Code keeps one, dated `mtime`."""
    path = home / ".claude" / "projects" / project / session
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(transcript(name), path)
    os.utime(path, (mtime, mtime))
    return path


def test_no_path_replays_own_sessions_newest_first_with_their_subagents(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = own_session(isolated_home, "-home-dev-shop", "0f1e.jsonl", VIEWER, 1_700_000_000)
    new = own_session(isolated_home, "-home-dev-api", "9a8b.jsonl", SUBAGENT, 1_700_000_500)
    agent = own_session(
        isolated_home, "-home-dev-api", "9a8b/subagents/agent-a1.jsonl", SUBAGENT, 1_700_000_400
    )
    sessions = run_json(capsys)["sessions"]
    assert main(["replay"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("3 transcripts (2 sessions and 1 of their sub-agents), 312 calls")
    assert [s["path"] for s in sessions] == [str(new), str(agent), str(old)]
    assert [s["calls"] for s in sessions] == [71, 71, 170]
    assert [s["parent"] for s in sessions] == [None, str(new), None]

    orphan = own_session(
        isolated_home, "-home-dev-api", "77aa/subagents/agent-b2.jsonl", SUBAGENT, 1_600_000_000
    )  # a sub-agent whose session's main file is gone is replayed all the same
    assert run_json(capsys)["sessions"][-1]["path"] == str(orphan)
    (latest, its_agent) = run_json(capsys, "--limit", "1")["sessions"]
    assert (latest["path"], its_agent["path"]) == (str(new), str(agent))
    (shop,) = run_json(capsys, "--project", "/home/dev/shop")["sessions"]
    assert shop["path"] == str(old)
    since = datetime.fromtimestamp(1_700_000_450).isoformat()
    assert len(run_json(capsys, "--since", since)["sessions"]) == 2


def test_the_table_ends_with_what_the_sessions_cost_and_each_strategy_would(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own_session(isolated_home, "-home-dev-api", "9a8b.jsonl", SUBAGENT, 1_700_000_500)
    own_session(isolated_home, "-home-dev-shop", "0f1e.jsonl", VIEWER, 1_700_000_000)
    sessions = run_json(capsys)["sessions"]
    assert main(["replay"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    head, each = last.split("; under each strategy: ")
    assert head.startswith("2 transcripts, 241 calls: $") and head.endswith(" at list prices")
    listed = dict(item.split(" $") for item in each.split(", "))
    assert list(listed) == list(STRATEGIES)
    for name, dollars in listed.items():
        total = sum(s["strategies"][name]["cost_usd"] for s in sessions)
        assert float(dollars.replace(",", "")) == pytest.approx(total, abs=0.01)


def test_own_sessions_that_match_nothing_are_an_error_not_the_demo(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own_session(isolated_home, "-home-dev-api", "9a8b.jsonl", SUBAGENT, 1_700_000_500)
    assert main(["replay", "--project", "no-such-project"]) == 1
    assert "match --project/--since" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", "--since", "last tuesday"])
    assert "not a date" in capsys.readouterr().err


def test_a_bad_file_is_reported_and_the_others_still_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = demo_folder(tmp_path)
    (folder / "b.jsonl").write_bytes(b"\xff\xfe not json at all\n{}\n")
    (folder / "c.jsonl").mkdir()  # a folder named like a transcript is searched, not read
    missing = tmp_path / "missing.jsonl"
    assert main(["replay", "--json", str(folder), str(missing)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert [s["path"] for s in report["sessions"]] == [str(folder / "a.jsonl")]
    errors = {e["path"]: e["error"] for e in report["errors"]}
    assert errors == {
        str(folder / "b.jsonl"): "no API calls in this transcript",
        str(missing): "cannot read: No such file or directory",
    }
    assert f"{missing}: cannot read" in captured.err
    assert f"{folder / 'b.jsonl'}:1: not JSON" in captured.err


def test_a_lone_surrogate_in_a_transcript_is_replayed_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON carries half a surrogate pair ("\\ud83d") where UTF-8 cannot; Claude Code writes
    one when a tool's output cut an emoji in two."""
    session = Transcript().user("what broke?")
    session.assistant([tool_use("toolu_1", "Bash", command="tail log")], usage={"write": 4000})
    session.tool_result("toolu_1", "cut \ud83d here " * 50)
    session.assistant([text("an emoji cut in two \ud83d")], usage={"read": 4000, "write": 300})
    path = session.write(tmp_path / "s.jsonl")
    assert b"\\ud83d" in path.read_bytes()
    report = run_json(capsys, str(path))
    assert report["errors"] == []
    assert [s["path"] for s in report["sessions"]] == [str(path)]


@pytest.mark.parametrize("count", ["many", -5], ids=["not-a-number", "negative"])
def test_a_response_whose_usage_is_unreadable_still_replays_as_unrecorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: object
) -> None:
    session = Transcript().user("hi")
    session.assistant([text("hello")], usage={"write": 4000})
    session.user("and?")
    session.assistant([text("more")], usage={"read": 4000, "write": 20})
    session.lines[1]["message"]["usage"]["input_tokens"] = count
    path = session.write(tmp_path / "s.jsonl")
    assert main(["replay", "--json", str(path)]) == 0
    captured = capsys.readouterr()
    (replayed,) = json.loads(captured.out)["sessions"]
    assert replayed["calls"] == 2
    assert f"note: {path}:2: unreadable usage" in captured.err


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("bom.jsonl", lambda raw: b"\xef\xbb\xbf" + raw),  # a Windows editor's byte-order mark
        ("crlf.jsonl", lambda raw: raw.replace(b"\n", b"\r\n")),
        ("archived.jsonl.gz", gzip.compress),
    ],
    ids=["bom", "crlf", "gzip"],
)
def test_a_transcript_saved_another_way_replays_every_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, damage: Any
) -> None:
    path = tmp_path / name
    path.write_bytes(damage(DEMO_SESSION.read_bytes()))
    assert main(["replay", "--json", str(path)]) == 0
    captured = capsys.readouterr()
    assert [s["calls"] for s in json.loads(captured.out)["sessions"]] == [80]
    assert "note:" not in captured.err  # not one line lost


def test_a_file_that_is_no_transcript_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binary or a markdown export: one error naming the file, not a note per line."""
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)
    export = tmp_path / "session.md"
    export.write_text("# Session\n\n**User:** hi\n\n**Claude:** hello\n" * 50)
    assert main(["replay", str(image), str(export), str(DEMO_SESSION)]) == 0
    err = capsys.readouterr().err
    assert f"error: {image}: not a transcript: no line of it is JSON" in err
    assert f"error: {export}: not a transcript: no line of it is JSON" in err
    assert "note:" not in err


def test_a_folder_lists_what_it_could_not_read_under_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO and a broken link among the sessions are errors, not silently left out; a
    gzip'd session is replayed like the others."""
    shutil.copy(DEMO_SESSION, tmp_path / "good.jsonl")
    (tmp_path / "old.jsonl.gz").write_bytes(gzip.compress(DEMO_SESSION.read_bytes()))
    (tmp_path / "notes.jsonl.bak").write_text("not a session")
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it would wait for a writer forever
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "deleted.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    report: Any = run_json(capsys, str(tmp_path))
    assert [Path(s["path"]).name for s in report["sessions"]] == ["good.jsonl", "old.jsonl.gz"]
    errors = {Path(e["path"]).name: e["error"] for e in report["errors"]}
    assert errors == {
        "gone.jsonl": "cannot read: No such file or directory",
        "pipe.jsonl": "cannot read: not a regular file (a FIFO)",
    }


def locked(*folders: Path) -> list[str]:
    """Lock the folders (chmod 000); the command prefix under which they stay locked: none
    for a user, and for root (a CI container), setpriv dropping the capabilities by which
    root reads any folder."""
    for folder in folders:
        folder.chmod(0)
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: chmod 000 locks no folder for root")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def replay_locked(folders: list[Path], *argv: str) -> subprocess.CompletedProcess[str]:
    """`ectx replay *argv` in its own process, with the folders locked while it runs."""
    try:
        command = [*locked(*folders), sys.executable, "-m", "ephemeral_context", "replay"]
        return subprocess.run(
            [*command, *argv], capture_output=True, text=True, timeout=120, check=False
        )
    finally:
        for folder in folders:
            folder.chmod(0o700)


def test_a_folder_that_cannot_be_listed_is_an_error_and_the_rest_replays(tmp_path: Path) -> None:
    """A locked sub-folder is listed under errors, as a file that cannot be read is, not
    left out unsaid; the terminal says it too."""
    folder = demo_folder(tmp_path)
    private = folder / "private"
    private.mkdir()
    shutil.copy(DEMO_SESSION, private / "b.jsonl")
    done = replay_locked([private], "--json", str(folder))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["path"] for s in report["sessions"]] == [str(folder / "a.jsonl")]
    assert report["errors"] == [{"path": str(private), "error": "cannot read: Permission denied"}]
    done = replay_locked([private], str(folder))
    assert f"error: {private}: cannot read: Permission denied" in done.stderr


def test_own_sessions_in_folders_that_cannot_be_listed_are_errors(isolated_home: Path) -> None:
    """A locked project folder, or a session's locked sub-agents folder, is an error of
    its own; the sessions that can be read replay."""
    main = own_session(isolated_home, "-home-dev-api", "9a8b.jsonl", SUBAGENT, 1_700_000_500)
    own_session(isolated_home, "-home-dev-api", "9a8b/subagents/agent-a1.jsonl", SUBAGENT, 1)
    shop = own_session(isolated_home, "-home-dev-shop", "0f1e.jsonl", VIEWER, 1_700_000_000)
    agents = main.with_suffix("") / "subagents"
    done = replay_locked([agents, shop.parent], "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["path"] for s in report["sessions"]] == [str(main)]
    assert report["errors"] == [
        {"path": str(shop.parent), "error": "cannot read: Permission denied"},  # dated now
        {"path": str(agents), "error": "cannot read: Permission denied"},
    ]


def _markdown_folder(root: Path) -> None:
    """A folder of markdown: a session's records saved as .md, a conversation exported as
    markdown prose, and markdown that is no session at all (a README, notes)."""
    (root / "exports").mkdir(parents=True)
    shutil.copy(DEMO_SESSION, root / "exports" / "session.md")
    turns = "## User\n\nRename run to start.\n\n## Assistant\n\nDone: `App.start`.\n\n"
    (root / "exports" / "chat.md").write_text("# Conversation\n\n" + turns * 3)
    (root / "README.md").write_text(
        "# Sessions\n\n## User guide\n\nRun `ectx replay .`.\n\n## Claude Code\n\n"
        'Its records look like {"type": "user", "message": ...}.\n'
    )
    (root / "notes.md").write_text("**TODO:** compare with last week\n")


def test_markdown_in_a_folder_is_replayed_when_it_is_a_session_and_else_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session saved as .md replays as it does named directly; a conversation exported
    as markdown prose is what it is named directly, one clear error; a README or notes
    are no session and no error."""
    _markdown_folder(tmp_path)
    report: Any = run_json(capsys, str(tmp_path))
    assert [(Path(s["path"]).name, s["calls"]) for s in report["sessions"]] == [("session.md", 80)]
    chat = tmp_path / "exports" / "chat.md"
    assert report["errors"] == [
        {"path": str(chat), "error": "not a transcript: no line of it is JSON"}
    ]
    assert main(["replay", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert f"error: {chat}: not a transcript: no line of it is JSON" in captured.err
    assert "README.md" not in captured.out + captured.err
    assert "notes.md" not in captured.out + captured.err
    assert "session.md" in captured.out


@pytest.mark.parametrize(
    ("user", "assistant"),
    [("## 👤 User", "## 🤖 Claude"), ("_**User**_", "_**Assistant**_"), ("### USER", "### CLAUDE")],
)
def test_a_conversation_exported_with_other_headings_is_an_error_not_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str, assistant: str
) -> None:
    """Exporters head their turns with an emoji, in capitals or as SpecStory does: such an
    export in a folder is an error as `## User` is (it had been left out unsaid)."""
    chat = tmp_path / "chat.md"
    chat.write_text(f"# Conversation\n\n{user}\n\nRename run.\n\n{assistant}\n\nDone.\n")
    (tmp_path / "notes.md").write_text("## 👤 Users\n\n## 🤖 Claude Code\n")
    assert main(["replay", "--json", str(tmp_path)]) == 1  # nothing could be replayed
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == [
        {"path": str(chat), "error": "not a transcript: no line of it is JSON"}
    ]


def test_a_gzip_file_cut_short_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(DEMO_SESSION.read_bytes())[:4000])
    assert main(["replay", str(path)]) == 1
    assert f"{path}: cannot read: Compressed file ended" in capsys.readouterr().err


def test_nothing_replayable_is_exit_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path / "nope.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_the_installed_command_runs_in_a_subprocess(isolated_home: Path) -> None:
    """The real entry point, in its own process, with the temporary HOME."""
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "replay", "--demo", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions"][0]["calls"] == 80


def ectx(*argv: str, **options: Any) -> subprocess.Popen[bytes]:
    """`python -m ephemeral_context *argv` in its own process, importing this checkout's
    package (not whichever one the environment has installed)."""
    package = Path(ephemeral_context.__file__).parents[1]
    path = os.pathsep.join([str(package), str(REPO_ROOT)])
    command = [sys.executable, "-m", "ephemeral_context", *argv]
    return subprocess.Popen(command, env={**os.environ, "PYTHONPATH": path}, **options)


@pytest.mark.parametrize("argv", [["--json"], []], ids=["json", "table"])
def test_output_into_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """`ectx replay --json | head -c 10`: the reader has gone; no traceback, status 1."""
    reader, writer = os.pipe()
    os.close(reader)
    with ectx("replay", "--demo", *argv, stdout=writer, stderr=subprocess.PIPE) as process:
        os.close(writer)
        _, err = process.communicate(timeout=120)
    assert err.decode() == ""
    assert process.returncode == 1


def test_a_closed_stdout_is_no_traceback() -> None:
    """`ectx replay --json >&-`: started with no stdout at all, the replay runs and what it
    prints goes nowhere."""
    with ectx(
        "replay", "--demo", "--json", preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE
    ) as process:
        _, err = process.communicate(timeout=120)
    assert err.decode() == ""
    assert process.returncode == 0


def test_a_terminal_sees_the_progress_of_a_single_session() -> None:
    """One long session is the case that needs it most: a terminal on stderr shows the
    progress (a spinner and the session's name) while the tables go to stdout."""
    leader, follower = pty.openpty()
    with ectx("replay", "--demo", stdout=subprocess.DEVNULL, stderr=follower) as process:
        os.close(follower)
        shown = b""
        with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
            while chunk := os.read(leader, 65536):
                shown += chunk
        process.wait(timeout=120)
    os.close(leader)
    assert process.returncode == 0
    assert b"replaying" in shown and DEMO_SESSION.name.encode() in shown


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_output_to_a_full_disk_is_one_line_and_status_1() -> None:
    """`ectx replay > file` on a full disk (Linux's /dev/full is one): the error in one
    line, no traceback."""
    with (
        open("/dev/full", "w", encoding="utf-8") as full,
        ectx("replay", "--demo", stdout=full, stderr=subprocess.PIPE) as process,
    ):
        _, err = process.communicate(timeout=120)
    assert err.decode() == "ectx: cannot write the output: No space left on device\n"
    assert process.returncode == 1


def test_ctrl_c_ends_the_replay_with_one_line_and_status_130(tmp_path: Path) -> None:
    """SIGINT while the report is still being written says so in one line. stdout is a pipe
    of one page that is not read, so the process cannot finish before the signal."""
    for n in range(8):
        session = Transcript().user(f"question {n}")
        session.assistant([text("answer")], usage={"write": 4000})
        session.write(tmp_path / f"s{n}.jsonl")
    reader, writer = os.pipe()
    fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, 4096)
    with ectx("replay", "--json", str(tmp_path), stdout=writer, stderr=subprocess.PIPE) as process:
        os.close(writer)
        assert os.read(reader, 1) == b"{"  # it is writing what no longer fits the pipe
        process.send_signal(signal.SIGINT)
        while os.read(reader, 65536):
            pass
        os.close(reader)
        _, err = process.communicate(timeout=120)
    assert err.decode() == "ectx: interrupted\n"
    assert process.returncode == 130


def test_a_lone_surrogate_the_table_shows_is_escaped_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model id holding half a surrogate pair (JSON allows it, UTF-8 cannot encode it)
    is shown escaped in the table, which is printed whole."""
    session = Transcript(model="claude-\ud800opus").user("hi")
    session.assistant([text("hello")], usage={"write": 4000})
    path = session.write(tmp_path / "s.jsonl")
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "claude-\\ud800opus" in out
    assert "1 transcript, 1 calls" in out


def test_a_file_with_no_call_to_replay_is_under_errors_in_the_json_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty file, one of blank lines, one of JSON that is no record: none could be
    replayed, and --json lists each under errors as the terminal says it, not nowhere."""
    folder = demo_folder(tmp_path)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "blank.jsonl").write_bytes(b"\n\n  \n")
    (folder / "numbers.jsonl").write_bytes(b"[1, 2]\n42\n")
    report = run_json(capsys, str(folder))
    assert [Path(s["path"]).name for s in report["sessions"]] == ["a.jsonl"]
    nothing = "no API calls in this transcript"
    assert report["errors"] == [
        {"path": str(folder / name), "error": nothing}
        for name in ("blank.jsonl", "empty.jsonl", "numbers.jsonl")
    ]
    assert main(["replay", str(folder)]) == 0
    err = capsys.readouterr().err
    assert f"error: {folder / 'empty.jsonl'}: {nothing}\n" in err
    assert f"note: {folder / 'numbers.jsonl'}:1: not a JSON object but 'list'" in err
    assert "note: " + str(folder / "empty.jsonl") not in err
