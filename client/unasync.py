"""Generate the blocking client (``azsd_client/client.py``) from the asyncio one (``azsd_client/aio.py``).

httpcore's way (its ``scripts/unasync.py``): the asyncio client is the source, and the blocking one is
the same text with each asyncio token swapped for its blocking twin, line by line. Only the header and
the module docstring are the generated file's own. The helper modules (``_aio_agents.py``,
``_aio_remote.py``, ``_aio_pubsub.py``) are rewritten whole, each into its blocking twin. The
DEALER sockets underneath differ for real (a poll loop in one, a reader task and futures in the
other) and are written by hand, once each: ``_connection.py`` and ``_aio_connection.py``.

    python client/unasync.py           # rewrite client.py and the helpers' twins (`make unasync`)
    python client/unasync.py --check   # exit 1 and show the diff when client.py is out of date
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Final

PACKAGE: Final = Path(__file__).resolve().parent / "azsd_client"
SOURCE: Final = PACKAGE / "aio.py"
TARGET: Final = PACKAGE / "client.py"
#: The asyncio client's helper modules (mixins of AsyncClient) and their blocking twins.
HELPERS: Final = (
    (PACKAGE / "_aio_agents.py", PACKAGE / "_agents.py"),
    (PACKAGE / "_aio_remote.py", PACKAGE / "_remote.py"),
    (PACKAGE / "_aio_full.py", PACKAGE / "_full.py"),
    (PACKAGE / "_aio_pubsub.py", PACKAGE / "_pubsub.py"),
)

#: Each asyncio token (a regular expression) and its blocking twin.
SUBS: Final = (
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"^import zmq\.asyncio\n", ""),
    (r"\bzmq\.asyncio\.Socket\b", "zmq.Socket[bytes]"),
    (r"\bawait ", ""),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncClient\b", "Client"),
    (r"\bAsyncConnection\b", "Connection"),
    (r"\bAsyncSubscription\b", "Subscription"),
    (r"\bAsyncPushSubscription\b", "PushSubscription"),
    (r"\bAsyncAgentMethods\b", "AgentMethods"),
    (r"\bAsyncRemoteMethods\b", "RemoteMethods"),
    (r"\bAsyncFullMethods\b", "FullMethods"),
    (r"\bAsyncSubscribeMethods\b", "SubscribeMethods"),
    (r"\b_AsyncSubscriber\b", "_Subscriber"),
    (r"\b_aio_connection\b", "_connection"),
    (r"\b_aio_agents\b", "_agents"),
    (r"\b_aio_remote\b", "_remote"),
    (r"\b_aio_full\b", "_full"),
    (r"\b_aio_pubsub\b", "_pubsub"),
)
_COMPILED: Final = tuple((re.compile(pattern), new) for pattern, new in SUBS)

#: What the blocking module has of its own: a header and its docstring.
HEADER: Final = '''\
# GENERATED from aio.py by client/unasync.py (`make unasync`): edit aio.py, never this file.
# ruff: noqa: UP028 (an async generator cannot `yield from`, so the source loops, and so does this copy)
"""The blocking azsd client: :class:`Client`, every typed request of :class:`~azsd_client.AsyncClient`.

:class:`Client` is a :class:`~azsd_client._connection.Connection` (one DEALER, Lazy Pirate timeouts, the
protocol checked on first contact, no event loop) with one typed method per request, generated from
``aio.py``.

>>> with Client() as client:                     # doctest: +SKIP
...     view = client.create_session("/src/project", "fix parser", worktree="main").session
...     client.append_events("/src/project", view.id, [UserMessage(content="hi")])
"""'''


def unasync_line(line: str) -> str:
    """One line of the asyncio client as the blocking one has it.

    >>> unasync_line("        page = await self.get_events_page(root) -> AsyncIterator[X]")
    '        page = self.get_events_page(root) -> Iterator[X]'
    """
    for pattern, new in _COMPILED:
        line = pattern.sub(new, line)
    return line


def generate(source: str) -> str:
    """The blocking module: `source` rewritten token by token, under its own header and docstring."""
    if not source.startswith('"""'):
        raise ValueError(f"{SOURCE} must start with its module docstring")
    rest = source[source.index('"""', 3) + 3 :]
    return HEADER + "".join(unasync_line(line) for line in rest.splitlines(keepends=True))


def generate_helper(source: str, name: str) -> str:
    """A helper module's blocking twin: all of it rewritten (its docstring too), under a header."""
    header = f"# GENERATED from {name} by client/unasync.py (`make unasync`): edit {name}, never this file.\n"
    return header + "".join(unasync_line(line) for line in source.splitlines(keepends=True))


def main(argv: list[str]) -> int:
    targets = [(TARGET, generate(SOURCE.read_text()))]
    targets += [(target, generate_helper(src.read_text(), src.name)) for src, target in HELPERS]
    if argv == ["--check"]:
        stale = 0
        for target, expected in targets:
            current = target.read_text() if target.exists() else ""
            if current == expected:
                continue
            diff = difflib.unified_diff(
                current.splitlines(keepends=True), expected.splitlines(keepends=True), str(target), "expected"
            )
            sys.stderr.write("".join(diff) + f"\n{target} is out of date: run `make unasync`\n")
            stale += 1
        return 1 if stale else 0
    if argv:
        sys.stderr.write(__doc__ or "")
        return 2
    for target, expected in targets:
        target.write_text(expected)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
