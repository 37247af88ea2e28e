"""Move the pinned agent programs to their newest versions, and run their tests on them.

    python -m tests.bump_agents [--check] [NAME ...]

For each program of tests/agent_versions.json (or those named), asks npm for the newest version,
writes it into the file, installs it into the cache (tests/real_agents.py) and runs the real-agent
tests against it. With ``--check`` the file is left as it was: the newest versions are installed and
tested, and the pins restored afterwards. The exit status is the tests'; when they fail, what changed
is for a person to read in their output (and docs/agents.md to be updated with it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

from tests.real_agents import VERSIONS_FILE

TESTS = ("tests/test_real_claude.py", "tests/test_real_codex.py")


def newest(package: str) -> str:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is not installed")
    done = subprocess.run([npm, "view", package, "version"], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"npm view {package} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bump_agents", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="programs to bump (default: all)")
    parser.add_argument("--check", action="store_true", help="test the newest versions, keep the pins")
    args = parser.parse_args(argv)
    original = VERSIONS_FILE.read_text()
    pins = json.loads(original)
    for name in args.names or list(pins):
        if name not in pins:
            sys.exit(f"unknown program {name!r}: one of {', '.join(pins)}")
        version = newest(pins[name]["package"])
        print(f"{name}: {pins[name]['version']} -> {version}")
        pins[name]["version"] = version
    VERSIONS_FILE.write_text(json.dumps(pins, indent=2) + "\n")
    try:
        env = {**os.environ, "CI": "true"}  # a program that cannot be installed fails, never skips
        tests = [sys.executable, "-m", "pytest", "-p", "no:randomly", *TESTS]
        return subprocess.run(tests, env=env, check=False).returncode
    finally:
        if args.check:
            VERSIONS_FILE.write_text(original)


if __name__ == "__main__":
    raise SystemExit(main())
