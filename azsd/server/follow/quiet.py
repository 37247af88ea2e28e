"""What becomes of a follow whose file has been quiet for `follow-idle-s`, by who writes the file.

A follow given a writer (`azs run`'s agent, `writer_pid`) ends once that process is gone: the turn
is over (the follower marks it failed unless it completed). A follow given none (`azs follow`)
takes as its writer a process that has the file open for writing (from Linux's /proc; not stored:
asked again after a restart) and goes on while it lives. With none, it goes `idle` rather than
ending: an interactive agent (Claude Code) opens its transcript only to write a line, so a quiet
file with nobody holding it is a user who thinks, not a turn that is over. An idle follow is still
watched; its session stops showing running until the file grows again (:attr:`FollowRecord.idle`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from azsd.server.follow.tailing import Tail

__all__ = ["Quiet", "pid_alive", "quiet_verdict", "writers_of"]


@dataclass(frozen=True)
class Quiet:
    """A quiet follow's fate: it `ends` (its writer exited), or goes idle; `reason`, in words."""

    ends: bool
    reason: str


def quiet_verdict(tail: Tail, now: float, idle_s: float) -> Quiet | None:
    """What `tail` does now, its file quiet since `tail.last_growth` (monotonic `now`); None: it goes
    on as it is (not quiet long enough, its writer is alive, or it is idle already)."""
    quiet, pid = now - tail.last_growth, tail.record.writer_pid
    if quiet < idle_s or tail.record.idle:
        return None
    if pid is not None:  # given a writer: a file not there (yet) is waited for while it may come
        if tail.missing or pid_alive(pid):
            return None
        return Quiet(True, f"its writer (pid {pid}) exited and the file was idle for {quiet:.0f} s")
    if tail.missing:
        return Quiet(False, f"the file has not existed for {quiet:.0f} s")
    if tail.adopted is not None and pid_alive(tail.adopted):
        return None
    if tail.adopted is None and now - tail.writers_checked < idle_s:
        return None  # asked /proc lately (it reads every process's open files)
    tail.adopted, tail.writers_checked = None, now
    writers = writers_of(tail.record.path)
    if writers:
        tail.adopted = writers[0]
        return None
    if writers is None:  # no /proc: who writes it cannot be told
        return Quiet(False, f"the file was idle for {quiet:.0f} s")
    return Quiet(False, f"no program has it open for writing and the file was idle for {quiet:.0f} s")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):  # gone, or never a pid (a stored bad one)
        return False
    except PermissionError:
        return True
    return True


def writers_of(path: str) -> list[int] | None:
    """The processes that have `path` open for writing, from Linux's /proc (the user's own: the
    others' cannot be read); None where /proc cannot tell."""
    if not os.path.isdir("/proc/self/fdinfo"):
        return None
    try:
        target = os.stat(path)
    except OSError:
        return []
    real = os.path.realpath(path)
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and _writes(entry.name, real, (target.st_dev, target.st_ino)):
            found.append(int(entry.name))
    return found


def _writes(pid: str, real: str, file_id: tuple[int, int]) -> bool:
    """Whether process `pid` has the file (at `real`, of `file_id`) open for writing."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != real:
                continue
            info = os.stat(f"/proc/{pid}/fd/{fd}")
            with open(f"/proc/{pid}/fdinfo/{fd}") as fdinfo:
                flags = next((int(line.split()[1], 8) for line in fdinfo if line.startswith("flags:")), 0)
        except (OSError, ValueError):
            continue
        if (info.st_dev, info.st_ino) == file_id and flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
            return True
    return False
