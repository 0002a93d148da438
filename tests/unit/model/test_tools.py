"""Tool handlers on a real workspace folder, a real document mirror and real files."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from ephemeral_context.context.blocks import label_of, uri_of
from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import Document, DocumentMirror, path_to_uri, uri_to_path
from ephemeral_context.model import search
from ephemeral_context.model.agent import record_result
from ephemeral_context.model.edits import DiskEditApplier, EditError, plan_edit
from ephemeral_context.model.search import SEARCH_MAX_MATCHES
from ephemeral_context.model.secrets import AccessDenied, SecretPolicy, Workspace
from ephemeral_context.model.tools import (
    READ_DEFAULT_LINES,
    READ_MAX_CHARS,
    SkillFolder,
    ToolEnv,
    run_tool,
    tool_schemas,
)
from ephemeral_context.store import Store

PRIVATE_KEY = (
    "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
)
GITHUB_TOKEN = "ghp_" + "Z" * 36


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("import os\n\n\ndef run():\n    return 1\n")
    (ws / "src" / "util.py").write_text("def helper():\n    return 'helper'\n")
    (ws / ".env").write_text("API_TOKEN=hunter2\n")
    (ws / "deploy.py").write_text("KEY = '''\n" + PRIVATE_KEY + "'''\n")
    (ws / "README.md").write_text("run the app\n")
    return ws


@pytest.fixture
def env(root: Path, tmp_path: Path) -> ToolEnv:
    return ToolEnv(
        workspace=Workspace.of([root]),
        mirror=DocumentMirror(),
        memory_root=tmp_path / "data" / "memories",
    )


async def test_read_symbol_and_outline(env: ToolEnv, root: Path) -> None:
    (root / "src" / "shapes.py").write_text(
        "class Square:\n    def area(self):\n        return 4\n\n\n"
        "class Circle:\n    def area(self):\n        return 3\n"
    )
    found = await run_tool(env, "read_symbol", {"path": "src/shapes.py", "symbol": "Circle.area"})
    assert not found.is_error, found.text
    assert (
        found.text
        == "src/shapes.py::Circle.area (lines 7-8)\n    def area(self):\n        return 3\n"
    )
    ambiguous = await run_tool(env, "read_symbol", {"path": "src/shapes.py", "symbol": "area"})
    assert (
        ambiguous.is_error and "Square.area" in ambiguous.text and "Circle.area" in ambiguous.text
    )
    typo = await run_tool(env, "read_symbol", {"path": "src/shapes.py", "symbol": "Circel"})
    assert typo.is_error and "Circle" in typo.text
    pasted = await run_tool(env, "read_symbol", {"path": "src/shapes.py", "symbol": "C" * 50_000})
    assert pasted.is_error and "(50,000 characters)" in pasted.text and len(pasted.text) < 300
    outline = await run_tool(env, "outline", {"path": "src/shapes.py"})
    assert not outline.is_error
    assert "class Square" in outline.text and "method Circle.area" in outline.text


async def test_read_session_file_through_the_engine(env: ToolEnv, store: Store) -> None:
    env.engine = ContextEngine(store)
    entry = store.put("0123456789" * 10)
    whole = await run_tool(env, "read_session_file", {"id": entry.id})
    assert whole.text == "0123456789" * 10
    part = await run_tool(
        env, "read_session_file", {"id": f"[[file:{entry.id}]]", "offset": 5, "limit": 10}
    )
    assert part.text == f"[{entry.id}: characters 5-15 of 100]\n5678901234"
    leaked = store.put(f"token = '{GITHUB_TOKEN}'\n")
    withheld = await run_tool(env, "read_session_file", {"id": leaked.id})
    assert withheld.is_error and "a GitHub token" in withheld.text
    assert GITHUB_TOKEN not in withheld.text
    # A slice is withheld with its whole: the part beside the token's prefix is its body.
    beside = await run_tool(env, "read_session_file", {"id": leaked.id, "offset": 13})
    assert beside.is_error and GITHUB_TOKEN[4:] not in beside.text
    unknown = await run_tool(env, "read_session_file", {"id": "deadbeefdeadbeef"})
    assert unknown.is_error and "deadbeef" in unknown.text


async def test_a_version_stored_under_an_opt_in_is_withheld_once_it_is_gone(
    env: ToolEnv, root: Path, store: Store
) -> None:
    env.engine = ContextEngine(store)
    allowed = replace(env, secrets=SecretPolicy.configured([], [".env"], base=root))
    env.engine.add_user_text("c", "what is in .env?")
    call = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": ".env"}}
    env.engine.add_assistant_content("c", [call])
    record_result(env.engine, "c", "t1", await run_tool(allowed, "read_file", {"path": ".env"}))
    [seen] = env.engine.file_views("c")
    again = await run_tool(allowed, "read_session_file", {"id": seen.item_id})
    assert again.text == "API_TOKEN=hunter2\n"
    # The opt-in withdrawn (or another workspace's session): the id no longer sends it.
    withheld = await run_tool(env, "read_session_file", {"id": seen.item_id})
    assert withheld.is_error and "'.env'" in withheld.text
    assert "hunter2" not in withheld.text


async def test_read_session_file_brings_back_one_definition(env: ToolEnv, store: Store) -> None:
    """The one tool a gateway adds fetches a definition of a file's content by id, as the
    replay's round trips do (context/rehydration.py)."""
    env.engine = ContextEngine(store)
    shapes = "class Square:\n    def area(self):\n        return 4\n\n\nclass Circle:\n"
    shapes += "    def area(self):\n        return 3\n"
    entry = store.put(shapes, uri="file:///ws/shapes.py")
    found = await run_tool(env, "read_session_file", {"id": entry.id, "symbol": "Circle.area"})
    assert not found.is_error, found.text
    assert found.text == f"[{entry.id}: Circle.area]\n    def area(self):\n        return 3"
    typo = await run_tool(env, "read_session_file", {"id": entry.id, "symbol": "Circel"})
    assert typo.is_error and "Circle" in typo.text
    both = {"id": entry.id, "symbol": "Circle", "offset": 3}
    assert (await run_tool(env, "read_session_file", both)).is_error
    output = store.put("def looks_like_code():\n    pass\n")  # a tool output: no file
    not_a_file = await run_tool(
        env, "read_session_file", {"id": output.id, "symbol": "looks_like_code"}
    )
    assert not_a_file.is_error and "without symbol" in not_a_file.text


async def test_read_session_file_takes_lines_as_a_read_gives_them(
    env: ToolEnv, store: Store
) -> None:
    """Claude Code's Read at the engine's path gives offset and limit in lines
    (context/fetching.py): the tool answers those lines, says which, and refuses a mix."""
    env.engine = ContextEngine(store)
    entry = store.put("one\ntwo\nthree\nfour\n")
    part = await run_tool(
        env, "read_session_file", {"id": entry.id, "first_line": 2, "line_count": 2}
    )
    assert part.text == f"[{entry.id}: lines 2-3 of 4]\ntwo\nthree\n"
    rest = await run_tool(env, "read_session_file", {"id": entry.id, "first_line": 4})
    assert rest.text == f"[{entry.id}: lines 4-4 of 4]\nfour\n"
    whole = await run_tool(env, "read_session_file", {"id": entry.id, "first_line": 1})
    assert whole.text == "one\ntwo\nthree\nfour\n"
    past = await run_tool(env, "read_session_file", {"id": entry.id, "first_line": 9})
    assert past.is_error and "4 lines" in past.text
    mixed = await run_tool(env, "read_session_file", {"id": entry.id, "first_line": 2, "offset": 3})
    assert mixed.is_error


async def test_skills_from_a_folder(env: ToolEnv, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "release").mkdir(parents=True)
    (skills / "release" / "SKILL.md").write_text(
        "---\nname: release\ndescription: how to cut a release\nephemeral: true\n---\nTag it.\n"
    )
    (skills / "style.md").write_text("Use four spaces.\n")
    env.skills = SkillFolder(skills)
    schema = next(t for t in tool_schemas(env) if t["name"] == "invoke_skill")
    assert "- release: how to cut a release" in schema["description"]
    assert "- style" in schema["description"]
    body = await run_tool(env, "invoke_skill", {"name": "release"})
    assert body.kind == "skill" and body.text.endswith("Tag it.\n")
    assert body.text.startswith("---\nname: release")
    missing = await run_tool(env, "invoke_skill", {"name": "deploy"})
    assert missing.is_error and "release, style" in missing.text


async def test_a_skill_holding_a_token_is_withheld(env: ToolEnv, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "deploy.md").write_text(f"curl -H 'Authorization: token {GITHUB_TOKEN}'\n")
    env.skills = SkillFolder(skills)
    body = await run_tool(env, "invoke_skill", {"name": "deploy"})
    assert body.is_error and "a GitHub token" in body.text
    assert GITHUB_TOKEN not in body.text


async def test_read_file_returns_the_whole_current_version(env: ToolEnv, root: Path) -> None:
    result = await run_tool(env, "read_file", {"path": "src/app.py"})
    assert not result.is_error
    assert result.kind == "file"
    assert result.text == (root / "src" / "app.py").read_text()
    assert isinstance(result.document, Document)
    assert result.uri == path_to_uri(root / "src" / "app.py")


async def test_read_file_range_by_lines(env: ToolEnv) -> None:
    result = await run_tool(env, "read_file", {"path": "src/app.py", "offset": 4, "limit": 1})
    assert result.text == "def run():\n"
    assert result.first_line == 4
    past = await run_tool(env, "read_file", {"path": "src/app.py", "offset": 99})
    assert past.is_error and "past the end" in past.text


async def test_lines_are_numbered_as_the_editor_numbers_them(
    env: ToolEnv, root: Path, store: Store
) -> None:
    """A line ends at \\n, \\r\\n or a lone \\r (LSP), not at a form feed, U+2028 or U+0085
    as str.splitlines has it: read_file, read_session_file and search give the editor's line
    N as line N (they gave a later one, or half of one)."""
    text = "const s = 'a\u2028b';\f\nlet x = 1;\x85\rlet y = 2;\r\nlet z = 3;\n"
    (root / "src" / "seps.js").write_text(text, newline="")
    editor_lines = [
        "const s = 'a\u2028b';\f\n",
        "let x = 1;\x85\r",
        "let y = 2;\r\n",
        "let z = 3;\n",
    ]
    assert "".join(editor_lines) == text
    for number, line in enumerate(editor_lines, start=1):
        read = await run_tool(
            env, "read_file", {"path": "src/seps.js", "offset": number, "limit": 1}
        )
        assert read.text == line
    env.engine = ContextEngine(store)
    entry = store.put(text)
    part = await run_tool(
        env, "read_session_file", {"id": entry.id, "first_line": 3, "line_count": 1}
    )
    assert part.text == f"[{entry.id}: lines 3-3 of 4]\nlet y = 2;\r\n"
    found = await run_tool(env, "search", {"pattern": "let z", "glob": "**/*.js"})
    assert found.text.splitlines()[0] == "src/seps.js:4: let z = 3;"


async def test_a_file_with_lone_cr_line_ends_has_its_lines(env: ToolEnv, root: Path) -> None:
    """A lone CR ends a line (LSP; a classic Mac file): the outline counts the editor's
    lines and read_symbol gives the one definition (it gave the whole file as lines 1-1)."""
    text = "def f():\r    return 1\r\r\rdef g():\r    return 2\r"
    (root / "mac.py").write_bytes(text.encode())
    outline = await run_tool(env, "outline", {"path": "mac.py"})
    assert (
        outline.text
        == "mac.py (python, 6 lines, ~16 tokens)\n  1-2 function f()\n  5-6 function g()\n"
    )
    symbol = await run_tool(env, "read_symbol", {"path": "mac.py", "symbol": "g"})
    assert symbol.text == "mac.py::g (lines 5-6)\ndef g():\r    return 2\n"


async def test_read_file_prefers_the_open_buffer(env: ToolEnv, root: Path) -> None:
    uri = path_to_uri(root / "src" / "app.py")
    env.mirror.open(uri, "python", 3, "print('unsaved buffer')\n")
    result = await run_tool(env, "read_file", {"path": "src/app.py"})
    assert result.text == "print('unsaved buffer')\n"


async def test_a_workspace_folder_opened_by_a_linked_path_reads_the_buffer(
    tmp_path: Path,
) -> None:
    """The editor names files by the folder's linked path (~/proj -> /data/proj), the tools
    by the real one: they get the open buffer all the same (they read the file on disk, and
    an edit went to the disk under the user's unsaved buffer), keyed by the real path as
    the buffer is; the mirror still knows the editor's URI for it."""
    real = tmp_path / "data" / "proj"
    real.mkdir(parents=True)
    (real / "a.py").write_text("on disk\n")
    link = tmp_path / "proj"
    link.symlink_to(real)
    env = ToolEnv.configured(mirror=DocumentMirror(), folders=[link], memory_root=tmp_path / "m")
    opened = path_to_uri(link / "a.py")
    env.mirror.open(opened, "python", 1, "unsaved buffer\n")
    key = path_to_uri(real / "a.py")
    read = await run_tool(env, "read_file", {"path": "a.py"})
    assert (read.text, read.uri) == ("unsaved buffer\n", key)
    assert env.mirror.editor_uri(key) == opened
    found = await run_tool(env, "search", {"pattern": "buffer|disk"})
    assert found.text == "a.py:1: unsaved buffer"
    assert env.mirror.is_open(key)  # so an edit goes to the editor
    edit = {"path": "a.py", "old_string": "disk", "new_string": "DISK"}  # the CLI's: on disk
    edited = await run_tool(env, "edit_file", edit)
    assert not edited.is_error and edited.uri == key  # one file, one key
    env.mirror.close(opened)
    assert not env.mirror.is_open(key)
    assert (await run_tool(env, "read_file", {"path": "a.py"})).text == "on DISK\n"


async def test_env_file_is_withheld_with_a_reason(env: ToolEnv) -> None:
    result = await run_tool(env, "read_file", {"path": ".env"})
    assert result.is_error
    assert "withheld" in result.text and "'.env'" in result.text
    assert "hunter2" not in result.text


@pytest.mark.parametrize("uri", ["untitled:/w/.env", "vscode-vfs://github/o/r/%2Eenv.local"])
def test_a_buffer_with_no_file_here_is_withheld_by_the_name_its_uri_gives(
    env: ToolEnv, uri: str
) -> None:
    """What a pin checks (`readable`): no file on disk, but the name is still a secret's."""
    env.mirror.open(uri, "dotenv", 1, "DB=hunter2\n")
    with pytest.raises(AccessDenied, match="matches the secret pattern") as refused:
        env.readable(uri)
    assert refused.value.reason == "secret" and "hunter2" not in str(refused.value)
    env.mirror.open("untitled:Untitled-1", "plaintext", 1, "notes\n")
    assert env.readable("untitled:Untitled-1").text == "notes\n"


async def test_private_key_content_is_withheld(env: ToolEnv) -> None:
    result = await run_tool(env, "read_file", {"path": "deploy.py"})
    assert result.is_error
    assert "private-key block" in result.text and "line 2" in result.text
    assert "MIIEpAIBAAKCAQEA" not in result.text


async def test_opt_in_lets_one_file_through(env: ToolEnv, root: Path) -> None:
    env.secrets.allow(root / ".env")
    assert not (await run_tool(env, "read_file", {"path": ".env"})).is_error
    assert (await run_tool(env, "read_file", {"path": "deploy.py"})).is_error


async def test_path_escapes_are_refused(env: ToolEnv, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        for tool, extra in (
            ("read_file", {}),
            ("edit_file", {"old_string": "o", "new_string": "x"}),
        ):
            result = await run_tool(env, tool, {"path": path, **extra})
            assert result.is_error and "outside the workspace" in result.text, (tool, path)
    assert (tmp_path / "secret.txt").read_text() == "outside\n"


async def test_edit_writes_to_disk_and_the_next_read_sees_it(env: ToolEnv, root: Path) -> None:
    args = {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}
    result = await run_tool(env, "edit_file", args)
    assert not result.is_error, result.text
    assert (root / "src" / "app.py").read_text().endswith("return 2\n")
    again = await run_tool(env, "read_file", {"path": "src/app.py"})
    assert again.text.endswith("return 2\n")


async def test_edit_refusals_are_clear(env: ToolEnv, root: Path) -> None:
    missing = await run_tool(
        env, "edit_file", {"path": "src/app.py", "old_string": "nope", "new_string": "x"}
    )
    assert missing.is_error and "not found" in missing.text
    (root / "dup.py").write_text("a = 1\na = 1\n")
    dup = await run_tool(
        env, "edit_file", {"path": "dup.py", "old_string": "a = 1", "new_string": "b"}
    )
    assert dup.is_error and "2 times" in dup.text
    secret = await run_tool(
        env, "edit_file", {"path": ".env", "old_string": "A", "new_string": "B"}
    )
    assert secret.is_error and "withheld" in secret.text
    assert (root / ".env").read_text() == "API_TOKEN=hunter2\n"


async def test_a_file_holding_a_key_is_not_edited_nor_probed_by_edits(
    env: ToolEnv, root: Path
) -> None:
    """Whether old_string matched would tell, a guess at a time, what the file holds."""
    before = (root / "deploy.py").read_text()
    answers = set()
    for guess in ("MIIEpAIBAAKCAQEA", "MIIEpAIBAAKCAQEB"):  # a hit and a miss
        result = await run_tool(
            env, "edit_file", {"path": "deploy.py", "old_string": guess, "new_string": "x"}
        )
        assert result.is_error and "private-key block" in result.text
        answers.add(result.text)
    assert len(answers) == 1
    assert (root / "deploy.py").read_text() == before


@pytest.mark.parametrize(
    ("name", "tail"),
    [("dump.sql", b"-- " + b"x" * 2000 + b"\n"), ("blob.txt", b"\x00\n")],
    ids=["too-large", "binary"],
)
async def test_a_file_the_model_may_not_read_is_not_edited_nor_probed(
    root: Path, tmp_path: Path, name: str, tail: bytes
) -> None:
    """A file the mirror will not hold as text (too large, binary) was edited unread, its
    secret unchecked: a hit or a miss told what it held, and its whole text, key and all,
    went to the store. It is refused as a read of it is."""
    env = ToolEnv(workspace=Workspace.of([root]), mirror=DocumentMirror(max_bytes=1000))
    key = b"aws_key = 'AKIAQQQQQQQQQQQQQQQQ'\n"
    (root / name).write_bytes(key + tail)
    answers = set()
    for guess in ("AKIAQQ", "AKIAZZ"):  # a hit and a miss
        result = await run_tool(
            env, "edit_file", {"path": name, "old_string": guess, "new_string": "x"}
        )
        assert result.is_error and "cannot read" in result.text
        answers.add(result.text)
    assert len(answers) == 1 and (root / name).read_bytes() == key + tail


async def test_edit_creates_a_file_with_empty_old_string(env: ToolEnv, root: Path) -> None:
    result = await run_tool(
        env, "edit_file", {"path": "src/new/mod.py", "old_string": "", "new_string": "x = 1\n"}
    )
    assert not result.is_error, result.text
    assert (root / "src" / "new" / "mod.py").read_text() == "x = 1\n"


async def test_disk_applier_keeps_crlf_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_bytes(b"echo a\r\necho b\r\n")
    path.chmod(0o755)
    outcome = await DiskEditApplier().apply(path, "echo b", "echo c")
    assert outcome.applied
    assert path.read_bytes() == b"echo a\r\necho c\r\n"
    assert path.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]


async def test_a_byte_order_mark_is_kept_on_disk_and_shown_nowhere(
    env: ToolEnv, root: Path
) -> None:
    """The editor shows and sends a BOM file's text without its BOM; the model reads it the
    same way, and an edit (on disk) keeps the BOM: the read after it is no change."""
    path = root / "src" / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\ny = 2\n")
    read = await run_tool(env, "read_file", {"path": "src/bom.py"})
    assert read.text == "x = 1\ny = 2\n"
    edited = await run_tool(
        env, "edit_file", {"path": "src/bom.py", "old_string": "y = 2", "new_string": "y = 3"}
    )
    assert not edited.is_error and edited.content == "x = 1\ny = 3\n"
    assert path.read_bytes() == b"\xef\xbb\xbfx = 1\ny = 3\n"
    again = await run_tool(env, "read_file", {"path": "src/bom.py"})
    assert again.text == edited.content


def test_plan_edit_cases() -> None:
    assert plan_edit("abc", "b", "X").new_text == "aXc"
    assert plan_edit(None, "", "new").new_text == "new"
    with pytest.raises(EditError, match="identical"):
        plan_edit("abc", "b", "b")
    with pytest.raises(EditError, match="does not exist"):
        plan_edit(None, "b", "c")
    with pytest.raises(EditError, match="empty"):
        plan_edit("abc", "", "c")


def test_an_edit_written_with_lf_applies_to_a_crlf_file_in_crlf() -> None:
    """The model writes line ends as LF: in a CRLF file its lines are found with CRLF
    and replaced in CRLF (no match at all before, for any old_string of two lines)."""
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    assert plan_edit(text, "a = 1\nb = 2\n", "a = 1\nb = 22\nb2 = 0\n").new_text == (
        "a = 1\r\nb = 22\r\nb2 = 0\r\nc = 3\r\n"
    )
    assert plan_edit(text, "b = 2\r\n", "").new_text == "a = 1\r\nc = 3\r\n"  # as written
    # starts with the LF of a CRLF (as written): the CR before it stays the line's
    assert plan_edit(text, "\nb = 2", "\nb = 22\nb2 = 0").new_text == (
        "a = 1\r\nb = 22\r\nb2 = 0\r\nc = 3\r\n"
    )
    with pytest.raises(EditError, match="not found"):
        plan_edit("a = 1\nb = 2\n", "a = 1\r\nb", "x")  # an LF file: exact only


AWS_KEY_ID = "AKIA" + "QX7RT2VB5NW3KZ4M"


async def test_search_finds_lines_and_skips_secrets(env: ToolEnv, root: Path) -> None:
    (root / "src" / "config.py").write_text(
        f"ID = '{AWS_KEY_ID}'\nSECRET = 'wJalrXUtnFEMI/K7MDENG'\nPASSWORD = 'hunter3'\nrun = True\n"
    )
    result = await run_tool(env, "search", {"pattern": r"\brun\b"})
    lines = result.text.splitlines()
    assert "src/app.py:4: def run():" in lines
    assert "README.md:1: run the app" in lines
    # A file withheld for holding a key shows none of its lines, whatever matched.
    assert "src/config.py:4" not in result.text and "hunter3" not in result.text
    assert "wJalrXUtnFEMI" not in result.text and "MIIEpAIBAAKCAQEA" not in result.text
    assert "hunter2" not in result.text  # .env is never searched


async def test_search_passes_over_a_fifo(env: ToolEnv, root: Path) -> None:
    os.mkfifo(root / "src" / "events.log")  # reading it would wait for a writer forever
    result = await run_tool(env, "search", {"pattern": "helper"})
    assert "src/util.py:1: def helper():" in result.text.splitlines()


async def test_search_reads_files_as_read_file_does(env: ToolEnv, root: Path) -> None:
    """A file read_file refuses as not UTF-8 was searched with U+FFFD in it (a Latin-1
    `café` matched `caf`): the model is told it was not searched. A file's BOM is no part of
    its first line, as read_file shows it; binary files stay silent."""
    (root / "src" / "latin.py").write_bytes(b'NAME = "caf\xe9"\n')
    (root / "src" / "bom.py").write_bytes(b"\xef\xbb\xbfcafe = 1\n")
    (root / "src" / "blob.bin").write_bytes(bytes(range(256)))
    found = (await run_tool(env, "search", {"pattern": "caf"})).text.splitlines()
    assert "src/bom.py:1: cafe = 1" in found
    assert "src/latin.py: [not searched: not UTF-8 at byte 11; read_file refuses it too]" in found
    assert not any("blob" in line for line in found)
    refused = await run_tool(env, "read_file", {"path": "src/latin.py"})
    assert refused.is_error and "not UTF-8 at byte 11" in refused.text


async def test_a_withheld_match_looks_exactly_like_a_miss(env: ToolEnv, root: Path) -> None:
    """One note per withheld file, the same for every pattern: probing a secret character
    by character (or a private key's body with a base64 pattern) learns nothing."""
    (root / "src" / "config.py").write_text(f"ID = '{AWS_KEY_ID}'\npassword = 'hunter3'\n")
    answers = {}
    for pattern in (AWS_KEY_ID[:6], AWS_KEY_ID[:6] + "X", "hunter3", "MIIEpA[A-Za-z]+", "zzz"):
        result = await run_tool(env, "search", {"pattern": pattern})
        assert not result.is_error
        answers[pattern] = result.text.replace(repr(pattern), "PATTERN")
    assert len(set(answers.values())) == 1, answers
    (answer,) = set(answers.values())
    assert answer.startswith("no matches for PATTERN")
    notes = answer.splitlines()[1:]
    assert len(notes) == 2 and all("[withheld:" in note for note in notes)
    assert any(note.startswith("src/config.py: ") for note in notes)
    assert any(note.startswith("deploy.py: ") for note in notes)
    assert AWS_KEY_ID not in answer and "hunter3" not in answer


async def test_search_glob_bounds_and_bad_regex(env: ToolEnv, root: Path) -> None:
    scoped = await run_tool(env, "search", {"pattern": "def", "path": "src/*.py"})  # no deploy.py
    assert {line.split(":")[0] for line in scoped.text.splitlines()} == {
        "src/app.py",
        "src/util.py",
    }
    (root / "many.txt").write_text("hit\n" * (SEARCH_MAX_MATCHES + 50))
    many = await run_tool(env, "search", {"pattern": "hit", "path": "*.txt"})
    assert len(many.text.splitlines()) == SEARCH_MAX_MATCHES + 1
    assert "stopped after" in many.text
    bad = await run_tool(env, "search", {"pattern": "("})
    assert bad.is_error and "invalid regular expression" in bad.text
    none = await run_tool(env, "search", {"pattern": "zzz_nothing"})
    assert not none.is_error and "no matches" in none.text


async def test_memory_commands_round_trip(env: ToolEnv) -> None:
    assert env.memory_root is not None
    created = await run_tool(
        env, "memory", {"command": "create", "path": "/memories/notes.md", "file_text": "a\nb\n"}
    )
    assert not created.is_error, created.text
    await run_tool(env, "memory", {"command": "str_replace", "path": "/memories/notes.md",
                                   "old_str": "b", "new_str": "B"})  # fmt: skip
    await run_tool(env, "memory", {"command": "insert", "path": "/memories/notes.md",
                                   "insert_line": 1, "insert_text": "inserted"})  # fmt: skip
    viewed = await run_tool(env, "memory", {"command": "view", "path": "/memories/notes.md"})
    assert [line.split("\t")[1] for line in viewed.text.splitlines()] == ["a", "inserted", "B"]
    await run_tool(env, "memory", {"command": "rename", "old_path": "/memories/notes.md",
                                   "new_path": "/memories/old/notes.md"})  # fmt: skip
    listing = await run_tool(env, "memory", {"command": "view", "path": "/memories"})
    assert "/memories/old/notes.md" in listing.text
    deleted = await run_tool(env, "memory", {"command": "delete", "path": "/memories/old/notes.md"})
    assert not deleted.is_error
    assert not (env.memory_root / "old" / "notes.md").exists()


async def test_a_memory_whose_name_is_not_utf8_is_listed_escaped_and_read_back(
    env: ToolEnv,
) -> None:
    """A file put in the folder by hand may have any bytes in its name: the listing shows
    them escaped (a lone surrogate is refused by the API) and the name reads the file."""
    assert env.memory_root is not None
    env.memory_root.mkdir(parents=True, exist_ok=True)
    (env.memory_root / os.fsdecode(b"caf\xe9.md")).write_text("kept\n", encoding="utf-8")
    listing = await run_tool(env, "memory", {"command": "view", "path": "/memories"})
    assert "/memories/caf\\xe9.md" in listing.text
    listing.text.encode("utf-8")  # strict: no lone surrogate
    viewed = await run_tool(env, "memory", {"command": "view", "path": "/memories/caf\\xe9.md"})
    assert not viewed.is_error and "kept" in viewed.text


async def test_a_memory_holding_a_token_is_neither_shown_nor_probed(env: ToolEnv) -> None:
    """The folder outlives the workspace whose opt-in let a token into it."""
    assert env.memory_root is not None
    env.memory_root.mkdir(parents=True, exist_ok=True)
    notes = env.memory_root / "deploy.md"
    notes.write_text(f"token: {GITHUB_TOKEN}\n", encoding="utf-8")
    viewed = await run_tool(env, "memory", {"command": "view", "path": "/memories/deploy.md"})
    assert viewed.is_error and "a GitHub token" in viewed.text
    assert GITHUB_TOKEN not in viewed.text
    probe = {"command": "str_replace", "path": "/memories/deploy.md", "old_str": "ghp_Z"}
    probed = await run_tool(env, "memory", {**probe, "new_str": "x"})
    assert probed.is_error and "withheld" in probed.text
    assert notes.read_text(encoding="utf-8") == f"token: {GITHUB_TOKEN}\n"
    env.secrets.allow(notes)
    allowed = await run_tool(env, "memory", {"command": "view", "path": "/memories/deploy.md"})
    assert not allowed.is_error and GITHUB_TOKEN in allowed.text


async def test_memory_cannot_leave_its_folder(env: ToolEnv, tmp_path: Path) -> None:
    result = await run_tool(
        env, "memory", {"command": "create", "path": "/memories/../../escape.md", "file_text": "x"}
    )
    assert result.is_error and "outside" in result.text
    assert not (tmp_path / "escape.md").exists()


async def test_bad_input_is_an_error_result_not_a_crash(env: ToolEnv) -> None:
    cases = [
        ("read_file", {}),
        ("read_file", {"path": 3}),
        ("read_file", {"path": "src/app.py", "offset": "x"}),
        ("read_file", {"path": "src/app.py", "limit": 0}),
        ("read_file", "not an object"),
        ("read_file", {"path": "missing.py"}),
        ("no_such_tool", {}),
        ("memory", {"command": "explode", "path": "x"}),
        ("memory", {"command": "view", "path": "/memories/none.md"}),
        ("read_symbol", {"path": "src/app.py", "symbol": "nope"}),
        ("read_symbol", {"path": ".env", "symbol": "x"}),
        ("outline", {"path": "../x.py"}),
        ("read_session_file", {"id": "abc"}),
        ("invoke_skill", {"name": "x"}),
    ]
    for name, args in cases:
        result = await run_tool(env, name, args)
        assert result.is_error, (name, args)
        assert result.text


def test_schemas_are_stable_and_complete(env: ToolEnv) -> None:
    names = [tool["name"] for tool in tool_schemas(env)]
    assert names == ["read_file", "read_symbol", "outline", "read_session_file", "search",
                     "edit_file", "memory"]  # fmt: skip
    assert tool_schemas(env) == tool_schemas(env)
    env.memory_root = None
    assert "memory" not in [tool["name"] for tool in tool_schemas(env)]


async def test_long_files_are_cut_with_a_note(env: ToolEnv, root: Path) -> None:
    (root / "long.txt").write_text(
        "".join(f"line {n}\n" for n in range(1, READ_DEFAULT_LINES + 501))
    )
    first = await run_tool(env, "read_file", {"path": "long.txt"})
    assert first.text.splitlines()[-1] == f"line {READ_DEFAULT_LINES}"
    assert f"showing lines 1-{READ_DEFAULT_LINES} of {READ_DEFAULT_LINES + 500}" in first.note
    rest = await run_tool(env, "read_file", {"path": "long.txt", "offset": READ_DEFAULT_LINES + 1})
    assert rest.text.splitlines()[0] == f"line {READ_DEFAULT_LINES + 1}" and not rest.note


async def test_search_globs(env: ToolEnv, root: Path) -> None:
    (root / ".github").mkdir()
    (root / ".github" / "ci.yml").write_text("run: make test\n")
    top = await run_tool(env, "search", {"pattern": "def", "path": "**/*.py"})
    assert {line.split(":")[0] for line in top.text.splitlines()} == {
        "src/app.py",
        "src/util.py",
        "deploy.py",  # its note: withheld for the private key, not searched
    }
    hidden = await run_tool(env, "search", {"pattern": "make", "path": ".github/*"})
    assert hidden.text == ".github/ci.yml:1: run: make test"


async def test_an_unexpected_failure_costs_one_call_not_the_ask(
    env: ToolEnv, tmp_path: Path
) -> None:
    store = Store(tmp_path / "closed-store")
    entry = store.put("some text")
    env.engine = ContextEngine(store)
    store.close()  # every store call now fails inside sqlite
    result = await run_tool(env, "read_session_file", {"id": entry.id})
    assert result.is_error and "failed unexpectedly" in result.text


async def test_search_in_a_git_work_tree_skips_ignored_files(env: ToolEnv, root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "big.py").write_text("needle = 1\n")
    (root / "src" / "fresh.py").write_text("needle = 2\n")  # untracked, not ignored
    result = await run_tool(env, "search", {"pattern": "needle"})
    assert result.text.splitlines()[0] == "src/fresh.py:1: needle = 2"
    assert "generated/" not in result.text


async def test_search_matches_the_start_of_very_long_lines(env: ToolEnv, root: Path) -> None:
    (root / "min.js").write_text("needle" + "x" * 5000 + "\n" + "y" * 5000 + "haystack\n")
    found = await run_tool(env, "search", {"pattern": "needle|haystack", "path": "*.js"})
    assert found.text.startswith("min.js:1: needle") and found.text.endswith(" …")
    assert "min.js:2" not in found.text  # past SEARCH_MATCH_CHARS: not looked at


async def test_a_pattern_that_backtracks_without_end_stops_the_search_not_the_server(
    env: ToolEnv, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`(a|aa)+$` on 36 a's and a b backtracks for seconds (hours at 50): the search stops
    after its matching time with a note saying why, and the event loop went on meanwhile
    (the match lets go of the GIL; Python's `re` held it, so not even a tick ran)."""
    monkeypatch.setattr(search, "SEARCH_SECONDS", 0.5)
    (root / "long.txt").write_text("a" * 36 + "b\n")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    found = await run_tool(env, "search", {"pattern": "(a|aa)+$", "path": "*.txt"})
    ticker.cancel()
    assert not found.is_error and "[stopped after 0.5 s, at long.txt:1" in found.text
    assert "(a|aa)+" in found.text
    assert ticks > 3  # the loop kept running (about 50 in half a second)


async def test_a_pattern_means_what_pythons_re_reads_in_it(env: ToolEnv, root: Path) -> None:
    """The search matches with `regex`, which reads some patterns `re` takes literally
    otherwise: `{e}` as a fuzzy match (any line with a one-character difference), `[[:x:]]`
    as a POSIX class. They mean what the tool's description (Python's re) says."""
    (root / "log.py").write_text('print(f"{e}")\nname = "abc"\nxd = 1\n')
    braces = await run_tool(env, "search", {"pattern": '"{e}"', "path": "log.py"})
    assert braces.text == 'log.py:1: print(f"{e}")'
    fuzzy = await run_tool(env, "search", {"pattern": "x{d}", "path": "log.py"})
    assert fuzzy.text == "no matches for 'x{d}' in 'log.py'"
    refused = await run_tool(env, "search", {"pattern": r"(?<=a+)b"})
    assert refused.is_error and "look-behind requires fixed-width pattern" in refused.text


async def test_a_search_ends_after_its_time_whatever_the_pattern_costs(
    env: ToolEnv, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound is on the whole search, not only on one slow line: each line is cheap here."""
    monkeypatch.setattr(search, "SEARCH_SECONDS", 0.0)
    for n in range(3):
        (root / f"big{n}.txt").write_text("plain text\n" * 100)
    found = await run_tool(env, "search", {"pattern": "nowhere", "path": "*.txt"})
    assert found.text.startswith("[stopped after 0 s, at big0.txt:1: narrow the path glob")


async def test_a_file_name_that_is_not_utf8_round_trips_through_the_tools(
    env: ToolEnv, root: Path
) -> None:
    """Linux allows any byte in a name: `caf\\xe9.py` (Latin-1) is shown escaped, never as
    a lone surrogate (the API refuses one), and that escape names the same file again; a
    name whose backslash is literal stays another file."""
    latin = root / "src" / os.fsdecode(b"caf\xe9.py")
    latin.write_text("def latin():\n    return 'caf'\n")
    literal = root / "src" / "caf\\xe9.py"  # a backslash, an x, an e and a 9
    literal.write_text("def literal():\n    return 'backslash'\n")
    found = await run_tool(env, "search", {"pattern": "def "})
    found.text.encode("utf-8")  # no lone surrogate
    assert "src/caf\\xe9.py:1: def latin():" in found.text
    assert "src/caf\\x5cxe9.py:1: def literal():" in found.text
    read = await run_tool(env, "read_file", {"path": "src/caf\\xe9.py"})
    assert not read.is_error, read.text
    assert "return 'caf'" in read.text and read.uri == path_to_uri(latin)
    assert read.uri is not None and uri_to_path(read.uri) == latin
    assert label_of(uri_of(str(latin))) == f"{root}/src/caf\\xe9.py"  # the engine's labels
    other = await run_tool(env, "read_file", {"path": "src/caf\\x5cxe9.py"})
    assert "return 'backslash'" in other.text
    edit = {"path": "src/caf\\xe9.py", "old_string": "'caf'", "new_string": "'cafe'"}
    edited = await run_tool(env, "edit_file", edit)
    assert not edited.is_error, edited.text
    assert "'cafe'" in latin.read_text() and "backslash" in literal.read_text()
    missing = await run_tool(env, "outline", {"path": "src/caf\\xe8.py"})
    assert missing.is_error and "src/caf\\xe8.py" in missing.text
    missing.text.encode("utf-8")


async def test_a_label_with_a_literal_backslash_x_names_its_file(env: ToolEnv, root: Path) -> None:
    """The engine's labels are escaped only where a byte is not UTF-8: a folder named
    `build\\x86` (Windows' build folders) is read by the label it is shown (the escape had
    been read back as the byte 0x86: no such file)."""
    folder = root / "build\\x86"
    folder.mkdir()
    (folder / "main.c").write_text("int main;\n")
    label = label_of(uri_of(str(folder / "main.c")))
    read = await run_tool(env, "read_file", {"path": label})
    assert not read.is_error and "int main;" in read.text


async def test_a_secret_file_whose_name_is_not_utf8_is_withheld_in_utf8(
    env: ToolEnv, root: Path
) -> None:
    (root / os.fsdecode(b"caf\xe9.env")).write_text("TOKEN=x\n")
    withheld = await run_tool(env, "read_file", {"path": "caf\\xe9.env"})
    assert withheld.is_error and "TOKEN" not in withheld.text
    withheld.text.encode("utf-8")  # strict: the reason names it escaped too


async def test_a_memory_whose_name_ends_in_a_dot_keeps_it(env: ToolEnv) -> None:
    created = await run_tool(
        env, "memory", {"command": "create", "path": "/memories/todo.", "file_text": "x\n"}
    )
    assert not created.is_error and "/memories/todo." in created.text
    listing = await run_tool(env, "memory", {"command": "view", "path": "/memories"})
    assert "/memories/todo.\n" in listing.text + "\n"
    viewed = await run_tool(env, "memory", {"command": "view", "path": "/memories/todo."})
    assert not viewed.is_error


@pytest.mark.parametrize("pattern", ["a{99999999999999999999}", "(" * 3000 + "a" + ")" * 3000])
async def test_a_pattern_re_cannot_build_is_refused_not_a_crash(env: ToolEnv, pattern: str) -> None:
    refused = await run_tool(env, "search", {"pattern": pattern})
    assert refused.is_error and "invalid regular expression" in refused.text


async def test_a_read_shows_at_most_its_characters_whatever_its_limit(
    env: ToolEnv, root: Path
) -> None:
    """5,000 lines of 100 characters with limit 5,000 (half a megabyte in one result had
    filled a request alone): the read stops at a line end within READ_MAX_CHARS, and
    the note's offset reads on from the first line not shown."""
    (root / "wide.txt").write_text("".join(f"{n:>99}\n" for n in range(1, 5001)))
    first = await run_tool(env, "read_file", {"path": "wide.txt", "limit": 5000})
    shown = first.text.splitlines()
    assert len(first.text) <= READ_MAX_CHARS and first.text.endswith("\n")
    assert f"showing lines 1-{len(shown)} of 5000" in first.note
    rest = await run_tool(env, "read_file", {"path": "wide.txt", "offset": len(shown) + 1})
    assert int(rest.text.split("\n", 1)[0]) == len(shown) + 1


async def test_a_line_longer_than_a_read_shows_is_cut_with_a_note(env: ToolEnv, root: Path) -> None:
    (root / "minified.js").write_text("x" * (3 * READ_MAX_CHARS) + "\nnext\n")
    first = await run_tool(env, "read_file", {"path": "minified.js"})
    assert first.text == "x" * READ_MAX_CHARS
    assert f"cut at {READ_MAX_CHARS:,} of {3 * READ_MAX_CHARS:,} characters" in first.note
    assert "offset 2 reads on" in first.note
    rest = await run_tool(env, "read_file", {"path": "minified.js", "offset": 2})
    assert rest.text == "next\n" and not rest.note


HUGE = "q" * 100_000


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {"path": HUGE}),
        ("read_file", {"path": "../" + HUGE}),
        ("outline", {"path": "src/" + HUGE}),
        ("edit_file", {"path": HUGE, "old_string": "", "new_string": "x"}),
        ("search", {"pattern": "(" + HUGE}),
        ("search", {"pattern": HUGE}),
        ("search", {"pattern": "x", "path": HUGE}),
        ("memory", {"command": HUGE}),
        ("memory", {"command": "view", "path": HUGE}),
        ("memory", {"command": "rename", "old_path": HUGE, "new_path": "b.md"}),
    ],
)
async def test_a_huge_input_is_not_echoed_whole(
    env: ToolEnv, name: str, args: dict[str, object]
) -> None:
    """The model's 100,000-character path or pattern is already in its context: an answer
    that repeats it doubles what every later request carries."""
    answer = await run_tool(env, name, args)
    assert "(100,0" in answer.text and len(answer.text) < 400, answer.text[:200]


async def test_lines_an_edit_adds_to_a_crlf_file_end_in_crlf(env: ToolEnv, root: Path) -> None:
    """An old_string within one line (matched as written) and a new_string of several
    lines: the added lines end as the file's do, not in a lone LF among CRLFs."""
    path = root / "src" / "win.py"
    path.write_bytes(b"a = 1\r\nb = 2\r\n")
    edit = {"path": "src/win.py", "old_string": "b = 2", "new_string": "b = 2\nc = 3"}
    assert not (await run_tool(env, "edit_file", edit)).is_error
    assert path.read_bytes() == b"a = 1\r\nb = 2\r\nc = 3\r\n"


async def test_a_read_only_file_is_not_edited(env: ToolEnv, root: Path) -> None:
    """The rename that writes an edit needs only the folder's permission: a file the user
    marked read-only must not be replaced by it (nor a file this user may not write)."""
    path = root / "src" / "app.py"
    before = path.read_text()
    path.chmod(0o444)
    edit = {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}
    answer = await run_tool(env, "edit_file", edit)
    assert answer.is_error and "read-only" in answer.text
    assert path.read_text() == before and path.stat().st_mode & 0o777 == 0o444


async def test_an_unknown_tool_is_told_the_tools_it_was_offered(root: Path) -> None:
    """No memory and no skills in this session: naming them as available sends the model
    after tools that answer 'not configured'."""
    bare = ToolEnv(workspace=Workspace.of([root]), mirror=DocumentMirror())
    answer = await run_tool(bare, "read_files", {"path": "src/app.py"})
    offered = ", ".join(tool["name"] for tool in tool_schemas(bare))
    assert answer.is_error and answer.text == f"unknown tool 'read_files'; available: {offered}"
    assert "memory" not in answer.text and "invoke_skill" not in answer.text


@pytest.fixture
def two_folders(tmp_path: Path) -> ToolEnv:
    """A workspace of two folders, alpha (src/one.py) and beta (lib/two.py)."""
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    (alpha / "src").mkdir(parents=True)
    (beta / "lib").mkdir(parents=True)
    (alpha / "src" / "one.py").write_text("ONE = 1\n")
    (beta / "lib" / "two.py").write_text("TWO = 2\n")
    return ToolEnv(workspace=Workspace.of([alpha, beta]), mirror=DocumentMirror())


async def test_names_shown_in_a_workspace_of_two_folders_read_back(
    two_folders: ToolEnv, tmp_path: Path
) -> None:
    """With two folders the tools name files `<folder>/<path>`: those names must read and
    edit the file they name, not a missing one under the first folder (which an edit with
    an empty old_string would then create)."""
    env, alpha, beta = two_folders, tmp_path / "alpha", tmp_path / "beta"
    found = await run_tool(env, "search", {"pattern": "="})
    assert found.text.splitlines() == ["alpha/src/one.py:1: ONE = 1", "beta/lib/two.py:1: TWO = 2"]
    assert (await run_tool(env, "read_file", {"path": "beta/lib/two.py"})).text == "TWO = 2\n"
    assert (await run_tool(env, "read_file", {"path": "alpha/src/one.py"})).text == "ONE = 1\n"
    assert (await run_tool(env, "read_file", {"path": "src/one.py"})).text == "ONE = 1\n"
    edit = {"path": "beta/lib/two.py", "old_string": "TWO = 2", "new_string": "TWO = 3"}
    assert not (await run_tool(env, "edit_file", edit)).is_error
    assert (beta / "lib" / "two.py").read_text() == "TWO = 3\n"
    assert not (alpha / "beta").exists()


async def test_a_glob_in_a_workspace_of_two_folders_matches_within_each(
    two_folders: ToolEnv,
) -> None:
    """`lib/*.py`, as in the tool's description, finds beta's lib/two.py (shown as
    beta/lib/two.py); it answered 'no matches'."""
    for glob in ("lib/*.py", "beta/lib/*.py", "lib/**/*.py"):
        found = await run_tool(two_folders, "search", {"pattern": "=", "path": glob})
        assert found.text == "beta/lib/two.py:1: TWO = 2", glob


@pytest.mark.parametrize("glob", ["src/**/*.py", "src/**/app.py", "**/src/**/*.py"])
async def test_a_double_star_in_a_glob_may_match_no_folder(env: ToolEnv, glob: str) -> None:
    """The tool's own example, `src/**/*.py`, answered 'no matches' for src/app.py."""
    found = await run_tool(env, "search", {"pattern": "import os", "path": glob})
    assert found.text == "src/app.py:1: import os"


async def test_a_name_that_starts_with_a_tilde_is_a_name(env: ToolEnv, root: Path) -> None:
    """`~$report.txt` (an office lock file), `~notes/`: search shows them, so read_file
    must read them, not look for the home folder of a user `$report.txt` (it failed
    'unexpectedly', RuntimeError); `~/...` still means the home folder, outside."""
    (root / "~notes").mkdir()
    (root / "~notes" / "a.md").write_text("tilde note\n")
    (root / "~$report.txt").write_text("tilde lock\n")
    found = await run_tool(env, "search", {"pattern": "tilde"})
    shown = ["~$report.txt:1: tilde lock", "~notes/a.md:1: tilde note"]
    assert found.text.splitlines()[:2] == shown
    for name in ("~notes/a.md", "~$report.txt"):
        read = await run_tool(env, "read_file", {"path": name})
        assert not read.is_error and read.text.startswith("tilde"), read.text
    home = await run_tool(env, "read_file", {"path": "~/.bashrc"})
    assert home.is_error and "outside the workspace" in home.text


async def test_a_hugging_face_token_in_a_script_reaches_no_tool(env: ToolEnv, root: Path) -> None:
    token = "hf_" + "Tq7" * 12
    (root / "train.py").write_text(f"from huggingface_hub import login\nlogin(token='{token}')\n")
    read = await run_tool(env, "read_file", {"path": "train.py"})
    assert read.is_error and "a Hugging Face token (line 2)" in read.text
    found = await run_tool(env, "search", {"pattern": "login"})
    assert token not in found.text and "train.py: [withheld" in found.text


async def test_a_memory_insert_after_a_last_line_with_no_line_end_is_a_line(env: ToolEnv) -> None:
    """`a\\nb` then insert after line 2: the text became 'bc', glued to the last line."""
    made = await run_tool(env, "memory", {"command": "create", "path": "n.md", "file_text": "a\nb"})
    assert not made.is_error
    insert = {"command": "insert", "path": "n.md", "insert_line": 2, "insert_text": "c"}
    assert not (await run_tool(env, "memory", insert)).is_error
    viewed = await run_tool(env, "memory", {"command": "view", "path": "n.md"})
    assert [line.split("\t")[1] for line in viewed.text.splitlines()] == ["a", "b", "c"]


@pytest.mark.parametrize("folder", ["src", "src/", "./src", "{root}/src"])
async def test_a_search_in_a_folder_searches_what_lies_in_it(
    env: ToolEnv, root: Path, folder: str
) -> None:
    """`path` as Grep takes it, a folder: as a glob it matched no file, and the answer was
    'no matches'."""
    (root / "src" / "pkg").mkdir()
    (root / "src" / "pkg" / "deep.py").write_text("import os as deep\n")
    found = await run_tool(env, "search", {"pattern": "^import", "path": folder.format(root=root)})
    assert found.text.splitlines() == [
        "src/app.py:1: import os",
        "src/pkg/deep.py:1: import os as deep",
    ]


async def test_a_definition_longer_than_a_read_shows_is_cut_with_a_note(
    env: ToolEnv, root: Path
) -> None:
    """read_symbol held to read_file's bound: a 300,000-character table in one function
    came back whole (some 85,000 tokens in one result)."""
    rows = "".join(f"        ({n}, 'value number {n:06}', {n * n}),\n" for n in range(7000))
    (root / "table.py").write_text(f"def table():\n    return [\n{rows}    ]\n")
    found = await run_tool(env, "read_symbol", {"path": "table.py", "symbol": "table"})
    assert not found.is_error and len(found.text) < READ_MAX_CHARS + 300
    on = int(found.text.rsplit("read_file with offset ", 1)[1].split(" ")[0])
    shown_rows = found.text.count("'value number ")
    assert on == 3 + shown_rows  # def, return, then the rows shown
    rest = await run_tool(env, "read_file", {"path": "table.py", "offset": on, "limit": 1})
    assert (
        rest.text == f"        ({shown_rows}, 'value number {shown_rows:06}', {shown_rows**2}),\n"
    )


async def test_a_stored_content_longer_than_a_read_shows_comes_in_parts(
    env: ToolEnv, store: Store
) -> None:
    """read_session_file held to read_file's bound, whatever its limit: a 250,000-character
    log came back whole."""
    env.engine = ContextEngine(store)
    log = "".join(f"{n:>9}\n" for n in range(25_000))
    entry = store.put(log)
    first = await run_tool(env, "read_session_file", {"id": entry.id, "limit": 200_000})
    head = f"[{entry.id}: characters 0-{READ_MAX_CHARS} of {len(log)}; offset {READ_MAX_CHARS} "
    assert first.text.startswith(head + "reads on]\n")
    assert first.text.endswith(log[READ_MAX_CHARS - 10 : READ_MAX_CHARS])
    last = await run_tool(env, "read_session_file", {"id": entry.id, "offset": 200_000})
    assert (
        last.text == f"[{entry.id}: characters 200000-{len(log)} of {len(log)}]\n" + log[200_000:]
    )
