"""azsd beside what people run instead: ripgrep for search, ccusage for usage and cost.

The data: a corpus-shaped `~/.claude/projects` tree (:mod:`bench.agent_corpus`; 1 GB, quick: 20 MB),
imported once with the real `azs import claude` (its time reported as `import_vs_ccusage`, and as the
search index build: the import stores and indexes in the same transactions).

- `search_vs_rg`: p50 of the real `azs search --json` process, over 5 realistic queries, against `rg`
  over the same JSONL files (the same phrase, case-insensitive, fixed string, counts per file).
- `search_request_vs_rg`: the same searches as `Search` requests of a sync `Client` that is already
  connected (an editor plugin's case, no interpreter start), against the same `rg` runs.
- `search_index_build`: the import (store + index) against one `rg` run: how many searches it takes
  for the index to have paid for itself.
- `usage_vs_ccusage`: p50 of the real `azs usage --by day --json` process against `ccusage daily
  --json --offline` (ccusage 18) on the same CLAUDE_CONFIG_DIR (target ≤ 0.05× at 200 MB).
- `import_vs_ccusage`: the one-time `azs import claude` against one `ccusage daily` run (target ≤ 1×:
  importing a history costs less than one ccusage run over it); its MB/s printed beside it.
- `first_usage_all_vs_ccusage20`: the first `azs usage --all` of a daemon just started, nothing
  imported (every file read in place), against ccusage 20 `daily --json --offline`; and
  `usage_vs_ccusage20`, `import_vs_ccusage20` as above, against ccusage 20.
- `statusline`: p50 of the real `azs statusline` process against starting the same interpreter with
  nothing to do (`python -c pass`); target ≤ 50 ms. Its first run asks the daemon (two `Usage`
  requests and a meter) and leaves the figures for the next runs (azsd_client.statusfile), which
  print the line without loading the client; `statusline_asked`: the run that asks (`--json`).

A peer that is not installed is skipped with a note (see bench/README.md for installing them).
Run alone: `python -m bench.peers [--quick] [--mb N] [--import-only] [--file-mb M]` (`--mb`: a corpus
of N MB; `--import-only`: the import and one ccusage run, `import_vs_ccusage`, nothing else;
`--file-mb`: session files of about M MB, replicas one after the other, as long sessions are).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from azsd_client import Client
from bench.agent_corpus import write_projects
from bench.common import (
    daemon_config,
    installed_env,
    interleaved_p50,
    process_p50,
    report,
    run_json,
    run_process,
    running_daemon,
)

FULL_BYTES = 1 << 30
QUICK_BYTES = 20 << 20
#: Phrases one looks for in agents' histories (drawn from `bench.agent_corpus.WORDS`).
QUERIES = ("busy timeout", "sqlite", "parser error", "schema migration", "cache memory")
_ROOT = Path(__file__).resolve().parents[1]


def ccusage_path(version: int = 18) -> str | None:
    """ccusage 18: $CCUSAGE, `.peers/node_modules/.bin/ccusage` (bench/README.md), where .ci/run
    installs it, or on PATH; ccusage 20: $CCUSAGE20, `.peers20/…`, or `~/.cache/azsd/ccusage20/…`."""
    suffix = "" if version == 18 else str(version)
    installed = _ROOT / f".peers{suffix}" / "node_modules" / ".bin" / "ccusage"
    default = Path.home() / ".cache" / "azsd" / f"ccusage{suffix}"
    cache = Path(os.environ.get(f"AZSD_CCUSAGE{suffix}_DIR") or default)
    cached = cache / "node_modules" / ".bin" / "ccusage"  # where .ci/run installs ccusage 18
    for candidate in (os.environ.get(f"CCUSAGE{suffix}"), str(installed), str(cached)):
        if candidate and Path(candidate).is_file() and shutil.which("node"):
            return candidate
    return shutil.which("ccusage") if version == 18 else None


def main(
    *, quick: bool = False, mb: int | None = None, import_only: bool = False, file_mb: float = 0
) -> None:
    target = mb << 20 if mb else QUICK_BYTES if quick else FULL_BYTES
    rounds = 3
    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        config_dir, project, run = base / "claude", base / "project", base / "run"
        project.mkdir()
        files, size = write_projects(config_dir, project, target, file_bytes=int(file_mb * (1 << 20)))
        if not files:
            print("# peers: skipped: the corpus (../shared/corpus/claude-session) is absent")
            return
        (base / "xdg").mkdir(mode=0o700)  # where `azs statusline` keeps its figures
        env = installed_env({"AZSD_RUNTIME_DIR": str(run), "CLAUDE_CONFIG_DIR": str(config_dir)})
        env["XDG_RUNTIME_DIR"] = str(base / "xdg")
        azs = [str(Path(sys.executable).parent / "azs"), "--root", str(project)]
        with running_daemon(run):
            # a daemon just started, nothing imported: `usage --all` reads every file in place
            first_s, first = run_json([*azs, "--timeout", "3600", "--json", "usage", "--all"], env, project)
            import_s = run_process([*azs, "--timeout", "3600", "import", "claude"], env, project)
            if import_only:
                _import_only(ccusage_path(), env, files, size, import_s)
                return
            search = [*azs, "search", "--json", "--all-worktrees", "--limit", "20"]
            search_cli = [[*search, f'"{q}"'] for q in QUERIES]
            run_process(search_cli[0], env, project)  # warm: the store opened, pages cached
            azs_search_s = process_p50(search_cli, env, rounds, project)
            usage_cli = [[*azs, "usage", "--by", "day", "--json", "--all-worktrees"]]
            _, steady = run_json(usage_cli[0], env, project)
            if first["total"]["input"] != steady["total"]["input"]:  # the first answer must be right
                raise RuntimeError(f"usage --all read {first['total']} in place, the store {steady['total']}")
            azs_usage_s = process_p50(usage_cli, env, rounds, project)
            run_process([*azs, "statusline"], env, project)  # the run that asks, and leaves the figures
            lines = {
                "statusline": [*azs, "statusline"],
                "asked": [*azs, "statusline", "--json"],
                "python": [sys.executable, "-c", "pass"],
                "bare": [sys.executable, "-S", "-c", "pass"],  # issue 34's baseline: no site at all
            }
            timed = interleaved_p50(lines, env, rounds * 3, project)
            statusline_s, asked_s, python_s = timed["statusline"], timed["asked"], timed["python"]
            usage_all_s = process_p50([[*azs, "--json", "usage", "--all"]], env, rounds, project)
            with Client(daemon_config(run), timeout=120) as client:
                client.search(project, f'"{QUERIES[0]}"', limit=20)
                times = []
                for _ in range(rounds * 3):
                    for q in QUERIES:
                        start = time.perf_counter()
                        client.search(project, f'"{q}"', limit=20)
                        times.append(time.perf_counter() - start)
                request_s = statistics.median(times)
        print(
            f"# peers: {files} Claude session files, {size / 1e6:.0f} MB; azs import took {import_s:.1f} s "
            f"({size / 1e6 / import_s:.1f} MB/s); azs statusline {statusline_s * 1e3:.0f} ms"
        )
        report("statusline", statusline_s * 1e3, "ms", python_s * 1e3)
        report("statusline_asked", asked_s * 1e3, "ms", python_s * 1e3)
        report("statusline_vs_python_S", statusline_s * 1e3, "ms", timed["bare"] * 1e3)
        if rg is None:
            print("# search_vs_rg: skipped: rg is not installed (apt-get install -y ripgrep)")
        else:
            projects = str(config_dir / "projects")
            rg_argv = [[rg, "-i", "-F", "-c", q, projects] for q in QUERIES]
            run_process(rg_argv[0], env)  # the files in the page cache, as for azs
            rg_s = process_p50(rg_argv, env, rounds)
            report("search_vs_rg", azs_search_s * 1e3, "ms", rg_s * 1e3)
            report("search_request_vs_rg", request_s * 1e3, "ms", rg_s * 1e3)
            report("search_index_build", import_s * 1e3, "ms", rg_s * 1e3)
        figures = {
            18: {"usage_vs_ccusage": azs_usage_s, "import_vs_ccusage": import_s},
            20: {"first_usage_all_vs_ccusage20": first_s, "usage_all_vs_ccusage20": usage_all_s,
                 "usage_vs_ccusage20": azs_usage_s,
                 "import_vs_ccusage20": import_s},
        }  # fmt: skip
        for version, named in figures.items():
            peer = ccusage_path(version)
            if peer is None:
                print(f"# {', '.join(named)}: skipped: ccusage {version} is not installed (bench/README.md)")
                continue
            cc_argv = [[peer, "daily", "--json", "--offline"]]
            run_process(cc_argv[0], env)
            cc_s = process_p50(cc_argv, env, rounds)
            for name, seconds in named.items():
                report(name, seconds * 1e3, "ms", cc_s * 1e3)


def _import_only(ccusage: str | None, env: dict[str, str], files: int, size: int, import_s: float) -> None:
    """The import's figures alone: its MB/s, and its time against one ccusage run's."""
    print(f"# peers: {files} Claude session files, {size / 1e6:.0f} MB; azs import took {import_s:.1f} s "
          f"({size / 1e6 / import_s:.1f} MB/s)")  # fmt: skip
    if ccusage is None:
        print("# import_vs_ccusage: skipped: ccusage is not installed (see bench/README.md)")
        return
    cc_argv = [[ccusage, "daily", "--json", "--offline"]]
    run_process(cc_argv[0], env)
    report("import_vs_ccusage", import_s * 1e3, "ms", process_p50(cc_argv, env, 3) * 1e3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mb", type=int, help="the corpus's size in MB (default: 1024, quick: 20)")
    parser.add_argument("--import-only", action="store_true", help="the import against ccusage alone")
    parser.add_argument("--file-mb", type=float, default=0, help="session files of about N MB")
    args = parser.parse_args()
    main(quick=args.quick, mb=args.mb, import_only=args.import_only, file_mb=args.file_mb)
