// Types of azsd-client (index.js). The protocol's messages are generated into protocol.d.ts.
import type {
  AppendReply, BuildContext, ContextReply, EventsPage, IndexStatusReply, MeterReply, Notification, OkReply, Reply,
  Request, SearchReply, SessionReply, SessionsReply, StatusReply, WireEvent,
} from "./protocol.js";

export * from "./protocol.js";

export declare const PROTOCOL_VERSION: 1;

/** An event as a value: `{AssistantText: {text: "..."}}`, or a bare variant name such as "Compacting". */
export type EventValue = Record<string, unknown> | string;

export declare class AzsdError extends Error {
  /** The daemon's error code, or `unavailable`, `no_reply`, `protocol_error`, `closed`. */
  code: string;
  constructor(code: string, message: string);
}
export declare class RemoteError extends AzsdError {}
export declare class Unavailable extends AzsdError {}
export declare class NoReply extends Unavailable {}

export declare function runtimeDir(given?: string, env?: Record<string, string | undefined>): string;
export declare function canonicalRoot(root: string): string;
export declare function topic(root: string, session?: number | null): Buffer;
export declare function eventValue(wireEvent: WireEvent): EventValue;

export declare class Subscription implements AsyncIterable<Notification> {
  /** The next notification, or null when none comes within `timeoutMs` (default: wait). */
  recv(timeoutMs?: number): Promise<Notification | null>;
  [Symbol.asyncIterator](): AsyncIterator<Notification>;
  /** A fresh socket (done by the client when it finds a restarted daemon). */
  renew(): void;
  close(): void;
}

export interface ClientOptions {
  /** Where the daemon's sockets are (default: $AZSD_RUNTIME_DIR, $XDG_RUNTIME_DIR/azsd, /tmp/azsd-$UID). */
  runtimeDir?: string;
  /** Milliseconds to wait for a reply (default 5000; long requests wait at least 300 000). */
  timeout?: number;
  /** Called when the client finds a new daemon (it restarted): re-read what you show. */
  onReconnect?: (status: StatusReply, previousPid: number) => void;
}

export declare class Client {
  constructor(options?: ClientOptions);
  /** Any protocol request; an error reply rejects with RemoteError. */
  request<R extends Reply = Reply>(message: Request, options?: { timeout?: number }): Promise<R>;
  subscribe(root: string, session?: number): Subscription;
  close(): void;

  status(): Promise<StatusReply>;
  createSession(root: string, options?: { name?: string; worktree?: string }): Promise<SessionReply>;
  listSessions(
    root: string,
    options?: { worktree?: string; limit?: number; offset?: number; archived?: "exclude" | "include" | "only"; withUsage?: boolean },
  ): Promise<SessionsReply>;
  getSession(root: string, session: number): Promise<SessionReply>;
  renameSession(root: string, session: number, name: string): Promise<SessionReply>;
  deleteSession(root: string, session: number, options?: { withForks?: boolean }): Promise<OkReply>;
  forkSession(root: string, session: number, atSeq: number, options?: { name?: string }): Promise<SessionReply>;
  appendEvents(root: string, session: number, events: EventValue[]): Promise<AppendReply>;
  getEvents(root: string, session: number, options?: { fromSeq?: number; limit?: number }): Promise<EventsPage>;
  events(root: string, session: number, options?: { fromSeq?: number; pageSize?: number }): AsyncIterable<WireEvent>;
  buildContext(root: string, session: number, prompt: string, options?: { backend?: BuildContext["backend"] }): Promise<ContextReply>;
  contextMeter(root: string, session: number): Promise<MeterReply>;
  search(
    root: string,
    query: string,
    options?: { worktree?: string; limit?: number; worktrees?: string[]; sessions?: number[]; kinds?: string[]; words?: boolean },
  ): Promise<SearchReply>;
  indexStatus(root: string): Promise<IndexStatusReply>;
  markCompleted(root: string, session: number, success: boolean, options?: { durationMs?: number; costUsd?: number }): Promise<OkReply>;
}
