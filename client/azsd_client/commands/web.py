"""`azs web`: serve the local web view (:mod:`azsd_client.web`) until Ctrl-C."""

from __future__ import annotations

import asyncio
import html
import os
import sys
import webbrowser
from pathlib import Path
from urllib.parse import urlsplit

from azsd.files import atomic_write

from .invocation import Invocation, git

__all__ = ["web"]


def web(run: Invocation) -> int:
    """Serve on 127.0.0.1 (or `--unix PATH`); print the URL with its token, and open it with `--open`."""
    from azsd_client.web import serve  # the web stack loads only for this command

    a = run.args
    roots = [run.root, *git_worktrees(run.root), *a.roots]

    def ready(url: str) -> None:
        where = f" (on the Unix socket {a.unix})" if a.unix else ""
        said = [
            f"azs web: serving on {url}{where}",
            "(Ctrl-C stops it; the token in the URL is the key: keep it to yourself)",
        ]
        run.out.result({"url": url, "unix": a.unix}, lambda _, __: said, flush=True)
        if a.open and not a.unix:
            opener.append(open_privately(url, run.config.runtime_dir))

    opener: list[Path] = []
    try:
        asyncio.run(serve(run.config, roots, port=a.port, unix=a.unix, on_ready=ready))
    except OSError as exc:
        sys.stderr.write(f"azs web: cannot listen: {exc}\n")
        return 1
    finally:
        for path in opener:
            path.unlink(missing_ok=True)
    return 0


def git_worktrees(root: str) -> list[str]:
    """The other worktrees of `root`'s repository (`git worktree list`): each keeps a store of its own.
    None outside git."""
    listed = git(["worktree", "list", "--porcelain"], root) or ""
    found = [line.removeprefix("worktree ") for line in listed.splitlines() if line.startswith("worktree ")]
    return [path for path in found if os.path.realpath(path) != os.path.realpath(root)]


def open_privately(url: str, directory: Path) -> Path:
    """Open `url` in the browser without putting its token on the browser's command line (which every
    user of the machine can read in /proc): the browser is given a file only this user can read
    (`directory` is the private runtime dir), whose meta refresh leads to `url`. Returns the file."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"web-{urlsplit(url).port}.html"
    target = html.escape(url, quote=True)
    page = (
        '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={target}"><title>azs web</title>'
        f'<p><a href="{target}">Open azs web</a></p>\n'
    )
    with atomic_write(path, mode=0o600) as out:
        out.write(page.encode())
    webbrowser.open(path.as_uri())
    return path
