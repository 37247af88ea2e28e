"""Ingest throughput: `azs ingest` of a big Claude stream-json file through the running daemon.

The file (~100 MB; `--quick`: ~10 MB) is generated into a temp dir from corpus-like events: an
init line, prompts, assistant text and tool calls with usage on every line, user lines carrying
multi-line tool results, and a final `result` line, so the real parser, compaction and store run.
The figure is events stored per second of wall time from the start of the real `azs ingest`
subprocess (CLI start-up included) until the daemon has also kept the file's full record (it does
so right after, when the store is idle: the client asks `FullStatus` until nothing waits).

Baseline (`ingest`), in the same run: the bare chain doing the same work without azsd,
`bench/bare_ingest.py`, a script run as a process of its own (start-up included, as the CLI's is):
read the same file line by line, msgspec-decode each line, compress it with zstd (level 3) and
insert it with sqlite3 in batched DELETE-journal transactions; index the search text of the events
azsd makes of the file (made beforehand) in FTS5 in the same transactions; keep the full record
(the file in whole-line chunks of at most 1 MiB, zstd at the full record's level). Its rate is
azsd's events over its own time. `ingest_events_only`: against the chain without the search index
and the full record (the baseline before 7/7, rows per second), azsd's time without the full record.
Run alone: `python -m bench.ingest [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from azsd.compact import prepare_for_store
from azsd.ingest.file import parse_file
from azsd.search import search_text
from azsd_client import Client
from bench.common import daemon_config, report, running_daemon, write_stream_json


def azs_ingest(runtime: Path, root: Path, session: int, source: Path) -> tuple[float, int]:
    """Wall seconds of `azs ingest`, and the events it appended."""
    argv = [sys.executable, "-m", "azsd_client", "--runtime-dir", str(runtime), "--root", str(root), "--json"]
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, "ingest", str(source), "-s", str(session)], capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"azs ingest failed: {done.stderr.decode(errors='replace')}")
    reply = msgspec.json.decode(done.stdout.splitlines()[-1])
    return elapsed, int(reply["appended"])


def _until_full(client: Client, root: Path, size: int) -> None:
    """Wait until the store's full record holds the `size` bytes of the file and nothing waits."""
    deadline = time.monotonic() + 120
    while True:
        status = client.full_status(root)
        if status.source_bytes >= size and status.waiting_bytes == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the full record never caught up: {status}")
        time.sleep(0.002)


def _bare(source: Path, db: Path, texts: Path | None) -> float:
    start = time.perf_counter()
    argv = [sys.executable, "-m", "bench.bare_ingest", str(source), str(db)]
    subprocess.run([*argv, str(texts)] if texts else argv, capture_output=True, check=True)
    elapsed = time.perf_counter() - start
    os.unlink(db)
    return elapsed


def main(*, quick: bool = False) -> None:
    size = 10_000_000 if quick else 100_000_000
    runs = 2
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        source = base / "agent.jsonl"
        source_bytes = write_stream_json(source, size)
        events, parse = parse_file(source)
        texts = [text for event in prepare_for_store(events) if (text := search_text(event)) is not None]
        given = base / "texts.json"
        given.write_bytes(msgspec.json.encode({"lines": parse.lines, "texts": texts}))
        whole: list[float] = []
        events_only: list[float] = []
        bare: list[float] = []
        bare_events_only: list[float] = []
        with running_daemon(base / "run"), Client(daemon_config(base / "run")) as client:
            for i in range(runs):  # azsd and the bare chains in turn: the same neighbours
                root = base / f"wt{i}"
                root.mkdir()
                sid = client.create_session(root, "ingest").session.id
                start = time.perf_counter()
                elapsed, appended = azs_ingest(base / "run", root, sid, source)
                _until_full(client, root, source_bytes)
                whole.append(time.perf_counter() - start)
                events_only.append(elapsed)
                bare.append(_bare(source, base / f"bare{i}.db", given))
                bare_events_only.append(_bare(source, base / f"bare{i}.db", None))
        print(f"# ingest: {source_bytes / 1e6:.0f} MB stream-json, {appended} events per run")
    report("ingest", appended / min(whole), "events/s", appended / min(bare))
    report("ingest_events_only", appended / min(events_only), "events/s", parse.lines / min(bare_events_only))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
