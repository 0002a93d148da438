"""`Pins`: the rows and the numbers an editor shows while a pinned file is being edited, and
the sentences when a pin is released, over a real engine, store and document mirror."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput
from ephemeral_context.documents import DocumentMirror, TextEdit
from ephemeral_context.model.pins import Pins
from ephemeral_context.model.secrets import AccessDenied
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store

SOURCE = "import os\n\n\ndef run():\n    return 1\n\n\ndef other():\n    return os.getcwd()\n"


@dataclass
class Project:
    """app.py in a workspace folder, and Pins over a real engine and mirror; `said` holds
    every sentence the mirror's changes released."""

    path: Path
    mirror: DocumentMirror
    store: Store
    engine: ContextEngine
    pins: Pins
    env: ToolEnv
    said: list[str]

    @property
    def uri(self) -> str:
        return self.path.as_uri()

    def open(self) -> None:
        self.mirror.open(self.uri, "python", 1, self.path.read_text(encoding="utf-8"))

    def request(self) -> str:
        """The next request of conversation `c`, as text."""
        return repr(self.engine.build_request("c", "claude-sonnet-4-6", "system"))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "app.py"
    path.write_text(SOURCE, encoding="utf-8")
    mirror = DocumentMirror()
    with Store(tmp_path / "store") as store:
        engine = ContextEngine(store)
        pins = Pins(engine)
        said: list[str] = []
        mirror.subscribe(lambda change: said.extend(pins.note_document_change(change)))
        env = ToolEnv.configured(
            mirror=mirror, folders=[root], engine=engine, memory_root=tmp_path / "memories"
        )
        yield Project(path, mirror, store, engine, pins, env, said)


def test_a_changed_pin_shows_its_buffer_before_the_next_ask(project: Project) -> None:
    pins, engine, mirror, uri = project.pins, project.engine, project.mirror, project.uri
    project.open()
    pinned = pins.pin(project.env, uri)
    assert pins.items(mirror) == engine.items()
    assert pins.status(mirror) == engine.status()

    grown = "".join(f"def step_{n}(value):\n    return value + {n}\n" for n in range(40))
    mirror.change(uri, 2, [TextEdit(None, grown)])
    (row,) = pins.items(mirror)
    assert (row.id, row.version) == (pinned.id, 2)  # nothing was pinned again yet
    assert row.tokens == pins.pending_tokens(mirror)[uri] > pinned.tokens
    assert pins.status(mirror).context_tokens > engine.status().context_tokens


def test_a_pinned_file_deleted_on_disk_is_released_with_its_id(project: Project) -> None:
    """The mirror finds the file gone at its next read; the engine takes it out of the
    context and the sentence names the file and the id of the text last pinned, once."""
    path, engine = project.path, project.engine
    pinned = project.pins.pin(project.env, project.uri)
    path.unlink()
    project.mirror.mark_stale(project.uri)
    project.mirror.get(project.uri)
    assert project.said == [
        f"{path} was deleted on disk and is no longer pinned; the text last pinned stays "
        f"readable by id {pinned.id} (ectx store get {pinned.id})"
    ]
    assert engine.pinned_files() == [] and engine.items() == []
    assert "return 1" in project.store.get(pinned.id).text


@pytest.mark.parametrize("noticed", ["watched-file event", "next status"])
def test_a_pinned_definition_of_a_deleted_file_is_released_with_its_id(
    project: Project, noticed: str
) -> None:
    """Like a whole pin: the sentence names the file, the definition and the id of the
    text it was pinned from; the conversation shown the definition hears the file is gone."""
    path, pins, mirror = project.path, project.pins, project.mirror
    project.engine.add_user_text("c", "look")
    pinned = pins.pin(project.env, project.uri, "run")
    assert pins.status(mirror).breakdown["partial"] == pinned.tokens > 0
    path.unlink()
    if noticed == "watched-file event":
        mirror.mark_stale(project.uri)
        mirror.get(project.uri)
    status = pins.status(mirror)
    assert project.said == [
        f"{path} was deleted on disk and its definition run is no longer pinned; the text "
        f"last pinned stays readable by id {pinned.id} (ectx store get {pinned.id})"
    ]
    assert status.items == 0 and status.breakdown["partial"] == 0 and project.engine.items() == []
    assert pins.follow(project.env) == [] and len(project.said) == 1  # said once
    project.engine.add_user_text("c", "and now?")
    sent = project.request()
    assert f"{path}::run (lines 4-5)" in sent  # what the model was shown stays
    assert f"Note: {path} was deleted" in sent
    assert "def run():" in project.store.get(pinned.id).text


def test_a_pinned_definition_its_file_no_longer_has_is_released_before_the_next_request(
    project: Project,
) -> None:
    """The buffer renames one pinned definition and removes the other: each is released
    once, at the next follow, naming what the file has instead and the id of the text it
    was pinned from; the file is unpinned with its last pinned definition, nothing is lost."""
    path, pins, mirror, env, uri = (
        project.path,
        project.pins,
        project.mirror,
        project.env,
        project.uri,
    )
    project.open()
    project.engine.add_user_text("c", "look")
    pins.pin(env, uri, "run")
    pinned = pins.pin(env, uri, "other")
    mirror.change(uri, 2, [TextEdit(None, SOURCE.replace("return 1", "return 2"))])
    assert pins.follow(env) == []  # both still defined
    mirror.change(uri, 3, [TextEdit(None, SOURCE.replace("def run(", "def run_all("))])
    assert pins.follow(env) == [
        f"run is no longer pinned (no symbol 'run' in {path}; did you mean run_all?); the "
        f"text last pinned stays readable by id {pinned.id} (ectx store get {pinned.id})"
    ]
    assert pins.follow(env) == []  # said once
    assert [(i.id, i.pinned) for i in project.engine.items()] == [(pinned.id, True)]  # `other`
    mirror.change(uri, 4, [TextEdit(None, "import os\n")])
    [released] = pins.follow(env)
    assert released.startswith("other is no longer pinned (no symbol 'other' in ")
    assert [(i.id, i.pinned) for i in project.engine.items()] == [(pinned.id, False)]
    sent = project.request()
    assert "::run (lines 4-5)" in sent and "::other (lines 8-9)" in sent
    assert "def run():" in project.store.get(pinned.id).text


def test_a_pinned_definition_stays_one_when_the_model_reads_its_file(project: Project) -> None:
    """The model's read records a newer version of the file: it stays pinned by its
    definition only, so no other conversation is shown the whole file and a deletion
    releases the definition, once."""
    engine, path = project.engine, project.path
    engine.add_user_text("c", "look")
    pinned = project.pins.pin(project.env, project.uri, "run")
    engine.add_assistant_content(
        "c", [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]
    )
    read = SOURCE + "# read later\n"
    engine.add_tool_result(
        "c", ToolOutput("toolu_1", read, kind=BlockKind.FILE, uri=project.uri, content=read)
    )
    [row] = engine.items()
    assert row.pinned and row.id != pinned.id and engine.pinned_files() == []
    engine.add_user_text("d", "look")
    assert "# read later" not in repr(engine.build_request("d", "claude-sonnet-4-6", "system"))
    path.unlink()
    project.pins.status(project.mirror)
    assert [s.split(";")[0] for s in project.said] == [
        f"{path} was deleted on disk and its definition run is no longer pinned"
    ]


def withholding(project: Project, tmp_path: Path) -> ToolEnv:
    """The project's tools once the user's settings call app.py a secret."""
    return ToolEnv.configured(
        mirror=project.mirror,
        folders=[project.path.parent],
        engine=project.engine,
        secret_patterns=["app.py"],
        memory_root=tmp_path / "memories",
    )


def test_new_secret_settings_release_only_the_pins_they_withhold(
    project: Project, tmp_path: Path
) -> None:
    """`recheck` is for the secret settings: a pin refused for another reason (its buffer
    out of sync here) is left to `follow`, not released in the settings' name."""
    project.open()
    project.pins.pin(project.env, project.uri)
    project.mirror.desync(project.uri, "an edit was lost")
    assert project.pins.recheck(project.env) == []
    assert project.engine.pinned_files() == [project.uri]
    (released,) = project.pins.recheck(withholding(project, tmp_path))
    assert "no longer pinned" in released and "secret pattern 'app.py'" in released
    assert project.engine.pinned_files() == []


def test_new_secret_settings_release_a_pinned_definition_of_a_file_they_withhold(
    project: Project, tmp_path: Path
) -> None:
    """A pinned definition is kept in its conversations for good: once its file is
    withheld it is released like a whole pin, so the policy may evict it."""
    project.engine.add_user_text("c", "look")
    project.pins.pin(project.env, project.uri, "run")
    settings = withholding(project, tmp_path)
    (released,) = project.pins.recheck(settings)
    assert "no longer pinned" in released and "secret pattern 'app.py'" in released
    assert [i.pinned for i in project.engine.items()] == [False]
    assert project.pins.follow(settings) == []  # released once


def test_a_pin_unread_past_the_stores_expiry_is_still_shown_to_a_new_conversation(
    project: Project,
) -> None:
    """The store forgets a text unread for its TTL (7 days); a pinned file's text is read
    only when a conversation first shows it, so a week of asks in one conversation (or none)
    must not leave the next conversation's request failing on an expired id."""
    pins, engine, uri = project.pins, project.engine, project.uri
    project.open()
    pinned = pins.pin(project.env, uri)
    assert "def other()" in project.request()
    later = project.store.clock() + 8 * 24 * 3600
    project.store.clock = lambda: later
    assert pins.follow(project.env) == []
    fresh = repr(engine.build_request("d", "claude-sonnet-4-6", "system"))
    assert f"[pinned [[file:{pinned.id}]]" in fresh and "def other()" in fresh


def test_a_pin_past_half_the_context_budget_is_refused_and_a_grown_one_released(
    project: Project,
) -> None:
    """A pin goes whole into every request and is never evicted: a 31,921-token pin under a
    20K budget made every request 35K, one the API refuses whatever the conversation did."""
    pins, mirror, uri = project.pins, project.mirror, project.uri
    share = project.engine.status().budget // 2
    big = project.path.with_name("big.py")
    big.write_text("".join(f"def f{n}(x):\n    return x * {n}\n" for n in range(12_000)))
    with pytest.raises(AccessDenied, match="too large to pin") as refused:
        pins.pin(project.env, big.as_uri())
    assert refused.value.reason == "too-large" and f"{share:,}" in str(refused.value)
    assert project.engine.items() == []
    project.open()
    pins.pin(project.env, uri)
    mirror.change(uri, 2, [TextEdit(None, big.read_text())])
    (released,) = pins.follow(project.env)
    assert "app.py is no longer pinned" in released and "too large to pin" in released
    assert not any(i.pinned for i in project.engine.items())
