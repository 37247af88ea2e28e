"""The JavaScript client (client/js) under Node's own test runner, against the real daemon.

`node --test` runs client/js/test/*.test.js, which start the daemon with this Python (AZSD_PYTHON).
Without node, or without client/js/node_modules (`npm ci` there), the tests skip, except in CI
(CI=true), where they fail: .ci/run runs `npm ci`. The TypeScript types (client/js/protocol.d.ts) must
be what scripts/gen-types.mjs makes of `azs protocol --schema` now.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from azsd.ipc.protocol import json_schema

JS_DIR = Path(__file__).resolve().parent.parent / "client" / "js"
NODE = shutil.which("node")
IN_CI = os.environ.get("CI") == "true"

_MISSING = (
    "node is not installed"
    if NODE is None
    else "client/js/node_modules is missing (run `npm ci` in client/js)"
    if not (JS_DIR / "node_modules").is_dir()
    else None
)
if _MISSING is not None and IN_CI:
    raise RuntimeError(f"CI must run the JavaScript client's tests, but {_MISSING}")
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def node(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, AZSD_PYTHON=sys.executable)
    for inherited in ("AZSD_RUNTIME_DIR", "AZSD_CONFIG", "NODE_OPTIONS"):
        env.pop(inherited, None)
    return subprocess.run(
        [str(NODE), *args], cwd=JS_DIR, env=env, input=stdin, capture_output=True, timeout=120, check=False
    )


def test_node_test_runner_against_the_daemon() -> None:
    done = node("--test", *sorted(str(p.relative_to(JS_DIR)) for p in (JS_DIR / "test").glob("*.test.js")))
    report = done.stdout.decode(errors="replace")
    assert done.returncode == 0, report[-6000:] + done.stderr.decode(errors="replace")[-2000:]
    assert "# fail 0" in report and "# pass 0" not in report


def test_typescript_types_are_generated_from_the_current_schema() -> None:
    import msgspec

    schema = msgspec.json.encode(json_schema())
    done = node("scripts/gen-types.mjs", stdin=schema)
    assert done.returncode == 0, done.stderr.decode()
    committed = (JS_DIR / "protocol.d.ts").read_bytes()
    assert done.stdout == committed, (
        "client/js/protocol.d.ts is out of date: run `npm run gen-types` in client/js (with azs on PATH)"
    )
