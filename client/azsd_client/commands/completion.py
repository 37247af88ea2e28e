"""`azs completion bash|zsh|fish`: a completion script made from azs's own argument parser (bash's
and zsh's by shtab, fish's by :func:`~.reference.fish`), so that it never lags behind the commands.

    azs completion bash > ~/.local/share/bash-completion/completions/azs
    azs completion zsh > "${fpath[1]}/_azs"
    azs completion fish > ~/.config/fish/completions/azs.fish
"""

from __future__ import annotations

import sys

from .invocation import Invocation
from .parser import parser
from .reference import fish

__all__ = ["completion"]


def completion(run: Invocation) -> int:
    """Print the completion script of `run.args.shell`."""
    shell: str = run.args.shell
    if shell == "fish":
        script = fish(parser())
    else:
        import shtab

        script = shtab.complete(parser(), shell=shell)
    script = script if script.endswith("\n") else script + "\n"
    if run.out.json:
        run.out.emit({"shell": shell, "script": script})
    else:
        sys.stdout.write(script)
    return 0
