"""Token usage beside the events: each run's parts (``azsd_usage``), the API messages each run
counted (``azsd_usage_claims``, by a digest of their ids), and the usage of removed sessions
(``azsd_usage_removed``).

A run (`source`: the file its lines came from) records its parts, one per model and quarter hour,
replaced (never added) each time it is recorded again, and how many turns it held. The messages it
counted are claimed by their API message id, the first run to record one owning it: an import or
ingest of a file that copies another's messages (a `claude --resume` copies the session it resumes)
asks :meth:`UsageTables.usage_counted_elsewhere` and leaves them out, so a message is counted once
in a store whatever files hold it. A session removed by azsd leaves its usage in
``azsd_usage_removed`` (the ledger: period reports still count what it cost; a table without a
foreign key, like ``azsd_requests``, since its rows outlive their session), and the message ids it
counted in ``azsd_usage_removed_claims``, so that a copy of them imported later is not counted again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from azsd.model import CostSource, SessionUsage, Usage, UsagePart, UsageRow
from azsd.store.account import AccountKeys
from azsd.store.events import EventLog
from azsd.store.listing import _require_session
from azsd.store.side_rows import USAGE_INSERT, USAGE_KEYS_INSERT, key_digest, run_digest, usage_values

__all__ = ["IN_LIST_MAX", "UsageTables"]

#: Ids a query names in one `IN (…)` list (SQLite allows 32 766 parameters); more read everything.
IN_LIST_MAX: Final = 1000

_ROW_COLUMNS: Final = (
    "session_id, source, model, slot, first_at, last_at, input, output, cache_read, cache_write, "
    "reasoning, cost_usd, cost_source, turns"
)


def _cost_source(usd: float | None, stored: str | None) -> CostSource | None:
    """A stored cost's source (a cost of unknown source, recorded before sources were, is an estimate)."""
    if usd is None:
        return None
    return "reported" if stored == "reported" else "estimated"


def _row(values: Sequence[Any]) -> UsageRow:
    sid, src, model, slot, first, last, i, o, cr, cw, r, usd, cs, turns = values
    return UsageRow(
        session_id=sid, source=src, model=model, slot=slot, first=first, last=last,
        usage=Usage(input=i, output=o, cache_read=cr, cache_write=cw, reasoning=r),
        cost_usd=usd, cost_source=_cost_source(usd, cs), turns=turns,
    )  # fmt: skip


class UsageTables(EventLog):
    """Token usage: record a run's, read it back by session or by part, and keep the ledger."""

    #: The account's keys, when the daemon shares them between its stores: a message another store
    #: counted is counted elsewhere here too (:mod:`azsd.store.account`).
    account: AccountKeys | None = None

    def record_usage(
        self,
        session_id: int,
        source: str,
        parts: Sequence[UsagePart],
        *,
        replaces: str | None = None,
        at: float | None = None,
        turns: int | None = None,
        keys: Sequence[str] = (),
    ) -> None:
        """Set the usage of one run (`source`: the file it came from): replaced, never added.

        Each part is one model's usage within one time slot, with its cost (reported by the agent, or
        estimated by azsd.pricing). A part without a time (the run's lines carry none) keeps the times
        the run's earlier record of that model had, or takes `at` (default: now) the first time, so
        that recording the same run again changes nothing. `replaces` names a record of the same
        run kept under another source until now (its agent session id, as azsd once keyed runs): it
        is dropped, so the run is counted once. `turns` is how many turns the run held (None: one);
        `keys` the API message ids it counted, claimed for it unless another run has them."""
        now = time.time() if at is None else at
        with self.atomic() as conn:
            _require_session(conn, session_id)
            olds = (source,) if replaces is None or replaces == source else (source, replaces)
            marks = ", ".join("?" * len(olds))
            known = {
                model: (first, last)
                for model, first, last in conn.execute(
                    "SELECT model, MIN(first_at), MAX(last_at) FROM azsd_usage "
                    f"WHERE session_id = ? AND source IN ({marks}) GROUP BY model",
                    (session_id, *olds),
                )
            }
            conn.execute(
                f"DELETE FROM azsd_usage WHERE session_id = ? AND source IN ({marks})", (session_id, *olds)
            )
            conn.executemany(USAGE_INSERT, usage_values(session_id, source, parts, known, now, turns))
            run = run_digest(source)
            if replaces is not None and replaces != source:
                conn.execute(
                    "UPDATE azsd_usage_claims SET run = ? WHERE session_id = ? AND run = ?",
                    (run, session_id, run_digest(replaces)),
                )
            conn.executemany(USAGE_KEYS_INSERT, [(key_digest(key), session_id, run) for key in keys])

    def keep_usage_apart(self, session_id: int, source: str, kept: str) -> None:
        """Keep the usage recorded for `source` (and the message ids it counted) under `kept`: the
        next record of `source` then adds to it instead of replacing it (a followed file replaced by
        another). Nothing happens when `kept` holds a record already."""
        with self.atomic() as conn:
            taken = conn.execute(
                "SELECT 1 FROM azsd_usage WHERE session_id = ? AND source = ? LIMIT 1", (session_id, kept)
            ).fetchone()
            if taken:
                return
            conn.execute(
                "UPDATE azsd_usage SET source = ? WHERE session_id = ? AND source = ?",
                (kept, session_id, source),
            )
            conn.execute(
                "UPDATE azsd_usage_claims SET run = ? WHERE session_id = ? AND run = ?",
                (run_digest(kept), session_id, run_digest(source)),
            )

    def usage_counted_elsewhere(self, key: str, session_id: int, source: str) -> bool:
        """Whether the API message `key` is counted by a run other than `source` of `session_id`, by
        a session removed since (whose usage the ledger keeps), or by another store of the account;
        when not, the account's keys give it to this store (the run is about to count it)."""
        digest = key_digest(key)
        if self._has_claims():
            rows = self._query(
                "SELECT 1 FROM azsd_usage_claims WHERE key = ? AND NOT (session_id = ? AND run = ?) "
                "UNION ALL SELECT 1 FROM azsd_usage_removed_claims WHERE key = ? AND session_id != ?",
                (digest, session_id, run_digest(source), digest, session_id),
            )
            if rows:
                return True
        return self.account is not None and bool(self.account.claim((digest,), str(self.root)))

    def _has_claims(self) -> bool:
        """Whether the claims' tables are there (a store read before its writer opened it since an
        upgrade, or read in place, may be of an older schema)."""
        return not (self.read_only or self.reader) or self._has_table("azsd_usage_removed_claims")

    def usage_keys_counted_anywhere(self, keys: Sequence[str]) -> set[str]:
        """Those of the API message ids `keys` a run of the store, a session removed since or
        another store of the account counted (a question that claims nothing: usage read in place)."""
        found = self.usage_keys_counted(keys, claim=False)
        if self.account is not None:
            digests = {key_digest(key): key for key in keys if key not in found}
            found |= {digests[d] for d in self.account.counted(digests, str(self.root))}
        return found

    def counted_usage_keys(self) -> list[int]:
        """The digest of every API message id the store's runs counted, and its removed sessions'
        (the account's keys take them in when the store opens)."""
        if self._has_claims():
            sql = "SELECT key FROM azsd_usage_claims UNION SELECT key FROM azsd_usage_removed_claims"
            return [row[0] for row in self._query(sql)]
        if not self._has_table("azsd_usage_removed_keys"):  # (a store older still: none kept)
            return []
        sql = "SELECT key FROM azsd_usage_keys UNION SELECT key FROM azsd_usage_removed_keys"
        return [key_digest(row[0]) for row in self._query(sql)]  # as its writer will keep them

    def usage_keys_counted(self, keys: Sequence[str], *, claim: bool = True) -> set[str]:
        """Those of the API message ids `keys` that a run of the store counted, a session removed
        since, or another store of the account: what :meth:`usage_counted_elsewhere` says of them
        for a session not created yet (the others are claimed for this store, unless not `claim`)."""
        digests = {key_digest(key): key for key in keys}
        found: set[int] = set()
        if self._has_claims():
            listed = list(digests)
            for start in range(0, len(listed), IN_LIST_MAX):
                part = listed[start : start + IN_LIST_MAX]
                marks = ", ".join("?" * len(part))
                found.update(
                    row[0]
                    for row in self._query(
                        f"SELECT key FROM azsd_usage_claims WHERE key IN ({marks}) "
                        f"UNION SELECT key FROM azsd_usage_removed_claims WHERE key IN ({marks})",
                        (*part, *part),
                    )
                )
        if self.account is not None and claim:
            found |= self.account.claim([d for d in digests if d not in found], str(self.root))
        return {digests[d] for d in found}

    def usage_rows(
        self, sessions: Sequence[int] | None = None, *, start: float | None = None, end: float | None = None
    ) -> list[UsageRow]:
        """The stored parts of every run (of `sessions`, when given) whose slot starts within
        [`start`, `end`) (Unix seconds), oldest first."""
        if self.read_only and not self._has_table("azsd_usage"):  # a newer schema may lack it
            return []
        where, params = ["slot >= ?", "slot < ?"], [start or float("-inf"), end or float("inf")]
        if sessions is not None and len(sessions) <= IN_LIST_MAX:
            where.append(f"session_id IN ({', '.join('?' * len(sessions))})")
            params += list(sessions)
        wanted = None if sessions is None else set(sessions)
        rows = self._query(
            f"SELECT {_ROW_COLUMNS} FROM azsd_usage WHERE {' AND '.join(where)} "
            "ORDER BY first_at, session_id, source, model",
            params,
        )
        return [_row(values) for values in rows if wanted is None or values[0] in wanted]

    def removed_usage_rows(
        self, *, start: float | None = None, end: float | None = None
    ) -> list[tuple[UsageRow, str, str]]:
        """The ledger's parts (of sessions azsd removed) whose slot starts within [`start`, `end`),
        oldest first, each with the branch and the name its session had."""
        if not self._has_table("azsd_usage_removed"):
            return []
        rows = self._query(
            f"SELECT {_ROW_COLUMNS}, worktree, name FROM azsd_usage_removed WHERE slot >= ? AND slot < ? "
            "ORDER BY first_at, session_id, source, model",
            (start or float("-inf"), end or float("inf")),
        )
        return [(_row(values[:-2]), values[-2], values[-1]) for values in rows]

    def session_usage(self, session_id: int) -> SessionUsage:
        """The session's usage and cost, summed over its turns."""
        return self.usage_by_session([session_id]).get(session_id, SessionUsage(Usage(), 0.0, 0))

    def usage_by_session(self, sessions: Sequence[int] | None = None) -> dict[int, SessionUsage]:
        """The usage of every session that has any (of `sessions`, when given), in one query."""
        if self.read_only and not self._has_table("azsd_usage"):  # a newer schema may lack it
            return {}
        where, params = "", []
        if sessions is not None and len(sessions) <= IN_LIST_MAX:
            params = list(sessions)
            where = f"WHERE session_id IN ({', '.join('?' * len(params))})"
        rows = self._query(
            "SELECT session_id, SUM(input), SUM(output), SUM(cache_read), SUM(cache_write), SUM(reasoning), "
            "COALESCE(SUM(cost_usd), 0.0), "
            # a run recorded before turns were counted is one turn
            "COALESCE(SUM(turns), 0) + COUNT(DISTINCT CASE WHEN turns IS NULL THEN source END), "
            # a cost of unknown source (recorded before sources were) counts as an estimate
            "COALESCE(MAX(cost_usd IS NOT NULL AND cost_source IS NOT 'reported'), 0), "
            "SUM(CASE WHEN cost_usd IS NULL THEN input + output + cache_read + cache_write ELSE 0 END), "
            "COUNT(cost_usd), MAX(last_at) "
            f"FROM azsd_usage {where} GROUP BY session_id",
            params,
        )
        return {
            sid: SessionUsage(
                Usage(input=i, output=o, cache_read=cr, cache_write=cw, reasoning=r),
                float(cost),
                turns,
                "unpriced" if unpriced and not priced else "estimated" if estimated else "reported",
                unpriced,
                float(last_at or 0.0),
            )
            for sid, i, o, cr, cw, r, cost, turns, estimated, unpriced, priced, last_at in rows
        }
