"""Fuzzing: hostile frames at the real daemon, hostile JSONL in live follows, and the line reader.

1. Hypothesis-generated multipart frames go to the real daemon over a raw DEALER: random frame
   counts, random bytes, random msgpack, request maps with real `op`s and random, missing or
   mistyped fields, huge ints, deep nesting, NaN, NUL... Every frame set the protocol does not drop
   (oversized) gets exactly one decodable reply (an `ErrorReply` when the payload is not a valid
   request), the daemon answers `Status` after every example, and a store created before the fuzzing
   is byte-identical after it (valid *mutating* requests are aimed only at a throwaway root).
2. Live follows are fed bad lines (garbage, torn, invalid UTF-8, non-objects, unknown types, a
   200 MB line) between real corpus lines, and files are truncated, replaced and deleted under
   them: the daemon keeps serving, `skipped` counts exactly the bad lines written, the real lines'
   events are stored once and in order, and rows stored before the bad input never change.
3. Library level: `read_lines` over a growing file with torn writes yields the lines of the final
   content, and every parser's `feed` survives arbitrary bytes.

Bounded for CI; `AZSD_SOAK=1` (`make soak`) multiplies the example counts by 20.
"""

from __future__ import annotations

import ast
import hashlib
import io
import itertools
import os
import random
import shutil
import sqlite3
import time
import typing
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Final, Literal, TypeVar, Union, get_args, get_origin

import msgspec
import pytest
import zmq
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import azsd.ingest.parsers as parsers_package
from azsd.compact import prepare_for_store
from azsd.events import AssistantText, Complete, Event, ToolCall, UserMessage, decode_event, encode_event
from azsd.ingest.file import parse_file
from azsd.ingest.parsers import FORMATS, JSONL_FORMATS, TOO_LONG, make_parser
from azsd.ingest.parsers.base import read_lines
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer
from azsd.store import store_path
from tests.conftest import corpus_files
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir, start_daemon
from tests.reliability.common import SOAK, scaled

_T = TypeVar("_T")

#: The fuzzed daemon's `max-message-bytes`: small, so oversized frames are cheap to send.
MAX_MESSAGE: Final = 64 * 1024
#: How long a reply may take before it counts as never sent (generous: a 2-core shared machine).
REPLY_MS: Final = 30_000
#: pytest-timeout of the library-level property tests (thousands of examples under soak).
LIBRARY_TIMEOUT_S: Final = 3600 if SOAK else 300
#: How long one fuzzed request may take to be answered (a missing reply fails the example).
FUZZ_REPLY_MS: Final = 10_000
#: Waits for the daemon to reach a state (never a pass/fail criterion by themselves).
WAIT_S: Final = 30.0

REQUEST_TYPES: Final[dict[str, type[Any]]] = {c.__struct_config__.tag: c for c in get_args(p.Request)}
#: Ops whose valid meaning writes somewhere (or stops the daemon): never aimed at the protected store.
MUTATING: Final = frozenset(
    {
        "shutdown",
        "createsession",
        "renamesession",
        "deletesession",
        "appendevents",
        "markcompleted",
        "storecompaction",
        "compactwithoutput",
        "pull",
        "ingestfile",
        "follow",
        "unfollow",
        "forksession",
        "archivesession",
        "reindex",
        "backup",
        "importsession",
    }
)
EXPECTED_REPLY: Final[dict[type[Any], type[Any]]] = {  # every request (a test below checks)
    p.Status: p.StatusReply,
    p.Shutdown: p.ShutdownReply,
    p.CreateSession: p.SessionReply,
    p.ListSessions: p.SessionsReply,
    p.GetSession: p.SessionReply,
    p.RenameSession: p.SessionReply,
    p.DeleteSession: p.OkReply,
    p.AppendEvents: p.AppendReply,
    p.GetEvents: p.EventsPage,
    p.BuildContext: p.ContextReply,
    p.MarkCompleted: p.OkReply,
    p.StoreCompaction: p.OkReply,
    p.CompactionBoundary: p.BoundaryReply,
    p.ContextMeter: p.MeterReply,
    p.PlanCompaction: p.CompactionPlanReply,
    p.CompactWithOutput: p.CompactionReply,
    p.Search: p.SearchReply,
    p.IngestFile: p.IngestReply,
    p.Follow: p.FollowReply,
    p.Unfollow: p.OkReply,
    p.ForkSession: p.SessionReply,
    p.ArchiveSession: p.SessionReply,
    p.Reindex: p.ReindexReply,
    p.IndexStatus: p.IndexStatusReply,
    p.Export: p.ExportReply,
    p.Backup: p.BackupReply,
    p.ImportSources: p.SourcesReply,
    p.ImportSession: p.ImportReply,
    p.ImportSessions: p.ImportsReply,
    p.Usage: p.UsageReply,
    p.SyncStatus: p.SyncStatusReply,
    p.SyncVerify: p.SyncVerifyReply,
    p.RemoteUsage: p.UsageReply,
    p.RemoteList: p.RemoteSessionsReply,
    p.RemoteShow: p.RemoteSessionReply,
    p.RemoteSearch: p.RemoteSearchReply,
    p.Pull: p.PullReply,
}
HUGE_INTS: Final = [2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**63)]


# == shared helpers ==================================================================================


class Chunks(list[bytes]):
    """Frames or lines, drawn by Hypothesis: printed with long items cut short (a falsifying example
    of 100 kB frames would be unreadable, and Hypothesis warns about, i.e. fails on, huge reprs)."""

    def __repr__(self) -> str:
        return "[" + ", ".join(_short(item) for item in self) + "]"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how Hypothesis prints examples
        printer.text(repr(self))


def _short(data: bytes, keep: int = 120) -> str:
    if len(data) <= 2 * keep:
        return repr(data)
    return f"{data[:keep]!r} + <{len(data) - 2 * keep} bytes> + {data[-keep:]!r}"


def status(d: DaemonProc) -> p.StatusReply:
    assert d.proc.poll() is None, f"the daemon died (exit {d.proc.returncode}):\n{d.log_text()[-4000:]}"
    reply = d.request(p.Status(), timeout_ms=REPLY_MS)
    assert isinstance(reply, p.StatusReply), reply
    return reply


def dump_store(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a store (read-only), sorted."""
    uri = f"{store_path(root).as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=30)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in sorted(tables)}


def event_rows(root: Path, sid: int) -> list[tuple[Any, ...]]:
    """The raw `events` rows of one session, in seq order."""
    uri = f"{store_path(root).as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=30)) as conn:
        return conn.execute("SELECT * FROM events WHERE session_id = ? ORDER BY seq", (sid,)).fetchall()


def stored(d: DaemonProc, root: Path, sid: int) -> list[str]:
    out: list[str] = []
    from_seq = 1
    while True:
        page = d.request(p.GetEvents(root=str(root), session=sid, from_seq=from_seq, limit=5000), REPLY_MS)
        assert isinstance(page, p.EventsPage), page
        out += [e.data for e in page.events]
        if page.next_seq is None:
            return out
        from_seq = page.next_seq


def new_session(d: DaemonProc, root: Path, name: str | None = None) -> int:
    created = d.request(p.CreateSession(root=str(root), name=name), REPLY_MS)
    assert isinstance(created, p.SessionReply), created
    return created.session.id


def append(d: DaemonProc, root: Path, sid: int, events: list[Event]) -> None:
    reply = d.request(
        p.AppendEvents(root=str(root), session=sid, events=[encode_event(e).decode() for e in events]),
        REPLY_MS,
    )
    assert isinstance(reply, p.AppendReply), reply


# == 1. fuzzed protocol frames ========================================================================


@dataclass
class FuzzEnv:
    """The module's daemon, the store it must not change, and the throwaway root it may change."""

    base: Path
    protected: Path
    scratch: Path
    config: Path
    daemon: DaemonProc
    snapshot: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    digest: str = ""
    internal: list[str] = field(default_factory=list)  # requests answered with code `internal`
    fuzzed: bool = False  # the fuzz test ran all its examples

    def live(self) -> DaemonProc:
        """The daemon; restarted when an earlier example killed it (that example already failed)."""
        if self.daemon.proc.poll() is not None:
            self.daemon.close()
            self.daemon = start_daemon(self.base / "run", env={"AZSD_CONFIG": str(self.config)})
        return self.daemon


def _protected_content(d: DaemonProc, root: Path) -> None:
    """A store with sessions, events (some compacted), a completion, a compaction and usage."""
    first = new_session(d, root, "protected")
    append(
        d,
        root,
        first,
        [
            UserMessage(content="first prompt"),
            AssistantText(text="an answer with \x00 NUL and ünïcode"),
            ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls -la"}),
            UserMessage(content="second prompt"),
            AssistantText(text="x" * 5000),
            Complete(success=True, duration_ms=1234, cost_usd=0.25),
        ],
    )
    assert isinstance(
        d.request(p.StoreCompaction(root=str(root), session=first, after_seq=2, summary="s")), p.OkReply
    )
    second = new_session(d, root, "other")
    agent = root / "agent.jsonl"
    agent.write_bytes(
        b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n'
        b'{"type":"assistant","session_id":"s","message":{"id":"m1","content":[{"type":"text","text":"hi"}],'
        b'"usage":{"input_tokens":10,"output_tokens":5}}}\n'
        b'{"type":"result","subtype":"success","session_id":"s","is_error":false,"duration_ms":7,'
        b'"total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":5}}\n'
    )
    ingested = d.request(p.IngestFile(root=str(root), session=second, path=str(agent)), REPLY_MS)
    assert isinstance(ingested, p.IngestReply) and ingested.appended > 0, ingested
    assert isinstance(d.request(p.MarkCompleted(root=str(root), session=second, success=False)), p.OkReply)


@pytest.fixture(scope="module")
def fuzz_env() -> Iterator[FuzzEnv]:
    base, protected, scratch = short_tmpdir(), short_tmpdir(), short_tmpdir()
    config = base / "config.toml"
    config.write_text(f"max-message-bytes = {MAX_MESSAGE}\n")
    d = start_daemon(base / "run", env={"AZSD_CONFIG": str(config)})
    env = FuzzEnv(base, protected, scratch, config, d)
    try:
        _protected_content(d, protected)
        for sid in range(3):  # sessions a fuzzed request may hit by number
            new_session(d, scratch, f"scratch {sid}")
        (scratch / "garbage.jsonl").write_bytes(b"\x00\xff not json\n[1]\n")
        (scratch / "stream.jsonl").write_bytes(
            b'{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"text","text":"t"}]}}\n'
        )
        (scratch / "dir.jsonl").mkdir()
        env.snapshot = dump_store(protected)
        env.digest = hashlib.sha256(store_path(protected).read_bytes()).hexdigest()
        yield env
    finally:
        env.daemon.close()
        for path in (base, protected, scratch):
            shutil.rmtree(path, ignore_errors=True)


# -- strategies ---------------------------------------------------------------------------------------

_ints = st.one_of(st.integers(-3, 8), st.sampled_from(HUGE_INTS), st.integers(-(2**63), 2**64 - 1))
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf"), -0.0])
)
_texts = st.one_of(
    st.text(max_size=16),
    st.sampled_from(["", "\x00", "a\x00b", "/\x00", "..", "\u202e", "x" * 2000]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    _ints,
    _floats,
    _texts,
    st.binary(max_size=16),
    st.builds(msgspec.msgpack.Ext, st.integers(-128, 127), st.binary(max_size=12)),
)
#: Any msgpack value, of any type: what a mistyped field holds.
ANY: Final = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-5, 5)), inner, max_size=4),
    ),
    max_leaves=12,
)
_event_json = st.one_of(
    st.builds(lambda t: encode_event(UserMessage(content=t)).decode(), _texts),
    st.builds(lambda t: encode_event(AssistantText(text=t)).decode(), _texts),
    st.builds(
        lambda ok, ms, cost: encode_event(Complete(success=ok, duration_ms=ms, cost_usd=cost)).decode(),
        st.booleans(),
        st.one_of(st.integers(0, 10**6), st.sampled_from([2**63 - 1, 2**64 - 1])),
        _floats,
    ),
    st.sampled_from(['"Compacting"', '"Compacted"', "{}", "[]", "null", '{"UserMessage":{}}', "{not json"]),
    _texts,
)


def _roots(env: FuzzEnv) -> st.SearchStrategy[str]:
    protected, scratch = str(env.protected), str(env.scratch)
    real = st.sampled_from([protected, scratch])
    return st.one_of(
        real,
        real,
        real,
        st.sampled_from(
            [
                protected,
                protected + "/",
                protected + "/.",
                scratch,
                scratch + "//",
                scratch + "/../" + env.scratch.name,
                str(env.protected / ".azureal"),
                str(store_path(env.protected)),  # a file, not a directory
                "/",
                "/proc",
                "/nonexistent/azsd-fuzz",
                "relative/root",
                ".",
                "",
                protected + "\x00",
                "\x00" + scratch,
            ]
        ),
        _texts,
    )


def _paths(env: FuzzEnv) -> st.SearchStrategy[str]:
    scratch = env.scratch
    return st.one_of(
        st.sampled_from(
            [
                str(scratch / "garbage.jsonl"),
                str(scratch / "stream.jsonl"),
                str(scratch / "dir.jsonl"),
                str(scratch / "absent.jsonl"),
                str(scratch / "no" / "such" / "dir.jsonl"),
                str(scratch),
                "relative.jsonl",
                "",
                str(scratch / "nul\x00.jsonl"),
            ]
        ),
        _texts,
    )


def _places(env: FuzzEnv, *names: str) -> st.SearchStrategy[str]:
    scratch = env.scratch
    return st.sampled_from(
        [*(str(scratch / n) for n in names), str(scratch), "relative/dir", "", str(scratch / "nul\x00")]
    )


def _typed(tp: Any) -> st.SearchStrategy[Any]:
    """A value of the annotated type (within what msgpack can carry)."""
    origin = get_origin(tp)
    if origin in (Union, UnionType):
        return st.one_of([_typed(arg) for arg in get_args(tp)])
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is list:
        return st.lists(_typed(get_args(tp)[0]), max_size=4)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: _texts,
        int: _ints,
        bool: st.booleans(),
        float: _floats,
        NoneType: st.none(),
        msgspec.UnsetType: st.none(),  # a field left out (request_key), sent as nil here
    }
    return simple[tp]


def _field_value(env: FuzzEnv, name: str, tp: Any) -> st.SearchStrategy[Any]:
    """A well-typed value for a request field, biased toward values that reach deep code."""
    special: dict[str, st.SearchStrategy[Any]] = {
        "root": _roots(env),
        "path": _paths(env),
        "session": st.one_of(st.integers(1, 4), st.integers(1, 4), st.integers(-1, 5), _ints),
        "events": st.lists(_event_json, max_size=4),
        "format": st.one_of(st.none(), st.sampled_from(FORMATS), _texts),
        "writer_pid": st.one_of(st.none(), st.sampled_from([1, os.getpid(), 0, -1, 2**22 + 7]), _ints),
        # where a backup or an import may look or write: inside the scratch directory only
        "dest": st.one_of(st.none(), _places(env, "backups", "copy.azs")),
        "source_dir": _places(env, "home", ".claude"),
        "project": _places(env, "project", "."),
        # a few keys again and again (a retry, or a key given to another request), and bad ones
        "request_key": st.one_of(st.none(), st.sampled_from(["k1", "k2", "", "k" * 129]), _texts),
    }
    return special.get(name, _typed(tp))


def _encode_map(items: list[tuple[Any, Any]]) -> bytes:
    """A msgpack map with exactly these pairs, in this order (duplicate keys kept)."""
    n = len(items)
    header = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
    return header + b"".join(msgspec.msgpack.encode(k) + msgspec.msgpack.encode(v) for k, v in items)


_OPS: Final = sorted(REQUEST_TYPES)
_NEAR_OPS: Final = ["Status", "status ", "statusreply"]


def _one_in(n: int) -> st.SearchStrategy[bool]:
    """True about once in `n` draws (`integers(0, n - 1) == 0` would be much likelier: Hypothesis
    favours boundary values)."""
    return st.sampled_from([True] + [False] * (n - 1))


@st.composite
def _op_maps(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """A map naming a real op, with its fields present or not, well- or mistyped, and extra keys."""
    op = draw(st.sampled_from(_OPS + _NEAR_OPS))
    cls = REQUEST_TYPES.get(op, p.CreateSession)
    items: list[tuple[Any, Any]] = []
    for info in msgspec.structs.fields(cls):
        if draw(_one_in(5)):
            continue  # missing
        mistyped = draw(_one_in(4))
        items.append((info.name, draw(ANY if mistyped else _field_value(env, info.name, info.type))))
    if draw(_one_in(4)):  # unknown keys
        items += draw(
            st.lists(
                st.tuples(st.one_of(st.text(max_size=8), st.integers(-2, 2)), ANY), min_size=1, max_size=2
            )
        )
    match draw(st.sampled_from(["one"] * 6 + ["mistyped", "none", "two"])):
        case "one":
            items.insert(draw(st.integers(0, len(items))), ("op", op))
        case "mistyped":
            items.insert(draw(st.integers(0, len(items))), ("op", draw(ANY)))
        case "two":
            items += [("op", op), ("op", draw(st.sampled_from(_OPS)))]
    return _encode_map(items)


@st.composite
def _valid_requests(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """A request that decodes: every required field present and well-typed."""
    cls = REQUEST_TYPES[draw(st.sampled_from(_OPS))]
    kwargs = {
        info.name: draw(_field_value(env, info.name, info.type))
        for info in msgspec.structs.fields(cls)
        if info.required or draw(st.booleans())
    }
    return p.encode(cls(**kwargs))


@st.composite
def _deep_payloads(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """Deeply nested lists or maps: bare, as a field's value, or as an unknown field before `op`."""
    depth = draw(st.one_of(st.sampled_from([2, 100, 500, 1000, 1500, 3000, 20000]), st.integers(1, 5000)))
    match draw(st.sampled_from(["list", "map", "pair"])):
        case "list":  # [[[...nil]]]
            nested = b"\x91" * depth + b"\xc0"
        case "map":  # {"k": {"k": ...nil}}
            nested = b"\x81\xa1k" * depth + b"\xc0"
        case _:  # [[[nil, nil], nil], nil]
            nested = b"\x92" * depth + b"\xc0" * (depth + 1)
    op = draw(st.sampled_from(_OPS))
    names = [f.name for f in msgspec.structs.fields(REQUEST_TYPES[op])] or ["x"]
    key = msgspec.msgpack.encode(draw(st.one_of(st.sampled_from(names), st.text(max_size=4))))
    op_pair = msgspec.msgpack.encode("op") + msgspec.msgpack.encode(op)
    match draw(st.sampled_from(["bare", "before-op", "before-op", "after-op", "as-op"])):
        case "bare":
            return nested
        case "before-op":
            return b"\x82" + key + nested + op_pair
        case "after-op":
            return b"\x82" + op_pair + key + nested
        case _:
            return b"\x81" + msgspec.msgpack.encode("op") + nested


_PAYLOAD_KINDS: Final = [
    *["valid"] * 6,
    *["op-map"] * 3,
    "bytes",
    "msgpack",
    "deep",
    "deep",
]


@st.composite
def _framed(draw: st.DrawFn, env: FuzzEnv) -> list[bytes]:
    """One payload (of a kind drawn with these weights) in a request envelope, or not quite."""
    match draw(st.sampled_from(_PAYLOAD_KINDS)):
        case "valid":
            payload = draw(_valid_requests(env))
        case "op-map":
            payload = draw(_op_maps(env))
        case "bytes":
            payload = draw(st.binary(max_size=64))
        case "msgpack":
            payload = msgspec.msgpack.encode(draw(ANY))
        case _:
            payload = draw(_deep_payloads(env))
    rid = draw(st.binary(max_size=12))
    match draw(st.sampled_from([*["pair"] * 7, "bare", "bare", "extra"])):
        case "pair":
            return [rid, payload]
        case "bare":
            return [payload]
        case _:
            return [rid, payload, *draw(st.lists(st.binary(max_size=8), min_size=1, max_size=3))]


@st.composite
def _oversized(draw: st.DrawFn, env: FuzzEnv) -> list[bytes]:
    """A frame over (or exactly at) `max-message-bytes`, among otherwise ordinary frames."""
    size = draw(
        st.one_of(st.sampled_from([MAX_MESSAGE, MAX_MESSAGE + 1]), st.integers(MAX_MESSAGE, 3 * MAX_MESSAGE))
    )
    if draw(st.booleans()):
        big = (draw(st.binary(min_size=1, max_size=8)) * size)[:size]
    else:  # a valid request that is merely too big
        big = p.encode(p.AppendEvents(root=str(env.scratch), session=1, events=["x" * size]))[:size]
    status_payload = p.encode(p.Status())
    match draw(st.sampled_from(["payload", "request-id", "bare", "extra"])):
        case "payload":
            return [b"rid", big]
        case "request-id":
            return [big, status_payload]
        case "bare":
            return [big]
        case _:
            return [b"rid", status_payload, big]


@st.composite
def frame_sets(draw: st.DrawFn, env: FuzzEnv) -> Chunks:
    match draw(st.sampled_from(["framed"] * 8 + ["raw", "oversized"])):
        case "framed":
            return Chunks(draw(_framed(env)))
        case "raw":  # 0..5 frames of anything
            return Chunks(draw(st.lists(st.binary(max_size=32), max_size=5)))
        case _:
            return Chunks(draw(_oversized(env)))


# -- what the protocol says must happen ---------------------------------------------------------------


def _processed(frames: list[bytes]) -> tuple[int | None, bytes, bytes | None] | None:
    """What the daemon makes of the frames: (payload index, request id, payload), or None when
    nothing reaches it (no frame sent, or one over `max-message-bytes`: ZeroMQ drops the connection).
    """
    if not frames or any(len(f) > MAX_MESSAGE for f in frames):
        return None
    if len(frames) == 1:
        return (0, b"", frames[0]) if frames[0] else (None, b"", None)
    if len(frames) == 2:
        return (1, frames[0], frames[1]) if frames[1] else (None, frames[0], None)
    return None, frames[0], None


def _decode_locally(payload: bytes | None) -> p.Request | None:
    if payload is None:
        return None
    try:
        return p.decode_request(payload)
    except Exception:  # ProtocolError, or anything else the daemon must also turn into bad_request
        return None


def _inside(path: str, directory: Path) -> bool:
    if "\x00" in path:
        return True  # cannot name any file: harmless wherever it points
    return os.path.realpath(path).startswith(os.path.realpath(directory) + os.sep)


def _is_dir(path: str) -> bool:
    return "\x00" not in path and os.path.isabs(path) and os.path.isdir(path)


def make_safe(frames: list[bytes], env: FuzzEnv) -> list[bytes]:
    """Keep valid requests from meaning harm: no Shutdown, and valid mutating requests aim at the
    throwaway root (and its files) only. Invalid requests are sent as drawn, wherever they point."""
    processed = _processed(frames)
    if processed is None:
        return frames
    index, _, payload = processed
    request = _decode_locally(payload)
    if index is None or request is None:
        return frames
    if isinstance(request, p.Shutdown):
        request = p.Status()
    tag = type(request).__struct_config__.tag
    if tag in MUTATING:
        root = getattr(request, "root", "")
        if _is_dir(root) and os.path.realpath(root) != os.path.realpath(env.scratch):
            request = msgspec.structs.replace(request, root=str(env.scratch))
        path = getattr(request, "path", None)
        if isinstance(path, str) and os.path.isabs(path) and not _inside(path, env.scratch):
            request = msgspec.structs.replace(request, path=str(env.scratch / "elsewhere.jsonl"))
    safe = list(frames)
    safe[index] = p.encode(request)
    return safe


def _note(text: str) -> None:
    """`hypothesis.note`, also callable outside a Hypothesis test (where it prints nothing)."""
    try:
        note(text)
    except InvalidArgument:
        pass


def await_reply(d: DaemonProc, sock: zmq.Socket[bytes], timeout_ms: int = FUZZ_REPLY_MS) -> None:
    """Wait for a reply on `sock`; fail at once if the daemon died meanwhile."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not sock.poll(100):
        assert d.proc.poll() is None, f"the daemon died (exit {d.proc.returncode}):\n{d.log_text()[-4000:]}"
        assert time.monotonic() < deadline, f"no reply in {timeout_ms} ms from a live daemon"


def exchange(env: FuzzEnv, frames: list[bytes]) -> p.Reply | None:
    """Send one fuzzed frame set, check the protocol's promise and that Status still works; the
    reply (None when the protocol says the frames are dropped)."""
    d = env.live()
    processed = _processed(frames)
    sock = connect_dealer(d.ctx, d.rpc)
    reply: p.Reply | None = None
    try:
        if frames:
            sock.send_multipart(frames)
        if processed is not None:
            _, rid, payload = processed
            request = _decode_locally(payload)
            _note(f"request id {rid!r}, decodes locally as {request!r}")
            await_reply(d, sock)
            got = sock.recv_multipart()
            assert len(got) == 2 and got[0] == rid, f"reply frames {got!r}, expected the request id {rid!r}"
            reply = p.decode_reply(got[1])
            _note(f"reply {reply!r}")
            if request is None:
                assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", reply
            else:
                want = EXPECTED_REPLY[type(request)]
                allowed = (want,) if isinstance(request, p.Status) else (want, p.ErrorReply)
                assert isinstance(reply, allowed), f"{type(request).__name__} answered by {reply!r}"
                if isinstance(reply, p.ErrorReply) and reply.code == "internal":
                    env.internal.append(f"{request!r}: {reply.message}")
        status(d)
        if processed is None:  # dropped: nothing may ever come back for it
            assert not sock.poll(50), f"a dropped frame set was answered: {sock.recv_multipart()!r}"
    finally:
        sock.close(linger=0)
    return reply


@pytest.mark.timeout(3600 if SOAK else 600)
def test_fuzzed_frames_get_one_reply_and_the_daemon_keeps_serving(fuzz_env: FuzzEnv) -> None:
    @settings(
        max_examples=scaled(150, 3000),
        deadline=None,
        # A failure can cost a reply timeout per shrink step: shrink under soak only, so that a
        # failing CI run stays short (the failing frames and their decoding are printed anyway).
        phases=list(Phase) if SOAK else [Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(frames=frame_sets(fuzz_env))
    def run(frames: list[bytes]) -> None:
        safe = make_safe(frames, fuzz_env)
        note(f"frames as sent: {Chunks(safe)!r}")
        exchange(fuzz_env, safe)

    run()
    fuzz_env.fuzzed = True
    assert dump_store(fuzz_env.protected) == fuzz_env.snapshot


def test_fuzzed_requests_met_no_internal_error(fuzz_env: FuzzEnv) -> None:
    """What the fuzz test above saw: `internal` means an exception azsd did not expect (the
    protocol has a code for every foreseen failure: `bad_request` for an invalid value)."""
    assert not fuzz_env.internal, f"{len(fuzz_env.internal)} internal errors, e.g.:\n" + "\n".join(
        sorted(set(fuzz_env.internal))[:10]
    )
    if not fuzz_env.fuzzed:
        pytest.skip("the fuzz test above did not run to its end")


def test_the_protected_store_is_unchanged_by_the_fuzzing(fuzz_env: FuzzEnv) -> None:
    """Rows and bytes: whatever the fuzz tests above did (pass or fail), the store is as it was."""
    status(fuzz_env.live())
    assert dump_store(fuzz_env.protected) == fuzz_env.snapshot
    assert hashlib.sha256(store_path(fuzz_env.protected).read_bytes()).hexdigest() == fuzz_env.digest


# -- what the fuzzing found, pinned down --------------------------------------------------------------


def _one_frame_set(env: FuzzEnv, payload: bytes) -> p.Reply:
    """Send one request payload the way a client does, and return its (checked) reply."""
    reply = exchange(env, [b"pinned", payload])
    assert reply is not None
    return reply


def test_deep_nesting_before_op_gets_bad_request(fuzz_env: FuzzEnv) -> None:
    """A 2 kB map whose first key holds 2000 nested arrays, then `op`: msgspec raises RecursionError
    (not a DecodeError) while skipping it, and `Server._one` only catches ProtocolError there."""
    for nested in (b"\x91" * 2000 + b"\xc0", b"\x81\xa1k" * 2000 + b"\xc0"):
        payload = b"\x82\xa1x" + nested + b"\xa2op\xa6status"
        reply = _one_frame_set(fuzz_env, payload)
        assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", reply


def test_nul_in_a_follow_or_unfollow_path_gets_a_reply(fuzz_env: FuzzEnv) -> None:
    """`Follower._add` and `_end_request` call os.path.realpath on the path on the follower thread; a
    NUL makes it raise ValueError, which `_run` logs, and the client never gets its reply."""
    scratch = str(fuzz_env.scratch)
    for request in (
        p.Unfollow(root=scratch, path="\x00"),
        p.Follow(root=scratch, session=1, path=scratch + "/a\x00.jsonl"),
    ):
        reply = _one_frame_set(fuzz_env, p.encode(request))
        assert isinstance(reply, p.ErrorReply) and reply.code != "internal", reply


def test_nul_in_a_root_is_no_such_root(fuzz_env: FuzzEnv) -> None:
    """`Daemon._route` calls os.path.realpath(root) before checking it: a NUL raises ValueError, which
    comes back as `internal` instead of `no_such_root`."""
    for root in (str(fuzz_env.protected) + "\x00", "/\x00"):
        reply = _one_frame_set(fuzz_env, p.encode(p.ListSessions(root=root)))
        assert isinstance(reply, p.ErrorReply) and reply.code == "no_such_root", reply


def test_out_of_range_integers_are_not_internal_errors(fuzz_env: FuzzEnv) -> None:
    """msgpack carries ints up to 2**64 - 1; SQLite stops at 2**63 - 1 and raises OverflowError,
    which no handler expects (it is not a ValueError)."""
    scratch = str(fuzz_env.scratch)
    for request in (
        p.GetSession(root=scratch, session=2**63),
        p.DeleteSession(root=scratch, session=2**64 - 1),
        p.StoreCompaction(root=scratch, session=1, after_seq=2**63, summary="s"),
        p.MarkCompleted(root=scratch, session=1, success=True, duration_ms=2**64 - 1),
    ):
        reply = _one_frame_set(fuzz_env, p.encode(request))
        assert not (isinstance(reply, p.ErrorReply) and reply.code == "internal"), (request, reply)


# == 2. fuzzed JSONL into live follows ================================================================


@pytest.fixture(scope="module")
def follow_daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


@pytest.fixture
def follow_root(follow_daemon: DaemonProc) -> Iterator[tuple[DaemonProc, Path, int]]:
    root = short_tmpdir()
    try:
        yield follow_daemon, root, new_session(follow_daemon, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start_follow(d: DaemonProc, root: Path, sid: int, path: Path, fmt: str) -> None:
    reply = d.request(p.Follow(root=str(root), session=sid, path=str(path), format=fmt), REPLY_MS)
    assert isinstance(reply, p.FollowReply), reply


def view_of(d: DaemonProc, path: Path) -> p.FollowView:
    """The follow of `path` in Status: the live one, else the most recently ended one."""
    real = os.path.realpath(path)
    views = [v for v in status(d).follows if v.path == real]
    assert views, f"{real} is not in Status.follows"
    return views[0]


def wait_read_to(d: DaemonProc, path: Path, size: int, timeout: float = WAIT_S) -> p.FollowView:
    """The follow of `path` once it has read to byte `size` (or ended there), and once what it read
    is committed (or failed to be): asserts it got there."""
    deadline = time.monotonic() + timeout
    while (view := view_of(d, path)).offset != size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view.offset == size, (
        f"after {timeout:.0f} s the follow is still at byte {view.offset} of {size}: {view}"
    )
    settle(d, view.root)
    return view


def settle(d: DaemonProc, root: str) -> None:
    """A barrier: the follower thread handles requests one at a time, between its reads, and it
    hands each read's events to the store's writer before it moves on; the writer runs its tasks in
    order. So once an Unfollow (of a file nobody follows) is answered, every read seen so far is in
    the writer's queue, and a write queued afterwards (an append of nothing) is answered after
    their commits. (A read alone is no barrier: reads run beside the writer.)"""
    reply = d.request(p.Unfollow(root=root, path=os.path.join(root, "nothing-follows-this")), REPLY_MS)
    assert isinstance(reply, p.ErrorReply) and reply.code == "not_found", reply
    listed = d.request(p.ListSessions(root=root, limit=1, archived="include"), REPLY_MS)
    assert isinstance(listed, p.SessionsReply), listed
    if listed.sessions:
        done = d.request(p.AppendEvents(root=root, session=listed.sessions[0].id, events=[]), REPLY_MS)
        assert isinstance(done, p.AppendReply) and done.events == [], done


def unfollow(d: DaemonProc, root: Path, path: Path) -> p.FollowView:
    """End a live follow: once the daemon answers, everything it read is stored (the reply is sent
    after the commit, and the store's earlier commits come before it). The ended follow's view."""
    if view_of(d, path).active:
        reply = d.request(p.Unfollow(root=str(root), path=str(path)), REPLY_MS)
        assert isinstance(reply, p.OkReply), reply
    view = view_of(d, path)
    assert not view.active, view
    return view


def wall_time_filled(got: list[str], want: list[str]) -> list[str]:
    """`got`, with the wall time the daemon gives a Complete that reported 0 set back to 0."""
    out = []
    for g, w in zip(got, want, strict=False):
        ge, we = decode_event(g), decode_event(w)
        if isinstance(ge, Complete) and isinstance(we, Complete) and we.duration_ms == 0:
            g = encode_event(msgspec.structs.replace(ge, duration_ms=0)).decode()
        out.append(g)
    return out + got[len(want) :]


def data_of(events: list[Event]) -> list[str]:
    return [encode_event(e).decode() for e in prepare_for_store(events)]


def blank(line: bytes) -> bool:
    return not line.strip()


def bad_line(rng: random.Random, n: int) -> bytes:
    """One line (no newline) that every format must skip and count, unless it is blank (random
    bytes can be)."""
    match rng.choice(["random", "utf8", "not-object", "unknown", "cut-json", "control", "bom"]):
        case "random":  # (an object of a known type with the fields it needs is out of reach)
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
            return body.replace(b"\n", b"")
        case "utf8":
            bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"])
            return b'{"type":"assistant","session_id":"s","message":{"content":"' + bad + b'"}}'
        case "not-object":
            return rng.choice(
                [b"[1,2,3]", b'"a string"', b"42", b"null", b"true", b"-1.5e3", b'[{"type":"x"}]']
            )
        case "unknown":
            return b'{"type":"zz-fuzz-unknown-%d","payload":{"n":%d},"x":[1,{"y":null}]}' % (n, n)
        case "cut-json":
            return b'{"type":"assistant","session_id":"s","message":{"id":"cut%d","content":[{"type":"te' % n
        case "control":  # a raw control character inside a string is invalid JSON
            return b'{"type":"zz\x00\x01","n":%d}' % n
        case _:
            return b'\xef\xbb\xbf{"type":"zz-bom-%d"}' % n


def blank_line(rng: random.Random) -> bytes:
    return rng.choice([b"", b" ", b"\t", b"\r", b"  \t \r", b"\x0b\x0c"])


def write_lines(target: Path, lines: list[bytes], rng: random.Random, torn_share: float = 0.3) -> None:
    """Append lines the way a misbehaving agent might: some torn in two with a pause, some batched."""
    with open(target, "ab") as out:
        i = 0
        while i < len(lines):
            line = lines[i]
            if len(line) > 2 and rng.random() < torn_share:
                cut = rng.randrange(1, len(line) - 1)
                out.write(line[:cut])
                out.flush()
                time.sleep(rng.uniform(0.005, 0.04))
                out.write(line[cut:])
                i += 1
            else:
                batch = rng.randrange(1, 4)
                out.write(b"".join(lines[i : i + batch]))
                i += batch
            out.flush()
            if rng.random() < 0.3:
                time.sleep(rng.uniform(0.001, 0.02))


@dataclass
class CorpusPick:
    path: Path
    lines: list[bytes]  # with their newlines
    prefix: int  # how many lines are written before any bad input


def _corpus_pick(fmt: str) -> CorpusPick | None:
    """A corpus file of the format whose only final event (if any) is on its last line, so that the
    follow reads every line written before that line."""
    best: CorpusPick | None = None
    for path in corpus_files(fmt):
        raw = path.read_bytes()
        lines = raw.splitlines(keepends=True)
        if not 5 <= len(lines) <= 60 or not raw.endswith(b"\n"):
            continue
        events, report = parse_file(path, fmt)
        if report.skipped_total or not events:
            continue
        parser = make_parser(fmt)
        early = [e for line in lines[:-1] for e in parser.feed(line)]
        if any(isinstance(e, Complete) for e in early):
            continue
        prefix = len(lines) // 3
        parser = make_parser(fmt)
        while prefix < len(lines) - 2 and not data_of([e for ln in lines[:prefix] for e in parser.feed(ln)]):
            prefix += 1
            parser = make_parser(fmt)
        if best is None or len(lines) > len(best.lines):
            best = CorpusPick(path, lines, prefix)
    return best


@pytest.mark.parametrize("fmt", JSONL_FORMATS)  # the corpus's formats (Aider's samples: tests/data)
def test_bad_lines_between_corpus_lines(follow_root: tuple[DaemonProc, Path, int], fmt: str) -> None:
    d, root, sid = follow_root
    pick = _corpus_pick(fmt)
    if pick is None:
        pytest.skip(f"no suitable {fmt} file in the shared corpus (is ../shared/corpus there?)")
    want = data_of(parse_file(pick.path, fmt)[0])
    prefix_lines = pick.lines[: pick.prefix]
    parser = make_parser(fmt)
    prefix_want = data_of([e for line in prefix_lines for e in parser.feed(line)])
    for seed in range(scaled(1, 20)):
        if seed:  # soak: the same file again, with other bad lines, into a new session
            sid = new_session(d, root)
        rng = random.Random(f"{fmt}/{seed}")
        target = root / f"agent-{seed}.jsonl"
        target.write_bytes(b"")
        start_follow(d, root, sid, target, fmt)

        # Clean lines first: what they store must survive everything after.
        write_lines(target, prefix_lines, rng)
        wait_read_to(d, target, target.stat().st_size)
        assert wall_time_filled(stored(d, root, sid), prefix_want) == prefix_want
        before = event_rows(root, sid)
        assert len(before) == len(prefix_want)

        # Then the rest of the corpus, each line preceded by bad and blank lines; the last line
        # (possibly the turn's final event, which ends the follow) comes last.
        plan: list[bytes] = []
        bad = 0
        for line in pick.lines[pick.prefix :]:
            for _ in range(rng.choice([0, 0, 1, 2, 3])):
                if rng.random() < 0.2:
                    plan.append(blank_line(rng) + b"\n")
                else:
                    junk = bad_line(rng, len(plan))
                    bad += not blank(junk)
                    plan.append(junk + b"\n")
            plan.append(line)
        write_lines(target, plan, rng)
        wait_read_to(d, target, target.stat().st_size)
        view = unfollow(d, root, target)  # (ended already if the last line was the final event)
        got = wall_time_filled(stored(d, root, sid), want)
        assert got == want, "the corpus lines' events, in order, exactly once"
        assert view.skipped == bad, f"skipped {view.skipped}, but {bad} bad lines were written"
        assert view.lines == target.read_bytes().count(b"\n")
        assert event_rows(root, sid)[: len(before)] == before
        status(d)


def aline(text: str) -> bytes:
    """A claude-stream-json line with one assistant text (its message id is the text)."""
    return (
        b'{"type":"assistant","session_id":"s","message":{"id":"m-%s","content":[{"type":"text","text":"%s"}]}}\n'
        % (text.encode(), text.encode())
    )


def texts(data: list[str]) -> list[str]:
    out = []
    for item in data:
        event = decode_event(item)
        assert isinstance(event, AssistantText), event
        out.append(event.text)
    return out


def mixed(names: list[str], rng: random.Random, bad_each: int = 1) -> tuple[bytes, int]:
    """Lines with these texts, each followed by `bad_each` bad lines and a blank one; and the bad count."""
    out = b""
    bad = 0
    for i, name in enumerate(names):
        out += aline(name)
        while bad < (i + 1) * bad_each:
            junk = bad_line(rng, bad)
            if not blank(junk):
                out += junk + b"\n"
                bad += 1
        out += blank_line(rng) + b"\n"
    return out, bad


def test_a_200_mb_line_is_skipped_in_bounded_memory(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    target = root / "huge.jsonl"
    target.write_bytes(aline("before"))
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(aline("before")))
    assert texts(stored(d, root, sid)) == ["before"]
    before = event_rows(root, sid)
    chunk = b"x" * (1 << 20)
    try:
        with open(target, "ab") as out:
            out.write(
                b'{"type":"assistant","session_id":"s","message":{"id":"big","content":[{"type":"text","text":"'
            )
            for i in range(200):  # 200 MiB, written while the daemon reads: torn many times over
                out.write(chunk)
                if i % 50 == 0:
                    out.flush()
                    time.sleep(0.05)
            out.write(b'"}]}}\n')
            out.write(b"[1,2]\n\n")  # one more bad line, one blank
            out.write(aline("after"))
        wait_read_to(d, target, target.stat().st_size, timeout=4 * WAIT_S)
        view = unfollow(d, root, target)
        assert texts(stored(d, root, sid)) == ["before", "after"]
        assert view.skipped == 2 and view.lines == 5, view
        assert event_rows(root, sid)[:1] == before
        status(d)
        peak_kb = d.peak_rss_kb()
        assert peak_kb < 250 * 1024, f"the daemon's peak RSS reached {peak_kb} kB reading a 200 MB line"
    finally:
        target.unlink(missing_ok=True)  # 200 MB: do not leave it for the module's end


def test_truncated_to_empty_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("truncate-empty")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2", "a3"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    assert wait_read_to(d, target, len(old)).skipped == old_bad
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3"]
    before = event_rows(root, sid)
    os.truncate(target, 0)
    wait_read_to(d, target, 0)  # the daemon saw the truncation: now the file starts again
    new, new_bad = mixed(["b1", "b2"], rng, bad_each=3)
    write_lines(target, [ln + b"\n" for ln in new.split(b"\n")[:-1]], rng)
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2"]
    # lines, offset and skipped all describe the file as it now is (re-read from its start).
    assert view.skipped == new_bad and view.lines == new.count(b"\n"), view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_truncated_to_a_shorter_prefix_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    """The file loses its tail (its head is unchanged, and was stored): nothing is stored twice."""
    d, root, sid = follow_root
    rng = random.Random("truncate-prefix")
    target = root / "agent.jsonl"
    head, head_bad = mixed(["a1", "a2"], rng)
    tail, _ = mixed(["a3", "a4"], rng)
    target.write_bytes(head + tail)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(head + tail))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "a4"]
    before = event_rows(root, sid)
    os.truncate(target, len(head))
    wait_read_to(d, target, len(head))  # the daemon saw the truncation
    more, more_bad = mixed(["c1"], rng)
    with open(target, "ab") as out:
        out.write(more)
    wait_read_to(d, target, len(head + more))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "a4", "c1"], "every line's events exactly once"
    assert view.skipped == head_bad + more_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_replaced_by_rename_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("replace")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2", "a3"], rng)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3"]
    before = event_rows(root, sid)
    # An atomic rewrite that keeps the old content and adds to it: only the new lines are stored.
    grown_tail, tail_bad = mixed(["b1", "b2"], rng, bad_each=2)
    grown = old + grown_tail
    tmp = root / "agent.tmp"
    tmp.write_bytes(grown)
    tmp.replace(target)
    view = wait_read_to(d, target, len(grown))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2"]
    assert view.skipped == old_bad + tail_bad, view
    # A rewrite with other content altogether (a new turn): all of it is new.
    other, other_bad = mixed(["d1", "d2"], rng, bad_each=2)
    tmp.write_bytes(other)
    tmp.replace(target)
    wait_read_to(d, target, len(other))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2", "d1", "d2"]
    assert view.skipped == other_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_deleted_mid_follow_then_recreated_on_the_same_inode(
    follow_root: tuple[DaemonProc, Path, int],
) -> None:
    """The file is deleted (the follower sees it gone), then the agent starts over at the same path
    with a longer file that has the deleted file's inode number. ext4 hands a freed inode out again
    at once, so plain `rm; create` does this about half the time here; to make it deterministic the
    test keeps the inode alive under a second hard link, rewrites it there, and links it back."""
    d, root, sid = follow_root
    rng = random.Random("delete")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    keep = root / "kept-inode"
    os.link(target, keep)
    target.unlink()
    time.sleep(1.0)  # about four of the follower's polls, with the file gone
    view = view_of(d, target)
    assert view.active and view.offset == len(old) and view.skipped == old_bad, view
    assert event_rows(root, sid) == before
    new, new_bad = mixed(["n1", "n2", "n3", "n4"], rng, bad_each=1)
    assert len(new) > len(old)
    keep.write_bytes(new)
    os.link(keep, target)
    keep.unlink()
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "n1", "n2", "n3", "n4"], "the new file's lines, once"
    assert view.skipped == new_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_deleted_mid_follow_then_recreated(follow_root: tuple[DaemonProc, Path, int]) -> None:
    """The same with a new inode (what most file systems do): re-read from the start, deduplicated."""
    d, root, sid = follow_root
    rng = random.Random("delete-new-inode")
    target = root / "agent.jsonl"
    old, _ = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    blocker = root / "holds-the-old-inode"
    os.link(target, blocker)  # so that the new file cannot get the old inode
    target.unlink()
    time.sleep(1.0)
    new, new_bad = mixed(["n1", "n2", "n3"], rng, bad_each=1)
    target.write_bytes(new)
    assert target.stat().st_ino != blocker.stat().st_ino
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "n1", "n2", "n3"]
    assert view.skipped == new_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


@pytest.mark.parametrize("change", ["replaced", "truncated"])
def test_unfollow_right_after_the_file_changed_gets_one_reply(
    follow_root: tuple[DaemonProc, Path, int], change: str
) -> None:
    """An Unfollow that arrives before the follower noticed a replacement (or truncation): the
    protocol's one reply, sent once the follow has ended and what the file holds is stored."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    old = aline("a1") + aline("a2")
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    sock = connect_dealer(d.ctx, d.rpc)
    try:
        if change == "replaced":
            tmp = root / "agent.tmp"
            tmp.write_bytes(old + aline("b1"))
            tmp.replace(target)
        else:
            target.write_bytes(aline("b1"))  # truncated (O_TRUNC), then written again
        sock.send_multipart([b"unfollow", p.encode(p.Unfollow(root=str(root), path=str(target)))])
        await_reply(d, sock, REPLY_MS)
        rid, payload = sock.recv_multipart()
        assert rid == b"unfollow" and isinstance(p.decode_reply(payload), p.OkReply)
        view = view_of(d, target)
        assert not view.active, f"answered before the follow ended: {view}"
        assert texts(stored(d, root, sid)) == ["a1", "a2", "b1"]
        assert not sock.poll(1000), f"a second reply to one Unfollow: {sock.recv_multipart()!r}"
    finally:
        sock.close(linger=0)
    status(d)


def test_deleted_mid_follow_then_unfollowed(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("delete-unfollow")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old + b'{"type":"assis')  # and a torn last line
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    target.unlink()
    status(d)
    view = unfollow(d, root, target)
    assert view.skipped == old_bad and view.offset == len(old), view
    assert event_rows(root, sid) == before
    status(d)


def test_a_deeply_nested_json_line_does_not_stall_the_follow(
    follow_root: tuple[DaemonProc, Path, int],
) -> None:
    """A 4 kB line of nested arrays is one bad line, like any other: the lines after it are stored."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    nested = b'{"type":"assistant","x":' + b"[" * 2000 + b"]" * 2000 + b"}\n"
    content = aline("before") + nested + aline("after")
    target.write_bytes(content)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(content))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["before", "after"]
    assert view.skipped == 1, view
    status(d)


@pytest.mark.parametrize("duration", [b"9223372036854775808", b"1e300"])
def test_an_out_of_range_number_in_a_line_loses_no_other_line(
    follow_root: tuple[DaemonProc, Path, int], duration: bytes
) -> None:
    """A `result` whose duration_ms does not fit SQLite's INTEGER (2**63, or a float's worth): at
    most that line is lost (stored clamped, or skipped and counted), never the lines before it."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    result = (
        b'{"type":"result","subtype":"success","session_id":"s","is_error":false,"duration_ms":%s,'
        b'"total_cost_usd":0.5}\n' % duration
    )
    content = aline("before") + result
    target.write_bytes(content)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(content))
    got = [decode_event(e) for e in stored(d, root, sid)]
    view = view_of(d, target)
    assert got[:1] == [AssistantText(text="before")], got
    assert (len(got) == 2 and isinstance(got[1], Complete)) or (len(got) == 1 and view.skipped == 1), (
        got,
        view,
    )
    status(d)


# == 3. library level ================================================================================


def in_fresh_thread(work: Callable[[], _T]) -> _T:
    """Run `work` on a new thread and return (or raise) what it does: a fresh stack, so that how
    deep a nesting fails to decode does not depend on how deep the test happens to be called."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def _grow_and_read(
    content: bytes, cuts: list[int], max_line: int, budget: int, chunk: int
) -> tuple[list[bytes], list[tuple[int, bool, int]]]:
    """Write `content` in pieces cut at `cuts`, calling `read_lines` after each piece until it makes
    no progress, as the follower does. Returns the lines and every (offset, skipping, lines) state."""
    stream = io.BytesIO()
    offset, skipping = 0, False
    lines: list[bytes] = []
    states: list[tuple[int, bool, int]] = []
    bounds = [0, *sorted(set(cuts)), len(content)]
    for start, end in itertools.pairwise(bounds):
        stream.seek(0, io.SEEK_END)
        stream.write(content[start:end])
        while True:
            result = read_lines(
                stream, offset, skipping=skipping, max_line=max_line, budget=budget, chunk=chunk
            )
            lines += result.lines
            progressed = result.end != offset or result.skipping != skipping
            assert result.end >= offset and result.end <= end
            offset, skipping = result.end, result.skipping
            states.append((offset, skipping, len(lines)))
            if not progressed:
                break
    return lines, states


_line_bytes = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"\r", b"x" * 50, b"{}", TOO_LONG]),
)


@pytest.mark.timeout(LIBRARY_TIMEOUT_S)
@settings(max_examples=scaled(400, 8000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_line_bytes, max_size=12),
    tail=st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
    data=st.data(),
    max_line=st.integers(1, 48),
    chunk=st.integers(1, 17),
    budget=st.integers(1, 80),
)
def test_read_lines_over_torn_growth_equals_one_split(
    lines: list[bytes], tail: bytes, data: st.DataObject, max_line: int, chunk: int, budget: int
) -> None:
    content = b"".join(line + b"\n" for line in lines) + tail
    cuts = data.draw(st.lists(st.integers(0, len(content)), max_size=10), label="cuts")
    want = [TOO_LONG if len(line) > max_line else line for line in content.split(b"\n")[:-1]]
    got, states = _grow_and_read(content, cuts, max_line, budget, chunk)
    once, _ = _grow_and_read(content, [], max_line, 1 << 30, chunk)
    assert got == want
    assert once == want
    # A restarted follow replays the file up to its stored offset (`Follower._rebuild`): that
    # replay must give the same lines and the same skipping state as the live reads did.
    final = io.BytesIO(content)
    for offset, skipping, count in states:
        replay = read_lines(final, 0, max_line=max_line, budget=offset + 1, stop=offset, chunk=chunk)
        assert (replay.lines, replay.end, replay.skipping) == (got[:count], offset, skipping)


def _parser_vocabulary() -> list[str]:
    """Every short string constant in the parsers' source: their keys and type names."""
    found: set[str] = set()
    for source in Path(parsers_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 0 < len(node.value) <= 40:
                found.add(node.value)
    return sorted(found)


VOCAB: Final = _parser_vocabulary()
#: One of :data:`VOCAB` (drawn by index: a `sampled_from` of it has an unwieldy repr).
_vocab = st.integers(0, len(VOCAB) - 1).map(lambda i: VOCAB[i])
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _vocab,
    st.text(max_size=20),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_vocab, st.text(max_size=5)), inner, max_size=6),
    ),
    max_leaves=25,
)


@st.composite
def _json_object_lines(draw: st.DrawFn) -> bytes:
    """A JSON object shaped like an agent line: a known `type`, and keys the parsers look at."""
    obj = draw(st.dictionaries(_vocab, _json_values, max_size=6))
    if not draw(_one_in(5)):
        obj["type"] = draw(_vocab)
    return msgspec.json.encode(obj)


@st.composite
def _nested_lines(draw: st.DrawFn) -> bytes:
    depth = draw(st.one_of(st.integers(1, 3000), st.sampled_from([999, 1000, 1001, 2500])))
    inner = b"[" * depth + b"]" * depth if draw(st.booleans()) else b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"type":"' + draw(_vocab).encode() + b'","x":' + inner + b"}"


_any_lines = st.one_of(
    st.binary(max_size=80),
    _json_object_lines(),
    _json_object_lines(),
    _json_object_lines(),
    _json_values.map(msgspec.json.encode),
    _nested_lines(),
    st.just(TOO_LONG),
    st.sampled_from([b"", b"  ", b"\r", b"{", b"\xef\xbb\xbf{}", b'{"type":"\xff"}']),
)


@pytest.mark.timeout(LIBRARY_TIMEOUT_S)
@settings(max_examples=scaled(600, 12000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(FORMATS), lines=st.lists(_any_lines, max_size=25).map(Chunks))
def test_every_parser_survives_arbitrary_lines(fmt: str, lines: list[bytes]) -> None:
    parser = make_parser(fmt)

    def feed_all() -> list[Event]:
        events: list[Event] = []
        for line in lines:
            events += parser.feed(line)
        return events + parser.finish()

    events = in_fresh_thread(feed_all)
    assert parser.report.lines == len(lines)
    assert parser.report.skipped_total <= len(lines) - sum(1 for line in lines if blank(line))
    # What the follower does next with the events must not fail either.
    for event in prepare_for_store(events):
        assert decode_event(encode_event(event)) == event


def test_every_request_has_its_expected_reply() -> None:
    """A request added to the protocol is fuzzed with the reply it must get (not a KeyError)."""
    assert set(typing.get_args(p.Request)) == set(EXPECTED_REPLY)
