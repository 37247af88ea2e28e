"""The daemon-side command line: `azsd run`, `azsd version`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from azsd import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="azsd", description="Session-store daemon for AI coding agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")
    sub.add_parser("run", help="run the daemon in the foreground")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "version":
        print(__version__)
        return
    print(
        "azsd: the daemon is not part of this build yet (issue 3/6); the store library is.", file=sys.stderr
    )
    sys.exit(1)
