// azsd-client: the azsd daemon from Node (VS Code and other Node-based editors).
//
// Written from docs/protocol.md alone: requests are msgpack maps tagged by `op`, sent from a DEALER
// socket as two frames [request id, payload] to `ipc://<runtime dir>/rpc`; the reply comes back as
// [request id, payload], so many requests can be in flight and replies are matched by id.
// Notifications are [topic, payload] on `ipc://<runtime dir>/pub`, topic `<root>\0<session>\0`.
//
// Timeouts follow the "Lazy Pirate" pattern: a request that gets no reply in time closes the socket
// (its other requests in flight fail too) and the next request opens a fresh one, so a daemon that
// restarted is reached again. A request that changes a store carries a `request_key` and is sent once
// more with the same key when the first try times out: the daemon carries it out at most once.
import { existsSync, realpathSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { join, resolve } from "node:path";
import { decode, encode } from "@msgpack/msgpack";
import { Dealer, Subscriber } from "zeromq";

/** The protocol version this client speaks (docs/protocol.md). */
export const PROTOCOL_VERSION = 1;

/** Requests that change a store: given a request key, and retried once with it. */
const KEYED = new Set([
  "createsession", "renamesession", "deletesession", "forksession", "archivesession", "appendevents",
  "markcompleted", "storecompaction", "reindex", "importsession", "ingestfile", "backup",
]);

/** Requests that may take long (a big file, a whole store): they wait at least LONG_TIMEOUT_MS. */
const LONG = new Set(["ingestfile", "follow", "unfollow", "export", "backup", "importsession", "reindex"]);
const LONG_TIMEOUT_MS = 300_000;
const HWM = 10_000;

/** Every error of this client; `code` says which (the daemon's codes, or `unavailable`, `no_reply`,
 * `protocol_error`). */
export class AzsdError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "AzsdError";
    this.code = code;
  }
}

/** The daemon answered with an error reply (`code`: not_found, bad_request, ...). */
export class RemoteError extends AzsdError {
  constructor(code, message) {
    super(code, message);
    this.name = "RemoteError";
  }
}

/** No daemon answers: not running, or it went away. */
export class Unavailable extends AzsdError {
  constructor(message, code = "unavailable") {
    super(code, message);
    this.name = "Unavailable";
  }
}

/** A request got no reply in time (it may have been carried out: a change is safe to send again with
 * its request key). */
export class NoReply extends Unavailable {
  constructor(message) {
    super(message, "no_reply");
    this.name = "NoReply";
  }
}

/** Where the daemon's sockets are: `runtimeDir`, else $AZSD_RUNTIME_DIR, else $XDG_RUNTIME_DIR/azsd,
 * else /tmp/azsd-$UID (the config file's `runtime-dir` is not read: pass it as `runtimeDir`). */
export function runtimeDir(given, env = process.env) {
  if (given) return given;
  if (env.AZSD_RUNTIME_DIR) return env.AZSD_RUNTIME_DIR;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, "azsd");
  return `/tmp/azsd-${process.getuid()}`;
}

/** The canonical absolute path of a worktree root: the string the daemon uses in topics. */
export function canonicalRoot(root) {
  const absolute = resolve(root);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** The PUB topic of a store, or of one session in it. */
export function topic(root, session) {
  return Buffer.from(session == null ? `${root}\0` : `${root}\0${session}\0`);
}

/** An event of a WireEvent as a value: its `data` is the event's JSON text. */
export function eventValue(wireEvent) {
  return JSON.parse(wireEvent.data);
}

function decodeMessage(payload, what) {
  let message;
  try {
    message = decode(payload);
  } catch (error) {
    throw new AzsdError("protocol_error", `undecodable ${what}: ${error.message}`);
  }
  if (message === null || typeof message !== "object" || typeof message.op !== "string") {
    throw new AzsdError("protocol_error", `a ${what} without an op`);
  }
  return message;
}

/** Live notifications of one store or session; iterate with `for await`, or `recv(timeoutMs)`.
 * ZeroMQ reconnects it to a restarted daemon by itself (within about a second); the client also renews
 * it at once when it sees a new daemon. Notifications published meanwhile are lost: re-read then. */
export class Subscription {
  constructor(endpoint, prefix) {
    this.endpoint = endpoint;
    this.prefix = prefix;
    this.closed = false;
    this.socket = this.open();
  }

  open() {
    const socket = new Subscriber({ linger: 0, receiveHighWaterMark: HWM });
    socket.connect(this.endpoint);
    socket.subscribe(this.prefix);
    return socket;
  }

  /** A fresh socket (a receive in progress goes on on it). */
  renew() {
    if (this.closed) return;
    const old = this.socket;
    this.socket = this.open();
    old.close();
  }

  /** The next notification, or null when none comes within `timeoutMs` (default: wait) or it is closed. */
  async recv(timeoutMs) {
    const deadline = timeoutMs == null ? null : Date.now() + timeoutMs;
    for (;;) {
      const socket = this.socket;
      socket.receiveTimeout = deadline === null ? -1 : Math.max(0, deadline - Date.now());
      let frames;
      try {
        frames = await socket.receive();
      } catch (error) {
        if (this.closed) return null;
        if (socket !== this.socket) continue; // renewed meanwhile
        if (error.code === "EAGAIN") return null;
        throw error;
      }
      if (frames.length !== 2) throw new AzsdError("protocol_error", `a notification in ${frames.length} frames`);
      return decodeMessage(frames[1], "notification");
    }
  }

  async *[Symbol.asyncIterator]() {
    while (!this.closed) {
      const note = await this.recv();
      if (note !== null) yield note;
    }
  }

  close() {
    this.closed = true;
    if (!this.socket.closed) this.socket.close();
  }
}

/** A connection to azsd: `request(message)` for any protocol message, and a method per common one. */
export class Client {
  /**
   * @param {object} [options]
   * @param {string} [options.runtimeDir] where the daemon's sockets are (see runtimeDir()).
   * @param {number} [options.timeout] milliseconds to wait for a reply (default 5000).
   */
  constructor(options = {}) {
    const dir = runtimeDir(options.runtimeDir);
    this.rpcPath = join(dir, "rpc");
    this.rpc = `ipc://${this.rpcPath}`;
    this.pub = `ipc://${join(dir, "pub")}`;
    this.timeout = options.timeout ?? 5000;
    /** Called with (status, previousPid) when the client finds a new daemon (it restarted). */
    this.onReconnect = options.onReconnect;
    this.pid = undefined; // the daemon's, once it answered
    this.nextId = 0n;
    this.pending = new Map();
    this.dealer = null;
    this.sending = Promise.resolve();
    this.checked = null; // the first request's status check
    this.subscriptions = new Set();
  }

  /** Send one request (a protocol message: `{op, ...fields}`) and resolve to its reply.
   * An error reply rejects with RemoteError; no daemon with Unavailable; no reply in time with NoReply. */
  async request(message, { timeout } = {}) {
    const wait = timeout ?? (LONG.has(message.op) ? Math.max(this.timeout, LONG_TIMEOUT_MS) : this.timeout);
    const status = await this.check();
    if (message.op === "status" && status.fresh) return status.reply;
    let sent = message;
    if (KEYED.has(message.op) && typeof message.request_key !== "string") {
      sent = { ...message, request_key: randomUUID().replaceAll("-", "") };
    }
    let reply;
    try {
      reply = await this.roundtrip(sent, wait);
    } catch (error) {
      if (!(error instanceof NoReply) || !KEYED.has(message.op)) throw error;
      reply = await this.roundtrip(sent, wait); // the same key: carried out at most once
    }
    if (reply.op === "errorreply") throw new RemoteError(reply.code, reply.message);
    return reply;
  }

  async check() {
    if (this.checked === null) {
      this.checked = this.firstContact();
      this.checked.catch(() => {
        this.checked = null;
      });
      const reply = await this.checked;
      return { reply, fresh: true };
    }
    return { reply: await this.checked, fresh: false };
  }

  async firstContact() {
    if (!existsSync(this.rpcPath)) {
      throw new Unavailable(`azsd is not running: start it with \`systemctl --user start azsd\` or \`azsd run\` (no socket file: ${this.rpcPath})`);
    }
    let reply;
    try {
      reply = await this.roundtrip({ op: "status" }, this.timeout);
    } catch (error) {
      if (error instanceof NoReply) throw new Unavailable(`azsd is not running: no answer on ${this.rpc} within ${this.timeout} ms`);
      throw error;
    }
    if (reply.op !== "statusreply") throw new AzsdError("protocol_error", `expected a statusreply, got ${reply.op}`);
    if (reply.protocol !== PROTOCOL_VERSION) {
      throw new AzsdError("protocol_error", `azsd ${reply.version} speaks protocol ${reply.protocol}, this client ${PROTOCOL_VERSION}: restart the daemon`);
    }
    const previous = this.pid;
    this.pid = reply.pid;
    if (previous !== undefined && previous !== reply.pid) {
      for (const subscription of this.subscriptions) subscription.renew(); // a new daemon: connect at once
      this.onReconnect?.(reply, previous);
    }
    return reply;
  }

  socket() {
    if (this.dealer === null) {
      const dealer = new Dealer({ linger: 0, sendHighWaterMark: HWM, receiveHighWaterMark: HWM });
      dealer.connect(this.rpc);
      this.dealer = dealer;
      this.read(dealer);
    }
    return this.dealer;
  }

  async read(dealer) {
    try {
      for await (const frames of dealer) {
        if (frames.length !== 2) continue;
        const waiting = this.pending.get(frames[0].toString("hex"));
        if (waiting === undefined) continue;
        try {
          waiting.resolve(decodeMessage(frames[1], "reply"));
        } catch (error) {
          waiting.reject(error);
        }
      }
    } catch (error) {
      if (!dealer.closed) throw error;
    }
  }

  roundtrip(message, timeoutMs) {
    const dealer = this.socket();
    this.nextId += 1n;
    const id = Buffer.alloc(8);
    id.writeBigUInt64BE(this.nextId);
    const key = id.toString("hex");
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.reset(new NoReply(`azsd did not answer ${message.op} on ${this.rpc} within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (fn) => (value) => {
        clearTimeout(timer);
        this.pending.delete(key);
        fn(value);
      };
      this.pending.set(key, { resolve: done(resolve), reject: done(reject) });
      const payload = encode(message, { ignoreUndefined: true });
      // zeromq allows one send at a time per socket: queue them
      this.sending = this.sending.then(() => dealer.send([id, payload])).catch((error) => {
        this.pending.get(key)?.reject(new Unavailable(`cannot send to azsd: ${error.message}`));
      });
    });
  }

  /** Close the socket and fail what is in flight with `error`; the next request reconnects. */
  reset(error) {
    const dealer = this.dealer;
    this.dealer = null;
    this.sending = Promise.resolve();
    if (dealer !== null && !dealer.closed) dealer.close();
    for (const waiting of [...this.pending.values()]) waiting.reject(error);
    this.pending.clear();
    this.checked = null;
  }

  /** Notifications of the store at `root`, or of one session in it. */
  subscribe(root, session) {
    const subscription = new Subscription(this.pub, topic(canonicalRoot(root), session));
    this.subscriptions.add(subscription);
    const close = subscription.close.bind(subscription);
    subscription.close = () => {
      this.subscriptions.delete(subscription);
      close();
    };
    return subscription;
  }

  /** Close every socket (requests in flight fail); the client reconnects if used again. */
  close() {
    this.reset(new AzsdError("closed", "the client was closed"));
    for (const subscription of this.subscriptions) subscription.close();
    this.subscriptions.clear();
  }

  // -- typed requests (any other: request({op, ...})) ------------------------------------------------

  status() {
    return this.request({ op: "status" });
  }

  createSession(root, { name, worktree } = {}) {
    return this.request({ op: "createsession", root: canonicalRoot(root), name, worktree });
  }

  listSessions(root, { worktree, limit, offset, archived, withUsage } = {}) {
    return this.request({ op: "listsessions", root: canonicalRoot(root), worktree, limit, offset, archived, with_usage: withUsage });
  }

  getSession(root, session) {
    return this.request({ op: "getsession", root: canonicalRoot(root), session });
  }

  renameSession(root, session, name) {
    return this.request({ op: "renamesession", root: canonicalRoot(root), session, name });
  }

  deleteSession(root, session, { withForks } = {}) {
    return this.request({ op: "deletesession", root: canonicalRoot(root), session, with_forks: withForks });
  }

  forkSession(root, session, atSeq, { name } = {}) {
    return this.request({ op: "forksession", root: canonicalRoot(root), session, at_seq: atSeq, name });
  }

  /** Store events, given as values ({AssistantText: {text}}, or "Compacting"): each is sent as its
   * JSON text, as the protocol carries it. */
  appendEvents(root, session, events) {
    const encoded = events.map((event) => JSON.stringify(event));
    return this.request({ op: "appendevents", root: canonicalRoot(root), session, events: encoded });
  }

  getEvents(root, session, { fromSeq, limit } = {}) {
    return this.request({ op: "getevents", root: canonicalRoot(root), session, from_seq: fromSeq, limit });
  }

  /** Every event from `fromSeq` on, page by page. */
  async *events(root, session, { fromSeq = 1, pageSize = 500 } = {}) {
    let next = fromSeq;
    while (next !== null) {
      const page = await this.getEvents(root, session, { fromSeq: next, limit: pageSize });
      yield* page.events;
      next = page.next_seq;
    }
  }

  buildContext(root, session, prompt, { backend } = {}) {
    return this.request({ op: "buildcontext", root: canonicalRoot(root), session, prompt, backend });
  }

  contextMeter(root, session) {
    return this.request({ op: "contextmeter", root: canonicalRoot(root), session });
  }

  search(root, query, { worktree, limit, worktrees, sessions, kinds, words } = {}) {
    return this.request({ op: "search", root: canonicalRoot(root), query, worktree, limit, worktrees, sessions, kinds, words });
  }

  indexStatus(root) {
    return this.request({ op: "indexstatus", root: canonicalRoot(root) });
  }

  markCompleted(root, session, success, { durationMs, costUsd } = {}) {
    return this.request({ op: "markcompleted", root: canonicalRoot(root), session, success, duration_ms: durationMs, cost_usd: costUsd });
  }
}
