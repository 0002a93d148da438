"""Quotes of shown content: which runs of lines a response repeats (context/quotes.py)."""

from __future__ import annotations

from ephemeral_context.context.quotes import QuoteIndex
from ephemeral_context.context.thread import ThreadBlock

CODE = "def area(w, h):\n    if w < 0:\n        raise ValueError(w)\n    return w * h\n"


def _blocks(*texts: str, evicted: bool = True) -> list[ThreadBlock]:
    return [
        ThreadBlock("user", {"type": "text", "text": t}, 10, 0, text=t, evicted=evicted)
        for t in texts
    ]


def shown(tb: ThreadBlock) -> bool:
    """A selection of every block, visible or evicted (as re-use asks about outputs)."""
    return True


def _index(*texts: str, evicted: bool = True) -> tuple[QuoteIndex, list[ThreadBlock]]:
    return QuoteIndex(), _blocks(*texts, evicted=evicted)


def test_three_lines_re_indented_are_a_quote_with_the_evicted_text() -> None:
    index, blocks = _index("prelude\n" + CODE)
    quoted = "It does:\n\n  if w < 0:\n      raise ValueError(w)\n  return w * h\n"
    [quote] = index.quotes(blocks, [quoted])
    assert quote.index == 0
    assert quote.text == "if w < 0:\n        raise ValueError(w)\n    return w * h"


def test_two_lines_are_not_a_quote_but_one_line_of_200_characters_is() -> None:
    long_line = "x = [" + ", ".join(str(i) for i in range(60)) + "]"
    index, blocks = _index(CODE + long_line + "\n")
    assert index.quotes(blocks, ["    if w < 0:\n        raise ValueError(w)\n"]) == []
    assert len(long_line) >= 200
    [quote] = index.quotes(blocks, [f"see:\n{long_line}\n"])
    assert quote.text == long_line


def test_braces_and_blank_lines_neither_count_nor_break_a_run() -> None:
    index, blocks = _index("fn a() {\n}\n\n}\n")
    assert index.quotes(blocks, ["}\n\n}\n}\n"]) == []
    index, blocks = _index("alpha one\n}\n\nbeta two\n)\ngamma three\n")
    [quote] = index.quotes(blocks, ["alpha one\nbeta two\n\ngamma three\n"])
    assert quote.text.startswith("alpha one") and quote.text.endswith("gamma three")


def test_only_evicted_blocks_are_indexed_and_a_rewritten_thread_is_indexed_anew() -> None:
    index, blocks = _index(CODE, evicted=False)
    assert index.quotes(blocks, [CODE]) == []
    blocks[0].evicted = True
    assert [q.index for q in index.quotes(blocks, [CODE])] == [0]
    [other] = _blocks("a1\nb2\nc3\n")
    assert index.quotes([other], [CODE]) == []  # a fork replaced block 0
    assert [q.text for q in index.quotes([other], ["a1\nb2\nc3"])] == ["a1\nb2\nc3"]


def test_one_index_serves_each_selection_with_its_own_blocks_indexed_once() -> None:
    """Re-hydration asks about evicted blocks, re-use about outputs visible or not: one
    index answers both, each block's lines taken in once."""
    index, blocks = _index(CODE, "prelude\n" + CODE, evicted=False)
    blocks[1].evicted = True
    assert [q.index for q in index.quotes(blocks, [CODE])] == [1]
    assert [q.index for q in index.quotes(blocks, [CODE], shown)] == [0, 1]
    assert index.lines["return w * h"] == [(1, 4), (0, 3)]
    assert [q.index for q in index.quotes(blocks, [CODE])] == [1]


def test_quotes_come_in_the_order_their_blocks_joined_the_selection() -> None:
    """Block 1 was evicted (and checked) before block 0: its quote comes first, as an index
    of evicted blocks alone would give it, even though another selection took block 0 in
    before."""
    index, blocks = _index(CODE, CODE, evicted=False)
    assert len(index.quotes(blocks, [CODE], shown)) == 2
    blocks[1].evicted = True
    assert [q.index for q in index.quotes(blocks, [CODE])] == [1]
    blocks[0].evicted = True
    assert [q.index for q in index.quotes(blocks, [CODE])] == [1, 0]
    assert [q.index for q in index.quotes(blocks, [CODE], shown)] == [0, 1]
