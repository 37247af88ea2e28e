"""Days and time zones of usage reports (pure): the zone a report is in, a day given on the command
line, and the span of Unix seconds that `--since`/`--until` name."""

from __future__ import annotations

import os
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from azsd.errors import BadRequestError

__all__ = ["day_span", "iso", "local_zone", "midnight", "parse_day"]


def local_zone(name: str | None) -> tzinfo:
    """The time zone `name` (IANA), else the local one: `$TZ` when it names a zone, else
    /etc/localtime, else UTC."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # (OSError: a name too long for a path)
            raise BadRequestError(
                f"unknown time zone {name!r} (expected an IANA name such as Europe/Paris)"
            ) from None
    env = os.environ.get("TZ", "").lstrip(":")
    for candidate in ([env] if env else []) + ["/etc/localtime"]:
        try:
            if not candidate.startswith("/"):
                return ZoneInfo(candidate)
            with Path(candidate).open("rb") as stream:
                return ZoneInfo.from_file(stream)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            continue
    return ZoneInfo("UTC")


def parse_day(text: str, what: str) -> date:
    """A local date given as ``YYYY-MM-DD`` or ``YYYYMMDD``.

    >>> parse_day("20251002", "since"), parse_day("2025-10-02", "until")
    (datetime.date(2025, 10, 2), datetime.date(2025, 10, 2))
    """
    compact = text.strip()
    if len(compact) == 8 and compact.isdigit():
        compact = f"{compact[:4]}-{compact[4:6]}-{compact[6:]}"
    try:
        return date.fromisoformat(compact)
    except ValueError:
        raise BadRequestError(f"{what} {text!r} is not a date: expected YYYY-MM-DD or YYYYMMDD") from None


def midnight(day: date, tz: tzinfo) -> float:
    """The Unix time `day` begins in `tz`."""
    return datetime.combine(day, time(0), tzinfo=tz).timestamp()


def iso(at: float, tz: tzinfo) -> str:
    """Unix time `at` in `tz`, to the second (ISO 8601)."""
    return datetime.fromtimestamp(at, tz).isoformat(timespec="seconds")


def day_span(
    since: str | None, until: str | None, timezone: str | None
) -> tuple[tzinfo, float | None, float | None]:
    """The zone named `timezone` (else the local one), and the Unix seconds from the start of day
    `since` to the end of day `until` there (None: open on that side); an empty span is an error."""
    tz = local_zone(timezone)
    first = parse_day(since, "since") if since else None
    last = parse_day(until, "until") if until else None
    if first and last and first > last:
        raise BadRequestError(f"since {first} is after until {last}: no day is in between")
    start = midnight(first, tz) if first else None
    end = midnight(last + timedelta(days=1), tz) if last else None
    return tz, start, end
