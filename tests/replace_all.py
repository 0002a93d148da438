"""An editor's replace-all as one didChange: the shape the incremental syntax once handled
in quadratic time, built once for the test that keeps it right and the bench that times it."""

from __future__ import annotations

from ephemeral_context.documents import ByteEdit


def replace_all(count: int) -> tuple[str, list[ByteEdit], str]:
    """`count` Python functions, an edit per function turning `(x)` into `(yy)`, back to
    front as editors send them, and the text after them: (old text, edits, new text)."""
    functions = [f"def f{i}(x):\n    return x\n" for i in range(count)]
    edits, at = [], 0
    for i, function in enumerate(functions):
        column = function.index("x")
        row, byte = 2 * i, at + column
        edits.append(
            ByteEdit(byte, byte + 1, byte + 2, (row, column), (row, column + 1), (row, column + 2))
        )
        at += len(function)
    old = "".join(functions)
    return old, edits[::-1], old.replace("(x)", "(yy)")
