"""Synopsis lines a demanding reader would call wrong: one small source per case, exact lines.

Each case is also edited into place incrementally (from an empty document), so the kind and
name rules hold for the incremental table as well as for a fresh parse.
"""

from __future__ import annotations

import pytest
from ephemeral_context.syntax import IncrementalSyntax, outline_text, render_synopsis

from tests.unit.syntax.test_syntax_incremental import splice

CASES = {
    "go: a method's receiver is shown once, by the qualified name": (
        "q.go",
        "package q\n\nfunc (q *Queue[T]) Push(job T) error {\n\treturn nil\n}\n",
        ["3-5 method Queue.Push(job T) error"],
    ),
    "go: package-level sentinel errors are constants": (
        "e.go",
        'package q\n\nvar ErrClosed = errors.New("closed")\n\n'
        "var (\n\terrBusy = x\n\tcount int\n)\n",
        ['3-3 constant ErrClosed = errors.New("closed")', "6-6 constant errBusy = x"],
    ),
    "ruby: def self.x reads like a method in class << self": (
        "c.rb",
        "class LRU\n  def self.digest(v)\n    v\n  end\n"
        "  class << self\n    def build(n)\n    end\n  end\nend\n",
        [
            "1-9 class LRU",
            "  2-4 method LRU.digest(v)",
            "  6-7 method LRU.build(n)",
        ],
    ),
    "ruby: a one-line class stops before `; end`": (
        "e.rb",
        "class Error < StandardError; end\n",
        ["1-1 class Error < StandardError"],
    ),
    "ruby: initialize outside a class is no constructor": (
        "i.rb",
        "def initialize(x)\nend\n",
        ["1-2 method initialize(x)"],
    ),
    "markdown: a heading line shows its own text, not its path": (
        "g.md",
        "# Guide\n\n## Setup\n\n### Extras\n\ntext\n",
        ["1-7 heading # Guide", "  3-7 heading ## Setup", "    5-7 heading ### Extras"],
    ),
    "c: a header guard is no constant, a flag or a valued macro is": (
        "r.h",
        "#ifndef R_H\n#define R_H\n#define WITH_LOCKS\n#define CAP 8\n#endif\n",
        ["3-3 constant #define WITH_LOCKS", "4-4 constant #define CAP 8"],
    ),
    "rust: a generic impl says impl once": (
        "w.rs",
        "impl<T: Display> Wrapper<T> {\n    pub fn new(v: T) -> Self {\n"
        "        Self(v)\n    }\n}\n",
        ["1-5 impl <T: Display> Wrapper<T>", "  2-4 method pub Wrapper.new(v: T) -> Self"],
    ),
    "javascript: a generator function reads like a generator method": (
        "g.js",
        "function* ids(start) {}\nclass A {\n  *each() {}\n}\n",
        ["1-1 function *ids(start)", "2-4 class A", "  3-3 method *A.each()"],
    ),
    "javascript: an exported arrow function keeps its export": (
        "a.js",
        "export const add = (a, b) => a + b;\nconst sub = (a, b) => a - b;\n",
        ["1-1 function export add = (a, b) =>", "2-2 function sub = (a, b) =>"],
    ),
    "javascript: a class field bound to an arrow function is a method": (
        "f.js",
        "class A {\n  handle = (e) => {\n    go(e);\n  };\n  count = 0;\n}\n",
        ["1-6 class A", "  2-4 method A.handle = (e) =>"],
    ),
    "typescript: a class field bound to an arrow function is a method": (
        "f.ts",
        "class A {\n  private onClick = async (e: Event): Promise<void> => {};\n}\n",
        ["1-3 class A", "  2-2 method private A.onClick = async (e: Event): Promise<void> =>"],
    ),
    "typescript: a declaration file's constructors and constants": (
        "a.d.ts",
        "export declare class C {\n  constructor(a: string);\n  m(): void;\n}\n"
        "export declare const MAX: number;\ninterface I {\n  constructor(): void;\n}\n",
        [
            "1-4 class C",
            "  2-2 constructor C.constructor(a: string)",
            "  3-3 method C.m(): void",
            "5-5 constant export declare MAX: number",
            "6-8 interface I",
            "  7-7 method I.constructor(): void",
        ],
    ),
    "c++: constructors, out-of-class members and constexpr constants": (
        "m.cpp",
        "namespace n {\nconstexpr int kMax = 4;\ntemplate <typename T>\nclass Box {\n"
        "  Box(int a) : a_(a) {}\n  T* get();\n};\n"
        "template <typename T> T* Box<T>::get() { return p_; }\n"
        "Box<int>::Box(long a) : a_(a) {}\n}\nTEST(Suite, Name) {}\n",
        [
            "1-10 module n",
            "  2-2 constant constexpr int n.kMax = 4",
            "  3-7 class template <typename T> n.Box",
            "    5-5 constructor n.Box.Box(int a)",
            "    6-6 method T* n.Box.get()",
            "  8-8 method template <typename T> T* n.Box.get()",
            "  9-9 constructor n.Box.Box(long a)",
            "11-11 function TEST(Suite, Name)",
        ],
    ),
    "c++: a member defined under several scopes reads as its declaration does": (
        "s.cpp",
        "namespace ns {\nstruct S { void g(); };\n}\nvoid ns::S::g() {\n  run();\n}\n",
        [
            "1-3 module ns",
            "  2-2 struct ns.S",
            "    2-2 method void ns.S.g()",
            "4-6 method void ns.S.g()",
        ],
    ),
    "ruby: a class named with its scope": (
        "r.rb",
        "class A::B\n  def m\n  end\nend\n",
        ["1-4 class A.B", "  2-3 method A.B.m"],
    ),
    "a header whose parenthesis closes on a later line is not cut at the first": (
        "p.h",
        "size_t ring_size(\n    const struct ring *r,\n    int flags);\n",
        ["1-3 function size_t ring_size(const struct ring *r, int flags)"],
    ),
    "c++: defaulted and deleted members are listed": (
        "d.cpp",
        "class M {\n public:\n  M(const M&) = delete;\n  ~M() = default;\n"
        "  M& operator=(M&&) = default;\n};\n",
        [
            "1-6 class M",
            "  3-3 constructor M.M(const M&) = delete",
            "  4-4 method M.~M() = default",
            "  5-5 method M& M.operator=(M&&) = default",
        ],
    ),
    "python: type statements are type aliases": (
        "t.py",
        "type Point[T] = tuple[T, T]\n\n\nclass A:\n    type B = int\n",
        ["1-1 type Point[T] = tuple[T, T]", "4-5 class A", "  5-5 type A.B = int"],
    ),
    "python: a tuple constant over several lines is shown whole": (
        "t.py",
        "NAMES = ('a',\n         'b')\nTABLE = {\n    'a': 1,\n}\n",
        ["1-2 constant NAMES = ('a', 'b')", "3-5 constant TABLE"],
    ),
    "java: two constants of one declaration are siblings, each with its own line": (
        "K.java",
        "class K {\n    static final int X = 1, Y = 2;\n}\n",
        [
            "1-3 class K",
            "  2-2 constant static final int K.X = 1",
            "  2-2 constant static final int K.Y = 2",
        ],
    ),
    "c: two prototypes in one declaration": (
        "p.h",
        "int f(void), *g(int x);\n",
        ["1-1 function int f(void)", "1-1 function int *g(int x)"],
    ),
    "javascript: two arrow functions exported by one statement": (
        "e.js",
        "export const foo = () => 1,\n  bar = () => {\n    return 2;\n  };\n",
        ["1-4 function export foo = () =>", "1-4 function export bar = () =>"],
    ),
    "python: __init__ is a constructor only directly in a class": (
        "m.py",
        "def __init__(x):\n    pass\n\n\nclass A:\n    def __init__(self):\n"
        "        def __init__():\n            pass\n",
        [
            "1-2 function __init__(x)",
            "5-8 class A",
            "  6-8 constructor A.__init__(self)",
            "    7-8 function A.__init__.__init__()",
        ],
    ),
    "python: lone CR line ends (a classic Mac file) are lines, as the editor shows them": (
        "mac.py",
        "def f():\r    return 1\r\r\rclass C:\r    def g(self):\r        pass\r",
        ["1-2 function f()", "5-7 class C", "  6-7 method C.g(self)"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_synopsis_lines(case: str) -> None:
    path, text, expected = CASES[case]
    lines = render_synopsis(outline_text(text, path)).splitlines()[1:]
    assert [line.removeprefix("  ") for line in lines] == expected


@pytest.mark.parametrize("case", list(CASES))
def test_synopsis_lines_after_incremental_typing(case: str) -> None:
    """The same text typed in two halves into an empty document gives the same outline."""
    path, text, _expected = CASES[case]
    syntax = IncrementalSyntax("", path)
    half = len(text) // 2
    typed, edit = splice("", 0, 0, text[half:])
    syntax.apply([edit], typed)
    typed, edit = splice(typed, 0, 0, text[:half])
    syntax.apply([edit], typed)
    assert typed == text
    assert syntax.outline == outline_text(text, path)


@pytest.mark.parametrize(
    ("header", "expected"),
    [("if A:", "function __init__"), ("def A():", "function A.__init__")],
)
def test_init_whose_class_is_edited_away_becomes_a_function(header: str, expected: str) -> None:
    """Editing the class into something else makes its __init__ a function, incrementally too."""
    text = "class A:\n    def __init__(self):\n        pass\n"
    syntax = IncrementalSyntax(text, "m.py")
    text, edit = splice(text, 0, len("class A:"), header)
    syntax.apply([edit], text)
    assert syntax.outline == outline_text(text, "m.py")
    assert {f"{s.kind} {s.qualname}" for s in syntax.outline.symbols} >= {expected}
