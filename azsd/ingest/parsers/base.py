"""What every agent-JSONL parser shares: line decoding, the parse report, token usage, line splitting.

A parser is fed one complete line at a time (bytes, with or without its newline) and returns the
events that line produced; it keeps whatever state the format needs between lines. Nothing here
does I/O, and nothing raises on bad input: a line that cannot be used is skipped and counted in
:attr:`LineParser.report` with its reason.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, ClassVar, Final

import msgspec

from azsd.events import MAX_NESTING, Event, event_kind, nests_deeper
from azsd.ingest.parsers.tally import Priced, UsageTally
from azsd.model import Cost, Usage

__all__ = [
    "MAX_INT",
    "MAX_LINE_BYTES",
    "READ_CHUNK",
    "TOO_LONG",
    "LineParser",
    "ParseReport",
    "ReadResult",
    "Usage",
    "iter_lines",
    "message_text",
    "read_lines",
    "split_lines",
]

#: Lines longer than this are skipped (and counted), never decoded. Claude writes multi-MB lines
#: (base64 images, whole-file reads), so the limit is generous.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024

#: The largest duration or count azsd stores: SQLite's INTEGER (and well inside Rust's u64).
MAX_INT: Final = 2**63 - 1

#: How much a line reader reads at a time.
READ_CHUNK: Final = 1 << 20

#: Yielded by the line iterators in place of a line that exceeded the limit (it was never loaded).
TOO_LONG: Final = b"\x00azsd:too-long\x00"

_DECODER: Final = msgspec.json.Decoder()


@dataclass
class ParseReport:
    """What a parse saw: lines, events by kind, skipped lines by reason, and the run's totals."""

    format: str
    lines: int = 0
    events: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    #: Lines of a kind the format has and azsd knowingly leaves out (an agent's bookkeeping: Claude's
    #: `attachment` or `api-request` lines, Codex's `world_state`), by kind; never "skipped".
    ignored: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    #: The run's cost: as the agent reported it, else estimated from its usage (azsd.pricing).
    cost_usd: Cost | None = None
    agent_session_id: str | None = None
    model: str | None = None
    #: `usage` split by model and time slot (kept by :meth:`LineParser.feed` as `usage` changes).
    tally: UsageTally = field(default_factory=UsageTally)
    #: The running cost of the messages a parser priced one by one (Claude's); None: it prices none.
    priced: Priced | None = None
    #: Whether another run already counted the API message of this id (the store's answer, given by
    #: whoever parses for it); its tokens are then left out of this run's (None: nobody counted any).
    counted_elsewhere: Callable[[str], bool] | None = None
    #: The API message ids this run counted, in order (for the store to claim them for it).
    message_keys: list[str] = field(default_factory=list)
    #: Messages left out as counted by another run.
    counted_before: int = 0
    #: The agent's own title of the session, when it made one (Claude's `summary` of it): what names
    #: the session rather than its first prompt.
    title: str | None = None

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One line for a terminal: `12 lines, 30 events (…), 1 skipped (invalid_json: 1)`."""
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(self.events.items()))
        reasons = ", ".join(f"{k}: {n}" for k, n in sorted(self.skipped.items()))
        text = f"{self.lines} lines, {sum(self.events.values())} events ({kinds})"
        if self.ignored:
            text += f", {sum(self.ignored.values())} of the agent's bookkeeping left out"
        return text + (f", {self.skipped_total} skipped ({reasons})" if self.skipped else "")


class LineParser(ABC):
    """Base of the four format parsers: decodes each line and counts what happened to it."""

    format: ClassVar[str]

    def __init__(self) -> None:
        self.report = ParseReport(self.format)

    def feed(self, line: bytes) -> list[Event]:
        """The events one complete line produces (possibly none). Never raises on bad input."""
        self.report.lines += 1
        if line is TOO_LONG or len(line) > MAX_LINE_BYTES:
            return self._skip("too_long")
        if not line.strip():
            return []
        try:
            obj = _DECODER.decode(line)
        except UnicodeDecodeError:
            return self._skip("invalid_utf8")
        except msgspec.DecodeError:
            repaired = without_lone_surrogates(line)
            if repaired is line:
                return self._skip("invalid_json")
            try:  # a lone surrogate (JavaScript strings hold them, JSON text may not): U+FFFD instead
                obj = _DECODER.decode(repaired)
            except (msgspec.DecodeError, UnicodeDecodeError):
                return self._skip("invalid_json")
        except RecursionError:
            return self._skip("nested_too_deeply")
        if not isinstance(obj, dict):
            return self._skip("not_an_object")
        if line.count(b"[") + line.count(b"{") > MAX_NESTING and nests_deeper(obj):
            return self._skip("nested_too_deeply")
        try:
            events = self.handle(obj)
        except Exception:  # a line of a shape no parser expected: skipped, never raised
            return self._skip("malformed")
        report = self.report
        if report.usage is not report.tally.seen:
            report.tally.follow(report.usage, report.model, obj.get("timestamp"), report.priced)
        if events is None:
            return self._skip("unknown_type")
        self.report.events.update(event_kind(e) for e in events)
        return events

    def finish(self) -> list[Event]:
        """Events still held back when the input ends (none for most formats)."""
        return []

    def forget_usage(self) -> None:
        """Count no usage of the lines read so far (they are another run's): for the formats whose
        usage is their report's alone (Aider's, OpenCode's)."""
        report = self.report
        report.usage, report.cost_usd, report.tally = Usage(), None, UsageTally()
        report.message_keys, report.counted_before = [], 0

    def feed_all(self, lines: Iterable[bytes]) -> list[Event]:
        """Feed every line, then finish: the whole-file helper."""
        out: list[Event] = []
        for line in lines:
            out.extend(self.feed(line))
        out.extend(self.finish())
        return out

    def _skip(self, reason: str) -> list[Event]:
        self.report.skipped[reason] += 1
        return []

    def _ignore(self, kind: str) -> list[Event]:
        """A line of a kind the format has and azsd leaves out on purpose: counted apart."""
        self.report.ignored[kind] += 1
        return []

    @abstractmethod
    def handle(self, obj: dict[str, Any]) -> list[Event] | None:
        """Map one decoded line to events; None when its type is unknown to the format."""


def message_text(content: Any) -> str:
    """A message's text: the string itself, or the `text` of each content block joined with `\\n`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


#: A JSON ``\\u`` escape of a UTF-16 surrogate, after an even number of backslashes (an escape, not
#: a backslash written out): a high one with the low one that may follow it, or a low one alone.
_SURROGATE: Final = re.compile(
    rb"(?<!\\)((?:\\\\)*)(?:(\\u[dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def without_lone_surrogates(line: bytes) -> bytes:
    r"""`line` with each lone surrogate escape (a high one not followed by a low one, a low one alone)
    made ``\ufffd``, and the line itself when it holds none: Claude Code and the other agents are
    JavaScript, whose strings may hold them, and JSON decoders refuse them (the whole line was lost).

    >>> without_lone_surrogates(rb'{"t":"a\ud800b\ud83d\ude00c\\ud800"}')
    b'{"t":"a\\ufffdb\\ud83d\\ude00c\\\\ud800"}'
    """
    if b"\\u" not in line:
        return line

    def fix(match: re.Match[bytes]) -> bytes:
        slashes, high, low = match.group(1), match.group(2), match.group(3)
        if high is not None and low is not None:
            return match.group(0)
        return slashes + b"\\ufffd"

    fixed = _SURROGATE.sub(fix, line)
    return line if fixed == line else fixed


def split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Split a buffer into complete lines (newline kept off) and the torn rest.

    >>> split_lines(b'a\\nb\\nc')
    ([b'a', b'b'], b'c')
    """
    end = buffer.rfind(b"\n")
    if end < 0:
        return [], buffer
    return buffer[:end].split(b"\n"), buffer[end + 1 :]


@dataclass
class ReadResult:
    """Complete lines read from an offset: the lines, where they end, and whether a huge line is
    still being skipped."""

    lines: list[bytes]
    end: int
    skipping: bool


def read_lines(
    stream: BinaryIO,
    offset: int,
    *,
    skipping: bool = False,
    max_line: int = MAX_LINE_BYTES,
    budget: int = READ_CHUNK,
    stop: int | None = None,
    chunk: int = READ_CHUNK,
) -> ReadResult:
    """Read the complete lines after `offset`; a torn last line is left for next time.

    Reading stops after about `budget` bytes, and never reads past byte `stop`. A line longer
    than `max_line` is returned as :data:`TOO_LONG` and never held in memory; when the read stops
    in the middle of one, `skipping` says so and `end` is past what was read.
    """
    stream.seek(offset)
    lines: list[bytes] = []
    end = offset
    pending = b""
    while end - offset < budget:
        want = chunk if stop is None else min(chunk, stop - end - len(pending))
        data = stream.read(want) if want > 0 else b""
        if not data:
            break
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                end += len(data)
                continue
            end += cut + 1
            skipping = False
            lines.append(TOO_LONG)
            data = data[cut + 1 :]
        complete, rest = split_lines(pending + data)
        lines.extend(TOO_LONG if len(line) > max_line else line for line in complete)
        end += len(pending) + len(data) - len(rest)
        pending = rest
        if len(pending) > max_line:
            end += len(pending)
            pending = b""
            skipping = True
    return ReadResult(lines, end, skipping)


def iter_lines(
    stream: BinaryIO,
    *,
    max_line: int = MAX_LINE_BYTES,
    chunk: int = READ_CHUNK,
    final: bool = True,
    stop: int | None = None,
) -> Iterator[bytes]:
    """Complete lines of a seekable binary stream from where it stands, in bounded memory.

    A line longer than `max_line` is never held whole: it is read past and yielded as
    :data:`TOO_LONG`. With `final`, a last line without a newline is yielded too (a finished
    file); without it, it is left unread (a file still being written). Nothing past byte `stop`
    is read (the size the file had when it was opened: a file that keeps growing still ends).
    """
    offset, skipping = stream.tell(), False
    while True:
        result = read_lines(
            stream, offset, skipping=skipping, max_line=max_line, budget=chunk, stop=stop, chunk=chunk
        )
        yield from result.lines
        at_eof = result.end - offset < chunk  # read_lines stops short of its budget only at EOF
        offset, skipping = result.end, result.skipping
        if at_eof:
            break
    if not final:
        return
    if skipping:
        yield TOO_LONG
        return
    stream.seek(offset)
    rest = stream.read(max_line + 1 if stop is None else max(0, min(max_line + 1, stop - offset)))
    if rest:
        yield TOO_LONG if len(rest) > max_line else rest
