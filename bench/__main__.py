"""Run every benchmark: `python -m bench [--quick]`."""

from __future__ import annotations

import argparse

from bench import follow_latency, store_append


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="short forms (under 3 minutes in all)")
    args = parser.parse_args()
    store_append.main(quick=args.quick)
    follow_latency.main(quick=args.quick)


if __name__ == "__main__":
    main()
