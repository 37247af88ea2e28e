"""The client's version: that of the `azsd` distribution it ships in (`azsd.version`, which
pyproject.toml reads too; looking it up in the installed package metadata took longer than a search)."""

from __future__ import annotations

from azsd.version import __version__

__all__ = ["__version__"]
