"""sqlite3's errors said in azsd's error tree, naming the store: the one place that translates them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from azsd.errors import NotAStoreError, StoreError, StoreFullError

__all__ = ["NeedsWriterError", "StoreBusyError", "raise_open_error", "translate"]


class StoreBusyError(StoreError):
    """Another connection held the lock a statement needed for longer than the busy timeout."""


class NeedsWriterError(StoreError):
    """A call on a store's reader tried to write (a search whose index must catch up first).

    Never a reply: the worker that sees it runs the call again on the store's writer.
    """


@contextmanager
def translate(path: Path) -> Iterator[None]:
    """Turn sqlite3 errors into the azsd tree, naming the store."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
            raise StoreBusyError(f"{path}: {exc}") from None
        if "full" in str(exc):
            raise StoreFullError(f"{path}: {exc} (nothing was written)") from None
        raise StoreError(f"{path}: {exc}") from None
    except sqlite3.IntegrityError as exc:
        raise StoreError(f"{path}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise NotAStoreError(path) from None
        raise StoreError(f"{path}: {exc}") from None


def raise_open_error(path: Path, exc: sqlite3.DatabaseError) -> NoReturn:
    """Why the file could not be read when opened: locked (or unreadable), or not a store at all."""
    if isinstance(exc, sqlite3.OperationalError):  # e.g. another program holds an EXCLUSIVE lock
        with translate(path):
            raise exc
    raise NotAStoreError(path) from None
