"""`azs web`: serve the local web view (:mod:`azsd_client.web`) until Ctrl-C."""

from __future__ import annotations

import asyncio
import sys
import webbrowser

from .invocation import Invocation

__all__ = ["web"]


def web(run: Invocation) -> int:
    """Serve on 127.0.0.1 (or `--unix PATH`); print the URL with its token, and open it with `--open`."""
    from azsd_client.web import serve  # the web stack loads only for this command

    a = run.args
    roots = [run.root, *a.roots]

    def ready(url: str) -> None:
        where = f" (on the Unix socket {a.unix})" if a.unix else ""
        said = [
            f"azs web: serving on {url}{where}",
            "(Ctrl-C stops it; the token in the URL is the key: keep it to yourself)",
        ]
        run.out.result({"url": url, "unix": a.unix}, lambda _, __: said, flush=True)
        if a.open and not a.unix:
            webbrowser.open(url)

    try:
        asyncio.run(serve(run.config, roots, port=a.port, unix=a.unix, on_ready=ready))
    except OSError as exc:
        sys.stderr.write(f"azs web: cannot listen: {exc}\n")
        return 1
    return 0
