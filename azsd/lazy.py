"""A package's public names loaded on first use (a module ``__getattr__``, PEP 562), so that
importing the package costs nothing (azsd's root; the client's keeps a copy of its own, so that
`azs statusline`'s fast path loads nothing of azsd).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of `package`: each name in `modules` taken from its module (relative to
    `package` when it starts with a dot), imported the first time the name is asked for.

    >>> getattr_ = lazy_names("azsd", {"AzsdError": "azsd.errors"})
    >>> getattr_("AzsdError").__name__
    'AzsdError'
    >>> getattr_("nothing")
    Traceback (most recent call last):
    AttributeError: module 'azsd' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        return getattr(import_module(module, package), name)

    return __getattr__
