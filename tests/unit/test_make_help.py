"""`make help` lists every target the Makefile documents (the README sends readers there)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_help_lists_every_documented_target() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    documented = re.findall(r"^([^\s:$()]+):.*## ", makefile, flags=re.MULTILINE)
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert {"e2e-deps", "e2e", "test", "run"} <= set(documented)
    assert listed == documented
