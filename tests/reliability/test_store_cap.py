"""Workers and their sockets are bounded (issue 2/7): past `max-open-stores`, opening one more store
closes the least recently used idle one (a ZeroMQ context holds ~1023 sockets, and each store's
threads hold one each). Every request is still answered, and `status` never lists more stores."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from azsd.config import resolve_config
from azsd.errors import ConfigError
from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon
from tests.reliability.common import scaled
from tests.reliability.pipeline import Pipe

CAP = 3


def test_many_stores_are_served_within_the_cap() -> None:
    base = short_tmpdir()
    (base / "run").mkdir(mode=0o700)
    (base / "config" / "azsd").mkdir(parents=True)
    (base / "config" / "azsd" / "config.toml").write_text(f"max-open-stores = {CAP}\n")
    roots = [base / f"w{i}" for i in range(scaled(12, 200))]
    for root in roots:
        root.mkdir()
    d = start_daemon(base / "run")
    most: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            status = d.request(p.Status())
            assert isinstance(status, p.StatusReply)
            most.append(len(status.stores))
            done.wait(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    clients = [Pipe(d) for _ in range(3)]
    try:
        sent: list[tuple[Pipe, bytes, type[p.Reply]]] = []
        for n, root in enumerate(roots):
            client = clients[n % len(clients)]
            sent.append(
                (client, client.send(p.CreateSession(root=str(root), name=root.name)), p.SessionReply)
            )
            sent.append((client, client.send(p.ListSessions(root=str(root))), p.SessionsReply))
        for client in clients:
            rids = [rid for c, rid, _ in sent if c is client]
            replies = client.replies(rids)
            for c, rid, kind in sent:
                if c is client:
                    assert isinstance(replies[rid], kind), replies[rid]
        # Every store was opened in turn (and each kept its session); reopening them all works too.
        for root in roots:
            listed = d.request(p.ListSessions(root=str(root)))
            assert isinstance(listed, p.SessionsReply) and [s.name for s in listed.sessions] == [root.name]
    finally:
        done.set()
        watcher.join()
        for client in clients:
            client.close()
        d.close()
        shutil.rmtree(base, ignore_errors=True)
    assert most and max(most) <= CAP, max(most)


def test_max_open_stores_is_a_checked_config_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("max-open-stores = 7\n")
    assert resolve_config(environ={}, config_file=path, runtime_dir="/tmp/x").max_open_stores == 7
    assert resolve_config(environ={}, config_file=None, runtime_dir="/tmp/x").max_open_stores == 128
    for wrong in (0, 1000):
        path.write_text(f"max-open-stores = {wrong}\n")
        with pytest.raises(ConfigError, match="max-open-stores"):
            resolve_config(environ={}, config_file=path, runtime_dir="/tmp/x")
