"""`azs usage`: the local store's usage (:func:`.store.usage`), or with ``--remote`` the team's, summed
in the sync database (`RemoteUsage`): the same periods, flags and ``--json`` shape, and two more
groupings, ``--by person|repository``.
"""

from __future__ import annotations

from typing import Final

from azsd_client.render.reports import period_lines

from .invocation import Invocation, UsageError

__all__ = ["usage"]

#: The groupings only the sync database has.
_REMOTE_ONLY: Final = ("person", "repository")
#: The flags of the local report (this machine's stores) that the sync database cannot answer.
_LOCAL_ONLY: Final = ("all", "active", "token_limit", "prices", "exclude_removed", "instances")


def usage(run: Invocation) -> int:
    """Tokens and cost: this store's, or with `--remote` the team's (by person unless `--by` says)."""
    a = run.args
    if not a.remote:
        if a.by in _REMOTE_ONLY:
            raise UsageError(f"usage --by {a.by} needs --remote (the team's usage in the sync database)")
        from .store import usage as local

        return local(run)
    local_only = [name for name in _LOCAL_ONLY if getattr(a, name, None)]
    if local_only:
        flag = "--" + local_only[0].replace("_", "-")
        raise UsageError(f"usage {flag} reads this machine's stores: it does not go with --remote")
    if a.session is not None or a.by in ("session", "block"):
        raise UsageError(
            "usage --remote sums the team's usage: by day, week, month, model, person or repository"
        )
    reply = run.client.remote_usage(
        run.root, by=a.by, by_model=a.by_model, since=a.since, until=a.until, timezone=a.timezone
    )
    run.out.result(reply, lambda r, style: period_lines(r.by, r.periods, r.total, style))
    if not reply.periods:
        run.out.hint("no usage in the sync database for this repository on those days")
    return 0
