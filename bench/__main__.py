"""Run every benchmark: `python -m bench [--quick]` (each one also runs alone: `python -m bench.<name>`).

Every figure is printed as `BENCH <name> value=… unit=… baseline=… ratio=…`, its baseline measured
in the same run; the total time goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench import (
    agents_import,
    context_list,
    follow_latency,
    ingest,
    memory,
    peers,
    rpc,
    startup,
    storage,
    store_append,
    sync,
    transcript,
    watch_latency,
    web,
    write_lock,
)

BENCHES = {
    "store_append": store_append.main,
    "follow_latency": follow_latency.main,
    "watch_latency": watch_latency.main,
    "ingest": ingest.main,
    "rpc": rpc.main,
    "context_list": context_list.main,
    "storage": storage.main,
    "memory": memory.main,
    "write_lock": write_lock.main,
    "sync": sync.main,
    "peers": peers.main,
    "startup": startup.main,
    "web": web.main,
    "transcript": transcript.main,
    "agents_import": agents_import.main,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="short forms (under 3 minutes in all)")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"only these, of: {', '.join(BENCHES)}")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in BENCHES]
    if unknown:
        parser.error(f"no such benchmark: {', '.join(unknown)} (there are: {', '.join(BENCHES)})")
    start = time.monotonic()
    for name in args.names or BENCHES:
        BENCHES[name](quick=args.quick)
        sys.stdout.flush()
    print(f"# bench: done in {time.monotonic() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
