"""`azs compact`, and the compaction `azs run` does first when a session's context is full (spec §6).

1. `PlanCompaction`: the boundary (the newest 3, 2 or 1 prompts stay raw) and the prompt, which
   carries the previous summary forward.
2. The agent runs that prompt as it runs a turn (the prompt on stdin, its output into a file under
   the runtime dir's ``turns/``); when it cannot be started, the other backend is tried.
3. `CompactWithOutput`: the daemon reads the agent's output file, and stores its assistant text,
   trimmed, as the summary with the boundary; an output without any gets exactly one retry.
   Nothing is written before that, so a compaction that fails or is interrupted leaves the session
   as it was.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from typing import Final

import msgspec

from azsd.errors import AzsdError
from azsd.ipc.protocol import CompactionPlanReply
from azsd_client._shared import Backend
from azsd_client.render.term import terminal_safe

from .agent import FORMATS, Agent, agent_command, agent_home, check_agent, turn_path
from .interrupts import raise_interrupted, signal_number, stopping_signals
from .invocation import Invocation

__all__ = ["Compacted", "NothingToCompact", "compact", "compact_session", "describe", "say"]

#: How often the progress line is redrawn while the agent writes its summary.
_TICK_S: Final = 0.5
_OTHER: Final[dict[Backend, Backend]] = {"claude": "codex", "codex": "claude"}


class NothingToCompact(AzsdError):
    """Fewer than two prompts since the latest compaction: no boundary leaves one raw."""


class Compacted(msgspec.Struct, frozen=True):
    """A stored compaction, as `azs compact --json` prints it."""

    session: int
    #: Seqs `from_seq`..`after_seq` are summarised; the next context is the summary and what follows.
    from_seq: int
    after_seq: int
    #: The context meter before and after, in characters.
    chars_before: int
    chars_after: int
    summary_chars: int
    backend: str
    seconds: float


def say(text: str) -> None:
    """A line about the compaction on stderr (stdout stays the command's result, or JSON)."""
    sys.stderr.write(terminal_safe(f"azs: {text}") + "\n")
    sys.stderr.flush()


@dataclass
class _Progress:
    """One line on stderr, redrawn while the agent writes (only on a terminal)."""

    what: str
    live: bool
    started: float = 0.0

    def tick(self, agent: Agent) -> None:
        if not self.live:
            return
        try:
            written = agent.path.stat().st_size
        except OSError:
            written = 0
        elapsed = time.monotonic() - self.started
        sys.stderr.write(f"\r\x1b[2K  {self.what} · {elapsed:.0f} s · {written:,} bytes of output")
        sys.stderr.flush()

    def done(self) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _summarise(
    run: Invocation, session: int, plan: CompactionPlanReply, backend: Backend, model: str | None
) -> tuple[int, Backend]:
    """Run the agent on the compaction prompt and have the daemon store its summary: the summary's
    length, and the backend that wrote it.

    An agent that ran but wrote no summary gets exactly one retry (AZUREAL's rule)."""
    progress = _Progress(f"summarising with {backend}", sys.stderr.isatty())
    failures: list[str] = []
    assert plan.after_seq is not None
    for _attempt in range(2):
        agent, used = _start_either(run, session, plan.prompt, backend, model)
        progress.what, progress.started = f"summarising with {used}", time.monotonic()
        code = _wait(agent, progress)
        reply = run.client.compact_with_output(
            run.root, session, plan.after_seq, agent.path, FORMATS[used], identity=plan.identity,
            agent_home=agent_home(used, run.environ),
        )  # fmt: skip
        if reply.stored:
            agent.remove_files()
            return reply.summary_chars, used
        tail = "; ".join(agent.stderr_tail(3))
        failures.append(f"{used} wrote no summary (exit status {code}{': ' + tail if tail else ''})")
        say(f"{failures[-1]}; its output: {agent.path}")
    raise AzsdError(f"S{session} was not compacted: " + "; then ".join(failures))


def _start_either(
    run: Invocation, session: int, prompt: str, backend: Backend, model: str | None
) -> tuple[Agent, Backend]:
    """The agent of `backend` started on `prompt`, or else the other backend's (spec §6)."""
    problems = []
    for candidate in (backend, _OTHER[backend]):
        try:
            check_agent(run.config, candidate)
            argv, stdin = agent_command(
                run.config, candidate, prompt, model if candidate == backend else None
            )
            path = turn_path(run.config.turns_dir, run.root, session).with_suffix(".compaction.jsonl")
            return Agent.start(argv, stdin, cwd=run.root, path=path, environ=run.environ), candidate
        except AzsdError as exc:
            problems.append(str(exc))
    raise AzsdError(f"S{session} was not compacted: " + "; ".join(problems))


def _wait(agent: Agent, progress: _Progress) -> int | None:
    """The agent's exit status; on Ctrl-C (SIGTERM, SIGHUP) it is stopped and the interrupt goes on."""
    try:
        with stopping_signals(raise_interrupted):
            while (code := agent.wait(_TICK_S)) is None:
                progress.tick(agent)
            return code
    except KeyboardInterrupt:
        with stopping_signals(signal.SIG_IGN):
            agent.stop()
        raise
    finally:
        progress.done()


def compact_session(run: Invocation, session: int, backend: Backend, model: str | None = None) -> Compacted:
    """Compact `session` now; :class:`NothingToCompact` when it cannot be, AzsdError when it failed."""
    root, threshold = run.root, run.config.compaction_threshold
    before = run.client.context_meter(root, session, threshold=threshold).chars
    plan = run.client.plan_compaction(root, session)
    if plan.after_seq is None:
        raise NothingToCompact(
            f"S{session} cannot be compacted: it needs at least two prompts since its latest compaction "
            "(the newest stays raw)"
        )
    kept = (
        "the newest prompt stays raw"
        if plan.kept_prompts == 1
        else f"the newest {plan.kept_prompts} prompts stay raw"
    )
    say(
        f"compacting S{session}: summarising seqs {plan.from_seq}–{plan.after_seq} "
        f"({plan.events:,} events, {plan.chars:,} chars); {kept}"
    )
    started = time.monotonic()
    summary_chars, used = _summarise(run, session, plan, backend, model)
    after = run.client.context_meter(root, session, threshold=threshold).chars
    return Compacted(
        session=session,
        from_seq=plan.from_seq,
        after_seq=plan.after_seq,
        chars_before=before,
        chars_after=after,
        summary_chars=summary_chars,
        backend=used,
        seconds=round(time.monotonic() - started, 1),
    )


def describe(done: Compacted) -> str:
    """One line: what the compaction did."""
    return (
        f"compacted S{done.session} with {done.backend} in {done.seconds:g} s: context "
        f"{done.chars_before:,} → {done.chars_after:,} chars (a {done.summary_chars:,}-char summary "
        f"of seqs {done.from_seq}–{done.after_seq})"
    )


def compact(run: Invocation) -> int:
    """`azs compact SESSION`: 0 compacted, 1 failed or nothing to compact, 128 + signal interrupted."""
    sid: int = run.args.session
    run.client.get_session(run.root, sid)  # a missing session is said before anything starts
    try:
        done = compact_session(run, sid, run.args.backend, run.args.model)
    except KeyboardInterrupt as exc:
        say(f"interrupted: the agent was stopped; S{sid} is as it was (nothing stored)")
        return 128 + signal_number(exc)
    run.out.result(done, lambda d, _: [describe(d)])
    return 0
