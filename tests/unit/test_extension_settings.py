"""The VS Code extension's settings match the server's options: same keys, defaults and choices.

The extension contributes `ephemeralContext.*` settings in extension/package.json and sends
them to the server as they are (camelCase, `limits.*` nested); the server structures them
into `lsp/options.py`'s `Options`. Defaults live in both places by necessity (package.json
must declare them for the Settings UI), so this test keeps them from drifting apart.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from ephemeral_context.lsp.options import Options, options_to_json

from tests.conftest import REPO_ROOT

SECTION = "ephemeralContext."
# Settings only the extension reads; the server never sees them.
CLIENT_ONLY = {"interpreter", "serverPackageSpec", "trace.server"}


def _contributed() -> dict[str, dict[str, Any]]:
    package = json.loads((REPO_ROOT / "extension" / "package.json").read_text(encoding="utf-8"))
    properties: dict[str, dict[str, Any]] = package["contributes"]["configuration"]["properties"]
    return {key.removeprefix(SECTION): spec for key, spec in properties.items()}


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            flat.update(_flatten(item, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = item
    return flat


def test_every_server_option_is_a_setting_with_the_same_default() -> None:
    server = _flatten(options_to_json(Options()))
    contributed = {k: v for k, v in _contributed().items() if k not in CLIENT_ONLY}
    assert set(contributed) == set(server)
    for key, default in server.items():
        assert contributed[key]["default"] == default, key


def test_setting_types_accept_the_server_defaults() -> None:
    python_to_json = {str: "string", int: "integer", list: "array", type(None): "null"}
    for key, default in _flatten(options_to_json(Options())).items():
        declared = _contributed()[key]["type"]
        declared_types = declared if isinstance(declared, list) else [declared]
        assert python_to_json[type(default)] in declared_types, key


def test_cache_ttl_choices_are_the_servers() -> None:
    choices = typing.get_args(typing.get_type_hints(Options)["cache_ttl"])
    spec = _contributed()["cacheTtl"]
    assert tuple(spec["enum"]) == choices
    assert len(spec["enumDescriptions"]) == len(choices)


def test_every_setting_is_documented_in_the_extension_readme() -> None:
    readme = (REPO_ROOT / "extension" / "README.md").read_text(encoding="utf-8")
    for key in _contributed():
        assert f"### `{SECTION}{key}`" in readme, key
