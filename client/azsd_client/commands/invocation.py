"""One run of `azs`: its options resolved lazily (config, worktree root, branch, client) and its output."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Iterator, Mapping

from azsd.config import ResolvedConfig, resolve_config
from azsd.errors import UsageError
from azsd_client.client import Client
from azsd_client.render.term import terminal_width, wants_color
from azsd_client.render.text import Style

from .output import Output

__all__ = ["Invocation", "UsageError", "git", "git_branch", "git_root", "ignore_advice"]

_GIT_TIMEOUT_S = 10.0
#: Where AZUREAL keeps a worktree's store, relative to the worktree (spec/store-format.md).
_STORE = os.path.join(".azureal", "sessions.azs")


def git(args: list[str], cwd: str) -> str | None:
    """The stripped output of a git command, or None when git is missing or the command fails."""
    import subprocess  # (here: most runs never start git, and `azs` starts faster without it)

    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def ignore_advice(root: str) -> str | None:
    """What to do when git at `root` does not ignore the store; None when it does, or outside git.

    `git check-ignore` exits 0 for an ignored path, 1 for one that is not, 128 outside a repository.
    """
    import subprocess

    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", _STORE], cwd=root, capture_output=True, timeout=_GIT_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 1:
        return None
    return (
        "made the session store .azureal/sessions.azs; git does not ignore .azureal/ — add it to "
        'this clone\'s excludes with `echo .azureal/ >> "$(git rev-parse --git-path info/exclude)"` '
        "(or to .gitignore)"
    )


def git_root(cwd: str) -> str:
    """The top level of the git worktree around `cwd`, else `cwd` itself."""
    return git(["rev-parse", "--show-toplevel"], cwd) or cwd


def git_branch(root: str) -> str:
    """The branch checked out at `root`: AZUREAL's worktree label. "" outside git or on a detached HEAD.

    `rev-parse --abbrev-ref HEAD` fails on a branch without commits yet; `symbolic-ref` knows it.
    """
    branch = git(["rev-parse", "--abbrev-ref", "HEAD"], root) or git(
        ["symbolic-ref", "--short", "-q", "HEAD"], root
    )
    return "" if not branch or branch == "HEAD" else branch


def _color(choice: str, environ: Mapping[str, str]) -> bool:
    """`--color`: always, never, or auto (a terminal, without ``NO_COLOR``, not ``TERM=dumb``)."""
    if choice == "always":
        return True
    return choice == "auto" and wants_color(sys.stdout, environ)


class Invocation:
    """What the commands of one `azs` run share."""

    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> None:
        self.args = args
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        json: bool = args.json
        tty = bool(getattr(sys.stdout, "isatty", None) and sys.stdout.isatty())
        self.out = Output(
            json=json,
            tty=tty,
            style=Style(
                color=not json and _color(getattr(args, "color", "auto"), self.environ),
                relative=tty,
                width=terminal_width(sys.stdout, self.environ) if tty else None,
            ),
            environ=self.environ,
        )
        self._client: Client | None = None

    @functools.cached_property
    def config(self) -> ResolvedConfig:
        """Where the daemon listens: `--runtime-dir` > environment > config file > default."""
        return resolve_config(environ=self.environ, runtime_dir=self.args.runtime_dir)

    @property
    def client(self) -> Client:
        """The connection to azsd, opened on first use."""
        if self._client is None:
            self._client = Client(self.config, timeout=self.args.timeout, on_wait=_say_waiting)
        return self._client

    @functools.cached_property
    def root(self) -> str:
        """The worktree whose store is used: `--root`, else the git top level, else the current directory."""
        given: str | None = self.args.root
        return os.path.realpath(given if given else git_root(os.getcwd()))

    @functools.cached_property
    def outside_git(self) -> bool:
        """No `--root` was given and the current directory is not inside a git worktree (so the root
        is only the current directory)."""
        return not self.args.root and git(["rev-parse", "--show-toplevel"], os.getcwd()) is None

    @functools.cached_property
    def new_root(self) -> str:
        """The root for a command that may create the store (`new`, `run`, `import`): like `root`,
        but a directory outside any git worktree only when `--root` names it, so that `.azureal/`
        is never made in a stray directory by accident."""
        given: str | None = self.args.root
        if given:
            return os.path.realpath(given)
        found = git(["rev-parse", "--show-toplevel"], os.getcwd())
        if found is None:
            raise UsageError(
                f"{os.getcwd()} is not inside a git worktree, and sessions are kept in a worktree's "
                ".azureal/: run this inside one, or give --root DIR to keep them in DIR"
            )
        return os.path.realpath(found)

    @contextlib.contextmanager
    def creating_store(self, root: str) -> Iterator[None]:
        """Around a request that may create `root`'s store: once it has, say (once, on stderr) how to
        keep ``.azureal/`` out of git when git does not ignore it (a store grows to hundreds of MB)."""
        existed = os.path.exists(os.path.join(root, _STORE))
        yield
        if not existed and os.path.exists(os.path.join(root, _STORE)):
            advice = ignore_advice(root)
            if advice:
                sys.stderr.write(f"azs: {advice}\n")

    @functools.cached_property
    def branch(self) -> str:
        """The current branch of the root (sessions are labelled with it)."""
        return git_branch(self.root)

    def close(self) -> None:
        """Close the connection, if one was opened."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _say_waiting(what: str) -> None:
    """A change that got no reply in time is waited for still (the daemon answers): say so on stderr."""
    sys.stderr.write(f"azs: {what}\n")
    sys.stderr.flush()
