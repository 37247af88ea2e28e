"""The types of `azs`'s command table (:data:`azsd_client.commands.COMMANDS`): a command, and its
function named to be imported when it runs."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from .arguments import RemoteRef, Spec

if TYPE_CHECKING:
    from .invocation import Invocation

__all__ = ["Command", "Either", "Lazy", "Run"]

Run: TypeAlias = "Callable[[Invocation], int]"


class Lazy:
    """A command's function by name, imported when the command runs: each run of `azs` loads the code
    of its own command and what that needs (`azs ls` no agent, sync or editor code)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module  # of this package
        self.name = name

    def resolve(self) -> Run:
        function: Run = getattr(import_module(f".{self.module}", __package__), self.name)
        return function

    def __call__(self, invocation: Invocation) -> int:
        return self.resolve()(invocation)


class Either:
    """`remote` when the command was given `--remote` or a REMOTE-REF, else `local`."""

    __slots__ = ("local", "remote")

    def __init__(self, local: Lazy, remote: Lazy) -> None:
        self.local = local
        self.remote = remote

    def __call__(self, invocation: Invocation) -> int:
        args = invocation.args
        chosen = getattr(args, "remote", False) or isinstance(getattr(args, "session", None), RemoteRef)
        return (self.remote if chosen else self.local)(invocation)


class Command(NamedTuple):
    """One `azs` command: its name, its help, what it does, and its arguments."""

    name: str
    help: str
    run: Run
    arguments: tuple[Spec, ...] = ()
    description: str | None = None
