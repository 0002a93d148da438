"""A small inventory service: stock levels, reservations and a reorder policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import overload

DEFAULT_REORDER_LEVEL = 10
_MAX_BATCH = 500
logger_name = "inventory"


class OutOfStock(Exception):
    """Raised when a reservation asks for more than is on the shelf."""


@dataclasses.dataclass(frozen=True)
class Item:
    sku: str
    quantity: int = 0

    @property
    def empty(self) -> bool:
        return self.quantity == 0


class Inventory:
    """Stock levels keyed by SKU."""

    def __init__(self, items: dict[str, Item] | None = None) -> None:
        self._items = dict(items or {})

    @overload
    def get(self, sku: str) -> Item: ...
    @overload
    def get(self, sku: str, default: Item) -> Item: ...
    def get(self, sku: str, default: Item | None = None) -> Item:
        # A missing SKU is an empty item unless the caller says otherwise.
        return self._items.get(sku, default or Item(sku))

    def reserve(self, sku: str, count: int) -> Item:
        item = self.get(sku)
        if item.quantity < count:
            raise OutOfStock(sku)

        def remaining() -> int:
            return item.quantity - count

        updated = dataclasses.replace(item, quantity=remaining())
        self._items[sku] = updated
        return updated

    async def refresh(self, source: Iterator[Item], *, batch: int = _MAX_BATCH) -> int:
        count = 0
        for item in source:
            self._items[item.sku] = item
            count += 1
        return count

    class Policy:
        def needs_reorder(self, item: Item, level: int = DEFAULT_REORDER_LEVEL) -> bool:
            return item.quantity < level


def load(path: str) -> Inventory:
    with open(path, encoding="utf-8") as handle:
        return Inventory({line.strip(): Item(line.strip()) for line in handle})
