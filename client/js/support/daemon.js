// The real azsd daemon as a subprocess on a private runtime dir, for the tests (as the Python suite's
// tests/daemon_fixture.py). $AZSD_PYTHON is the Python that has azsd installed (default: the
// checkout's .venv).
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const PYTHON = process.env.AZSD_PYTHON ?? resolve(HERE, "../../../.venv/bin/python");

export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** A fresh directory short enough for ipc:// paths; `run` inside it is the runtime dir (mode 0700). */
export function tempBase() {
  const base = mkdtempSync(join("/tmp", "azsd-js-"));
  mkdirSync(join(base, "run"), { mode: 0o700 });
  mkdirSync(join(base, "worktree"));
  return base;
}

function readyPid(runtime) {
  try {
    return JSON.parse(readFileSync(join(runtime, "azsd.json"), "utf8")).pid;
  } catch {
    return null;
  }
}

/** Start `python -m azsd run --runtime-dir <base>/run`; resolves once it is ready. */
export async function startDaemon(base) {
  const runtime = join(base, "run");
  const env = { ...process.env, XDG_STATE_HOME: join(base, "state"), XDG_CONFIG_HOME: join(base, "config") };
  for (const name of ["AZSD_RUNTIME_DIR", "AZSD_CONFIG", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]) delete env[name];
  const proc = spawn(PYTHON, ["-m", "azsd", "run", "--runtime-dir", runtime], { env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  proc.stderr.on("data", (chunk) => (log += chunk));
  const deadline = Date.now() + 15_000;
  while (readyPid(runtime) !== proc.pid) {
    if (proc.exitCode !== null) throw new Error(`the daemon exited ${proc.exitCode}: ${log}`);
    if (Date.now() > deadline) throw new Error(`the daemon did not become ready: ${log}`);
    await sleep(20);
  }
  return {
    proc,
    runtime,
    /** SIGTERM, and wait for it to exit. */
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((done) => proc.once("exit", done));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

export function removeBase(base) {
  rmSync(base, { recursive: true, force: true });
}
