"""Token prices per model, and the cost of a turn that reported none.

Pure: no I/O beyond reading the package's own price list once. The list ships as
``azsd/data/pricing.json`` (its source and date are inside it); the config file's
``[pricing."model-name"]`` tables override or add models (see :mod:`azsd.config`).

A model is found by its exact name, else by family: the longest listed name that the model's name
starts with, followed by ``-``, ``@`` or ``:`` (so ``claude-sonnet-4-5-20250929`` is priced
as ``claude-sonnet-4-5``, ``gpt-5.1-codex-max`` as ``gpt-5.1-codex``). A provider prefix
(``anthropic/``) is dropped first. An unknown model has no price, and its turns no estimate.

>>> from azsd.model import Usage
>>> table = default_table()
>>> table.lookup("claude-sonnet-4-5-20250929") == table.lookup("claude-sonnet-4-5")
True
>>> round(table.estimate("gpt-5-codex", Usage(input=1_000_000, output=100_000)) or 0, 2)
2.25
>>> table.estimate("no-such-model", Usage(input=1)) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:  # the client reads prices from the config without the events' types
    from azsd.model import Usage

__all__ = ["Price", "PriceTable", "active_table", "default_table", "estimate", "set_active_table"]

#: What may follow a listed name in a model name of the same family.
_FAMILY_SEPARATORS: Final = ("-", "@", ":")


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="kebab"):
    """USD per million tokens of each kind (kebab-case keys in the config file, snake in the data)."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at these prices (reasoning is inside `output`)."""
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_read * self.cache_read
            + usage.cache_write * self.cache_write
        ) / 1_000_000.0


class _DataPrice(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class _PriceFile(msgspec.Struct, frozen=True):
    source: str
    date: str
    models: dict[str, _DataPrice]


class PriceTable:
    """Prices by model name, with the family rule of the module docstring."""

    def __init__(self, prices: Mapping[str, Price], *, source: str = "", date: str = "") -> None:
        self.prices: dict[str, Price] = dict(prices)
        self.source = source
        self.date = date
        # longest first, so the first family match is the most specific
        self._families = sorted(self.prices, key=len, reverse=True)

    def with_overrides(self, overrides: Mapping[str, Price]) -> PriceTable:
        """This table with `overrides` replacing or adding models."""
        return PriceTable({**self.prices, **overrides}, source=self.source, date=self.date)

    def lookup(self, model: str) -> Price | None:
        """The price of `model`: exact name, then family (see the module docstring), else None."""
        name = model.strip()
        if found := self.prices.get(name):
            return found
        name = name.rsplit("/", 1)[-1]
        if found := self.prices.get(name):
            return found
        for listed in self._families:
            if name.startswith(listed) and name[len(listed) : len(listed) + 1] in _FAMILY_SEPARATORS:
                return self.prices[listed]
        return None

    def estimate(self, model: str | None, usage: Usage) -> float | None:
        """What `usage` of `model` costs, or None when the model is unknown (or not given)."""
        price = self.lookup(model) if model else None
        return None if price is None else price.cost(usage)


@cache
def default_table() -> PriceTable:
    """The price list shipped with the package."""
    from importlib import resources  # slow to import, and a client that reads the config needs no prices

    data = resources.files("azsd").joinpath("data", "pricing.json").read_bytes()
    parsed = msgspec.json.decode(data, type=_PriceFile)
    prices = {
        name: Price(p.input, p.output, p.cache_read, p.cache_write) for name, p in parsed.models.items()
    }
    return PriceTable(prices, source=parsed.source, date=parsed.date)


_active: PriceTable | None = None


def set_active_table(table: PriceTable | None) -> None:
    """Install the table parsers price with (the daemon does once, from its config); None: the default."""
    global _active
    _active = table


def active_table() -> PriceTable:
    """The table in force: the one installed at start-up, else the shipped one."""
    return _active if _active is not None else default_table()


def estimate(model: str | None, usage: Usage) -> float | None:
    """The estimated cost of `usage` by `model` with the table in force (None: unknown model)."""
    return active_table().estimate(model, usage)
