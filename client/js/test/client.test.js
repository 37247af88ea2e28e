// The JavaScript client against the real daemon: requests and replies, errors, notifications,
// pipelining, timeouts and reconnecting to a restarted daemon.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Router } from "zeromq";
import { Client, NoReply, RemoteError, Unavailable, eventValue } from "../index.js";
import { removeBase, sleep, startDaemon, tempBase } from "../support/daemon.js";

describe("against one daemon", () => {
  let base, daemon, client, root;

  before(async () => {
    base = tempBase();
    daemon = await startDaemon(base);
    client = new Client({ runtimeDir: daemon.runtime, timeout: 10_000 });
    root = join(base, "worktree");
  });

  after(async () => {
    client.close();
    await daemon.stop();
    removeBase(base);
  });

  test("status, create, append, page, context, meter, search", async () => {
    const status = await client.status();
    assert.equal(status.op, "statusreply");
    assert.equal(status.pid, daemon.proc.pid);
    assert.equal(status.protocol, 1);

    const { session } = await client.createSession(root, { name: "from node" });
    assert.equal(session.name, "from node");
    assert.equal(session.state, "new");

    const appended = await client.appendEvents(root, session.id, [
      { UserMessage: { content: "why does the parser panic?" } },
      { AssistantText: { text: "It calls unwrap() on None." } },
      "Compacting",
    ]);
    assert.deepEqual(appended.events.map((e) => [e.seq, e.kind]), [[1, "UserMessage"], [2, "AssistantText"], [3, "Compacting"]]);
    assert.deepEqual(eventValue(appended.events[1]), { AssistantText: { text: "It calls unwrap() on None." } });

    const page = await client.getEvents(root, session.id, { fromSeq: 2, limit: 1 });
    assert.deepEqual(page.events.map((e) => e.seq), [2]);
    assert.equal(page.next_seq, 3);
    const all = [];
    for await (const event of client.events(root, session.id, { pageSize: 2 })) all.push(event.seq);
    assert.deepEqual(all, [1, 2, 3]);

    const context = await client.buildContext(root, session.id, "and now?");
    assert.match(context.prompt, /and now\?/);
    assert.match(context.prompt, /unwrap\(\) on None/);
    const meter = await client.contextMeter(root, session.id);
    assert.equal(meter.op, "meterreply");
    assert.ok(meter.chars > 0 && meter.threshold > meter.chars);

    const { hits } = await client.search(root, "unwrap");
    assert.deepEqual(hits.map((h) => [h.session, h.seq, h.session_name]), [[session.id, 2, "from node"]]);
    assert.deepEqual(JSON.parse(hits[0].data), { AssistantText: { text: "It calls unwrap() on None." } });

    await client.markCompleted(root, session.id, true, { durationMs: 1500, costUsd: 0 });
    const done = await client.getSession(root, session.id);
    assert.equal(done.session.state, "succeeded");
  });

  test("errors are RemoteErrors with the daemon's code", async () => {
    await client.createSession(root, { name: "the store exists" });
    await assert.rejects(client.getSession(root, 999), (error) => error instanceof RemoteError && error.code === "not_found");
    await assert.rejects(client.request({ op: "getsession", root, session: 1, bogus: true }), { code: "bad_request" });
    await assert.rejects(client.request({ op: "nosuchop" }), { code: "bad_request" });
    await assert.rejects(client.listSessions("/nonexistent/dir"), { code: "no_such_root" });
    await assert.rejects(client.search(root, '"unbalanced'), { code: "bad_request" });
    assert.equal((await client.status()).op, "statusreply"); // the connection is still good
  });

  test("many requests in flight are matched to their replies by id", async () => {
    const { session } = await client.createSession(root, { name: "pipelined" });
    const names = Array.from({ length: 30 }, (_, i) => `name ${i}`);
    const replies = await Promise.all(names.map((name, i) => (i % 2 ? client.status() : client.renameSession(root, session.id, name))));
    replies.forEach((reply, i) => {
      if (i % 2) assert.equal(reply.op, "statusreply");
      else assert.equal(reply.session.name, names[i]);
    });
  });

  test("notifications of a store and of one session", async () => {
    const store = client.subscribe(root);
    const { session } = await client.createSession(root, { name: "watched" });
    const one = client.subscribe(root, session.id);
    await sleep(200); // the subscriptions reach the daemon's PUB socket
    await client.appendEvents(root, session.id, [{ AssistantText: { text: "live" } }]);
    await client.renameSession(root, session.id, "watched, renamed");

    const seen = [];
    for (;;) {
      const note = await store.recv(5000);
      assert.ok(note, `no notification after ${JSON.stringify(seen)}`);
      seen.push(note.op);
      if (note.op === "sessionchanged") break;
    }
    assert.deepEqual(seen.filter((op) => op !== "sessioncreated"), ["eventsappended", "sessionchanged"]);
    const appended = await one.recv(5000);
    assert.equal(appended.op, "eventsappended");
    assert.equal(appended.session_id, session.id);
    assert.deepEqual(eventValue(appended.events[0]), { AssistantText: { text: "live" } });
    store.close();
    one.close();
  });
});

test("no daemon: Unavailable at once", async () => {
  const base = tempBase();
  const client = new Client({ runtimeDir: join(base, "run"), timeout: 10_000 });
  const started = Date.now();
  await assert.rejects(client.status(), (error) => error instanceof Unavailable && /not running/.test(error.message));
  assert.ok(Date.now() - started < 2000);
  client.close();
  removeBase(base);
});

test("a request without a reply times out, a change is sent twice with one key", async () => {
  const base = tempBase();
  const router = new Router({ linger: 0 });
  await router.bind(`ipc://${join(base, "run", "rpc")}`);
  const seen = [];
  const answering = (async () => {
    const { decode, encode } = await import("@msgpack/msgpack");
    for await (const [identity, id, payload] of router) {
      const message = decode(payload);
      seen.push(message);
      if (message.op === "status") await router.send([identity, id, encode({ op: "statusreply", version: "fake", pid: 1, uptime_s: 0, stores: [], follows: [], protocol: 1 })]);
      // anything else: never answered
    }
  })().catch(() => {});
  const client = new Client({ runtimeDir: join(base, "run"), timeout: 300 });
  await assert.rejects(client.getSession("/", 1), NoReply);
  await assert.rejects(client.createSession("/", { name: "x" }), NoReply);
  const creates = seen.filter((m) => m.op === "createsession");
  assert.equal(creates.length, 2);
  assert.equal(creates[0].request_key, creates[1].request_key);
  assert.match(creates[0].request_key, /^[0-9a-f]{32}$/);
  assert.equal(seen.filter((m) => m.op === "getsession").length, 1); // a read is not sent again
  client.close();
  router.close();
  await answering;
  removeBase(base);
});

test("the daemon restarted underneath: the client and its subscription reconnect", async () => {
  const base = tempBase();
  const root = join(base, "worktree");
  let daemon = await startDaemon(base);
  const restarts = [];
  const client = new Client({ runtimeDir: daemon.runtime, timeout: 1000, onReconnect: (status, previous) => restarts.push([previous, status.pid]) });
  try {
    const { session } = await client.createSession(root, { name: "survives" });
    const subscription = client.subscribe(root, session.id);
    const first = daemon.proc.pid;
    await daemon.stop();
    await assert.rejects(client.getSession(root, session.id), Unavailable);

    daemon = await startDaemon(base);
    assert.notEqual(daemon.proc.pid, first);
    let status;
    for (let i = 0; i < 20 && status === undefined; i++) {
      status = await client.status().catch(() => sleep(100).then(() => undefined));
    }
    assert.equal(status.pid, daemon.proc.pid);
    assert.deepEqual(restarts, [[first, daemon.proc.pid]]);
    assert.equal((await client.getSession(root, session.id)).session.name, "survives");
    await sleep(300); // the renewed subscription reaches the new PUB socket
    await client.appendEvents(root, session.id, [{ AssistantText: { text: "after the restart" } }]);
    const note = await subscription.recv(5000);
    assert.ok(note, "no notification from the new daemon");
    assert.deepEqual(eventValue(note.events[0]), { AssistantText: { text: "after the restart" } });
  } finally {
    client.close();
    await daemon.stop();
    removeBase(base);
  }
});
