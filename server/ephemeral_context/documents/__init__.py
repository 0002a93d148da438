"""Documents: the text of every file the assistant may see, and positions in it.

Positions come in three units: client units (UTF-16 by default, UTF-8 or UTF-32 when
negotiated), code points (Python `str` indices) and UTF-8 bytes (tree-sitter); this package
is the only place that converts between them. It does not import pygls or lsprotocol; the
LSP layer converts its types into `TextEdit` and `Position`. Callers import from here:

- positions.py: `Position`, `Range`, `Point`, `PositionEncoding`, `without_lone_surrogates`,
  `utf8`.
- pieces.py: a version's text as pieces; `content_hash`.
- lines.py: `LineIndex`, the line table carried across edits; `split_lines`, `count_breaks`:
  the editor's lines; `lone_cr_as_lf`: the bytes tree-sitter reads.
- document.py: `Document` (one version), `TextEdit`, `ByteEdit`, `DocumentSource`.
- uris.py: `normalize_uri`, `file_key`, `followed_path`, `uri_to_path`, `uri_path`,
  `path_to_uri`, `real_path`, `shown_name`, `taken_name`, `holds_raw_bytes`.
- mirror.py: `DocumentMirror`, `DocumentChange`, `ChangeReason`, `Unmirrored`,
  `UnmirroredReason`, `OutOfSync`, `without_bom`, `decode_file`.
"""

from ephemeral_context.documents.document import ByteEdit, Document, DocumentSource, TextEdit
from ephemeral_context.documents.lines import (
    LineIndex,
    count_breaks,
    lone_cr_as_lf,
    split_lines,
)
from ephemeral_context.documents.mirror import (
    ChangeReason,
    DocumentChange,
    DocumentMirror,
    Listener,
    OutOfSync,
    Unmirrored,
    UnmirroredReason,
    decode_file,
    without_bom,
)
from ephemeral_context.documents.pieces import content_hash
from ephemeral_context.documents.positions import (
    Point,
    Position,
    PositionEncoding,
    Range,
    utf8,
    without_lone_surrogates,
)
from ephemeral_context.documents.uris import (
    file_key,
    followed_path,
    holds_raw_bytes,
    normalize_uri,
    path_to_uri,
    real_path,
    shown_name,
    taken_name,
    uri_path,
    uri_to_path,
)

__all__ = [
    "ByteEdit",
    "ChangeReason",
    "Document",
    "DocumentChange",
    "DocumentMirror",
    "DocumentSource",
    "LineIndex",
    "Listener",
    "OutOfSync",
    "Point",
    "Position",
    "PositionEncoding",
    "Range",
    "TextEdit",
    "Unmirrored",
    "UnmirroredReason",
    "content_hash",
    "count_breaks",
    "decode_file",
    "file_key",
    "followed_path",
    "holds_raw_bytes",
    "lone_cr_as_lf",
    "normalize_uri",
    "path_to_uri",
    "real_path",
    "shown_name",
    "split_lines",
    "taken_name",
    "uri_path",
    "uri_to_path",
    "utf8",
    "without_bom",
    "without_lone_surrogates",
]
