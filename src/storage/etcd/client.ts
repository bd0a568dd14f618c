/**
 * A thin etcd v3 client on @grpc/grpc-js: the few KV, Watch and Maintenance RPCs the
 * etcd store needs, over one gRPC channel per endpoint, with fail-over between
 * endpoints. It knows nothing of the Store contract; store.ts builds on it.
 *
 * Fail-over. Requests go to a preferred endpoint while its channel is connected. When it
 * is not (connection refused, dropped, or the member reports it has no leader), the
 * request goes to the next connected endpoint, and that one becomes preferred. Whether a
 * failed request is sent again depends on its RetryPolicy: reads are repeated on any
 * "unavailable" error, writes only when the request certainly never reached a member
 * (no connection, or a member without a leader rejected it up front), because repeating
 * a compare-and-swap whose outcome is unknown could report a spurious conflict.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ClosedError, UnavailableError } from "../errors.ts";
import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  StatusRequest,
  StatusResponse,
  TxnRequest,
  TxnResponse,
  WatchRequest,
  WatchResponse,
} from "./messages.ts";

/**
 * Interval of HTTP/2 keepalive pings on an otherwise silent connection, so a member that
 * vanished without closing its sockets is noticed. etcd refuses pings more frequent than
 * its --grpc-keepalive-min-time (5 s by default).
 */
export const KEEPALIVE_TIME_MS = 10_000;
/** How long a keepalive ping may go unanswered before the connection is dropped. */
export const KEEPALIVE_TIMEOUT_MS = 5_000;
/** First delay before reconnecting to a member that went away. */
export const RECONNECT_BACKOFF_INITIAL_MS = 100;
/** Longest delay between reconnection attempts, so a restarted member is used again soon. */
export const RECONNECT_BACKOFF_MAX_MS = 1_000;
/** Longest pause between attempts while no endpoint is reachable. */
export const RETRY_BACKOFF_MAX_MS = 250;
/** How often waiting requests look again for a connected endpoint. */
const PICK_POLL_MS = 50;

/** What a failed request may do: be sent again on any "unavailable" error, or only when it surely was never sent. */
export type RetryPolicy = "idempotent" | "unsent-only";

export interface EtcdClientOptions {
  /** etcd client URLs: `http://host:port`, `https://host:port` or `host:port`. */
  endpoints: readonly string[];
  /** How long to wait for a connection to an endpoint before trying the next one. */
  dialTimeoutMs: number;
  /** Deadline of one request, fail-over and retries included. */
  requestTimeoutMs: number;
}

/** An error status returned by etcd (or by gRPC on its way). */
export class EtcdRpcError extends Error {
  override name = "EtcdRpcError";
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly endpoint: string,
  ) {
    super(`etcd ${endpoint}: ${grpc.status[code] ?? code}: ${details}`);
  }
}

/** True for "cannot reach etcd now" statuses (as opposed to answers to the request). */
export function isUnavailable(err: unknown): boolean {
  return (
    err instanceof EtcdRpcError &&
    (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED)
  );
}

/** Statuses that say the request was rejected before any member could apply it. */
const UNSENT_DETAILS = [
  "No connection established",
  "etcdserver: no leader",
  "etcdserver: not capable",
];

function canRetry(err: EtcdRpcError, policy: RetryPolicy): boolean {
  if (err.code !== grpc.status.UNAVAILABLE) return false;
  if (policy === "idempotent") return true;
  return UNSENT_DETAILS.some((d) => err.details.includes(d));
}

interface Method<Req, Res> {
  path: string;
  serialize: (req: Req) => Buffer;
  deserialize: (buf: Buffer) => Res;
}

interface Methods {
  range: Method<RangeRequest, RangeResponse>;
  put: Method<PutRequest, PutResponse>;
  deleteRange: Method<DeleteRangeRequest, DeleteRangeResponse>;
  txn: Method<TxnRequest, TxnResponse>;
  compact: Method<CompactionRequest, CompactionResponse>;
  watch: Method<WatchRequest, WatchResponse>;
  status: Method<StatusRequest, StatusResponse>;
}

let methods: Methods | undefined;

/** Loads proto/rpc.proto once per process. */
function loadMethods(): Methods {
  if (methods) return methods;
  const dir = fileURLToPath(new URL("./proto/", import.meta.url));
  const def = protoLoader.loadSync(join(dir, "rpc.proto"), {
    includeDirs: [dir],
    keepCase: true,
    longs: Number,
    enums: Number,
    defaults: true,
  });
  const pick = <Req, Res>(service: string, name: string): Method<Req, Res> => {
    const svc = def[`etcdserverpb.${service}`] as protoLoader.ServiceDefinition;
    const m = svc[name] as unknown as protoLoader.MethodDefinition<Req, Res>;
    return { path: m.path, serialize: m.requestSerialize, deserialize: m.responseDeserialize };
  };
  methods = {
    range: pick("KV", "Range"),
    put: pick("KV", "Put"),
    deleteRange: pick("KV", "DeleteRange"),
    txn: pick("KV", "Txn"),
    compact: pick("KV", "Compact"),
    watch: pick("Watch", "Watch"),
    status: pick("Maintenance", "Status"),
  };
  return methods;
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.keepalive_time_ms": KEEPALIVE_TIME_MS,
  "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.initial_reconnect_backoff_ms": RECONNECT_BACKOFF_INITIAL_MS,
  "grpc.max_reconnect_backoff_ms": RECONNECT_BACKOFF_MAX_MS,
  // Lists and watch batches can exceed gRPC's default 4 MiB; etcd bounds what it sends.
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
};

/** One endpoint and its gRPC channel. */
class Connection {
  readonly client: grpc.Client;
  constructor(readonly endpoint: string) {
    const { address, secure } = parseEndpoint(endpoint);
    const creds = secure ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
    this.client = new grpc.Client(address, creds, CHANNEL_OPTIONS);
  }
  state(connect: boolean): grpc.connectivityState {
    return this.client.getChannel().getConnectivityState(connect);
  }
}

/** Splits an endpoint URL into a gRPC address and whether it uses TLS. */
export function parseEndpoint(endpoint: string): { address: string; secure: boolean } {
  const m = /^(?:(https?):\/\/)?([^/]+)\/?$/.exec(endpoint.trim());
  if (!m) throw new TypeError(`invalid etcd endpoint ${JSON.stringify(endpoint)}`);
  return { address: m[2], secure: m[1] === "https" };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class EtcdClient {
  private readonly conns: Connection[];
  private readonly methods = loadMethods();
  private preferred = 0;
  private closed = false;

  constructor(private readonly opts: EtcdClientOptions) {
    if (opts.endpoints.length === 0) throw new TypeError("at least one etcd endpoint is required");
    this.conns = opts.endpoints.map((e) => new Connection(e));
    // Connect to every endpoint now, so fail-over finds a warm connection.
    for (const c of this.conns) c.state(true);
  }

  get endpoints(): readonly string[] {
    return this.opts.endpoints;
  }

  range(req: RangeRequest): Promise<RangeResponse> {
    return this.unary(this.methods.range, req, "idempotent");
  }

  put(req: PutRequest): Promise<PutResponse> {
    return this.unary(this.methods.put, req, "unsent-only");
  }

  deleteRange(req: DeleteRangeRequest): Promise<DeleteRangeResponse> {
    return this.unary(this.methods.deleteRange, req, "unsent-only");
  }

  txn(req: TxnRequest): Promise<TxnResponse> {
    return this.unary(this.methods.txn, req, "unsent-only");
  }

  compact(req: CompactionRequest): Promise<CompactionResponse> {
    return this.unary(this.methods.compact, req, "unsent-only");
  }

  /** Status of whichever member answers (of `endpoint` only, when given). */
  async status(endpoint?: string): Promise<StatusResponse> {
    if (endpoint === undefined) return this.unary(this.methods.status, {}, "idempotent");
    const conn = this.conns.find((c) => c.endpoint === endpoint);
    if (!conn) throw new TypeError(`unknown endpoint ${endpoint}`);
    return this.callOnce(conn, this.methods.status, {}, Date.now() + this.opts.requestTimeoutMs);
  }

  /**
   * Opens a Watch stream on a connected endpoint (waiting for one until `deadline`).
   * The stream asks etcd to end it when the member loses its leader, so a watch on a
   * partitioned member moves to another one instead of going silent.
   */
  async openWatchStream(
    deadline: number,
  ): Promise<{ stream: grpc.ClientDuplexStream<WatchRequest, WatchResponse>; endpoint: string }> {
    const conn = await this.connection(deadline);
    const md = new grpc.Metadata();
    md.set("hasleader", "true");
    const m = this.methods.watch;
    const stream = conn.client.makeBidiStreamRequest(m.path, m.serialize, m.deserialize, md, {});
    return { stream, endpoint: conn.endpoint };
  }

  /** Moves the preference off `endpoint` after it failed a request or a watch. */
  demote(endpoint: string): void {
    const i = this.conns.findIndex((c) => c.endpoint === endpoint);
    if (i === this.preferred) this.preferred = (i + 1) % this.conns.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.conns) c.client.close();
  }

  private async unary<Req, Res>(m: Method<Req, Res>, req: Req, policy: RetryPolicy): Promise<Res> {
    const deadline = Date.now() + this.opts.requestTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      const conn = this.readyConnection() ?? (await this.connection(deadline));
      try {
        return await this.callOnce(conn, m, req, deadline);
      } catch (err) {
        if (this.closed) throw new ClosedError();
        if (!(err instanceof EtcdRpcError) || !canRetry(err, policy)) throw err;
        if (Date.now() >= deadline) throw err;
        this.demote(conn.endpoint);
        if (attempt >= this.conns.length - 1) {
          await sleep(Math.min(RETRY_BACKOFF_MAX_MS, 10 * 2 ** attempt, deadline - Date.now()));
        }
      }
    }
  }

  private callOnce<Req, Res>(
    conn: Connection,
    m: Method<Req, Res>,
    req: Req,
    deadline: number,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      conn.client.makeUnaryRequest(
        m.path,
        m.serialize,
        m.deserialize,
        req,
        new grpc.Metadata(),
        { deadline },
        (err, res) => {
          if (err) reject(new EtcdRpcError(err.code, err.details, conn.endpoint));
          else resolve(res as Res);
        },
      );
    });
  }

  /** The preferred endpoint if connected, else the first connected one after it. */
  private readyConnection(): Connection | undefined {
    const n = this.conns.length;
    for (let i = 0; i < n; i++) {
      const idx = (this.preferred + i) % n;
      const conn = this.conns[idx];
      if (conn.state(true) === grpc.connectivityState.READY) {
        this.preferred = idx;
        return conn;
      }
    }
    return undefined;
  }

  /**
   * Waits for a connected endpoint. Gives up with UnavailableError at `deadline`, or
   * after the dial timeout if no endpoint connects at all.
   */
  private async connection(deadline: number): Promise<Connection> {
    const start = Date.now();
    const giveUp = Math.min(deadline, start + this.opts.dialTimeoutMs);
    for (;;) {
      if (this.closed) throw new ClosedError();
      const conn = this.readyConnection();
      if (conn) return conn;
      const now = Date.now();
      if (now >= giveUp) {
        throw new UnavailableError(
          `no etcd endpoint reachable within ${now - start}ms: ${this.opts.endpoints.join(", ")}`,
        );
      }
      await this.anyStateChange(Math.min(giveUp, now + PICK_POLL_MS));
    }
  }

  /** Resolves when some channel changes state, or at `until`. */
  private anyStateChange(until: number): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        resolve();
      };
      for (const c of this.conns) {
        try {
          c.client.getChannel().watchConnectivityState(c.state(false), until, finish);
        } catch {
          finish();
        }
      }
    });
  }
}
