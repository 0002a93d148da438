"""The package as it would be published: `python -m build` gives an sdist and a wheel built
from it, `twine check --strict` passes, and both carry the metadata, licenses and data a user
needs (the wheel: grammars, the demo session with its notice; the sdist: what builds and tests
it, not the extension or local clutter). Built without an isolated environment, so offline;
nothing is uploaded.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from ephemeral_context import __version__

from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _only(dist: Path, pattern: str) -> Path:
    (path,) = dist.glob(pattern)
    return path


def test_twine_check_passes_on_both(dist: Path) -> None:
    files = [str(_only(dist, "*.whl")), str(_only(dist, "*.tar.gz"))]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_carries_metadata_licenses_and_data(dist: Path) -> None:
    wheel = _only(dist, f"ephemeral_context-{__version__}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"ephemeral_context-{__version__}.dist-info"
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
    assert metadata["Name"] == "ephemeral-context"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Description-Content-Type"] == "text/markdown"
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL", []))
    assert {"Homepage", "Repository", "Issues", "Documentation"} <= set(urls)
    classifiers = metadata.get_all("Classifier", [])
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert f"{info}/licenses/LICENSE" in names
    assert f"{info}/licenses/server/ephemeral_context/replay/data/LICENSE-claude-history.txt" in (
        names
    )
    data = "ephemeral_context/replay/data/"
    assert {
        f"{data}randlee__claude-history__session-967e501d.jsonl",
        f"{data}LICENSE-claude-history.txt",
        "ephemeral_context/grammars/python-tags.scm",
        "ephemeral_context/py.typed",
    } <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


def test_the_sdist_holds_what_builds_and_tests_the_package_and_nothing_else(dist: Path) -> None:
    sdist = _only(dist, f"ephemeral_context-{__version__}.tar.gz")
    with tarfile.open(sdist) as archive:
        root = f"ephemeral_context-{__version__}/"
        names = {m.name.removeprefix(root) for m in archive.getmembers()}
    assert {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO", "Makefile"} <= names
    assert "server/ephemeral_context/replay/demo.py" in names
    assert "tests/data/transcripts/LICENSE-claude-code-viewer.txt" in names
    files = {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO", "Makefile", ".gitignore"}
    top = {name.split("/")[0] for name in names}
    assert top <= files | {"server", "grammars", "tests", "docs"}, top  # hatch adds .gitignore
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
