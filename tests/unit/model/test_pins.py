"""`Pins`: the rows and the numbers an editor shows while a pinned file is being edited,
over a real engine, store and document mirror."""

from __future__ import annotations

from pathlib import Path

from ephemeral_context.context.engine import ContextEngine
from ephemeral_context.documents import DocumentMirror, TextEdit
from ephemeral_context.model.pins import Pins
from ephemeral_context.model.tools import ToolEnv
from ephemeral_context.store import Store


def test_a_changed_pin_shows_its_buffer_before_the_next_ask(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "app.py"
    path.write_text("def run():\n    return 1\n", encoding="utf-8")
    uri = path.as_uri()
    mirror = DocumentMirror()
    mirror.open(uri, "python", 1, path.read_text(encoding="utf-8"))
    with Store(tmp_path / "store") as store:
        engine = ContextEngine(store)
        pins = Pins(engine)
        env = ToolEnv.configured(
            mirror=mirror, folders=[root], engine=engine, memory_root=tmp_path / "memories"
        )
        pinned = pins.pin(env, uri)
        assert pins.items(mirror) == engine.items()
        assert pins.status(mirror) == engine.status()

        grown = "".join(f"def step_{n}(value):\n    return value + {n}\n" for n in range(40))
        mirror.change(uri, 2, [TextEdit(None, grown)])
        (row,) = pins.items(mirror)
        assert (row.id, row.version) == (pinned.id, 2)  # nothing was pinned again yet
        assert row.tokens == pins.pending_tokens(mirror)[uri] > pinned.tokens
        assert pins.status(mirror).context_tokens > engine.status().context_tokens


def test_a_pinned_file_deleted_on_disk_is_released_with_its_id(tmp_path: Path) -> None:
    """The mirror finds the file gone at its next read; the engine takes it out of the
    context and the sentence names the file and the id of the text last pinned, once."""
    root = tmp_path / "project"
    root.mkdir()
    path = root / "app.py"
    path.write_text("def run():\n    return 1\n", encoding="utf-8")
    mirror = DocumentMirror()
    with Store(tmp_path / "store") as store:
        engine = ContextEngine(store)
        pins = Pins(engine)
        said: list[str | None] = []
        mirror.subscribe(lambda change: said.append(pins.note_document_change(change)))
        env = ToolEnv.configured(
            mirror=mirror, folders=[root], engine=engine, memory_root=tmp_path / "memories"
        )
        pinned = pins.pin(env, path.as_uri())
        path.unlink()
        mirror.mark_stale(path.as_uri())
        mirror.get(path.as_uri())
        released = [s for s in said if s is not None]
        assert released == [
            f"{path} was deleted on disk and is no longer pinned; the text last pinned stays "
            f"readable by id {pinned.id} (ectx store get {pinned.id})"
        ]
        assert engine.pinned_files() == [] and engine.items() == []
        assert "return 1" in store.get(pinned.id).text
