"""What the sync and the asyncio client share: config, roots, request ids, reply checks, errors."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar

import msgspec
import zmq

from azsd.config import ResolvedConfig, private_dir_problem, resolve_config
from azsd.errors import ConfigError, DaemonUnavailable, NoReply, ProtocolError, RemoteError
from azsd.ipc.protocol import PROTOCOL_VERSION, ErrorReply, KeyedRequest, Reply, StatusReply
from azsd.ipc.transport import ipc_path

if TYPE_CHECKING:
    from azsd.events import Event

#: A worktree root as callers give it; the client sends its canonical absolute path.
RootLike: TypeAlias = "str | os.PathLike[str]"

#: The agents a context can be built for.
Backend: TypeAlias = Literal["claude", "codex"]
#: An agent whose own histories `import_sources`/`import_session` bring in.
HistoryAgent: TypeAlias = Literal["claude", "codex", "aider", "opencode"]

#: Which sessions a listing shows: the live ones (`exclude` archived), all (`include`), or archived `only`.
Archived: TypeAlias = Literal["exclude", "include", "only"]

#: What `export` renders a session as.
ExportFormat: TypeAlias = Literal["md", "jsonl", "html"]

#: A long request (`ingest_file`, `export`, `backup`, …) gets this long unless told otherwise.
INGEST_TIMEOUT_S: Final = 300.0
#: How long :func:`canonical_root` remembers a root's canonical path.
ROOT_TTL_S: Final = 1.0
_ROOTS_KEPT: Final = 256
_ROOTS: dict[str, tuple[str, float]] = {}  # root as given -> (canonical, when resolved)

_R = TypeVar("_R")


def long_timeout(given: float | None, client_timeout: float) -> float:
    """The wait of long requests (ingest, follow, export, backup, import, reindex).

    `given`, else at least :data:`INGEST_TIMEOUT_S`.

    >>> long_timeout(None, 10.0), long_timeout(None, 600.0), long_timeout(2.0, 600.0)
    (300.0, 600.0, 2.0)
    """
    return given if given is not None else max(client_timeout, INGEST_TIMEOUT_S)


def default_config() -> ResolvedConfig:
    """The configuration a client uses when given none: flags absent, so environment > file > default."""
    return resolve_config(environ=os.environ)


def canonical_root(root: RootLike) -> str:
    """The absolute, symlink-free path of a worktree root: the same string the daemon uses in topics.

    An absolute path's is remembered for :data:`ROOT_TTL_S` (a page read in a loop would otherwise
    resolve it each time: three system calls per request).

    >>> canonical_root("/")
    '/'
    """
    path = os.fspath(root)
    now = time.monotonic()
    known = _ROOTS.get(path)
    if known is not None and now - known[1] < ROOT_TTL_S:
        return known[0]
    real = os.path.realpath(path)
    if os.path.isabs(path):  # (a relative one depends on the working directory)
        if len(_ROOTS) >= _ROOTS_KEPT:
            _ROOTS.clear()
        _ROOTS[path] = (real, now)
    return real


def absolute_path(path: RootLike) -> str:
    """An absolute path for the daemon, which has its own working directory."""
    return os.path.abspath(os.fspath(path))


def request_ids() -> Iterator[bytes]:
    """Request ids for one socket: 8-byte big-endian counters, unique for the socket's life."""
    return (n.to_bytes(8, "big") for n in itertools.count(1))


def encode_events(events: Sequence[Event]) -> list[str]:
    """Each event's exact serde JSON, as `AppendEvents` carries it."""
    from azsd.events import encode_event  # the events' types load only for a client that appends

    return [encode_event(event).decode() for event in events]


def raise_for_error(reply: Reply) -> Reply:
    """The reply itself, or :class:`RemoteError` when the daemon answered with an error."""
    if isinstance(reply, ErrorReply):
        raise RemoteError(reply.code, reply.message)
    return reply


def expect(reply: Reply, kind: type[_R]) -> _R:
    """`reply` typed as `kind`, or :class:`ProtocolError` when the daemon answered something else."""
    if not isinstance(reply, kind):
        raise ProtocolError(f"expected a {kind.__name__} from azsd, got a {type(reply).__name__}")
    return reply


def notification_payload(frames: list[bytes]) -> bytes:
    """The payload of a notification's frames (its topic, its payload).

    >>> notification_payload([b"topic", b"payload"])
    b'payload'
    """
    if len(frames) != 2:
        raise ProtocolError(f"a notification arrived in {len(frames)} frames, not 2")
    if not frames[1]:
        raise ProtocolError("a notification arrived without a payload")
    return frames[1]


def check_protocol(status: Reply) -> StatusReply:
    """The daemon's status, or :class:`ProtocolError` when it speaks another protocol version."""
    reply = expect(raise_for_error(status), StatusReply)
    if reply.protocol != PROTOCOL_VERSION:
        raise ProtocolError(
            f"azsd {reply.version} (pid {reply.pid}) speaks protocol {reply.protocol} but this client speaks "
            f"protocol {PROTOCOL_VERSION}: restart the daemon (`systemctl --user restart azsd`) so both "
            "come from the same installation"
        )
    return reply


@contextlib.contextmanager
def connecting(endpoint: str) -> Iterator[None]:
    """Turn a ZeroMQ error while opening a socket into :class:`DaemonUnavailable`; refuse an
    endpoint in a directory that is not private to this user (:class:`ConfigError`)."""
    refuse_unless_private(endpoint)
    try:
        yield
    except zmq.ZMQError as exc:
        raise DaemonUnavailable(f"cannot connect to azsd on {endpoint}: {exc}") from None


def refuse_unless_private(endpoint: str) -> None:
    """Raise :class:`ConfigError` for an `ipc://` endpoint in a directory that is not private to
    this user (someone else could answer as azsd)."""
    path = ipc_path(endpoint)
    problem = private_dir_problem(path.parent) if path is not None else None
    if problem is not None:
        raise ConfigError(f"refusing to talk to azsd through {endpoint}: {problem}")


def refuse_unless_listening(endpoint: str) -> None:
    """Raise :class:`DaemonUnavailable` at once when nothing can be listening on an `ipc://`
    endpoint: its socket file is missing, or connecting to it is refused (a daemon that died left
    it). Anything else (a daemon that is slow to answer, say) is left to the request's timeout.
    A directory that is not private is refused first (:func:`refuse_unless_private`)."""
    refuse_unless_private(endpoint)
    path = ipc_path(endpoint)
    if path is None:
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(os.fspath(path))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            reason = "no socket file" if exc.errno == errno.ENOENT else "nothing listens on its socket"
            raise DaemonUnavailable(
                "azsd is not running — start it with `systemctl --user start azsd` or `azsd run` "
                f"({reason}: {path})"
            ) from None
    finally:
        probe.close()


def unavailable(
    endpoint: str, timeout: float, *, first_contact: bool, op: str, asked_twice: bool = False
) -> DaemonUnavailable:
    """The error for a request that got no answer in time (:class:`NoReply` once the daemon had
    answered on this connection: the request may have been carried out)."""
    if first_contact:
        return DaemonUnavailable(
            "azsd is not running — start it with `systemctl --user start azsd` or `azsd run` "
            f"(no answer on {endpoint} within {timeout:g} s)"
        )
    if asked_twice:
        return NoReply(
            f"azsd did not answer {op} on {endpoint} within {timeout:g} s, twice (it was sent again with "
            "the same request key, so it is carried out at most once; the daemon may be busy or have "
            "stopped; `azs status` checks)"
        )
    return NoReply(
        f"azsd did not answer {op} on {endpoint} within {timeout:g} s "
        "(it may be busy or have stopped; `azs status` checks)"
    )


#: How often `on_wait` is told that a change is still waited for (at most).
TELL_EVERY_S: Final = 10.0


class WriteWait:
    """How a change (a :data:`~azsd.ipc.protocol.KeyedRequest`) that gets no reply in time is waited
    for: it is sent again with the same request key (the daemon carries it out at most once, and
    answers every copy with the first reply), and again after each timeout, for as long as the daemon
    answers (each new try checks `Status` first: a daemon that stopped answering ends the wait with
    :class:`~azsd.errors.DaemonUnavailable`) and `busy_wait_s` allows. A write behind a long one of
    its store is thus waited for, never reported failed and then applied; `on_wait` says what is
    waited for meanwhile (at once, then every :data:`TELL_EVERY_S`). A change the daemon could not make
    in the end (another program held the store's lock past the daemon's wait) is answered with that
    error, and was not made."""

    def __init__(self, connection: ConnectionBase, message: KeyedRequest, timeout: float | None) -> None:
        self._connection = connection
        self._op = type(message).__name__
        self._root: object = getattr(message, "root", None)
        self._timeout = connection.timeout if timeout is None else timeout
        self._started = time.monotonic()
        self._tries = 0
        self._told: float | None = None  # when `on_wait` was last told

    def no_reply(self) -> None:
        """A try got no reply in time: return to try again, or raise :class:`NoReply` to stop."""
        self._tries += 1
        if self._tries == 1:
            return  # sent once more at once, as any lost request
        waited = time.monotonic() - self._started
        limit = self._connection.busy_wait_s
        if limit is not None and waited >= limit + 1.5 * self._timeout:
            endpoint = self._connection.config.rpc_endpoint
            raise unavailable(endpoint, self._timeout, first_contact=False, op=self._op, asked_twice=True)
        now = time.monotonic()
        if self._connection.on_wait is not None and (self._told is None or now - self._told >= TELL_EVERY_S):
            self._told = now
            store = f"the store of {self._root}" if self._root else "its store"
            self._connection.on_wait(
                f"still waiting for {self._op} after {waited:.0f} s: azsd answers, and {store} is busy "
                "(a long write: an ingest, an import, another program's lock); the request is carried "
                "out once, and Ctrl-C stops the waiting, not the request"
            )


def with_request_key(message: KeyedRequest) -> KeyedRequest:
    """`message` with a fresh `request_key` (a uuid4's hex), unless it carries one already."""
    if isinstance(message.request_key, str):
        return message
    return msgspec.structs.replace(message, request_key=uuid.uuid4().hex)


class ConnectionBase:
    """What both connections are made with: where the daemon listens, how long to wait, which context.

    Args:
        config: where the daemon listens; by default resolved from the environment and config file.
        timeout: seconds to wait for each reply (long requests such as `ingest_file` wait longer).
        context: the ZeroMQ context to open sockets in (default: the process-wide instance).
        busy_wait_s: how long a change that got no reply in time, twice, is waited for still while
            the daemon answers (default: as long as it does; see :class:`WriteWait`).
        on_wait: told what is waited for, after each timeout of such a change.
    """

    def __init__(
        self,
        config: ResolvedConfig | None = None,
        *,
        timeout: float = 5.0,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        busy_wait_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config if config is not None else default_config()
        self.timeout = timeout
        #: How long a change that got no reply twice is waited for still, while the daemon answers
        #: (None: as long as it does); `on_wait` is told, after each wait, what is waited for.
        self.busy_wait_s = busy_wait_s
        self.on_wait = on_wait
        self._context: zmq.Context[zmq.Socket[bytes]] = (
            context if context is not None else zmq.Context.instance()
        )
        self._ids = request_ids()


_Q = TypeVar("_Q", bound=msgspec.Struct)


def store_request(kind: type[_Q], root: RootLike, options: Mapping[str, object]) -> _Q:
    """A `kind` request about the store of `root`, its other fields from `options` (checked: a wrong
    name or type is a :class:`msgspec.ValidationError`)."""
    return msgspec.convert({"op": kind.__name__.lower(), "root": canonical_root(root), **options}, kind)
