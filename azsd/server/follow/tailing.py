"""One followed file: what the follower knows of it, and how its new bytes become events.

A :class:`Tail` holds a follow's record (as the store keeps it), its parser, and the fingerprints
of the events this file produced, which tell a replaced or truncated file's old content from its
new. Its methods read the file and return prepared events; they never touch the store: the
follower (:mod:`azsd.server.follow.follower`) decides when to read and commits what they return together
with the new offset. A Tail also keeps its failures in a row (:class:`Backoff`: when it may try
again) and what it waits for, which :meth:`Tail.state` puts in words for `status`.
"""

from __future__ import annotations

import calendar
import os
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec

from azsd.backoff import Backoff
from azsd.compact import prepare_for_store
from azsd.events import Complete, Event, encode_event
from azsd.files import open_regular
from azsd.histories import source_dir
from azsd.ingest.agent_histories import agent_histories, claude_transcripts
from azsd.ingest.codex_responses import thread_turns
from azsd.ingest.opencode import is_session_key
from azsd.ingest.parsers import FORMATS, MAX_LINE_BYTES, LineParser, detect_format, iter_lines, make_parser
from azsd.ingest.parsers.base import read_lines
from azsd.ingest.parsers.claude import ClaudeStreamParser
from azsd.ingest.parsers.codex_exec import CodexExecParser
from azsd.ingest.usage import UsageRecord, usage_record
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord

__all__ = [
    "MAX_FAILURES",
    "READ_BUDGET",
    "Tail",
    "check_follow",
    "detect",
    "is_final",
    "started_epoch",
]

#: The largest process id Linux hands out (/proc/sys/kernel/pid_max can go no higher).
_PID_MAX: Final = 4_194_304
#: At most this many bytes are read from one file per turn, so no file starves the others.
READ_BUDGET: Final = 2 * 1024 * 1024
#: ... in parts of this many bytes, each parsed before the next is read.
READ_PART: Final = 256 * 1024
#: A follow that fails this many times in a row (about 16 to 32 s of trying) is ended.
MAX_FAILURES: Final = 8
#: A store call out for longer than this makes the follow say that it waits for its store.
_BUSY_SHOWN_S: Final = 0.5
#: How often, and how far apart, a Codex rollout that trails its stream is read again for a turn's
#: responses (the follower waits for it at most their product).
_ROLLOUT_TRIES: Final = 10
_ROLLOUT_WAIT_S: Final = 0.03


@dataclass
class Tail:
    """A followed file, as its follower sees it between reads."""

    root: str
    record: FollowRecord
    parser: LineParser | None = None
    skipping: bool = False
    last_growth: float = field(default_factory=time.monotonic)
    ending: Envelope | None = None  # an Unfollow waiting for the final read
    caught_up: bool = True  # the last read reached the end of the whole lines (not its budget first)
    ending_reason: str = "unfollowed"  # and why it was asked for
    resync: bool = False  # read from the stored offset next, once the store has given it back
    fetching: bool = False  # asked the store for it; waiting
    started: float = field(default_factory=time.time)  # wall clock, for turns that report no duration
    produced: array[int] = field(default_factory=lambda: array("q"))  # fingerprints of this file's events
    gone: bool = False  # the file vanished since it was last read
    missing: bool = False  # the file is not there now
    source_gone: str = ""  # why its source is gone for good (OpenCode deleted the session): the follow ends
    backoff: Backoff = field(default_factory=Backoff)
    generation: int = 0  # bumped on each failure: commits still out from before it are stale
    saved_offset: int = 0  # the offset the store holds once the commits out are done (compare-and-swap)
    stored: FollowRecord | None = None  # the record as the store last confirmed it
    in_flight: int = 0  # commits sent to the store and not yet answered
    store_since: float = 0.0  # monotonic: since when the store has not answered (while a call is out)
    end_reason: str = ""
    usage_sent: UsageRecord | None = None  # the usage last handed to a commit (None: send it anew)
    writers_checked: float = 0.0  # monotonic: when /proc was last asked who writes the file
    adopted: int | None = None  # given no writer: a process found with the file open for writing
    polled: float = 0.0  # monotonic: when the follower's poll last read it (an idle one: less often)
    idle_reason: str = ""  # why it went idle (`record.idle`: see azsd.server.follow.quiet)
    idle_told: bool = False  # whether the last `sessionchanged` of its idleness said idle
    agent_home: str = ""  # where the agent keeps its histories (`codex exec`'s responses are keyed there)
    given_session: str = ""  # the agent's own session id, as the Follow gave it (Claude's --session-id)
    #: The usage of the file's earlier content, to keep apart (its source renamed to this) with the
    #: next commit: the file was replaced by another (rotated), not rewritten with the same start.
    keep_apart: str = ""

    @property
    def path(self) -> Path:
        return Path(self.record.path)

    def probe(self) -> os.stat_result:
        """The followed file's `stat` (raises FileNotFoundError while it is not there)."""
        return os.stat(self.path)

    def view(self) -> p.FollowView:
        r = self.record
        state, reason = self.state(time.monotonic())
        return p.FollowView(
            root=self.root, session=r.session_id, path=r.path, format=r.format, offset=r.offset,
            lines=r.lines, skipped=r.skipped, active=r.active, last_activity=r.last_activity,
            writer_pid=r.writer_pid or self.adopted, ended=r.ended, state=state, reason=reason,
            failures=self.backoff.failures,
        )  # fmt: skip

    def state(self, now: float) -> tuple[str, str]:
        """What the follow does now (`following`, `waiting`, `retrying`, `idle`, `ended`), and why, in
        words."""
        if not self.record.active:
            return "ended", self.end_reason
        busy = now - self.store_since
        if self.backoff.failures:
            wait = self.backoff.retry_at - now
            when = f"next try in {wait:.1f} s" if wait > 0 else "trying again"
            times = "once" if self.backoff.failures == 1 else f"{self.backoff.failures} times in a row"
            return "retrying", (
                f"{self.backoff.reason} (failed {times}; {when}; it ends after {MAX_FAILURES} failures)"
            )
        if self.fetching:
            if busy >= _BUSY_SHOWN_S:
                return "waiting", f"its store is busy: reading where the follow stands ({busy:.1f} s so far)"
            return "waiting", "reading where the follow stands from its store"
        if self.resync:
            return "waiting", "about to read where the follow stands from its store"
        if self.in_flight and busy >= _BUSY_SHOWN_S:
            return "waiting", f"its store is busy: new lines wait to be stored ({busy:.1f} s so far)"
        if self.record.idle:
            why = self.idle_reason or "no program had it open for writing and the file was idle"
            why = "the file does not exist (yet)" if self.missing else why
            return "idle", f"{why}: its session does not show running until the file grows again"
        if self.missing:
            return "waiting", "the file does not exist (yet): waiting for it to appear"
        if not self.record.format:
            return "waiting", "waiting for a first line that tells the file's format"
        return "following", ""

    def take_usage(self) -> UsageRecord | None:
        """The run's usage as the parser has it now, when a commit has not been handed it yet; the
        commit stores it with its events (replacing the record as the running totals grow)."""
        if self.parser is None:
            return None
        record = usage_record(self.parser.report, self.record.path)
        if record is None or record == self.usage_sent:
            return None
        claimed = len(self.usage_sent.keys) if self.usage_sent is not None else 0
        self.usage_sent = record
        # the message ids already handed over are claimed: only the new ones go with this record
        return msgspec.structs.replace(record, keys=record.keys[claimed:]) if claimed else record

    def prepare_parser(self) -> LineParser | None:
        """A fresh parser for the follow's format (detected from the file if need be), or None."""
        if not self.record.format:
            fmt = detect(self.path)
            if fmt is None:
                return None
            self.record.format = fmt
        self.parser = make_parser(self.record.format, self.record.model)
        self.usage_sent = None
        return self.parser

    def restore(self, stored: FollowRecord) -> None:
        """Take the record the store holds, and rebuild the parser's state by replaying the file up
        to its offset (unless the file was replaced or truncated meanwhile: the next read re-reads it)."""
        stored.writer_pid = self.record.writer_pid or stored.writer_pid
        stored.model = self.record.model or stored.model
        self.record = stored
        self.parser = None
        self.skipping = False
        self.usage_sent = None  # what was sent may not be stored: the next commit sends it again
        parser = self.prepare_parser() if stored.format else None
        if parser is None:
            return
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return
        if stored.offset and (info.st_ino != stored.inode or info.st_size < stored.offset):
            return
        produced: array[int] = array("q")
        offset, skipping = 0, False
        # what comes before `usage_from` is another's usage (runs an import brought in): read, not counted
        stops = [stored.usage_from] if 0 < stored.usage_from <= stored.offset else []
        with open_regular(self.path, nofollow=True) as stream:
            for stop in [*stops, stored.offset]:
                while offset < stop:  # a chunk at a time: never the whole file in memory
                    replay = read_lines(
                        stream, offset, skipping=skipping, budget=READ_PART, chunk=READ_PART, stop=stop
                    )
                    for line in replay.lines:
                        produced.extend(_fingerprints(prepare_for_store(parser.feed(line))))
                    if replay.end == offset:
                        break
                    offset, skipping = replay.end, replay.skipping
                if stops and stop == stored.usage_from:
                    parser.forget_usage()
        self.produced = produced
        self.skipping = skipping  # the offset sits inside a skipped huge line

    def read_new(self, inode: int) -> list[Event]:
        """The events of the lines added since the offset (at most :data:`READ_BUDGET` of them and a
        part; :attr:`caught_up` says whether they were all the whole lines there are), prepared for
        the store; the record moves past them. Ending (an Unfollow), once caught up, a last line
        without its newline counts too, and the parser's run ends."""
        assert self.parser is not None
        record = self.record
        before = self.parser.report.skipped_total
        events: list[Event] = []
        end, skipping, lines = record.offset, self.skipping, 0
        caught_up = False
        with open_regular(self.path, nofollow=True) as stream:
            # a part at a time, each parsed before the next is read: the lines of a whole read are
            # never held together (only its events, which its commit stores)
            while end - record.offset < READ_BUDGET:
                part = read_lines(stream, end, skipping=skipping, budget=READ_PART, chunk=READ_PART)
                for line in part.lines:
                    events.extend(self.parser.feed(line))
                lines += len(part.lines)
                if part.end == end:
                    caught_up = True
                    break
                end, skipping = part.end, part.skipping
            ending = self.ending is not None and caught_up  # (else whole lines wait: read on first)
            torn = b""
            if ending:
                stream.seek(end)
                torn = stream.read(MAX_LINE_BYTES + 1)
        self.caught_up = caught_up
        if torn and not skipping:  # an Unfollow: a last line without its newline counts too
            events.extend(self.parser.feed(torn))
            end += len(torn)
        events.extend(self.parser.finish() if ending else [])
        if isinstance(self.parser, CodexExecParser) and any(isinstance(e, Complete) for e in events):
            events = self._key_responses(self.parser, events)
        if isinstance(self.parser, ClaudeStreamParser) and ending:
            self._reconcile_claude(self.parser)
        record.lines += lines + (1 if torn else 0)
        record.skipped += self.parser.report.skipped_total - before
        record.idle = record.idle and end == record.offset  # it grew: its session runs again
        record.offset, record.inode, self.skipping = end, inode, skipping
        if lines or torn:
            self.last_growth = time.monotonic()
        prepared = prepare_for_store([_with_wall_time(e, self.started) for e in events])
        self.produced.extend(_fingerprints(prepared))
        return prepared

    @property
    def agent_session(self) -> str:
        """The agent's own id of the session this follow's run writes ("" while not known)."""
        if self.given_session:
            return self.given_session
        known = self.parser.report.agent_session_id if self.parser is not None else None
        return known or ""

    def agent_histories(self) -> list[tuple[Path, str]]:
        """The agent's own histories of this follow's run (Claude's transcript, Codex's rollout),
        with their agent: a run's, owned by its session (none for a file that is the history)."""
        fmt = self.record.format
        if fmt not in ("claude-stream-json", "codex-exec-json") or not self.agent_session:
            return []
        agent = "claude" if fmt.startswith("claude") else "codex"
        home = Path(self.agent_home) if self.agent_home else source_dir(agent, os.environ)
        return [(path, agent) for path in agent_histories(home, fmt, self.agent_session)]

    def _key_responses(self, parser: CodexExecParser, events: list[Event]) -> list[Event]:
        """A `codex exec --json` turn ended: its usage becomes that of the model responses its
        rollout records (keyed by their ids, as an import of the rollout keys them), and its
        `Complete` their cost. The rollout may trail the stream by a moment; without it (or with
        fewer turns than the run has ended), the stream's totals stay."""
        thread = parser.report.agent_session_id
        if not thread:
            return events
        home = Path(self.agent_home or os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        turns = thread_turns(home, thread)
        for _ in range(_ROLLOUT_TRIES):
            if turns is not None and len(turns) >= parser.turns_ended:
                break
            time.sleep(_ROLLOUT_WAIT_S)
            turns = thread_turns(home, thread)
        else:
            return events
        mine = turns[len(turns) - parser.turns_ended :] if parser.turns_ended else []
        usd = parser.adopt_responses([response for turn in mine for response in turn])
        ends = [i for i, e in enumerate(events) if isinstance(e, Complete)]
        last = ends[-1] if ends else -1
        end = events[last]
        if isinstance(end, Complete) and end.success and usd is not None:
            events = [*events[:last], msgspec.structs.replace(end, cost_usd=usd), *events[last + 1 :]]
        return events

    def _reconcile_claude(self, parser: ClaudeStreamParser) -> None:
        """A Claude run ends without its `result` (Ctrl-C, a crash): the output counts of its messages
        are taken from Claude's own transcript of the session, which has each finished one's final."""
        session = parser.report.agent_session_id
        if parser.resulted or not session:
            return
        home = Path(self.agent_home or os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
        for path in claude_transcripts(home, session):
            try:
                with open_regular(path, nofollow=True) as stream:
                    parser.reconcile(iter_lines(stream))
            except OSError:
                continue
            return

    def reread(self, inode: int) -> list[Event]:
        """The file was replaced or truncated: parse it whole; the events the session lacks."""
        assert self.record.format
        parser = make_parser(self.record.format, self.record.model)
        with open_regular(self.path, nofollow=True) as stream:
            result = read_lines(stream, 0, budget=READ_BUDGET)
        prepared = prepare_for_store([e for line in result.lines for e in parser.feed(line)])
        fingerprints = array("q", _fingerprints(prepared))
        same = 0  # the new content's events that this file already produced (and that are stored)
        while same < min(len(fingerprints), len(self.produced)) and fingerprints[same] == self.produced[same]:
            same += 1
        if self.produced and not same:  # another file now: what the earlier one used stays counted
            self.keep_apart = f"{self.record.path}#inode-{self.record.inode}"
        self.parser, self.produced, self.gone = parser, fingerprints, False
        self.usage_sent = None
        self.record.offset, self.record.inode, self.skipping = result.end, inode, result.skipping
        self.record.lines, self.record.idle, self.record.usage_from = len(result.lines), False, 0
        self.record.skipped = parser.report.skipped_total
        self.last_growth = time.monotonic()
        return prepared[same:]


#: Formats whose file holds many turns and runs (an Aider chat history, a Claude session transcript
#: or Codex rollout, which a resumed session appends to): no event ends its follow; it goes idle.
_ONGOING: Final = frozenset({"aider", "opencode", "claude-session", "codex-rollout"})


def is_final(events: list[Event], fmt: str = "") -> bool:
    """Whether `events` end the turn (a follow ends with it; never one of an ongoing format's)."""
    return fmt not in _ONGOING and any(isinstance(e, Complete) for e in events)


def check_follow(request: p.Follow, path: str) -> str | None:
    """What is wrong with a `Follow` of `path` (its real path), or None."""
    if not os.path.isabs(request.path):
        return f"follow needs an absolute path: {request.path}"
    if request.writer_pid is not None and not 0 < request.writer_pid <= _PID_MAX:
        return f"writer_pid {request.writer_pid} is not a process id (1 to {_PID_MAX})"
    if is_session_key(request.path):  # an OpenCode session: <opencode.db or storage dir>#<session id>
        if request.format not in (None, "opencode"):
            return f"{request.path} is an OpenCode session: its format is opencode, not {request.format}"
        return None if os.path.exists(path.rpartition("#")[0]) else f"no such OpenCode store: {path}"
    if request.format is not None and request.format not in (*FORMATS, "opencode"):
        return f"unknown format {request.format!r}; expected one of {', '.join((*FORMATS, 'opencode'))}"
    if os.path.exists(path) and not os.path.isfile(path):
        return f"{path} is not a regular file"
    if not os.path.isdir(os.path.dirname(path)):
        return f"no such directory: {os.path.dirname(path)}"
    return None


def detect(path: Path) -> str | None:
    """The format of the agent file at `path`, from its first lines; None while it cannot tell."""
    if is_session_key(str(path)):
        return "opencode"
    try:
        with open_regular(path, nofollow=True) as stream:
            return detect_format(iter_lines(stream, final=False))
    except OSError:
        return None


def started_epoch(started: str) -> float:
    """The epoch of a stored `datetime('now')` (UTC), or now when it cannot be read."""
    try:
        return calendar.timegm(time.strptime(started, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return time.time()


def _fingerprints(events: list[Event]) -> list[int]:
    """A cheap identity for each event (stable within the process), to compare file incarnations."""
    return [hash(encode_event(e)) for e in events]


def _with_wall_time(event: Event, started: float) -> Event:
    """Codex reports no duration (0): use the turn's wall time since the follow began, as AZUREAL does."""
    if isinstance(event, Complete) and event.duration_ms == 0:
        return msgspec.structs.replace(event, duration_ms=max(0, int((time.time() - started) * 1000)))
    return event
