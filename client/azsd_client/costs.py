"""How a cost is written, one format for every output: `azs`'s tables and reports, the statusline
(its fast path too, :mod:`azsd_client.statusfile`) and the web view.

It imports nothing, so that the statusline's fast path, which loads only the standard library's
smallest modules, can print costs without loading the rest of the client.
"""

from __future__ import annotations

__all__ = ["format_cost"]


def format_cost(cost: float | None, source: str | None = "reported", unpriced: int = 0) -> str:
    """`$0.1234`, `~$0.1234` for an estimate (azsd priced the tokens), `?` for tokens without a
    price (`~$0.1234+?` when only some have one), or "" for no cost.

    >>> format_cost(0.5), format_cost(0.5, "estimated", 10), format_cost(0.0, "unpriced", 10), format_cost(0)
    ('$0.5000', '~$0.5000+?', '?', '')
    >>> format_cost(float("nan")), format_cost(-1.0), format_cost(1e300)  # another's row: not a cost
    ('?', '?', '?')
    """
    if source == "unpriced" or (cost is not None and not 0 <= cost < 1e12):  # (NaN fails every comparison)
        return "?"
    if not cost:
        return "?" if unpriced else ""
    return f"{'~' if source == 'estimated' else ''}${cost:.4f}{'+?' if unpriced else ''}"
