"""`ectx index`, `ectx status` and `ectx store gc|get`, run as a user runs them."""

from __future__ import annotations

import functools
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from ephemeral_context import store_command
from ephemeral_context.cli import main
from ephemeral_context.indexer import index_targets
from ephemeral_context.store import Store, data_dir


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small git repository with text, binary, oversize and untracked files."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("def f():\n    return 'é'\n")
    (repo / "README.md").write_bytes(b"# Title\r\n\r\nWindows line ends\r\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (repo / "big.txt").write_text("x" * 5000)
    (repo / "untracked.txt").write_text("not in git")
    git(repo, "init", "-q")
    git(repo, "add", "pkg/mod.py", "README.md", "logo.png", "big.txt")
    return repo


def test_index_defaults_to_the_repository_tracked_files(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo / "pkg")
    assert main(["index", "--max-bytes", "4096"]) == 0
    out = capsys.readouterr().out
    assert "pkg/mod.py" in out and "README.md" in out and "untracked" not in out
    assert "logo.png" in out and "binary" in out
    assert "big.txt" in out and "too-large" in out
    assert "2 files" in out and "2 new in the store" in out and "2 skipped" in out
    with Store() as store:
        stored = {entry.uri: entry for entry in store.entries()}
    readme = stored[(repo / "README.md").as_uri()]
    assert readme.id in out
    module = stored[(repo / "pkg" / "mod.py").as_uri()]
    assert module.synopsis is not None and "function f()" in module.synopsis
    with Store() as store:
        assert store.get(readme.id).text == "# Title\r\n\r\nWindows line ends\r\n"
    assert main(["index", "--summary", str(repo / "pkg")]) == 0
    again = capsys.readouterr().out
    assert "1 files" in again and "0 new in the store, 1 already there" in again


def test_index_outside_git_walks_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.txt").write_text("alpha")
    (tmp_path / "plain" / ".hidden").mkdir()
    (tmp_path / "plain" / ".hidden" / "b.txt").write_text("beta")
    monkeypatch.chdir(tmp_path / "plain")
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert "a.txt" in out and "b.txt" not in out and "1 files" in out


def test_a_symlink_loop_is_skipped_and_the_rest_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link to itself and two links to each other among the files: each is listed as
    unreadable, not a RuntimeError ("Symlink loop") that ends the whole `ectx index`."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.txt").write_text("alpha")
    (tmp_path / "plain" / "self.txt").symlink_to("self.txt")
    (tmp_path / "plain" / "ping").symlink_to("pong")
    (tmp_path / "plain" / "pong").symlink_to("ping")
    monkeypatch.chdir(tmp_path / "plain")
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert "1 files" in out and "3 skipped" in out and out.count("unreadable") == 3


def test_index_targets_are_the_repository_around_the_working_directory(
    repo: Path, tmp_path: Path
) -> None:
    root, files = index_targets([], repo / "pkg")
    assert root == repo and {f.name for f in files} == {
        "mod.py",
        "README.md",
        "logo.png",
        "big.txt",
    }
    named = index_targets([repo / "pkg"], repo / "pkg")
    assert named == (repo, [(repo / "pkg" / "mod.py").resolve()])
    (tmp_path / "plain").mkdir()
    assert index_targets([], tmp_path / "plain") == (tmp_path / "plain", [])


def test_index_rejects_a_missing_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "/no/such/path"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_status_gc_and_get(capsys: pytest.CaptureFixture[str]) -> None:
    with Store() as store:
        entry = store.put("stored once\n", uri="file:///x.txt")
    assert main(["status", "--entries", "5"]) == 0
    out = capsys.readouterr().out
    assert "1 (1 live, 0 expired)" in out and entry.id in out and "7 days" in out
    assert main(["store", "gc"]) == 0
    assert "0 expired entries" in capsys.readouterr().out
    assert main(["store", "get", entry.id, "--offset", "7"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "once\n" and "characters 7-12 of 12" in captured.err
    assert main(["store", "get", "../../etc/passwd"]) == 1
    assert "not a store id" in capsys.readouterr().err


def test_a_locked_store_is_one_line_and_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process keeps the write lock past the busy timeout (shortened here, not
    mocked): every store command says so in one line on stderr, no traceback."""
    monkeypatch.chdir(tmp_path)
    with Store() as store:
        entry = store.put("stored once\n")
        root = store.root
    monkeypatch.setattr(store_command, "Store", functools.partial(Store, busy_timeout_ms=50))
    other = sqlite3.connect(root / "index.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    for command in (["status"], ["store", "gc"], ["store", "get", entry.id], ["index"]):
        assert main(command) == 1
        captured = capsys.readouterr()
        assert captured.err == (
            f"ectx: the store in {root} is busy: another process holds its lock; "
            "retry in a moment\n"
        ), command
    other.execute("ROLLBACK")
    other.close()
    assert main(["store", "get", entry.id]) == 0
    assert capsys.readouterr().out == "stored once\n"


def test_a_store_that_cannot_be_written_is_one_line_and_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file where the store's folder goes (a read-only or full disk alike): every command
    that opens the store, the gateway's too, says so in one line on stderr, no traceback."""
    monkeypatch.chdir(tmp_path)
    root = data_dir() / "store"
    root.parent.mkdir(parents=True, exist_ok=True)
    root.write_text("not a folder")
    for command in (["status"], ["store", "gc"], ["index"], ["gateway", "--port", "0"]):
        assert main(command) == 1, command
        captured = capsys.readouterr()
        assert captured.err == f"ectx: the store in {root} cannot be used: Not a directory\n"


def test_index_never_stores_a_secret_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key committed by mistake, a tracked .env: skipped with the reason the model's read
    gives, and nothing of them in the store (a stored id is readable again by id)."""
    token = "sk-ant-api03-" + "k" * 40
    (repo / ".env").write_text("DB_PASSWORD=hunter2\n")
    (repo / "pkg" / "settings.py").write_text(f"API_KEY = '{token}'\n")
    git(repo, "add", ".env", "pkg/settings.py")
    monkeypatch.chdir(repo)
    assert main(["index"]) == 0
    out = capsys.readouterr().out
    assert out.count("secret:") == 2 and "3 skipped" in out  # and logo.png, a binary
    with Store() as store:
        texts = [store.get(entry.id).text for entry in store.entries()]
    assert texts and not any("hunter2" in t or token in t for t in texts)


def test_ectx_runs_as_a_module(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "index", "--summary"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 files" in done.stdout and "1 skipped" in done.stdout


def test_get_with_stdout_closed_is_no_traceback() -> None:
    """`ectx store get ID >&-` of a text with half a surrogate pair (kept as it came from
    JSON): what it prints goes nowhere, as it would on a terminal; the range line still
    comes on stderr, and no UnicodeEncodeError."""
    with Store() as store:
        entry = store.put("half a pair: \ud800\n")
    done = subprocess.run(
        [sys.executable, "-m", "ephemeral_context", "store", "get", entry.id],
        preexec_fn=lambda: os.close(1),
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, f"[{entry.id}: characters 0-15 of 15]\n")


@pytest.mark.skipif(sys.platform != "linux", reason="file names are bytes on Linux")
def test_index_stores_a_file_whose_name_is_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its synopsis names it with the byte escaped: the raw name failed the whole run."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "caf\udce9.py").write_text("def f():\n    pass\n")  # b"caf\xe9.py"
    (tmp_path / "plain" / "z.py").write_text("def g():\n    pass\n")
    monkeypatch.chdir(tmp_path / "plain")
    assert main(["index"]) == 0
    assert "2 files" in capsys.readouterr().out
    with Store() as store:
        synopses = sorted(entry.synopsis or "" for entry in store.entries())
    assert "caf\\xe9.py (python, 2 lines" in synopses[0] and "function f()" in synopses[0]


def test_index_of_a_name_longer_than_the_system_takes_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["index", "a" * 5000]) == 2
    assert capsys.readouterr().err.startswith("ectx index: file name too long: aaaa")
