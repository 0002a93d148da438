"""`ectx outline PATH[::Symbol] [--json]`: a file's synopsis, or one symbol's text.

Exit status: 0 printed what was asked, 1 the symbol is ambiguous or unknown (the candidates
or closest names are printed), 2 the file cannot be read or `--language` names no language.

API:
- `run_outline(...)`: `ectx outline`.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import TextIO

from ephemeral_context.syntax.embedded import COMPONENT_IDS
from ephemeral_context.syntax.languages import LANGUAGE_IDS
from ephemeral_context.syntax.outline import Outline, outline_text
from ephemeral_context.syntax.symbols import (
    LookupStatus,
    SymbolLookup,
    address,
    find_symbol,
    split_reference,
)
from ephemeral_context.syntax.synopsis import render_synopsis, symbol_line


def run_outline(
    reference: str, *, as_json: bool, language_id: str | None, out: TextIO, err: TextIO
) -> int:
    """Print the synopsis of `reference`'s file, or the symbol it names after `::`."""
    known = LANGUAGE_IDS | COMPONENT_IDS
    if language_id is not None and language_id not in known:
        print(
            f"ectx outline: unknown language {language_id!r}; known: {', '.join(sorted(known))}",
            file=err,
        )
        return 2
    path, symbol = (reference, None) if _is_file(reference) else split_reference(reference)
    try:
        text = _read(Path(path))
    except OSError as error:
        print(f"ectx outline: cannot read {path}: {error.strerror or error}", file=err)
        return 2
    outline = outline_text(text, path, language_id)
    if symbol is None:
        out.write(
            json.dumps(outline.to_json(), indent=2) + "\n" if as_json else render_synopsis(outline)
        )
        return 0
    lookup = find_symbol(text, outline, symbol)
    if as_json:
        out.write(json.dumps(_lookup_json(path, outline, lookup), indent=2) + "\n")
    else:
        _print_lookup(path, outline, lookup, out, err)
    return 0 if lookup.status is LookupStatus.FOUND else 1


def _is_file(path: str) -> bool:
    """Whether `path` names a file (a `path::Symbol` too long to be a file name names none)."""
    try:
        return Path(path).is_file()
    except OSError:  # ENAMETOOLONG, which Path.is_file raises
        return False


def _read(path: Path) -> str:
    """The file's text; a FIFO or a device is not read (it could block, or never end)."""
    if path.exists() and not (path.is_file() or path.is_dir()):  # a folder: EISDIR below
        raise OSError(errno.EINVAL, "not a regular file")
    return path.read_bytes().decode("utf-8", errors="replace")


def _print_lookup(
    path: str, outline: Outline, lookup: SymbolLookup, out: TextIO, err: TextIO
) -> None:
    if lookup.found is not None:
        found = lookup.found
        symbol = found.symbol
        out.write(f"{path}:{found.start_line}-{found.end_line} {symbol.kind} {symbol.qualname}\n")
        out.write(found.text + "\n")
    elif lookup.status is LookupStatus.AMBIGUOUS:
        count = len(lookup.candidates)
        print(f"ectx outline: {lookup.query!r} matches {count} definitions in {path}:", file=err)
        for candidate in lookup.candidates:
            out.write(f"{path}::{address(candidate, outline)}  {symbol_line(candidate).strip()}\n")
    else:
        closest = ", ".join(lookup.suggestions) or "none"
        print(
            f"ectx outline: no definition {lookup.query!r} in {path}; closest: {closest}", file=err
        )


def _lookup_json(path: str, outline: Outline, lookup: SymbolLookup) -> dict[str, object]:
    result: dict[str, object] = {"path": path, "query": lookup.query, "status": str(lookup.status)}
    if lookup.found is not None:
        result.update(
            symbol=lookup.found.symbol.to_json(),
            start_line=lookup.found.start_line,
            end_line=lookup.found.end_line,
            text=lookup.found.text,
        )
    result["candidates"] = [
        {**c.to_json(), "address": address(c, outline)} for c in lookup.candidates
    ]
    result["suggestions"] = list(lookup.suggestions)
    return result
