"""The client's version: that of the installed `azsd` distribution it ships in."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("azsd")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
