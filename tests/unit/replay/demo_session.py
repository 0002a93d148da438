"""The bundled demo session: written by this project, in Claude Code's transcript format.

`ectx replay --demo` (and `make run`) replays it when no real transcripts are at hand. It is a
small but realistic bug-fix session on a toy shop package: globbing, reading, grepping,
running the tests, editing, re-reading an unchanged file, an idle gap longer than the cache
TTL, and a Write. It carries no usage figures: nobody was billed for it, so the report says
fidelity was not checked. `python -m tests.unit.replay.demo_session` rewrites the bundled
file; a test checks the bundled file is exactly what this module writes.
"""

from __future__ import annotations

import sys

from ephemeral_context.replay.demo import DEMO_SESSION

from tests.unit.replay.builder import Transcript, cat_n, text, tool_use

ROOT = "/home/dev/shop"

PRICING = '''"""Prices, discounts and taxes for the shop."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")

BULK_TIERS: tuple[tuple[int, Decimal], ...] = (
    (10, Decimal("0.05")),
    (50, Decimal("0.10")),
    (100, Decimal("0.15")),
)


@dataclass(frozen=True)
class TaxRule:
    region: str
    rate: Decimal

    def apply(self, amount: Decimal) -> Decimal:
        return (amount * (1 + self.rate)).quantize(CENT, rounding=ROUND_HALF_UP)


TAX_RULES = {
    "eu": TaxRule("eu", Decimal("0.20")),
    "uk": TaxRule("uk", Decimal("0.20")),
    "us-ca": TaxRule("us-ca", Decimal("0.0725")),
    "none": TaxRule("none", Decimal("0")),
}


def bulk_discount(quantity: int) -> Decimal:
    """The discount rate for buying `quantity` items of one product."""
    rate = Decimal("0")
    for threshold, tier_rate in BULK_TIERS:
        if quantity > threshold:
            rate = tier_rate
    return rate


def line_price(unit_price: Decimal, quantity: int) -> Decimal:
    """Price of one cart line before tax, with the bulk discount applied."""
    gross = unit_price * quantity
    return (gross * (1 - bulk_discount(quantity))).quantize(CENT, rounding=ROUND_HALF_UP)


def tax_rule(region: str) -> TaxRule:
    try:
        return TAX_RULES[region]
    except KeyError:
        raise ValueError(f"unknown tax region {region!r}") from None
'''

CART = '''"""A shopping cart: lines of products, totals with discounts and tax."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from shop.pricing import CENT, line_price, tax_rule


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    unit_price: Decimal


@dataclass
class Line:
    product: Product
    quantity: int

    @property
    def subtotal(self) -> Decimal:
        return self.product.unit_price * self.quantity


@dataclass
class Cart:
    region: str = "none"
    lines: dict[str, Line] = field(default_factory=dict)

    def add(self, product: Product, quantity: int = 1) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        line = self.lines.get(product.sku)
        if line is None:
            self.lines[product.sku] = Line(product, quantity)
        else:
            line.quantity += quantity

    def remove(self, sku: str, quantity: int | None = None) -> None:
        line = self.lines[sku]
        if quantity is None or quantity >= line.quantity:
            del self.lines[sku]
        else:
            line.quantity -= quantity

    def __iter__(self) -> Iterator[Line]:
        return iter(self.lines.values())

    def __len__(self) -> int:
        return sum(line.quantity for line in self.lines.values())

    def subtotal(self) -> Decimal:
        """Sum of the lines before discounts and tax."""
        return sum((line.subtotal for line in self), Decimal("0"))

    def total(self) -> Decimal:
        """What the customer pays: discounted lines plus tax for the cart's region."""
        net = sum((line.subtotal for line in self), Decimal("0"))
        return tax_rule(self.region).apply(net).quantize(CENT)

    def summary(self) -> str:
        rows = [f"{line.quantity} x {line.product.name}: {line.subtotal}" for line in self]
        rows.append(f"total: {self.total()}")
        return "\\n".join(rows)
'''

TESTS = """from decimal import Decimal

import pytest

from shop.cart import Cart, Product

PEN = Product("pen", "Pen", Decimal("1.50"))
BOOK = Product("book", "Book", Decimal("12.00"))


def test_empty_cart_costs_nothing():
    assert Cart().total() == Decimal("0.00")


def test_total_adds_lines():
    cart = Cart()
    cart.add(PEN, 2)
    cart.add(BOOK)
    assert cart.total() == Decimal("15.00")


def test_bulk_discount_applies_above_ten_items():
    cart = Cart()
    cart.add(PEN, 20)
    assert cart.total() == Decimal("28.50")


def test_tax_region():
    cart = Cart(region="eu")
    cart.add(BOOK)
    assert cart.total() == Decimal("14.40")


def test_remove_more_than_present_drops_line():
    cart = Cart()
    cart.add(PEN, 3)
    cart.remove("pen", 5)
    assert len(cart) == 0


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        Cart().add(PEN, 0)
"""

FAILING = """============================= test session starts ==============================
collected 6 items

tests/test_cart.py ..F...                                                [100%]

=================================== FAILURES ===================================
__________________ test_bulk_discount_applies_above_ten_items __________________

    def test_bulk_discount_applies_above_ten_items():
        cart = Cart()
        cart.add(PEN, 20)
>       assert cart.total() == Decimal("28.50")
E       AssertionError: assert Decimal('30.00') == Decimal('28.50')

tests/test_cart.py:25: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_bulk_discount_applies_above_ten_items
========================= 1 failed, 5 passed in 0.04s =========================
Exit code 1"""

PASSING = """============================= test session starts ==============================
collected {n} items

tests/test_cart.py {dots}                                                [100%]

============================== {n} passed in 0.03s ==============================="""

OLD_TOTAL = '        net = sum((line.subtotal for line in self), Decimal("0"))'
NEW_TOTAL = (
    "        net = sum(\n"
    "            (line_price(line.product.unit_price, line.quantity) for line in self),\n"
    '            Decimal("0"),\n'
    "        )"
)
OLD_TIER = "        if quantity > threshold:"
NEW_TIER = "        if quantity >= threshold:"
NEW_TEST = """

def test_ten_percent_tier_starts_at_fifty():
    cart = Cart()
    cart.add(PEN, 50)
    assert cart.total() == Decimal("67.50")
"""


def _result(path: str, content: str) -> dict[str, object]:
    lines = content.count("\n") + 1
    return {
        "type": "text",
        "file": {
            "filePath": path,
            "content": content,
            "numLines": lines,
            "startLine": 1,
            "totalLines": lines,
        },
    }


def build() -> Transcript:
    """The demo session, line by line."""
    t = Transcript(model="claude-sonnet-4-5-20250929")
    cart, pricing, tests = (
        f"{ROOT}/shop/cart.py",
        f"{ROOT}/shop/pricing.py",
        f"{ROOT}/tests/test_cart.py",
    )
    t.user("The cart total ignores bulk discounts. Fix it and make the tests pass.")
    t.assistant(
        [text("Let me look at the package first."), tool_use("g1", "Glob", pattern="**/*.py")]
    )
    t.tool_result("g1", "\n".join([cart, pricing, f"{ROOT}/shop/__init__.py", tests]))
    t.assistant([tool_use("r1", "Read", file_path=cart)])
    t.tool_result("r1", cat_n(CART), _result(cart, CART))
    t.assistant([tool_use("r2", "Read", file_path=pricing)])
    t.tool_result("r2", cat_n(PRICING), _result(pricing, PRICING))
    t.assistant([tool_use("s1", "Grep", pattern="discount", path=ROOT, output_mode="content")])
    t.tool_result(
        "s1",
        "shop/pricing.py:36:def bulk_discount(quantity: int) -> Decimal:\n"
        "shop/pricing.py:45:    return (gross * (1 - bulk_discount(quantity)))...\n"
        "tests/test_cart.py:22:def test_bulk_discount_applies_above_ten_items():",
    )
    t.wait(20).assistant(
        [tool_use("b1", "Bash", command="python -m pytest -q", description="Run tests")]
    )
    t.tool_result("b1", FAILING)
    t.assistant(
        [
            text("total() sums undiscounted subtotals; line_price is never used."),
            tool_use("r3", "Read", file_path=cart),
        ]
    )
    t.tool_result("r3", cat_n(CART), _result(cart, CART))
    t.assistant(
        [tool_use("e1", "Edit", file_path=cart, old_string=OLD_TOTAL, new_string=NEW_TOTAL)]
    )
    t.tool_result(
        "e1",
        f"The file {cart} has been updated successfully.",
        {"filePath": cart, "oldString": OLD_TOTAL, "newString": NEW_TOTAL, "originalFile": CART},
    )
    t.wait(15).assistant(
        [tool_use("b2", "Bash", command="python -m pytest -q", description="Run tests")]
    )
    t.tool_result("b2", PASSING.format(n=6, dots="......"))
    t.assistant(
        [
            text(
                "Fixed: Cart.total() now prices each line with line_price, so bulk "
                "discounts apply before tax. All 6 tests pass."
            )
        ]
    )
    t.wait(7 * 60)  # the user reads the diff: longer than the 5-minute cache TTL
    t.user("The tiers should start at the threshold (50 items get 10%). Add a test for that.")
    t.assistant([tool_use("r4", "Read", file_path=tests)])
    t.tool_result("r4", cat_n(TESTS), _result(tests, TESTS))
    t.assistant(
        [tool_use("e2", "Edit", file_path=pricing, old_string=OLD_TIER, new_string=NEW_TIER)]
    )
    t.tool_result(
        "e2",
        f"The file {pricing} has been updated successfully.",
        {"filePath": pricing, "originalFile": PRICING},
    )
    new_tests = TESTS + NEW_TEST
    t.assistant([tool_use("w1", "Write", file_path=tests, content=new_tests)])
    t.tool_result(
        "w1",
        f"The file {tests} has been updated.",
        {"type": "update", "filePath": tests, "content": new_tests, "originalFile": TESTS},
    )
    t.wait(10).assistant(
        [tool_use("b3", "Bash", command="python -m pytest -q", description="Run tests")]
    )
    t.tool_result("b3", PASSING.format(n=7, dots="......."))
    fixed_pricing = PRICING.replace(OLD_TIER, NEW_TIER)
    t.assistant([tool_use("r5", "Read", file_path=pricing)])
    t.tool_result("r5", cat_n(fixed_pricing), _result(pricing, fixed_pricing))
    t.assistant([text("Tiers now start at their threshold and the new test covers 50 items.")])
    t.wait(90)
    t.user("Thanks. Run the whole suite once more, then summarise the change in one line.")
    t.assistant([tool_use("b4", "Bash", command="python -m pytest -q", description="Run tests")])
    t.tool_result("b4", PASSING.format(n=7, dots="......."))
    t.assistant(
        [text("Cart totals apply bulk discounts per line, tiers start at their threshold.")]
    )
    return t


def main() -> int:
    DEMO_SESSION.write_text(build().text(), encoding="utf-8")
    print(DEMO_SESSION, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
