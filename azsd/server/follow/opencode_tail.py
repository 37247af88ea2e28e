"""A live follow of one OpenCode session (`azs follow <opencode.db>#<session id>`).

The follower (:mod:`azsd.server.follow.follower`) treats it as it treats a file: :meth:`OpenCodeTail.probe`
stands for `stat`, the follow's "offset" is the number of the session's finished messages already
stored (committed with their events, so a crash loses nothing and stores nothing twice), and its
"size" the number finished now. Polled every :data:`~azsd.server.follow.follower.POLL_S`, it asks the
database's `data_version` (one cheap PRAGMA on its own read-only connection; it changes only when
OpenCode commits) and reads the messages again only then; the older JSON tree is stamped instead.
A reply still being written waits until OpenCode marks it completed. A session OpenCode deleted ends
the follow (what it stored stays).
"""

from __future__ import annotations

import os
import stat
import time
from array import array
from dataclasses import dataclass

from azsd.compact import prepare_for_store
from azsd.events import Event
from azsd.ingest.opencode import Message, OpenCodeSource, feed, finished_messages, open_source, split_key
from azsd.ingest.parsers.base import LineParser
from azsd.ingest.parsers.opencode import OpenCodeParser
from azsd.model import FollowRecord
from azsd.server.follow.tailing import Tail, _fingerprints, _with_wall_time

__all__ = ["OpenCodeTail", "make_tail"]

_FILE_MODE = stat.S_IFREG | 0o644


@dataclass
class OpenCodeTail(Tail):
    """A followed OpenCode session (see the module docstring)."""

    source: OpenCodeSource | None = None
    version: int | None = None
    finished: list[Message] | None = None

    def probe(self) -> os.stat_result:
        """The session as a file would be: size = its finished messages (raises FileNotFoundError
        while its store is not there)."""
        location, session = split_key(self.record.path)
        if not location.exists():
            self.close()
            raise FileNotFoundError(str(location))
        if self.source is None:
            self.source = open_source(location)
        version = self.source.version(session)
        if version != self.version or self.finished is None:
            if not self.source.has_session(session):  # deleted in OpenCode: its id never comes back
                self.source_gone = f"OpenCode deleted the session {session} (what was stored of it stays)"
                raise FileNotFoundError(self.record.path)
            self.finished = finished_messages(self.source, session)
            self.version = version
        return os.stat_result((_FILE_MODE, 1, 0, 1, 0, 0, len(self.finished), 0, 0, 0))

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
        self.source, self.version, self.finished = None, None, None

    def prepare_parser(self) -> LineParser | None:
        self.record.format = "opencode"
        parser = OpenCodeParser()
        parser.report.agent_session_id = self.record.path
        self.parser, self.usage_sent = parser, None
        return parser

    def restore(self, stored: FollowRecord) -> None:
        stored.writer_pid = self.record.writer_pid or stored.writer_pid
        self.record, self.skipping, self.usage_sent = stored, False, None
        parser = self.prepare_parser()
        assert isinstance(parser, OpenCodeParser)
        try:
            messages = self._messages()
        except FileNotFoundError:
            return
        if len(messages) < stored.offset:
            return  # messages were taken back (a revert): the next read re-reads it
        self.produced = array("q")
        for message in messages[: stored.offset]:
            self.produced.extend(_fingerprints(prepare_for_store(feed(parser, message))))

    def read_new(self, inode: int) -> list[Event]:
        parser = self.parser
        assert isinstance(parser, OpenCodeParser)
        messages = self._messages()
        new = messages[self.record.offset :]
        before = parser.report.skipped_total
        events = [e for message in new for e in feed(parser, message)]
        self.record.lines += len(new)
        self.record.skipped += parser.report.skipped_total - before
        self.record.idle = self.record.idle and not new  # it grew: its session runs again
        self.record.offset, self.record.inode = len(messages), inode
        if new:
            self.last_growth = time.monotonic()
        prepared = prepare_for_store([_with_wall_time(e, self.started) for e in events])
        self.produced.extend(_fingerprints(prepared))
        return prepared

    def reread(self, inode: int) -> list[Event]:
        parser = OpenCodeParser()
        parser.report.agent_session_id = self.record.path
        messages = self._messages()
        prepared = prepare_for_store([e for message in messages for e in feed(parser, message)])
        fingerprints = array("q", _fingerprints(prepared))
        same = 0
        while same < min(len(fingerprints), len(self.produced)) and fingerprints[same] == self.produced[same]:
            same += 1
        self.parser, self.produced, self.gone, self.usage_sent = parser, fingerprints, False, None
        self.record.offset, self.record.inode, self.record.lines = len(messages), inode, len(messages)
        self.record.idle = False
        self.record.skipped = parser.report.skipped_total
        self.last_growth = time.monotonic()
        return prepared[same:]

    def _messages(self) -> list[Message]:
        self.probe()
        assert self.finished is not None
        return self.finished


def make_tail(root: str, record: FollowRecord, started: float | None = None) -> Tail:
    """The Tail of a follow: an OpenCode session's, or a file's."""
    kind = OpenCodeTail if record.format == "opencode" else Tail
    return kind(root, record) if started is None else kind(root, record, started=started)
