"""The store requests of compaction (spec §6): the meter, the boundary, the plan, and storing one.

A compaction is planned here and run by the client (`azs compact`, `azs run`), which starts the
agent as it does for a turn: :func:`plan_compaction` picks the boundary and builds the prompt,
the agent writes its answer to a file, and :func:`compact_with_output` reads the summary out of it
(:mod:`azsd.summary`) and stores it with that boundary (:func:`store_compaction` stores a summary
a plugin got some other way). Nothing is
written until the summary exists, so a compaction that fails leaves the session as it was.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

import msgspec

from azsd.context import COMPACTION_THRESHOLD, ContextPayload, build_compaction_prompt
from azsd.errors import BadRequestError, SessionNotFoundError, SessionReplacedError
from azsd.ingest.agent_histories import agent_histories
from azsd.ingest.parsers import make_parser
from azsd.ingest.usage import counted_elsewhere, usage_record
from azsd.ipc import protocol as p
from azsd.model import ImportRecord
from azsd.server.views import changed_note
from azsd.server.workers import Outcome
from azsd.store import Store
from azsd.summary import compaction_summary

__all__ = [
    "compact_with_output",
    "compaction_boundary",
    "context_meter",
    "plan_compaction",
    "store_compaction",
]

#: The largest compaction output read: an agent's answer with its tool calls, never a transcript.
MAX_OUTPUT_BYTES: Final = 64 * 1024 * 1024

#: The newest prompts a compaction leaves raw, tried in this order (AZUREAL's: 3, then 2, then 1).
KEEP_TRIES: Final = (3, 2, 1)


def _require(store: Store, session: int) -> None:
    if not store.has_session(session):
        raise SessionNotFoundError(session)


def _check_target(store: Store, session: int, after_seq: int, identity: str | msgspec.UnsetType) -> None:
    """The session is there, is the one planned for (`identity`, when given), and `after_seq` is
    one of its seqs."""
    if isinstance(identity, str) and store.session_identity(session) != identity:
        raise SessionReplacedError(session)
    last = store.max_seq(session)
    if not 1 <= after_seq <= last:
        if last == 0:
            _require(store, session)
        raise BadRequestError(f"after_seq must be a seq of S{session} (1 to {last}), not {after_seq}")


def store_compaction(store: Store, req: p.StoreCompaction) -> Outcome:
    """Store a summary; subscribers hear `compacted` (the session's context meter dropped)."""
    if not req.summary.strip():
        raise BadRequestError("a compaction's summary cannot be empty")
    _check_target(store, req.session, req.after_seq, req.identity)
    store.store_compaction(req.session, req.after_seq, req.summary)
    return Outcome(p.OkReply(), [changed_note(store, req.root, req.session, "compacted")])


def compact_with_output(store: Store, req: p.CompactWithOutput) -> Outcome:
    """Store the summary a compaction agent wrote in `req.path` (nothing when it wrote none), and
    what the compaction cost (whether or not it wrote one: the calls were made)."""
    _check_target(store, req.session, req.after_seq, req.identity)
    output = _read_output(req.path)
    summary = compaction_summary(output, req.format)
    with store.atomic():
        _record_spend(store, req, output)
        if summary:
            store.store_compaction(req.session, req.after_seq, summary)
    if not summary:
        return Outcome(p.CompactionReply(stored=False))
    note = changed_note(store, req.root, req.session, "compacted")
    return Outcome(p.CompactionReply(stored=True, summary_chars=len(summary)), [note])


def _record_spend(store: Store, req: p.CompactWithOutput, output: bytes) -> None:
    """The compaction run's usage, counted in the session it compacted (as no turn: it answered no
    prompt), keyed by its model responses; and the agent's own history of the run, when it can be
    found under `req.agent_home`, recorded as imported into the session (its one owner)."""
    parser = make_parser(req.format)
    parser.report.counted_elsewhere = counted_elsewhere(store, req.session, req.path)
    parser.feed_all(output.splitlines())
    record = usage_record(parser.report, req.path)
    if record is not None:
        store.record_usage(req.session, record.source, record.parts, turns=0, keys=record.keys)
    agent_session = parser.report.agent_session_id
    if not isinstance(req.agent_home, str) or not agent_session:
        return
    for history in agent_histories(Path(req.agent_home), req.format, agent_session):
        try:
            size = history.stat().st_size
        except OSError:
            continue
        agent = "claude" if req.format.startswith("claude") else "codex"
        store.record_import(ImportRecord(source=str(history), session_id=req.session, agent=agent, size=size))


def _read_output(path: str) -> bytes:
    """The agent's whole output: a regular file, and small (a summary is a few thousand chars)."""
    if "\0" in path or not os.path.isabs(path):
        raise BadRequestError(f"path must be absolute and hold no NUL byte: {path!r}")
    try:
        # O_NONBLOCK: a FIFO at `path` must not hang the store's writer on its open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadRequestError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadRequestError(f"{path} is not a regular file")
        if info.st_size > MAX_OUTPUT_BYTES:
            raise BadRequestError(
                f"{path} is {info.st_size:,} bytes: more than a compaction agent writes "
                f"({MAX_OUTPUT_BYTES:,} at most)"
            )
        return _read_all(fd)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)[:MAX_OUTPUT_BYTES]


def compaction_boundary(store: Store, req: p.CompactionBoundary) -> Outcome:
    _require(store, req.session)
    from_seq = req.from_seq if req.from_seq is not None else store.first_seq_since_compaction(req.session)
    return Outcome(p.BoundaryReply(after_seq=store.compaction_boundary(req.session, from_seq, req.keep)))


def context_meter(store: Store, req: p.ContextMeter) -> Outcome:
    _require(store, req.session)
    threshold = req.threshold if req.threshold is not None else COMPACTION_THRESHOLD
    if threshold < 1:
        raise BadRequestError(f"threshold must be at least 1, got {threshold}")
    chars = store.total_chars_since_compaction(req.session)
    percent = round(100.0 * chars / threshold, 1)
    return Outcome(p.MeterReply(chars=chars, threshold=threshold, percent=percent))


def plan_compaction(store: Store, req: p.PlanCompaction) -> Outcome:
    """The boundary (the newest `keep` prompts stay raw), the events before it and the prompt.

    Each summary carries the previous one forward (it is in the prompt), so only the latest
    compaction matters when a context is built.
    """
    _require(store, req.session)
    latest = store.latest_compaction(req.session)
    from_seq = latest.after_seq + 1 if latest else 1
    tries = KEEP_TRIES if req.keep is None else (req.keep,)
    for keep in tries:
        boundary = store.compaction_boundary(req.session, from_seq, keep)
        if boundary is not None:
            break
    else:
        return Outcome(p.CompactionPlanReply(after_seq=None, from_seq=from_seq))
    loaded = store.load_events(req.session, from_seq, boundary).events
    if not loaded:  # every row in the range unreadable: there is nothing to summarise
        return Outcome(p.CompactionPlanReply(after_seq=None, from_seq=from_seq))
    payload = ContextPayload(latest.summary if latest else None, [e.event for e in loaded])
    return Outcome(
        p.CompactionPlanReply(
            after_seq=boundary,
            from_seq=from_seq,
            prompt=build_compaction_prompt(payload),
            events=len(loaded),
            chars=store.chars_between(req.session, from_seq, boundary),
            kept_prompts=keep,
            identity=store.session_identity(req.session),
        )
    )
