"""Ingest throughput: `azs ingest` of a big Claude stream-json file through the running daemon.

The file (~100 MB; `--quick`: ~10 MB) is generated into a temp dir from corpus-like events: an
init line, prompts, assistant text and tool calls with usage on every line, user lines carrying
multi-line tool results, and a final `result` line, so the real parser, compaction and store run.
The figure is events stored per second of wall time of the real `azs ingest` subprocess
(CLI start-up included).

Baseline, in the same run: the physical chain without azsd, `bench/bare_ingest.py`, a bare script
run as a process of its own (start-up included, as the CLI's is) — read the same file line by
line, msgspec-decode each line, compress it with zstd (level 3) and insert it with sqlite3 in
batched DELETE-journal transactions; its rate is rows per second.
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


def main(*, quick: bool = False) -> None:
    size = 10_000_000 if quick else 100_000_000
    runs = 2
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        source = base / "agent.jsonl"
        source_bytes = write_stream_json(source, size)
        azsd_rates: list[float] = []
        with running_daemon(base / "run"):
            with Client(daemon_config(base / "run")) as client:
                for i in range(runs):
                    root = base / f"wt{i}"
                    root.mkdir()
                    sid = client.create_session(root, "ingest").session.id
                    elapsed, appended = azs_ingest(base / "run", root, sid, source)
                    azsd_rates.append(appended / elapsed)
        bare_rates: list[float] = []
        for i in range(runs):
            db = base / f"bare{i}.db"
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "bench.bare_ingest", str(source), str(db)],
                capture_output=True,
                check=True,
            )
            bare_rates.append(int(done.stdout) / (time.perf_counter() - start))
            os.unlink(db)
        print(f"# ingest: {source_bytes / 1e6:.0f} MB stream-json, {appended} events per run")
    report("ingest", max(azsd_rates), "events/s", max(bare_rates))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
