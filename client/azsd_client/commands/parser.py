"""The `azs` argument parser: the global options, then one subcommand per row of the command table
(:data:`~azsd_client.commands.COMMANDS`). `azs` parses with it, and the CLI reference, the man page
and the completions are written from it (:mod:`.reference`, :mod:`.completion`)."""

from __future__ import annotations

import argparse
import sys

from . import COMMANDS
from .arguments import add_arguments, seconds

__all__ = ["parser"]


def _add_globals(parser: argparse.ArgumentParser, *, here: bool) -> None:
    """The global options, accepted before and after the command (`azs ls --json` works too)."""
    default = None if here else argparse.SUPPRESS
    parser.add_argument(
        "--root",
        metavar="DIR",
        default=default,
        help="worktree whose store to use (default: the git top level here, else .)",
    )
    parser.add_argument(
        "--runtime-dir",
        metavar="DIR",
        default=default,
        help="where azsd's sockets are (default: $AZSD_RUNTIME_DIR, the config, $XDG_RUNTIME_DIR/azsd)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if here else argparse.SUPPRESS,
        help="one JSON object a line",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto" if here else argparse.SUPPRESS,
        help="colour: auto (on a terminal, unless NO_COLOR is set or TERM=dumb), always, never",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        default=5.0 if here else argparse.SUPPRESS,
        help="seconds to wait for a reply (default: 5); a change that gets none is sent once more, "
        "with the same request key (so it is made at most once)",
    )


class _Version(argparse.Action):
    """`--version`: the version is looked up only when asked for (reading package metadata is slow)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from azsd.ipc.protocol import PROTOCOL_VERSION
        from azsd_client._version import __version__

        sys.stdout.write(f"azs {__version__} (protocol {PROTOCOL_VERSION})\n")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    """The `azs` argument parser: the global options, then one subcommand per row of the command table."""
    top = argparse.ArgumentParser(
        prog="azs",
        description="Sessions of AI coding agents in AZUREAL stores, through the azsd daemon.",
        epilog="Sessions are named S3 or 3; remote ones @ and 4 or more hex digits of their UUID. Exit "
        "status: 0 ok, 1 error, 2 usage error (a bad argument, date or format), 3 `azs status`: azsd is not "
        "running, 128+N killed by signal N (130: Ctrl-C).",
    )
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    _add_globals(top, here=True)
    common = argparse.ArgumentParser(add_help=False)
    _add_globals(common, here=False)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        description = command.description or command.help
        parsed = sub.add_parser(command.name, help=command.help, description=description, parents=[common])
        add_arguments(parsed, command.arguments)
    return top
