"""Quotes of evicted content: which runs of lines a response repeats (context/quotes.py)."""

from __future__ import annotations

from ephemeral_context.context.quotes import QuoteIndex
from ephemeral_context.context.thread import ThreadBlock

CODE = "def area(w, h):\n    if w < 0:\n        raise ValueError(w)\n    return w * h\n"


def _index(*texts: str, evicted: bool = True) -> tuple[QuoteIndex, list[ThreadBlock]]:
    blocks = [
        ThreadBlock("user", {"type": "text", "text": t}, 10, 0, text=t, evicted=evicted)
        for t in texts
    ]
    index = QuoteIndex()
    index.refresh(blocks)
    return index, blocks


def test_three_lines_re_indented_are_a_quote_with_the_evicted_text() -> None:
    index, _ = _index("prelude\n" + CODE)
    quoted = "It does:\n\n  if w < 0:\n      raise ValueError(w)\n  return w * h\n"
    [quote] = index.quotes(quoted)
    assert quote.index == 0
    assert quote.text == "if w < 0:\n        raise ValueError(w)\n    return w * h"


def test_two_lines_are_not_a_quote_but_one_line_of_200_characters_is() -> None:
    long_line = "x = [" + ", ".join(str(i) for i in range(60)) + "]"
    index, _ = _index(CODE + long_line + "\n")
    assert index.quotes("    if w < 0:\n        raise ValueError(w)\n") == []
    assert len(long_line) >= 200
    [quote] = index.quotes(f"see:\n{long_line}\n")
    assert quote.text == long_line


def test_braces_and_blank_lines_neither_count_nor_break_a_run() -> None:
    index, _ = _index("fn a() {\n}\n\n}\n")
    assert index.quotes("}\n\n}\n}\n") == []
    index, _ = _index("alpha one\n}\n\nbeta two\n)\ngamma three\n")
    [quote] = index.quotes("alpha one\nbeta two\n\ngamma three\n")
    assert quote.text.startswith("alpha one") and quote.text.endswith("gamma three")


def test_only_evicted_blocks_are_indexed_and_a_rewritten_thread_is_indexed_anew() -> None:
    index, blocks = _index(CODE, evicted=False)
    assert index.quotes(CODE) == []
    blocks[0].evicted = True
    index.refresh(blocks)
    assert [q.index for q in index.quotes(CODE)] == [0]
    other = ThreadBlock("user", {"type": "text", "text": "a1\nb2\nc3\n"}, 3, 1, text="a1\nb2\nc3\n")
    other.evicted = True
    index.refresh([other])  # a fork replaced block 0
    assert index.quotes(CODE) == []
    assert [q.text for q in index.quotes("a1\nb2\nc3")] == ["a1\nb2\nc3"]
