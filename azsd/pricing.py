"""Token prices per model, and the cost of a message or a turn that reported none.

Pure: no I/O beyond reading the package's own price list once (and a price file the user names,
:func:`load_price_file`). The list ships as ``azsd/data/pricing.json`` (its source and date are
inside it); the config file's ``[pricing."model-name"]`` tables override or add models, and its
``price-file`` replaces the shipped list (see :mod:`azsd.config`).

A model is found by its exact name, else by family: the longest listed name that the model's name
starts with, followed by ``-``, ``@`` or ``:`` and a *tag* that names no other model: a date
(``-20250929``, ``-2025-08-07``, ``@20250929``), ``latest``, ``preview`` or a ``v1:0``. So
``claude-sonnet-4-5-20250929`` is priced as ``claude-sonnet-4-5``, but ``claude-opus-4-7`` (a newer
version) is never priced as ``claude-opus-4`` and ``gpt-5-codex-mini`` never as ``gpt-5-codex``:
a model that is not listed is never priced as an older listed one by that rule.

Then, so that prices do not go stale the day a vendor ships a model: a model of a known family that
the list does not name (``claude-opus-*``, ``claude-sonnet-*``, ``claude-haiku-*``, ``gpt-5*`` and
later) is priced as that family's newest listed model (for GPT, of the same variant: ``-codex``,
``-mini``…, else the plain one), and :meth:`PriceTable.priced_as` names the model it was priced as:
every cost computed from prices is an estimate (``~``) anyway, and this one says so in
`azs usage --prices`. Any other model has no price, and its tokens are shown as unpriced, never $0.
A provider prefix (``anthropic/``) is dropped first.

A message is priced by :meth:`PriceTable.message_cost`: above 200 000 input tokens (input and cache
together) the whole request is billed at the model's long-context prices when it has them; cache
writes that live an hour bill at `cache_write_1h` (2× input unless listed); ``fast`` speed multiplies
by the model's `fast` factor.

>>> from azsd.model import Usage
>>> table = default_table()
>>> table.lookup("claude-sonnet-4-5-20250929") == table.lookup("claude-sonnet-4-5")
True
>>> table.lookup("claude-opus-4-7-20260416").input, table.lookup("claude-opus-4-20250514").input
(5.0, 15.0)
>>> round(table.estimate("gpt-5-codex", Usage(input=1_000_000, output=100_000)) or 0, 2)
2.25
>>> table.estimate("no-such-model", Usage(input=1)) is None
True
>>> table.lookup("claude-opus-9-1") == table.lookup("claude-opus-4-7"), table.priced_as("claude-opus-9-1")
(True, 'claude-opus-4-7')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:  # the client reads prices from the config without the events' types
    from azsd.model import Usage

__all__ = [
    "LONG_CONTEXT_TOKENS",
    "Price",
    "PriceTable",
    "Tier",
    "active_table",
    "default_table",
    "estimate",
    "load_price_file",
    "set_active_table",
]

#: What may follow a listed name in a model name of the same family, then a tag (module docstring).
_FAMILY_TAG: Final = re.compile(r"[-@:](\d{4}(?:[-:.]?\d{2}){0,2}\d*|latest|preview|v\d+(?::\d+)?)([-@:].*)?")

#: The families a model the list does not name is priced by (its newest listed member): Claude's
#: tiers with their version (`claude-opus-4-7`, `claude-opus-4-20250514`), GPT from 5 on with its
#: variant (`gpt-5.2-codex-mini`).
_CLAUDE_FAMILY: Final = re.compile(r"(claude-(?:opus|sonnet|haiku))-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?")
_GPT_FAMILY: Final = re.compile(r"gpt-(\d+)(?:\.(\d+))?((?:-[a-z]+)*)(?:-\d{4}-\d{2}-\d{2})?")

#: Above this many input tokens in one request (input and cache together), long-context prices apply.
LONG_CONTEXT_TOKENS: Final = 200_000

_MILLION: Final = 1_000_000.0


class Tier(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="kebab"):
    """A model's prices for requests above :data:`LONG_CONTEXT_TOKENS` input tokens."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="kebab"):
    """USD per million tokens of each kind (kebab-case keys in the config file, snake in the data).

    `cache_write` is a 5-minute cache write, `cache_write_1h` a 1-hour one (None: 2× input);
    `above_200k` the long-context prices (None: the same prices at any length); `fast` the factor
    of ``fast`` speed."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0
    cache_write_1h: float | None = None
    above_200k: Tier | None = None
    fast: float = 1.0
    #: The day (``YYYY-MM-DD``, UTC) from which these prices apply; `before` those that applied until
    #: then (None: these, at any date). Opus 4.6's long-context premium ended at its 1M-context
    #: general availability, for one.
    since: str | None = None
    before: Price | None = None

    def at(self, when: float | None) -> Price:
        """The prices in force at `when` (Unix seconds; None: now).

        >>> later = Price(5.0, 25.0, since="2026-03-13", before=Price(10.0, 37.5))
        >>> later.at(1_773_273_600.0).input, later.at(1_773_360_000.0).input, later.at(None).input
        (10.0, 5.0, 5.0)
        """
        price: Price = self
        while when is not None and price.since is not None and price.before is not None:
            if when >= _day_start(price.since):
                break
            price = price.before
        return price

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at these base prices (reasoning is inside `output`)."""
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_read * self.cache_read
            + usage.cache_write * self.cache_write
        ) / _MILLION

    def message_cost(self, usage: Usage, *, cache_write_1h: int = 0, fast: bool = False) -> float:
        """The cost of one API request's `usage`, `cache_write_1h` of its cache writes for an hour."""
        rates: Price | Tier = self
        context = usage.input + usage.cache_read + usage.cache_write
        if self.above_200k is not None and context > LONG_CONTEXT_TOKENS:
            rates = self.above_200k
        hour = min(max(cache_write_1h, 0), usage.cache_write)
        listed = self.cache_write_1h is not None and rates is self
        hour_rate = self.cache_write_1h if listed and self.cache_write_1h is not None else 2 * rates.input
        usd = (
            usage.input * rates.input
            + usage.output * rates.output
            + usage.cache_read * rates.cache_read
            + (usage.cache_write - hour) * rates.cache_write
            + hour * hour_rate
        ) / _MILLION
        return usd * (self.fast if fast else 1.0)

    def bad_day(self) -> str | None:
        """A `since` (here or before) that is not a date, or None."""
        price: Price | None = self
        while price is not None:
            if price.since is not None:
                try:
                    _day_start(price.since)
                except ValueError:
                    return price.since
            price = price.before
        return None

    def negative(self) -> bool:
        """Whether any of its prices is below 0."""
        tier = self.above_200k
        rates = [self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h or 0.0]
        rates += [tier.input, tier.output, tier.cache_read, tier.cache_write] if tier else []
        return min(rates) < 0 or self.fast < 0 or (self.before is not None and self.before.negative())


class _DataTier(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class _DataPrice(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0
    cache_write_1h: float | None = None
    above_200k: _DataTier | None = None
    fast: float = 1.0
    since: str | None = None
    before: _DataPrice | None = None

    def price(self) -> Price:
        tier = None if self.above_200k is None else Tier(**msgspec.structs.asdict(self.above_200k))
        return Price(
            self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h, tier, self.fast,
            _checked_day(self.since), None if self.before is None else self.before.price(),
        )  # fmt: skip


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
        self._found: dict[str, Price | None] = {}
        self._newest: dict[str, tuple[tuple[int, ...], str]] = {}
        for listed in self.prices:
            family = _family(listed)
            if family is not None and family[1] > self._newest.get(family[0], ((), ""))[0]:
                self._newest[family[0]] = (family[1], listed)

    def with_overrides(self, overrides: Mapping[str, Price]) -> PriceTable:
        """This table with `overrides` replacing or adding models."""
        return PriceTable({**self.prices, **overrides}, source=self.source, date=self.date)

    def lookup(self, model: str) -> Price | None:
        """The price of `model`: exact name, then family (see the module docstring), else None."""
        if model in self._found:
            return self._found[model]
        found = self._lookup(model)
        if len(self._found) < 4096:
            self._found[model] = found
        return found

    def _lookup(self, model: str) -> Price | None:
        name = model.strip()
        if found := self.prices.get(name):
            return found
        name = name.rsplit("/", 1)[-1]
        if found := self.prices.get(name):
            return found
        for listed in self._families:
            if name.startswith(listed) and _FAMILY_TAG.fullmatch(name, len(listed)):
                return self.prices[listed]
        newest = self.priced_as(name)
        return None if newest is None else self.prices[newest]

    def priced_as(self, model: str) -> str | None:
        """The listed model that `model` is priced as because the list does not name it (its
        family's newest), or None: it is listed (by name or tag), or has no price."""
        name = model.strip().rsplit("/", 1)[-1]
        if name in self.prices or any(
            name.startswith(listed) and _FAMILY_TAG.fullmatch(name, len(listed)) for listed in self._families
        ):
            return None
        family = _family(name)
        if family is None:
            return None
        found = self._newest.get(family[0])
        if found is None and family[0].startswith("gpt-"):
            found = self._newest.get("gpt")  # a variant the list lacks: the plain model
        return None if found is None else found[1]

    def estimate(self, model: str | None, usage: Usage) -> float | None:
        """What `usage` of `model` costs, or None when the model is unknown (or not given)."""
        price = self.lookup(model) if model else None
        return None if price is None else price.cost(usage)

    def message_cost(
        self,
        model: str | None,
        usage: Usage,
        *,
        cache_write_1h: int = 0,
        fast: bool = False,
        at: float | None = None,
    ) -> float | None:
        """What one request of `model` made at `at` (Unix seconds; None: now) costs
        (:meth:`Price.message_cost` at the prices then in force), None: an unknown model."""
        price = self.lookup(model) if model else None
        if price is None:
            return None
        return price.at(at).message_cost(usage, cache_write_1h=cache_write_1h, fast=fast)  # fmt: skip


def _family(name: str) -> tuple[str, tuple[int, ...]] | None:
    """A model name's family and version: ``('claude-opus', (4, 7))``, ``('gpt-codex', (5, 2))``.

    >>> _family("claude-sonnet-4-5-20250929"), _family("gpt-5.1-codex-mini"), _family("o3")
    (('claude-sonnet', (4, 5)), ('gpt-codex-mini', (5, 1)), None)
    """
    if match := _CLAUDE_FAMILY.fullmatch(name):
        tier, major, minor = match.groups()
        return tier, (int(major), int(minor or 0))
    if (match := _GPT_FAMILY.fullmatch(name)) and int(match.group(1)) >= 5:
        major, minor, variant = match.groups()
        return "gpt" + variant, (int(major), int(minor or 0))
    return None


def _table(data: bytes) -> PriceTable:
    parsed = msgspec.json.decode(data, type=_PriceFile)
    prices = {name: entry.price() for name, entry in parsed.models.items()}
    return PriceTable(prices, source=parsed.source, date=parsed.date)


def _day_start(day: str) -> float:
    """The first second (UTC) of `day` (``YYYY-MM-DD``)."""
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()


def _checked_day(day: str | None) -> str | None:
    if day is not None:
        try:
            _day_start(day)
        except ValueError:
            raise ValueError(f"since: {day!r} is not a date (YYYY-MM-DD)") from None
    return day


@cache
def default_table() -> PriceTable:
    """The price list shipped with the package."""
    from importlib import resources  # slow to import, and a client that reads the config needs no prices

    return _table(resources.files("azsd").joinpath("data", "pricing.json").read_bytes())


def load_price_file(data: bytes, name: str) -> PriceTable:
    """A price list the user names (`price-file`): azsd's own format (``azsd/data/pricing.json``'s),
    or LiteLLM's ``model_prices_and_context_window.json`` (USD per token). Raises ValueError."""
    try:
        return _table(data)
    except msgspec.ValidationError:
        pass  # not ours: LiteLLM's, perhaps
    except msgspec.DecodeError as exc:
        raise ValueError(f"{name}: not JSON ({exc})") from None
    raw = msgspec.json.decode(data)
    if not isinstance(raw, dict):
        raise ValueError(f"{name}: expected a JSON object of models")
    prices: dict[str, Price] = {}
    for model, entry in raw.items():
        per = _litellm(entry)
        if per is not None:
            prices[str(model)] = per
    if not prices:
        raise ValueError(f"{name}: no model with an input and an output price")
    return PriceTable(prices, source=name, date="")


def _litellm(entry: object) -> Price | None:
    """One LiteLLM entry (USD per token) as a Price, or None without input and output prices."""
    if not isinstance(entry, dict):
        return None

    def rate(key: str) -> float | None:
        value = entry.get(key)
        return float(value) * _MILLION if isinstance(value, int | float) and value >= 0 else None

    base = rate("input_cost_per_token"), rate("output_cost_per_token")
    if base[0] is None or base[1] is None:
        return None
    above = rate("input_cost_per_token_above_200k_tokens"), rate("output_cost_per_token_above_200k_tokens")
    tier = None
    if above[0] is not None and above[1] is not None:
        tier = Tier(
            above[0], above[1], rate("cache_read_input_token_cost_above_200k_tokens") or 0.0,
            rate("cache_creation_input_token_cost_above_200k_tokens") or 0.0,
        )  # fmt: skip
    specific = entry.get("provider_specific_entry")
    fast = specific.get("fast") if isinstance(specific, dict) else None
    return Price(
        base[0], base[1],
        rate("cache_read_input_token_cost") or 0.0, rate("cache_creation_input_token_cost") or 0.0,
        rate("cache_creation_input_token_cost_above_1hr"), tier,
        float(fast) if isinstance(fast, int | float) and fast > 0 else 1.0,
    )  # fmt: skip


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
