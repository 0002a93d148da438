"""URIs as keys: one key per file, and the way between file: URIs and paths.

API:
- `normalize_uri(uri)`: the one key of a file (file: URIs re-encoded canonically).
- `uri_to_path(uri)`: the path of a file: URI, None for other schemes.
- `path_to_uri(path)`: the canonical file: URI of a path.
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from pathlib import Path


def uri_to_path(uri: str) -> Path | None:
    """The file system path of a file: URI, or None for other schemes (untitled:, ...)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file":
        return None
    return Path(urllib.parse.unquote(parsed.path))


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """The canonical file: URI of a path (absolute, percent-encoded like VS Code's)."""
    return Path(os.path.abspath(path)).as_uri()


@functools.lru_cache(maxsize=8192)
def normalize_uri(uri: str) -> str:
    """One key per file: file: URIs are re-encoded canonically, other URIs kept as given."""
    path = uri_to_path(uri)
    return path_to_uri(path) if path is not None else uri
