"""Each model response counted once on the whole machine (issue 34): the account's usage keys
(azsd/store/account.py), and the daemon that keeps them across its stores and its restarts.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

from azsd.model import Usage
from azsd.store import store_path
from azsd.store.account import AccountKeys
from azsd_client import Client
from tests.daemon_fixture import short_tmpdir, start_daemon
from tests.test_usage_counted import prompt, reply, tokens_of
from tests.test_usage_prices import write


def test_the_first_store_to_claim_a_key_owns_it(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        store_path(root).parent.mkdir(parents=True)
        store_path(root).touch()
    keys = AccountKeys()
    assert keys.claim([1, 2], str(one)) == set()
    assert keys.claim([2, 3], str(two)) == {2}
    assert keys.claim([1, 2], str(one)) == set()  # its own, asked again
    assert keys.counted([1, 2, 26], str(two)) == {1, 2}
    assert keys.counted([2, 26], str(one)) == set()
    assert keys.counted([26], str(two)) == set()  # a question claims nothing
    assert keys.claim([26], str(two)) == set()
    store_path(one).unlink()  # its store removed: what it counted is counted nowhere now
    assert keys.claim([1, 2], str(two)) == set()
    assert keys.counted([1], str(one)) == {1}


def test_adopting_a_store_keeps_the_first_owner_and_says_what_was_counted_twice(tmp_path: Path) -> None:
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    keys = AccountKeys()
    assert keys.adopt(one, [1, 2]) == 0
    assert keys.adopt(two, [2, 3]) == 1
    assert keys.adopted(one) and keys.adopted(two) and not keys.adopted(str(tmp_path))
    assert len(keys) == 3


def test_claims_wait_until_the_known_stores_are_taken_in() -> None:
    keys = AccountKeys(loading=True)
    answered = threading.Event()

    def claim() -> None:
        keys.claim([1], "/r")
        answered.set()

    threading.Thread(target=claim, daemon=True).start()
    assert not answered.wait(0.2)
    keys.loaded()
    assert answered.wait(5)


def _histories(tmp_path: Path) -> tuple[Path, Path]:
    """A session and its copy resumed later with one message more (another project's directory)."""
    sid = "abababab-0000-4000-8000-000000000001"
    original = write(tmp_path / "original.jsonl", [
        prompt(sid, "one", "2026-05-02T10:00:00Z"), reply(sid, 901, "2026-05-02T10:00:05Z", 1000),
    ])  # fmt: skip
    copied = [json.loads(line) for line in original.read_text().splitlines()]
    resumed = write(tmp_path / "resumed.jsonl", [
        *copied, prompt(sid, "two", "2026-05-03T10:00:00Z"), reply(sid, 902, "2026-05-03T10:00:05Z", 30),
    ])  # fmt: skip
    return original, resumed


def test_a_restarted_daemon_knows_what_every_store_counted(tmp_path: Path) -> None:
    """The keys live only in the stores: a new daemon takes them in from every store it knows."""
    original, resumed = _histories(tmp_path)
    one, two = (tmp_path / "one").resolve(), (tmp_path / "two").resolve()
    one.mkdir()
    two.mkdir()
    base = short_tmpdir()
    (base / "run").mkdir(mode=0o700)
    try:
        first = start_daemon(base / "run")
        with Client(first.config, timeout=30) as client:
            client.import_session(one, "claude", original)
        first.close()
        second = start_daemon(base / "run")
        try:
            with Client(second.config, timeout=30) as client:
                client.import_session(two, "claude", resumed)
                counted = [client.usage(root, worktrees=[""]).total for root in (one, two)]
        finally:
            second.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    kinds = ("input", "output", "cache_read", "cache_write")
    assert [Usage(**{k: getattr(u, k) for k in kinds}) for u in counted] == [
        tokens_of(original), Usage(input=30, output=3, cache_read=60),
    ]  # fmt: skip
