"""Long output through a pager on a terminal, as git does: ``$AZS_PAGER``, else ``$PAGER``, else
``less``, with ``LESS=FRX`` unless set (quit at once when it fits one screen, colours, no screen
clearing). Not with ``--no-pager``, ``--json``, a pipe, a terminal without ``TERM`` (or ``dumb``:
less cannot draw there), or a pager of ``cat`` or "".
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping

from .invocation import Invocation

__all__ = ["paged", "pager_command"]


def pager_command(environ: Mapping[str, str]) -> str | None:
    """The pager to use, or None for none.

    >>> pager_command({"PAGER": "more"}), pager_command({"AZS_PAGER": "cat", "PAGER": "more"})
    ('more', None)
    """
    command = environ.get("AZS_PAGER", environ.get("PAGER", "less")).strip()
    return None if command in ("", "cat") else command


@contextlib.contextmanager
def paged(run: Invocation) -> Iterator[None]:
    """Within: the run's output goes to the pager (when one is wanted), which is waited for at the end.
    The reader quitting the pager early ends the output quietly."""
    command = pager_command(run.environ)
    wanted = (
        run.out.tty
        and not run.out.json
        and not getattr(run.args, "no_pager", False)
        and run.environ.get("TERM", "dumb") != "dumb"
    )
    if not wanted or command is None:
        yield
        return
    environ = {**run.environ, "LESS": run.environ.get("LESS", "FRX"), "LV": run.environ.get("LV", "-c")}
    sys.stdout.flush()
    try:
        pager = subprocess.Popen(
            command, shell=True, stdin=subprocess.PIPE, env=environ, encoding="utf-8", errors="replace"
        )
    except OSError:
        yield  # no pager after all: straight to the terminal
        return
    assert pager.stdin is not None
    width = shutil.get_terminal_size().columns
    try:
        with run.out.redirected(pager.stdin, width):
            yield
    except (BrokenPipeError, KeyboardInterrupt):
        pass  # the reader quit the pager: nothing more to show
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            pager.stdin.close()
        while True:
            try:
                pager.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C is the pager's (less ignores it); wait for it to end
                continue
