"""Fuzzing: hostile frames at the real daemon.

Hypothesis-generated multipart frames go to the real daemon over a raw DEALER: random frame
counts, random bytes, random msgpack, request maps with real `op`s and random, missing or
mistyped fields, huge ints, deep nesting, NaN, NUL... Every frame set the protocol does not drop
(oversized) gets exactly one decodable reply (an `ErrorReply` when the payload is not a valid
request), the daemon answers `Status` after every example, and a store created before the fuzzing
is byte-identical after it (valid *mutating* requests are aimed only at a throwaway root).

Bounded for CI; `AZSD_SOAK=1` (`make soak`) multiplies the example counts by 20.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis.errors import InvalidArgument

from azsd.events import AssistantText, Complete, ToolCall, UserMessage
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer
from azsd.store import store_path
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.reliability.common import SOAK, scaled
from tests.reliability.fuzz_frames import frame_sets
from tests.reliability.fuzz_helpers import (
    EXPECTED_REPLY,
    MAX_MESSAGE,
    MUTATING,
    REPLY_MS,
    Chunks,
    FuzzEnv,
    append,
    await_reply,
    dump_store,
    new_session,
    status,
)

# == 1. fuzzed protocol frames ========================================================================


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
    deadline = time.monotonic() + 20  # the daemon keeps the file's full record when idle: before the snapshot
    while True:
        kept = d.request(p.FullStatus(root=str(root)), REPLY_MS)
        assert isinstance(kept, p.FullStatusReply), kept
        if kept.source_bytes and not kept.waiting_bytes:
            break
        assert time.monotonic() < deadline, "the daemon kept no full record of the ingested file"
        time.sleep(0.05)


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
