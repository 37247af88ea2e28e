"""The watcher thread's loop: file-system events in the followed directories, turned into hints.

watchfiles watches **directories** (a followed file that is replaced stops being watched, its
directory does not). Its events are only hints: the follower also polls, which covers a watcher
that could not start (inotify watches exhausted, say).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

import watchfiles

__all__ = ["watch_dirs"]

log = logging.getLogger("azsd.ingest.watcher")


def watch_dirs(
    dirs: Callable[[], list[str]],
    hint: Callable[[set[str], set[str]], None],
    stop: threading.Event,
    rewatch: threading.Event,
    poll_s: float,
) -> None:
    """Until `stop`: watch the directories `dirs()` names and call `hint(changed, deleted)` with the
    real paths that changed; `rewatch` makes it look at `dirs()` again."""
    while not stop.is_set():
        rewatch.clear()
        watched = [d for d in dirs() if os.path.isdir(d)]
        if not watched:
            rewatch.wait(poll_s)
            continue
        try:
            for changes in watchfiles.watch(
                *watched, debounce=20, step=5, stop_event=rewatch, recursive=False,
                raise_interrupt=False, rust_timeout=1000, yield_on_timeout=False,
            ):  # fmt: skip
                changed = {os.path.realpath(path) for _, path in changes}
                deleted = {
                    os.path.realpath(path) for kind, path in changes if kind == watchfiles.Change.deleted
                }
                hint(changed, deleted)
        except Exception as exc:  # e.g. inotify watches exhausted: the stat poll carries on
            log.warning("file watching failed (%s); polling every %.2f s instead", exc, poll_s)
            rewatch.wait(5)
