"""`azs protocol --schema`: every message with its op, one JSON line, and real messages validate."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from azsd.ipc import protocol as p
from tests.test_cli import _view, run_main

# -- protocol --schema ------------------------------------------------------------------------------

MESSAGES = [
    *(cls for union in (p.Request, p.Reply, p.Notification) for cls in typing.get_args(union)),
    p.SyncCaughtUp,
]


def _schema(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    code, out, _ = run_main(capsys, *flags, "protocol", "--schema")
    assert code == 0
    schema: dict[str, Any] = json.loads(out)
    return schema


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_schema_names_every_message_with_its_op(capsys: pytest.CaptureFixture[str]) -> None:
    schema = _schema(capsys)
    defs = schema["$defs"]
    assert len(MESSAGES) == 75  # 39 requests, 32 replies, 3 notifications, 1 sync notification
    for cls in MESSAGES:
        name, op = cls.__name__, cls.__name__.lower()
        assert defs[name]["properties"]["op"] == {"enum": [op]}, name
        assert "op" in defs[name]["required"], name
        assert schema["discriminator"]["mapping"][op] == f"#/$defs/{name}"
    assert {r["$ref"] for r in schema["anyOf"]} == {f"#/$defs/{cls.__name__}" for cls in MESSAGES}
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs, ref


def test_schema_with_json_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "--json", "protocol", "--schema")
    assert code == 0 and out.count("\n") == 1
    assert json.loads(out) == _schema(capsys)


def test_schema_validates_real_messages(capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema(capsys)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    view = _view(id=1, name="", worktree="", event_count=0, state="new")
    samples: list[Any] = [p.Status(), p.CreateSession(root="/r"), p.SessionReply(session=view)]
    for message in samples:
        validator.validate(json.loads(msgspec.json.encode(message)))
    assert not validator.is_valid({"op": "status", "extra": 1})
