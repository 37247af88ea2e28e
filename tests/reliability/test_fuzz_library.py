"""Fuzzing at the library level: `read_lines` over a growing file with torn writes yields the lines
of the final content, and every parser's `feed` survives arbitrary bytes.

Bounded for CI; `AZSD_SOAK=1` (`make soak`) multiplies the example counts by 20.
"""

from __future__ import annotations

import ast
import io
import itertools
import typing
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import azsd.ingest.parsers as parsers_package
from azsd.compact import prepare_for_store
from azsd.events import Event, decode_event, encode_event
from azsd.ingest.parsers import FORMATS, TOO_LONG, make_parser
from azsd.ingest.parsers.base import read_lines
from azsd.ipc import protocol as p
from tests.reliability.common import scaled
from tests.reliability.fuzz_follow import blank
from tests.reliability.fuzz_frames import _one_in
from tests.reliability.fuzz_helpers import _T, EXPECTED_REPLY, LIBRARY_TIMEOUT_S, Chunks

# == 3. library level ================================================================================


def in_fresh_thread(work: Callable[[], _T]) -> _T:
    """Run `work` on a new thread and return (or raise) what it does: a fresh stack, so that how
    deep a nesting fails to decode does not depend on how deep the test happens to be called."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def _grow_and_read(
    content: bytes, cuts: list[int], max_line: int, budget: int, chunk: int
) -> tuple[list[bytes], list[tuple[int, bool, int]]]:
    """Write `content` in pieces cut at `cuts`, calling `read_lines` after each piece until it makes
    no progress, as the follower does. Returns the lines and every (offset, skipping, lines) state."""
    stream = io.BytesIO()
    offset, skipping = 0, False
    lines: list[bytes] = []
    states: list[tuple[int, bool, int]] = []
    bounds = [0, *sorted(set(cuts)), len(content)]
    for start, end in itertools.pairwise(bounds):
        stream.seek(0, io.SEEK_END)
        stream.write(content[start:end])
        while True:
            result = read_lines(
                stream, offset, skipping=skipping, max_line=max_line, budget=budget, chunk=chunk
            )
            lines += result.lines
            progressed = result.end != offset or result.skipping != skipping
            assert result.end >= offset and result.end <= end
            offset, skipping = result.end, result.skipping
            states.append((offset, skipping, len(lines)))
            if not progressed:
                break
    return lines, states


_line_bytes = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"\r", b"x" * 50, b"{}", TOO_LONG]),
)


@pytest.mark.timeout(LIBRARY_TIMEOUT_S)
@settings(max_examples=scaled(400, 8000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_line_bytes, max_size=12),
    tail=st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
    data=st.data(),
    max_line=st.integers(1, 48),
    chunk=st.integers(1, 17),
    budget=st.integers(1, 80),
)
def test_read_lines_over_torn_growth_equals_one_split(
    lines: list[bytes], tail: bytes, data: st.DataObject, max_line: int, chunk: int, budget: int
) -> None:
    content = b"".join(line + b"\n" for line in lines) + tail
    cuts = data.draw(st.lists(st.integers(0, len(content)), max_size=10), label="cuts")
    want = [TOO_LONG if len(line) > max_line else line for line in content.split(b"\n")[:-1]]
    got, states = _grow_and_read(content, cuts, max_line, budget, chunk)
    once, _ = _grow_and_read(content, [], max_line, 1 << 30, chunk)
    assert got == want
    assert once == want
    # A restarted follow replays the file up to its stored offset (`Follower._rebuild`): that
    # replay must give the same lines and the same skipping state as the live reads did.
    final = io.BytesIO(content)
    for offset, skipping, count in states:
        replay = read_lines(final, 0, max_line=max_line, budget=offset + 1, stop=offset, chunk=chunk)
        assert (replay.lines, replay.end, replay.skipping) == (got[:count], offset, skipping)


def _parser_vocabulary() -> list[str]:
    """Every short string constant in the parsers' source: their keys and type names."""
    found: set[str] = set()
    for source in Path(parsers_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 0 < len(node.value) <= 40:
                found.add(node.value)
    return sorted(found)


VOCAB: Final = _parser_vocabulary()
#: One of :data:`VOCAB` (drawn by index: a `sampled_from` of it has an unwieldy repr).
_vocab = st.integers(0, len(VOCAB) - 1).map(lambda i: VOCAB[i])
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _vocab,
    st.text(max_size=20),
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(_vocab, st.text(max_size=5)), inner, max_size=6),
    ),
    max_leaves=25,
)


@st.composite
def _json_object_lines(draw: st.DrawFn) -> bytes:
    """A JSON object shaped like an agent line: a known `type`, and keys the parsers look at."""
    obj = draw(st.dictionaries(_vocab, _json_values, max_size=6))
    if not draw(_one_in(5)):
        obj["type"] = draw(_vocab)
    return msgspec.json.encode(obj)


@st.composite
def _nested_lines(draw: st.DrawFn) -> bytes:
    depth = draw(st.one_of(st.integers(1, 3000), st.sampled_from([999, 1000, 1001, 2500])))
    inner = b"[" * depth + b"]" * depth if draw(st.booleans()) else b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"type":"' + draw(_vocab).encode() + b'","x":' + inner + b"}"


_any_lines = st.one_of(
    st.binary(max_size=80),
    _json_object_lines(),
    _json_object_lines(),
    _json_object_lines(),
    _json_values.map(msgspec.json.encode),
    _nested_lines(),
    st.just(TOO_LONG),
    st.sampled_from([b"", b"  ", b"\r", b"{", b"\xef\xbb\xbf{}", b'{"type":"\xff"}']),
)


@pytest.mark.timeout(LIBRARY_TIMEOUT_S)
@settings(max_examples=scaled(600, 12000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(FORMATS), lines=st.lists(_any_lines, max_size=25).map(Chunks))
def test_every_parser_survives_arbitrary_lines(fmt: str, lines: list[bytes]) -> None:
    parser = make_parser(fmt)

    def feed_all() -> list[Event]:
        events: list[Event] = []
        for line in lines:
            events += parser.feed(line)
        return events + parser.finish()

    events = in_fresh_thread(feed_all)
    assert parser.report.lines == len(lines)
    assert parser.report.skipped_total <= len(lines) - sum(1 for line in lines if blank(line))
    # What the follower does next with the events must not fail either.
    for event in prepare_for_store(events):
        assert decode_event(encode_event(event)) == event


def test_every_request_has_its_expected_reply() -> None:
    """A request added to the protocol is fuzzed with the reply it must get (not a KeyError)."""
    assert set(typing.get_args(p.Request)) == set(EXPECTED_REPLY)
