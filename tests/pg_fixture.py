"""A fresh PostgreSQL database for the sync tests, dropped afterwards.

The server is the machine's (127.0.0.1:5432, trust auth; `AZSD_TEST_PG` overrides the admin
connection). Unreachable, the tests skip with the reason on a developer machine and fail in CI
(``CI=true``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from azsd.sync.schema import init_database

ADMIN = os.environ.get("AZSD_TEST_PG", "host=127.0.0.1 port=5432 dbname=postgres")


def _admin() -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL is not reachable at {ADMIN!r}: {str(exc).strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def url_of(name: str) -> str:
    """The URL of database `name` on the admin connection's server."""
    info = psycopg.conninfo.conninfo_to_dict(ADMIN)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo(**info)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def make_db() -> Iterator[Callable[[bool], str]]:
    """Makes fresh databases (initialized with the sync schema, unless asked not to); all are
    dropped at the end of the module."""
    admin = _admin()
    made: list[str] = []

    def make(init: bool = True) -> str:
        name = f"azsd_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        admin.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        url = url_of(name)
        if init:
            init_database(url)
        return url

    try:
        yield make
    finally:
        admin.close()
        admin = _admin()  # a new one: the server may have been restarted meanwhile (test_sync_crash)
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="module")
def pg_url(make_db: Callable[[bool], str]) -> str:
    """One initialized database shared by a module's tests (each test uses stores of its own)."""
    return make_db(True)
