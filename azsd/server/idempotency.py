"""Request keys: a request that is retried is answered again, never carried out twice.

A request that changes a store (:data:`~azsd.ipc.protocol.KeyedRequest`) may carry a `request_key`.
:class:`RequestKeys` runs such a request in its store's worker as one call that

- looks the key up in the store's side table ``azsd_requests``: a key given to this very request
  (the same digest) is answered with the first reply, and nothing is written or announced again; a
  key given to another request is refused (`bad_request`), and nothing is written;
- otherwise carries the request out and, unless it failed, remembers the key, a digest of the
  request and the encoded reply in the same savepoint as the request's own writes, so that a key is
  remembered exactly when its work is committed (a request that runs alone, outside the worker's
  group transaction, has its key written in the transaction right after its own).

A key whose request is still queued or running (a long ingest) is held in memory, per store: a retry
that arrives meanwhile waits for the first and gets the same reply (or is refused at once if it is
another request). A request that failed is not remembered: a later retry carries it out again.

Only what a retry needs is kept (:func:`pack_reply`): the reply compressed, or, when even that passes
:data:`MAX_PACKED_BYTES` (an append of a long prompt), the reply without its events' text, which a
retry reads back from the rows the request stored. Keys are kept :data:`RETENTION_S` (each new key
forgets at most :data:`PRUNE_BATCH` older ones, the store's upkeep the rest) while the table holds
less than :data:`MAX_TABLE_BYTES`; past that the oldest keys leave first.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Final

import msgspec
import zstandard

from azsd.errors import BadRequestError
from azsd.ipc import protocol as p
from azsd.ipc.replies import error_reply
from azsd.ipc.transport import Envelope
from azsd.server.reader import Inline
from azsd.server.registry import StoreRegistry
from azsd.server.workers import Outcome, encoded
from azsd.store import Store
from azsd.store.requests import RETENTION_S

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_PACKED_BYTES",
    "MAX_TABLE_BYTES",
    "PRUNE_BATCH",
    "RETENTION_S",
    "RequestKeys",
    "key_problem",
    "pack_reply",
    "request_digest",
    "unpack_reply",
]

log = logging.getLogger("azsd.server.idempotency")

#: The most expired keys one new key prunes (bounded work per request).
PRUNE_BATCH: Final = 64
#: The longest key.
MAX_KEY_CHARS: Final = 128
#: The most a remembered reply takes compressed; a longer append's is kept without its events' text.
MAX_PACKED_BYTES: Final = 16 * 1024
#: The most the remembered replies of a store take together; past it the oldest keys leave first.
MAX_TABLE_BYTES: Final = 2 * 1024 * 1024

_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
#: The first byte of a reply kept without its events' text (then a zstd frame of that reply).
_SLIM: Final = b"\x00"

_KEY: Final = re.compile(r"[!-~]+")


def key_problem(key: str) -> str | None:
    """What is wrong with a request key, or None for a good one (1 to 128 printable ASCII characters,
    no spaces, such as a uuid4's hex).

    >>> key_problem("6f1c0d3e9a2b4c5d8e7f6a5b4c3d2e1f") is None
    True
    >>> key_problem("two words")
    "request_key must be printable ASCII without spaces ('!' to '~'), not 'two words'"
    """
    if not 1 <= len(key) <= MAX_KEY_CHARS:
        return f"request_key must be 1 to {MAX_KEY_CHARS} characters long, not {len(key)}"
    if not _KEY.fullmatch(key):
        return f"request_key must be printable ASCII without spaces ('!' to '~'), not {key!r}"
    return None


def request_digest(request: p.KeyedRequest) -> bytes:
    """What identifies a request apart from its key: the SHA-256 of its encoding without the key."""
    return hashlib.sha256(p.encode(_unkeyed(request))).digest()


def _unkeyed(request: p.KeyedRequest) -> p.KeyedRequest:
    return msgspec.structs.replace(request, request_key=msgspec.UNSET)


def pack_reply(reply: p.Reply | bytes) -> bytes:
    """What a store keeps of a request's `reply` for its retries: the encoded reply compressed, or for
    an :class:`~azsd.ipc.protocol.AppendReply` too big even so, the reply with each event's ``data``
    left out (:func:`unpack_reply` reads them back from the store).

    >>> import os
    >>> big = p.AppendReply(events=[p.WireEvent(seq=7, kind="UserMessage", data=os.urandom(40_000).hex())])
    >>> len(pack_reply(big)) < 200, len(pack_reply(p.OkReply())) < 40
    (True, True)
    """
    packed = zstandard.ZstdCompressor(level=3).compress(encoded(reply))
    if len(packed) <= MAX_PACKED_BYTES or not isinstance(reply, p.AppendReply):
        return packed  # (other replies are small: the table's size cap bounds them anyway)
    slim = p.AppendReply(events=[msgspec.structs.replace(e, data="") for e in reply.events])
    return _SLIM + zstandard.ZstdCompressor(level=3).compress(p.encode(slim))


def unpack_reply(packed: bytes, store: Store, request: p.KeyedRequest) -> p.Reply:
    """The reply :func:`pack_reply` kept for `request`, its events' text read back from `store` (an
    event whose row is gone since is left out); a row from before packing is the encoded reply."""
    if packed.startswith(_ZSTD_MAGIC):
        return p.decode_reply(zstandard.ZstdDecompressor().decompress(packed))
    if not packed.startswith(_SLIM):
        return p.decode_reply(packed)
    slim = p.decode_reply(zstandard.ZstdDecompressor().decompress(packed[len(_SLIM) :]))
    assert isinstance(slim, p.AppendReply) and isinstance(request, p.AppendEvents)
    stored = store.stored_events(request.session, [e.seq for e in slim.events])
    events = [
        p.WireEvent(seq=e.seq, kind=stored[e.seq][0], data=stored[e.seq][1])
        for e in slim.events
        if e.seq in stored
    ]
    return p.AppendReply(events=events)


def _reused(key: str) -> BadRequestError:
    return BadRequestError(
        f"request_key {key!r} was given to another request: give each request a fresh key (a uuid4) "
        "and send only the same request again with it"
    )


@dataclass
class _Flight:
    """A keyed request queued or running: the request (without its key) and the retries waiting."""

    request: p.KeyedRequest
    waiters: list[Envelope] = field(default_factory=list)


class RequestKeys:
    """The daemon's request keys in flight, and the runner of every store request (keyed or not)."""

    def __init__(self, registry: StoreRegistry, clock: Callable[[], float] = time.time) -> None:
        self._registry = registry
        self._clock = clock
        self._flights: dict[tuple[str, str], _Flight] = {}
        self._lock = threading.Lock()

    def answer(
        self,
        root: str,
        envelope: Envelope,
        request: p.StoreRequest,
        fn: Callable[[Store], Outcome],
        *,
        alone: bool = False,
        read: bool = False,
        inline: Inline = False,
        peek: Callable[[Store], Outcome | None] | None = None,
    ) -> None:
        """Run `fn` (which carries out `request`) in the store of `root` and answer `envelope`, unless
        the request's key says it is running already or was carried out. A `read` (never keyed)
        runs on the store's reader (an `inline` one maybe in the calling thread: see
        :meth:`StoreRegistry.answer`), after its `peek` (:class:`~azsd.server.workers.Task`)."""
        if not isinstance(request, p.KeyedRequest) or not isinstance(request.request_key, str):
            self._registry.answer(root, envelope, fn, alone=alone, read=read, inline=inline, peek=peek)
            return
        key = request.request_key
        problem = key_problem(key)
        if problem is not None:
            self._send(envelope, p.ErrorReply(code="bad_request", message=problem))
            return
        unkeyed = _unkeyed(request)
        with self._lock:
            flight = self._flights.setdefault((root, key), _Flight(unkeyed))
            first = flight.request is unkeyed
            same = first or flight.request == unkeyed
            if same and not first:
                flight.waiters.append(envelope)
        if not same:
            self._send(envelope, error_reply(_reused(key)))
            return
        if not first:
            log.info("a retry of %s (request_key %r) waits for the first", type(request).__name__, key)
            return
        self._registry.call(
            root,
            lambda store: self._run(store, key, request, fn),
            alone=alone,
            then=lambda done: self._finish(root, key, envelope, done),
            client=envelope.identity,
        )

    def _run(
        self, store: Store, key: str, request: p.KeyedRequest, fn: Callable[[Store], Outcome]
    ) -> Outcome:
        """In the store's worker, inside the request's savepoint (a request that runs alone has none;
        its key is then written in a transaction of its own, right after its work): the remembered
        reply, or the work done and its key remembered with it."""
        now = self._clock()
        digest = request_digest(request)
        known = store.remembered_request(key, since=now - RETENTION_S)
        if known is not None:
            known_digest, reply = known
            if known_digest != digest:
                raise _reused(key)
            log.info(
                "answered a retry of %s (request_key %r) with the first reply", type(request).__name__, key
            )
            return Outcome(unpack_reply(reply, store, request))
        if not store.exists and isinstance(request, p.CreateSession):
            with store.atomic(create=True):  # the new store's first transaction holds the key too
                return self._carry_out(store, key, digest, fn, now)
        return self._carry_out(store, key, digest, fn, now)

    def _carry_out(
        self, store: Store, key: str, digest: bytes, fn: Callable[[Store], Outcome], now: float
    ) -> Outcome:
        outcome = fn(store)
        if store.exists and not store.read_only and not isinstance(outcome.reply, p.ErrorReply):
            store.remember_request(
                key,
                digest,
                pack_reply(outcome.reply),
                now,
                forget_before=now - RETENTION_S,
                prune=PRUNE_BATCH,
                max_bytes=MAX_TABLE_BYTES,
            )
        return outcome

    def _finish(self, root: str, key: str, envelope: Envelope, done: Future[Outcome]) -> None:
        """Once the first is committed (or failed): answer it, then every retry that waited for it."""
        with self._lock:
            flight = self._flights.pop((root, key))
        try:
            self._registry.deliver(root, envelope, done)
        finally:
            if flight.waiters:
                exc = done.exception()
                reply = error_reply(exc) if exc is not None else done.result().reply
                for waiter in flight.waiters:
                    self._send(waiter, reply)

    def _send(self, envelope: Envelope, reply: p.Reply | bytes) -> None:
        self._registry.outbox.sender().reply(envelope, encoded(reply))
