"""URIs as keys: one key per file, and the way between file: URIs and paths.

API:
- `normalize_uri(uri)`: a URI re-encoded canonically (file: URIs); `file_key(uri)`: the one
  key of a file, also with its links followed.
- `uri_to_path(uri)`: the path of a file: URI, None for other schemes; `uri_path(uri)`:
  the path any URI names.
- `path_to_uri(path)`: the canonical file: URI of a path; `real_path(path)`: the file it
  names, links followed; `followed_path(path)`: a tool's path so (a relative one as is).
- `shown_name(path)`, `taken_name(text)`: a path as the model is shown it, and back;
  `holds_raw_bytes(path)`: whether it needs that.

A file name need not be UTF-8 (Linux allows any byte but `/` and NUL). Paths keep such a
byte as os.fsdecode does (a lone surrogate), so the file on disk is found; the model is
shown it as a `\\xNN` escape, since the API refuses a lone surrogate, and a tool reads the
escape back to the same file.
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from pathlib import Path, PurePosixPath

from ephemeral_context.documents.positions import utf8


def uri_to_path(uri: str) -> Path | None:
    """The file system path of a file: URI, or None for other schemes (untitled:, ...), for
    a file on another host (`file://server/share/a.py` is no /share/a.py here) and for a
    relative path (`file:src/a.py`, `file://`: no file of the server's working folder)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "file" or parts.netloc.lower() not in ("", "localhost"):
        return None
    path = uri_path(uri)
    return Path(path) if path.is_absolute() else None


def uri_path(uri: str) -> PurePosixPath:
    """The path a URI of any scheme names, unescaped: a file's, or one with no file here
    (`untitled:/w/.env`, a virtual file system's), whose name still says what it holds.

    Half a surrogate pair (JSON can carry one) that is not os.fsdecode's escape of a byte
    is taken as the UTF-8 bytes it would be written as, like its percent-encoded form: no
    path can be encoded with it as it is."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(uri).path, errors="surrogateescape")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        path = utf8(path).decode("utf-8", "surrogateescape")
    return PurePosixPath(path)


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """The canonical file: URI of a path (absolute, percent-encoded like VS Code's)."""
    return Path(os.path.abspath(path)).as_uri()


def real_path(path: Path) -> Path:
    """The file a path names (links followed); itself when that cannot be told (a link
    loop, a NUL byte from a URI's %00: reading it then says why)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a link loop, before 3.13
        return path


def followed_path(path: str) -> str:
    """A client tool's path (Claude Code's, through a gateway on the same machine) as the
    path its links lead to, as `file_key` keys the file; a relative path as written (no
    folder here is the one it is relative to)."""
    return real_path(Path(path)).as_posix() if os.path.isabs(path) else path


@functools.lru_cache(maxsize=8192)
def normalize_uri(uri: str) -> str:
    """One spelling per URI: file: URIs are re-encoded canonically, other URIs kept as given."""
    path = uri_to_path(uri)
    return path_to_uri(path) if path is not None else uri


def file_key(uri: str) -> str:
    """The one key of a file, whatever name reaches it: a file: URI names the file its links
    lead to (a workspace folder opened by a linked path, a link to a file, two links to one),
    as the model's tools name it (they resolve every path); other URIs as `normalize_uri`.
    Not cached: a link may be changed to lead elsewhere."""
    path = uri_to_path(uri)
    return path_to_uri(real_path(path)) if path is not None else uri


_NOT_UTF8 = re.compile(r"\\(?=x(?:[89a-fA-F][0-9a-fA-F]|5[cC]))|[\udc80-\udcff]")
"""What `shown_name` escapes: a byte that is not UTF-8 (os.fsdecode's lone surrogate), and
a backslash that would read as such an escape (or as an escaped backslash)."""
_ESCAPE = re.compile(rb"\\x([89a-fA-F][0-9a-fA-F]|5[cC])")
_RAW_BYTE = re.compile(r"[\udc80-\udcff]")


def holds_raw_bytes(path: str) -> bool:
    """Whether a path holds a byte that is not UTF-8 (os.fsdecode's lone surrogate)."""
    return not path.isascii() and _RAW_BYTE.search(path) is not None


def shown_name(path: str) -> str:
    """A path as the model is shown it: each byte that is not UTF-8 as `\\xNN`, a backslash
    that would read as an escape as `\\x5c` (so that `taken_name` gives the path back)."""
    return _NOT_UTF8.sub(lambda m: f"\\x{os.fsencode(m.group()).hex()}", path)


def taken_name(text: str) -> str:
    """A path the model wrote, its `\\xNN` escapes (`shown_name`'s) read back to the bytes
    they stand for, as os.fsdecode keeps them."""
    if "\\x" not in text:
        return text
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:  # half a surrogate pair from JSON: no file's name
        return text
    return os.fsdecode(_ESCAPE.sub(lambda m: bytes.fromhex(m.group(1).decode()), raw))
