"""`azs run`: one agent turn, stored live by the daemon while the terminal shows it (spec §4.1).

1. The session: `-s`, or a new one named after the prompt's first line, labelled with the branch.
2. `BuildContext` gives the prompt the agent gets; the *clean* prompt is stored (`AppendEvents`)
   before the agent starts (DESIGN decision 3).
3. The agent starts with its stdout in a fresh file under the runtime dir's ``turns/``.
4. A follower subscribes to the session, then `Follow(path, format, writer_pid)` has the daemon store
   each line as the agent writes it; the turn is shown from the notifications (re-read on a gap).
5. The turn ends at its `Complete`, or once the agent has exited and the daemon has read all it wrote.
   The badge is then the turn's outcome, with the turn's wall time when the agent reports none.

Ctrl-C (or SIGTERM, SIGHUP) stops the agent, has the daemon read what it wrote (`Unfollow`), marks
the turn failed unless it completed, and exits 130 (128 + the signal): the partial turn stays stored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

from azsd.errors import AzsdError, RemoteError
from azsd.events import (
    AssistantText,
    Complete,
    Event,
    EventDecodeError,
    UserMessage,
    decode_event,
    encode_event,
)
from azsd.ipc.protocol import SessionChanged, WireEvent
from azsd_client._shared import Backend
from azsd_client.follow import FollowItem, SessionFollower
from azsd_client.render.events import event_lines
from azsd_client.render.term import terminal_safe
from azsd_client.render.text import Line, Style
from azsd_client.render.turns import ERROR_PREFIX

from . import shapes
from .agent import FORMATS, Agent, agent_command, agent_home, check_agent, started_model, turn_path
from .compaction import NothingToCompact, compact_session, describe, say
from .interrupts import Interrupted, raise_interrupted, stopping_signals
from .invocation import Invocation, UsageError

__all__ = ["run_turn", "session_name"]

_NAME_MAX: Final = 40
#: How long one wait for a notification lasts before the agent is checked on.
_POLL_S: Final = 0.2
#: How often the store is re-read when no notification comes (PUB may have dropped one).
_REREAD_S: Final = 1.0
#: Once the agent has exited, how long the daemon gets to end the follow on its own before `Unfollow`.
_EXIT_GRACE_S: Final = 1.0
#: Once the turn's final event is stored, how long the agent gets to exit before it is stopped.
_EXIT_WAIT_S: Final = 10.0
#: `Unfollow` after an interruption reads what the agent wrote: the longest wait for that.
_UNFOLLOW_TIMEOUT_S: Final = 60.0
#: What an `Unfollow` of a follow that already ended may answer.
_ALREADY_ENDED: Final = frozenset({"not_found"})


def session_name(prompt: str) -> str:
    """A new session's name: the prompt's first non-blank line, cut to about 40 characters.

    >>> session_name("\\n  fix the parser \\nthen the tests"), session_name("x" * 50)[-3:]
    ('fix the parser', 'xx…')
    """
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return first if len(first) <= _NAME_MAX else first[: _NAME_MAX - 1].rstrip() + "…"


class _Turn:
    """One turn after its prompt is stored: the agent, the follow, what was shown."""

    def __init__(self, run: Invocation, session: int, follower: SessionFollower, backend: Backend) -> None:
        self.run, self.session, self.follower, self.backend = run, session, follower, backend
        self.client = run.client
        self.agent: Agent | None = None
        #: The model the agent runs: asked for, else (Codex) its command line's or config's.
        self._model: str | None = None
        self._agent_session: str | None = None
        self.complete: Complete | None = None
        self.shown = 0
        self.started = time.monotonic()

    # -- output -----------------------------------------------------------------------------------

    def show(self, items: Iterable[FollowItem]) -> bool:
        """Print stored events as they come (JSON lines with `--json`). True when the `Complete` was one."""
        completed = False
        for item in items:
            if isinstance(item, SessionChanged):
                if item.change == "deleted":
                    raise AzsdError(f"S{self.session} was deleted during the turn")
                continue
            try:
                event = decode_event(item.data)
            except EventDecodeError:
                event = None
            if isinstance(event, Complete):
                self.complete, completed = event, True
            self.shown += 1
            self._print(item, event)
        return completed

    def _print(self, item: WireEvent, event: Event | None) -> None:
        """One stored event, as `show` prints it (a JSON line with `--json`); a turn's end with the turn's
        wall time when the agent reports none."""

        def human(item: WireEvent, style: Style) -> list[Line]:
            if isinstance(event, Complete) and event.duration_ms == 0:  # Codex reports no duration
                timed = Complete(
                    success=event.success, duration_ms=self.elapsed_ms(), cost_usd=event.cost_usd
                )
                item = WireEvent(seq=item.seq, kind=item.kind, data=encode_event(timed).decode())
            return event_lines(item, style)

        self.run.out.result(item, human, shape=shapes.event, flush=True)

    def note(self, message: str, details: Iterable[str] = ()) -> None:
        sys.stderr.write(terminal_safe(f"azs: {message}\n" + "".join(f"  │ {line}\n" for line in details)))
        sys.stderr.flush()

    def store_outcome(self, what: str, stderr: Sequence[str], *, failed: bool) -> None:
        """Store how the turn ended where it ended, as AZUREAL stores a failed Codex turn (spec §4.3):
        an ``Error:`` answer (what happened, the last lines of the agent's stderr), and, for a turn
        without its own end, a failed `Complete` (which marks the session failed). Then show them."""
        text = ERROR_PREFIX + what + "".join(f"\n{line}" for line in stderr)
        events: list[Event] = [AssistantText(text=text)]
        if failed:
            events.append(Complete(success=False, duration_ms=self.elapsed_ms(), cost_usd=0.0))
        self.client.append_events(self.run.root, self.session, events)
        self.show(self.follower.read())

    def elapsed_ms(self) -> int:
        return (
            self.agent.elapsed_ms()
            if self.agent is not None
            else int((time.monotonic() - self.started) * 1000)
        )

    # -- the turn ---------------------------------------------------------------------------------

    def start(self, argv: list[str], stdin: bytes | None, agent_session: str | None = None) -> None:
        """Start the agent, then have the daemon follow its output (`agent_session`: the agent's own
        id of the session, when azsd gave it one)."""
        self._agent_session = agent_session
        path = turn_path(self.run.config.turns_dir, self.run.root, self.session)
        self.agent = Agent.start(argv, stdin, cwd=self.run.root, path=path, environ=self.run.environ)
        self._model = self.run.args.model
        if not self._model and self.backend == "codex":
            self._model = started_model(argv, self.run.environ)
        self._follow()

    def _follow(self) -> None:
        assert self.agent is not None
        fmt = FORMATS[self.backend]
        # the model asked for: Codex's `exec --json` never names it, and an estimate needs it
        self.client.follow(
            self.run.root,
            self.session,
            self.agent.path,
            format=fmt,
            writer_pid=self.agent.pid,
            model=self._model,
            agent_home=agent_home(self.backend, self.run.environ),
            agent_session=self._agent_session,
        )

    def watch(self) -> None:
        """Show the turn until its `Complete`, or until the agent has exited and its follow ended."""
        assert self.agent is not None
        exited_at: float | None = None
        while not self.show(self.follower.poll(_POLL_S)):
            if self.agent.poll() is None:
                continue  # the daemon follows the file even across its own restart
            now = time.monotonic()
            if exited_at is None:
                exited_at = now
            elif now - exited_at >= _EXIT_GRACE_S or not self._following():
                return

    def finish(self) -> int:
        """After `watch`: the agent gone, everything it wrote stored and shown, the badge right."""
        assert self.agent is not None
        code = self.agent.wait(_EXIT_WAIT_S)
        if code is None:
            self.note(f"the agent (pid {self.agent.pid}) did not exit after the turn ended: stopping it")
            code = self._stop_agent()
        why = None  # a turn that completed: its follow ended with it
        if self.complete is None:
            why = f"its agent (pid {self.agent.pid}) exited ({_status(code)}) before the turn ended"
        self._unfollow(timeout=None, reason=why)  # a follow the daemon already ended answers not_found
        self.show(self.follower.read())
        return self._conclude(code)

    def _conclude(self, code: int | None) -> int:
        assert self.agent is not None
        done = self.complete
        if done is None:
            ended = "printed no result" if code == 0 else "exited without finishing the turn"
            self.store_outcome(f"the agent {ended} ({_status(code)})", self.agent.stderr_tail(), failed=True)
            self.note(
                f"the agent exited ({_status(code)}) without finishing the turn; S{self.session} keeps "
                f"what it wrote (marked failed); its output: {self.agent.path}",
                self.agent.stderr_tail(),
            )
            return 1
        if code != 0:  # (a failed turn that exited 0 says all there is in its own end)
            self.store_outcome(f"the agent exited ({_status(code)})", self.agent.stderr_tail(), failed=False)
        # The badge last: the outcome stored after the agent's own end is new content, which clears it.
        wanted = "succeeded" if done.success else "failed"
        if (
            done.duration_ms == 0
            or code != 0
            or self.client.get_session(self.run.root, self.session).session.state != wanted
        ):
            duration = done.duration_ms or self.elapsed_ms()
            self.client.mark_completed(
                self.run.root, self.session, done.success, duration_ms=duration, cost_usd=done.cost_usd
            )
        if done.success and code == 0:
            self.agent.remove_files()
            return 0
        self.note(
            f"the agent exited ({_status(code)}); its output: {self.agent.path}", self.agent.stderr_tail()
        )
        return 0 if done.success else 1

    def interrupted(self, signum: int) -> int:
        """Stop the agent, store what it wrote, mark the turn failed unless it completed."""
        code: int | None = None
        if self.agent is not None:
            code = self._stop_agent()
        agent = f"stopped the agent ({_status(code)}); " if self.agent is not None else ""
        try:
            if self.agent is not None:
                why = f"interrupted by {signal.Signals(signum).name}: its agent was stopped ({_status(code)})"
                self._unfollow(timeout=_UNFOLLOW_TIMEOUT_S, reason=why)
            self.show(self.follower.read())
            completed = self.complete is not None
            if not completed:
                stopped = agent.removesuffix("; ") or "before the agent started"
                self.store_outcome(f"interrupted: {stopped}", [], failed=True)
        except AzsdError as exc:
            where = f"; its output: {self.agent.path}" if self.agent is not None else ""
            self.note(f"interrupted: {agent}the turn could not be stored whole ({exc}){where}")
            return 128 + signum
        state = "completed" if completed else "partial turn, marked failed"
        self.note(f"interrupted: {agent}S{self.session} keeps {self.shown} events of this turn ({state})")
        return 128 + signum

    def abandon(self) -> None:
        """After an error: stop the agent (its output stays in its file), mark the turn failed if possible."""
        if self.agent is not None and self.agent.poll() is None:
            self.note(f"stopping the agent (pid {self.agent.pid}); its output: {self.agent.path}")
            self._stop_agent()
        if self.complete is None:
            with contextlib.suppress(AzsdError):
                self.client.mark_completed(self.run.root, self.session, False, duration_ms=self.elapsed_ms())

    # -- helpers ----------------------------------------------------------------------------------

    def _stop_agent(self) -> int | None:
        assert self.agent is not None
        with stopping_signals(signal.SIG_IGN):  # a second Ctrl-C must not leave the agent half-stopped
            return self.agent.stop()

    def _following(self) -> bool:
        """Whether the daemon still follows this turn's file (Status lists ended follows too)."""
        assert self.agent is not None
        mine = [
            v
            for v in self.client.status().follows
            if v.session == self.session and _same_file(v.path, str(self.agent.path))
        ]
        return any(v.active for v in mine)

    def _unfollow(self, *, timeout: float | None, reason: str | None = None) -> None:
        assert self.agent is not None
        try:
            self.client.unfollow(self.run.root, self.agent.path, timeout=timeout, reason=reason)
        except RemoteError as exc:
            if exc.code not in _ALREADY_ENDED:
                raise


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _status(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        return (
            f"killed by {signal.Signals(-code).name}"
            if -code in signal.valid_signals()
            else f"signal {-code}"
        )
    return f"exit status {code}"


def _header(run: Invocation, session: int, name: str, created: bool, backend: Backend) -> None:
    model = f" · model {run.args.model}" if run.args.model else ""
    title = f"S{session}" + (f" “{name}”" if name else "")
    run.out.note(("created " if created else "") + f"{title} · {backend}{model}", flush=True)


def _compact_if_full(run: Invocation, session: int, backend: Backend) -> None:
    """Compact the session first when its context meter is at or over `compaction-threshold`.

    A compaction that cannot be done or fails is said, and the turn goes on with the whole context
    (the session as it was); an interrupted one ends the command before the turn starts.
    """
    meter = run.client.context_meter(run.root, session, threshold=run.config.compaction_threshold)
    if meter.chars < meter.threshold:
        return
    say(
        f"S{session}'s context is {meter.chars:,} chars, at or over compaction-threshold "
        f"({meter.threshold:,}): compacting it first (--no-compact skips this)"
    )
    try:
        done = compact_session(run, session, backend, run.args.model)
    except NothingToCompact as exc:
        say(f"{exc}: the turn gets the whole context")
    except RemoteError:
        raise  # the daemon refused (or is gone): the turn would fail the same way
    except AzsdError as exc:
        say(f"{exc}; the turn gets the whole context")
    else:
        say(describe(done))


def _prompt(given: str | None, file: str | None) -> str:
    """The prompt: as given, read from stdin for ``-``, or from `file` (`--file`); never empty."""
    where = "the prompt"
    if file is not None:
        where = file
        try:
            with open(file, encoding="utf-8", errors="replace") as stream:
                prompt = stream.read()
        except OSError as exc:
            raise UsageError(f"cannot read the prompt from {file}: {exc.strerror or exc}") from None
    elif given == "-":
        where = "stdin"
        if sys.stdin.isatty():
            sys.stderr.write("azs: reading the prompt from stdin (Ctrl-D ends it)\n")
        prompt = sys.stdin.read()
    elif given is None:
        raise UsageError("give a prompt: azs run PROMPT, azs run - (from stdin) or azs run --file F")
    else:
        prompt = given
    if not prompt.strip():
        raise UsageError(f"the prompt is empty ({where})" if where != "the prompt" else "the prompt is empty")
    return prompt


def run_turn(run: Invocation) -> int:
    """`azs run`: exit status 0 when the turn succeeded, 1 when it failed, 128 + signal when interrupted."""
    args = run.args
    prompt = _prompt(args.prompt, args.file)
    backend: Backend = args.backend
    session: int | None = args.session
    root = run.root if session is not None else run.new_root  # a new session: never in a stray dir
    check_agent(run.config, backend)
    if session is None:
        worktree = args.worktree if args.worktree is not None else run.branch
        with run.creating_store(root):
            view = run.client.create_session(root, session_name(prompt), worktree=worktree).session
    else:
        view = run.client.get_session(run.root, session).session
        if not args.no_compact:
            _compact_if_full(run, view.id, backend)
    injected = run.client.build_context(run.root, view.id, prompt, backend=backend).prompt
    agent_session = str(uuid.uuid4()) if backend == "claude" else None  # (Codex names its thread itself)
    argv, stdin = agent_command(run.config, backend, injected, args.model, session_id=agent_session)
    _header(run, view.id, view.name, session is None, backend)
    stored = run.client.append_events(run.root, view.id, [UserMessage(content=prompt)]).events
    first = stored[-1].seq + 1 if stored else view.event_count + 1
    with SessionFollower(run.client, run.root, view.id, from_seq=first, idle_check_s=_REREAD_S) as follower:
        turn = _Turn(run, view.id, follower, backend)
        turn.show(stored)
        with stopping_signals(raise_interrupted):
            try:
                turn.start(argv, stdin, agent_session)
                turn.watch()
                return turn.finish()
            except KeyboardInterrupt as exc:
                return turn.interrupted(exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
            except AzsdError:
                turn.abandon()
                raise
