"""The blocking client is generated from the asyncio one: `client/unasync.py --check` (like httpcore's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

UNASYNC = Path(__file__).resolve().parent.parent / "client" / "unasync.py"


def test_the_generated_sync_client_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(UNASYNC), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_rewrite_swaps_asyncio_tokens_for_blocking_ones() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "doctest", str(UNASYNC)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
