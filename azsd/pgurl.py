"""The `sync-url` setting: what it may hold, and how it is shown.

A URL (``postgresql://user@host/db?sslmode=verify-full``) or a libpq key/value string
(``host=db dbname=azsd``). Credentials are best left to ``~/.pgpass`` or the ``PG*`` environment:
a config file that holds a password must be readable by its owner only (mode 0600), else it is
refused. A URL is never logged or shown with its password.

>>> redact_url("postgresql://ada:s3cret@db/azsd")
'postgresql://ada:***@db/azsd'
>>> redact_url("host=db password='a b' dbname=azsd")
'host=db password=*** dbname=azsd'
>>> has_password("postgresql://ada@db/azsd?password=x"), has_password("host=db")
(True, False)
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs, urlsplit

from azsd.errors import ConfigError

__all__ = ["check_url_in_file", "has_password", "redact_url"]

_SCHEMES: Final = ("postgresql://", "postgres://")
#: `password=value` in a key/value string: the value bare or single-quoted (with \\' escapes).
_KV_PASSWORD: Final = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")


def _is_url(url: str) -> bool:
    return url.startswith(_SCHEMES)


def has_password(url: str) -> bool:
    """Whether `url` carries a password (in the URL's userinfo or query, or a `password=` key)."""
    if _is_url(url):
        parts = urlsplit(url)
        return bool(parts.password) or "password" in parse_qs(parts.query)
    return bool(_KV_PASSWORD.search(url))


def redact_url(url: str) -> str:
    """`url` with any password replaced by ``***``: the only form that is logged or shown."""
    if _is_url(url):
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            userinfo, _, host = netloc.rpartition("@")
            netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
        query = re.sub(r"(password=)[^&]*", r"\1***", parts.query)
        return parts._replace(netloc=netloc, query=query).geturl()
    return _KV_PASSWORD.sub(r"\1***", url)


def check_url_in_file(url: str, path: Path) -> None:
    """Refuse a `sync-url` that is empty, of an unknown form, or that holds a password in a file
    others may read (anything but mode 0600 and owned by this user)."""
    if not url.strip():
        raise ConfigError(f"{path}: sync-url is empty (remove it to turn sync off)")
    if "://" in url and not _is_url(url):
        raise ConfigError(f"{path}: sync-url must be a postgresql:// URL or libpq key=value pairs")
    if not has_password(url):
        return
    info = os.stat(path)
    if stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.getuid():
        raise ConfigError(
            f"{path}: sync-url holds a password, and the file has mode {stat.S_IMODE(info.st_mode):04o}: "
            "chmod 600 it, or keep the password in ~/.pgpass or PGPASSWORD instead"
        )
