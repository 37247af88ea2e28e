"""Hypothesis strategies for the frame fuzzing of tests/reliability/test_fuzz_frames.py: random frame
counts, random bytes, random msgpack, request maps with real `op`s and random, missing or mistyped
fields, huge ints, deep nesting, NaN, NUL...
"""

from __future__ import annotations

import os
from types import NoneType, UnionType
from typing import Any, Final, Literal, Union, get_args, get_origin

import msgspec
from hypothesis import strategies as st

from azsd.events import AssistantText, Complete, UserMessage, encode_event
from azsd.ingest.parsers import FORMATS
from azsd.ipc import protocol as p
from azsd.store import store_path
from tests.reliability.fuzz_helpers import HUGE_INTS, MAX_MESSAGE, REQUEST_TYPES, Chunks, FuzzEnv

# -- strategies ---------------------------------------------------------------------------------------

_ints = st.one_of(st.integers(-3, 8), st.sampled_from(HUGE_INTS), st.integers(-(2**63), 2**64 - 1))
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf"), -0.0])
)
_texts = st.one_of(
    st.text(max_size=16),
    st.sampled_from(["", "\x00", "a\x00b", "/\x00", "..", "\u202e", "x" * 2000]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    _ints,
    _floats,
    _texts,
    st.binary(max_size=16),
    st.builds(msgspec.msgpack.Ext, st.integers(-128, 127), st.binary(max_size=12)),
)
#: Any msgpack value, of any type: what a mistyped field holds.
ANY: Final = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-5, 5)), inner, max_size=4),
    ),
    max_leaves=12,
)
_event_json = st.one_of(
    st.builds(lambda t: encode_event(UserMessage(content=t)).decode(), _texts),
    st.builds(lambda t: encode_event(AssistantText(text=t)).decode(), _texts),
    st.builds(
        lambda ok, ms, cost: encode_event(Complete(success=ok, duration_ms=ms, cost_usd=cost)).decode(),
        st.booleans(),
        st.one_of(st.integers(0, 10**6), st.sampled_from([2**63 - 1, 2**64 - 1])),
        _floats,
    ),
    st.sampled_from(['"Compacting"', '"Compacted"', "{}", "[]", "null", '{"UserMessage":{}}', "{not json"]),
    _texts,
)


def _roots(env: FuzzEnv) -> st.SearchStrategy[str]:
    protected, scratch = str(env.protected), str(env.scratch)
    real = st.sampled_from([protected, scratch])
    return st.one_of(
        real,
        real,
        real,
        st.sampled_from(
            [
                protected,
                protected + "/",
                protected + "/.",
                scratch,
                scratch + "//",
                scratch + "/../" + env.scratch.name,
                str(env.protected / ".azureal"),
                str(store_path(env.protected)),  # a file, not a directory
                "/",
                "/proc",
                "/nonexistent/azsd-fuzz",
                "relative/root",
                ".",
                "",
                protected + "\x00",
                "\x00" + scratch,
            ]
        ),
        _texts,
    )


def _paths(env: FuzzEnv) -> st.SearchStrategy[str]:
    scratch = env.scratch
    return st.one_of(
        st.sampled_from(
            [
                str(scratch / "garbage.jsonl"),
                str(scratch / "stream.jsonl"),
                str(scratch / "dir.jsonl"),
                str(scratch / "absent.jsonl"),
                str(scratch / "no" / "such" / "dir.jsonl"),
                str(scratch),
                "relative.jsonl",
                "",
                str(scratch / "nul\x00.jsonl"),
            ]
        ),
        _texts,
    )


def _places(env: FuzzEnv, *names: str) -> st.SearchStrategy[str]:
    scratch = env.scratch
    return st.sampled_from(
        [*(str(scratch / n) for n in names), str(scratch), "relative/dir", "", str(scratch / "nul\x00")]
    )


def _typed(tp: Any) -> st.SearchStrategy[Any]:
    """A value of the annotated type (within what msgpack can carry)."""
    origin = get_origin(tp)
    if origin in (Union, UnionType):
        return st.one_of([_typed(arg) for arg in get_args(tp)])
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is list:
        return st.lists(_typed(get_args(tp)[0]), max_size=4)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: _texts,
        int: _ints,
        bool: st.booleans(),
        float: _floats,
        NoneType: st.none(),
        msgspec.UnsetType: st.none(),  # a field left out (request_key), sent as nil here
    }
    return simple[tp]


def _field_value(env: FuzzEnv, name: str, tp: Any) -> st.SearchStrategy[Any]:
    """A well-typed value for a request field, biased toward values that reach deep code."""
    special: dict[str, st.SearchStrategy[Any]] = {
        "root": _roots(env),
        "path": _paths(env),
        "session": st.one_of(st.integers(1, 4), st.integers(1, 4), st.integers(-1, 5), _ints),
        "events": st.lists(_event_json, max_size=4),
        "format": st.one_of(st.none(), st.sampled_from(FORMATS), _texts),
        "writer_pid": st.one_of(st.none(), st.sampled_from([1, os.getpid(), 0, -1, 2**22 + 7]), _ints),
        # where a backup or an import may look or write: inside the scratch directory only
        "dest": st.one_of(st.none(), _places(env, "backups", "copy.azs")),
        "source_dir": _places(env, "home", ".claude"),
        "project": _places(env, "project", "."),
        # a few keys again and again (a retry, or a key given to another request), and bad ones
        "request_key": st.one_of(st.none(), st.sampled_from(["k1", "k2", "", "k" * 129]), _texts),
    }
    return special.get(name, _typed(tp))


def _encode_map(items: list[tuple[Any, Any]]) -> bytes:
    """A msgpack map with exactly these pairs, in this order (duplicate keys kept)."""
    n = len(items)
    header = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
    return header + b"".join(msgspec.msgpack.encode(k) + msgspec.msgpack.encode(v) for k, v in items)


_OPS: Final = sorted(REQUEST_TYPES)
_NEAR_OPS: Final = ["Status", "status ", "statusreply"]


def _one_in(n: int) -> st.SearchStrategy[bool]:
    """True about once in `n` draws (`integers(0, n - 1) == 0` would be much likelier: Hypothesis
    favours boundary values)."""
    return st.sampled_from([True] + [False] * (n - 1))


@st.composite
def _op_maps(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """A map naming a real op, with its fields present or not, well- or mistyped, and extra keys."""
    op = draw(st.sampled_from(_OPS + _NEAR_OPS))
    cls = REQUEST_TYPES.get(op, p.CreateSession)
    items: list[tuple[Any, Any]] = []
    for info in msgspec.structs.fields(cls):
        if draw(_one_in(5)):
            continue  # missing
        mistyped = draw(_one_in(4))
        items.append((info.name, draw(ANY if mistyped else _field_value(env, info.name, info.type))))
    if draw(_one_in(4)):  # unknown keys
        items += draw(
            st.lists(
                st.tuples(st.one_of(st.text(max_size=8), st.integers(-2, 2)), ANY), min_size=1, max_size=2
            )
        )
    match draw(st.sampled_from(["one"] * 6 + ["mistyped", "none", "two"])):
        case "one":
            items.insert(draw(st.integers(0, len(items))), ("op", op))
        case "mistyped":
            items.insert(draw(st.integers(0, len(items))), ("op", draw(ANY)))
        case "two":
            items += [("op", op), ("op", draw(st.sampled_from(_OPS)))]
    return _encode_map(items)


@st.composite
def _valid_requests(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """A request that decodes: every required field present and well-typed."""
    cls = REQUEST_TYPES[draw(st.sampled_from(_OPS))]
    kwargs = {
        info.name: draw(_field_value(env, info.name, info.type))
        for info in msgspec.structs.fields(cls)
        if info.required or draw(st.booleans())
    }
    return p.encode(cls(**kwargs))


@st.composite
def _deep_payloads(draw: st.DrawFn, env: FuzzEnv) -> bytes:
    """Deeply nested lists or maps: bare, as a field's value, or as an unknown field before `op`."""
    depth = draw(st.one_of(st.sampled_from([2, 100, 500, 1000, 1500, 3000, 20000]), st.integers(1, 5000)))
    match draw(st.sampled_from(["list", "map", "pair"])):
        case "list":  # [[[...nil]]]
            nested = b"\x91" * depth + b"\xc0"
        case "map":  # {"k": {"k": ...nil}}
            nested = b"\x81\xa1k" * depth + b"\xc0"
        case _:  # [[[nil, nil], nil], nil]
            nested = b"\x92" * depth + b"\xc0" * (depth + 1)
    op = draw(st.sampled_from(_OPS))
    names = [f.name for f in msgspec.structs.fields(REQUEST_TYPES[op])] or ["x"]
    key = msgspec.msgpack.encode(draw(st.one_of(st.sampled_from(names), st.text(max_size=4))))
    op_pair = msgspec.msgpack.encode("op") + msgspec.msgpack.encode(op)
    match draw(st.sampled_from(["bare", "before-op", "before-op", "after-op", "as-op"])):
        case "bare":
            return nested
        case "before-op":
            return b"\x82" + key + nested + op_pair
        case "after-op":
            return b"\x82" + op_pair + key + nested
        case _:
            return b"\x81" + msgspec.msgpack.encode("op") + nested


_PAYLOAD_KINDS: Final = [
    *["valid"] * 6,
    *["op-map"] * 3,
    "bytes",
    "msgpack",
    "deep",
    "deep",
]


@st.composite
def _framed(draw: st.DrawFn, env: FuzzEnv) -> list[bytes]:
    """One payload (of a kind drawn with these weights) in a request envelope, or not quite."""
    match draw(st.sampled_from(_PAYLOAD_KINDS)):
        case "valid":
            payload = draw(_valid_requests(env))
        case "op-map":
            payload = draw(_op_maps(env))
        case "bytes":
            payload = draw(st.binary(max_size=64))
        case "msgpack":
            payload = msgspec.msgpack.encode(draw(ANY))
        case _:
            payload = draw(_deep_payloads(env))
    rid = draw(st.binary(max_size=12))
    match draw(st.sampled_from([*["pair"] * 7, "bare", "bare", "extra"])):
        case "pair":
            return [rid, payload]
        case "bare":
            return [payload]
        case _:
            return [rid, payload, *draw(st.lists(st.binary(max_size=8), min_size=1, max_size=3))]


@st.composite
def _oversized(draw: st.DrawFn, env: FuzzEnv) -> list[bytes]:
    """A frame over (or exactly at) `max-message-bytes`, among otherwise ordinary frames."""
    size = draw(
        st.one_of(st.sampled_from([MAX_MESSAGE, MAX_MESSAGE + 1]), st.integers(MAX_MESSAGE, 3 * MAX_MESSAGE))
    )
    if draw(st.booleans()):
        big = (draw(st.binary(min_size=1, max_size=8)) * size)[:size]
    else:  # a valid request that is merely too big
        big = p.encode(p.AppendEvents(root=str(env.scratch), session=1, events=["x" * size]))[:size]
    status_payload = p.encode(p.Status())
    match draw(st.sampled_from(["payload", "request-id", "bare", "extra"])):
        case "payload":
            return [b"rid", big]
        case "request-id":
            return [big, status_payload]
        case "bare":
            return [big]
        case _:
            return [b"rid", status_payload, big]


@st.composite
def frame_sets(draw: st.DrawFn, env: FuzzEnv) -> Chunks:
    match draw(st.sampled_from(["framed"] * 8 + ["raw", "oversized"])):
        case "framed":
            return Chunks(draw(_framed(env)))
        case "raw":  # 0..5 frames of anything
            return Chunks(draw(st.lists(st.binary(max_size=32), max_size=5)))
        case _:
            return Chunks(draw(_oversized(env)))
