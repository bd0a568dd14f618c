/**
 * The Store contract on etcd v3 (several machines). See ../store.ts for the contract.
 *
 * Layout. Every key lives under the installation prefix (key-space.ts), invisible to
 * callers. Revisions are etcd's own: one global revision for the whole etcd cluster,
 * so when several installations (or other programs) share an etcd, revisions seen
 * under one prefix have gaps. They stay strictly increasing, which is all the
 * contract's users rely on.
 *
 * Writes are single etcd transactions, so each bumps the revision by exactly one:
 * - create: if create_revision(key) == 0 then put, else read the key (AlreadyExists);
 * - update: if mod_revision(key) == expected then put, else read it (NotFound if
 *   absent, Conflict carrying the current item otherwise); a missing key's mod_revision
 *   is 0, which no expected revision above 0 matches (0 is answered without a write);
 * - delete: the same compare with a delete, or a plain delete without an expected revision.
 *
 * Lists are etcd range reads. A limited list returns a continue token that holds the
 * first page's revision and the last key returned; later pages are read at that
 * revision, so the pages form one consistent snapshot while writes go on (until that
 * revision is compacted: CompactedError). `remainingItemCount` is exact (etcd counts
 * the rest of the range for free).
 *
 * Watches are etcd watches with prev_kv, started after the caller's (exclusive)
 * revision; watches of one prefix share an etcd stream when they can (watch-fanout.ts),
 * which resumes by itself when etcd or the connection is lost (watch-stream.ts). A
 * watch "from now" first reads the current revision; writes issued through the same
 * store after watch() returned wait for that read, so the watch sees them.
 *
 * Compaction is etcd's: `compact(r)` compacts the whole etcd (every installation
 * sharing it) at r. It is logical as soon as the call returns (reads below r and
 * watches needing events below r fail with CompactedError); old revisions are removed
 * from disk in the background unless `physicalCompaction` asks to wait for that.
 * etcd keeps the state at r readable: after compact(r), get/list at r work and so does
 * a watch from r; a watch from below r fails, as the contract says (etcd alone would
 * still serve one from r - 1, so the store checks the start revision first). A watch
 * that was already running and resumes after a lost stream only needs what it has not
 * received yet, so it carries on unless that part was compacted.
 *
 * etcd does not report its compacted revision. `compactedRevision()` finds it: a read
 * at revision r fails exactly when r is below it, so it probes the last known value
 * (from this store's compactions and from compact revisions etcd reports when it
 * cancels a watch) and, when history was compacted further by someone else (another
 * process, etcd's --auto-compaction), binary-searches up to the current revision.
 * Usually one read; at most about log2(current revision) on the rare path.
 */
import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  ClosedError,
  CompactedError,
  ConflictError,
  FutureRevisionError,
  InvalidKeyError,
  NoSpaceError,
  NotFoundError,
  StorageError,
  TooLargeError,
  UnavailableError,
} from "../errors.ts";
import type {
  GetOptions,
  KeyValue,
  ListOptions,
  ListResult,
  Store,
  Watch,
  WatchOptions,
} from "../store.ts";
import { DEFAULT_WATCH_BUFFER, MAX_KEY_BYTES, MAX_VALUE_BYTES } from "../store.ts";
import { checkKey, checkRevision, checkValue } from "../validate.ts";
import { EtcdClient, EtcdRpcError, isUnavailable } from "./client.ts";
import { Compactor } from "./compactor.ts";
import { decodeContinue, encodeContinue } from "./continue-token.ts";
import { KeySpace, validatePrefix } from "./key-space.ts";
import { type Compare, CompareResult, CompareTarget, type TxnResponse } from "./messages.ts";
import { EtcdWatch, failedWatch } from "./store-watch.ts";
import { WatchFanout } from "./watch-fanout.ts";

/** Default time to wait for a connection to an endpoint before trying the next. */
export const DEFAULT_DIAL_TIMEOUT_MS = 5_000;
/** Default deadline of one request, fail-over and retries included. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** Default time a watch keeps trying to resume after losing etcd before it fails. */
export const DEFAULT_WATCH_RETRY_TIMEOUT_MS = 60_000;
/**
 * The `--max-request-bytes` etcd needs so that a value of MAX_VALUE_BYTES fits in one
 * request with its key and the transaction around it (etcd's default, 1.5 MiB, is
 * exactly MAX_VALUE_BYTES and leaves no room). With a smaller setting, large writes
 * fail with TooLargeError.
 */
export const ETCD_MAX_REQUEST_BYTES = MAX_VALUE_BYTES + MAX_KEY_BYTES + 64 * 1024;

export interface EtcdStoreOptions {
  /** etcd client URLs (`http://host:port`, `https://host:port` or `host:port`); any member of one cluster. */
  endpoints: string[];
  /** The installation's key prefix, e.g. "/setpoint/"; every key is stored under it. */
  prefix: string;
  /** Time to wait for a connection to one endpoint before trying the next. Default DEFAULT_DIAL_TIMEOUT_MS. */
  dialTimeoutMs?: number;
  /** Deadline of one request, fail-over and retries included. Default DEFAULT_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /** Default per-watch buffer (events) when `watch` is not given one. Default DEFAULT_WATCH_BUFFER. */
  watchBufferSize?: number;
  /** Time a watch keeps trying to resume after losing etcd. Default DEFAULT_WATCH_RETRY_TIMEOUT_MS. */
  watchRetryTimeoutMs?: number;
  /** Make compact() wait until etcd has removed the history from disk. Default false. */
  physicalCompaction?: boolean;
  /**
   * Compact etcd's history every this many milliseconds, to the revision of one
   * interval earlier, as kube-apiserver does (compactor.ts; `setpoint up` uses
   * DEFAULT_COMPACTION_INTERVAL_MS). 0 or absent: this store never compacts by itself.
   */
  compactionIntervalMs?: number;
  /** Told of each periodic compaction's failure (the next interval tries again). */
  onCompactionError?: (err: unknown) => void;
}

const COMPACTED = "required revision has been compacted";
const FUTURE = "required revision is a future revision";
const TOO_LARGE = "request is too large";
/** etcd's answer to writes while its NOSPACE alarm is raised (gRPC RESOURCE_EXHAUSTED too). */
const NO_SPACE = "database space exceeded";

function isCompacted(err: unknown): boolean {
  return err instanceof EtcdRpcError && err.details.includes(COMPACTED);
}

/**
 * "The key's modRevision is `expected`". A missing key has modRevision 0, so for any
 * expected revision above 0 this also says the key exists (one compare, one read in
 * etcd); an expected revision of 0 never matches a key and is answered without a write.
 */
function modIs(key: Buffer, expected: number): Compare {
  return { target: CompareTarget.MOD, result: CompareResult.EQUAL, key, mod_revision: expected };
}

export class EtcdStore implements Store {
  private readonly client: EtcdClient;
  private readonly keys: KeySpace;
  private readonly watchBufferSize: number;
  private readonly watchRetryTimeoutMs: number;
  private readonly physicalCompaction: boolean;
  private readonly watches = new Set<EtcdWatch>();
  /** Running etcd watch streams by prefix, each shared by the watches that joined it. */
  private readonly fanouts = new Map<string, WatchFanout[]>();
  /** Watches "from now" whose start revision is still being read; writes wait for them. */
  private readonly pendingStarts = new Set<Promise<void>>();
  /** Highest compacted revision seen so far (a lower bound of etcd's). */
  private knownCompacted = 0;
  private readonly compactor: Compactor | undefined;
  private closed = false;

  private constructor(opts: EtcdStoreOptions) {
    this.keys = new KeySpace(opts.prefix);
    this.watchBufferSize = opts.watchBufferSize ?? DEFAULT_WATCH_BUFFER;
    this.watchRetryTimeoutMs = opts.watchRetryTimeoutMs ?? DEFAULT_WATCH_RETRY_TIMEOUT_MS;
    this.physicalCompaction = opts.physicalCompaction ?? false;
    this.client = new EtcdClient({
      endpoints: opts.endpoints,
      dialTimeoutMs: opts.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS,
      requestTimeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
    const interval = opts.compactionIntervalMs ?? 0;
    if (interval > 0) {
      this.compactor = new Compactor({
        client: this.client,
        intervalMs: interval,
        onCompacted: (rev) => this.noteCompacted(rev),
        ...(opts.onCompactionError ? { onError: opts.onCompactionError } : {}),
      });
    }
  }

  /**
   * Connects to etcd and checks that some endpoint answers; UnavailableError if none
   * does within the dial timeout.
   */
  static async open(opts: EtcdStoreOptions): Promise<EtcdStore> {
    const store = new EtcdStore(opts);
    try {
      await store.currentRevision();
    } catch (err) {
      await store.close();
      throw err;
    }
    store.compactor?.start();
    return store;
  }

  /** The installation prefix keys are stored under, without trailing slashes. */
  get prefix(): string {
    return this.keys.base;
  }

  async get(key: string, opts: GetOptions = {}): Promise<KeyValue | null> {
    this.checkOpen();
    checkKey(key);
    const revision = opts.revision ?? 0;
    checkRevision("revision", revision);
    try {
      const res = await this.client.range({ key: this.keys.encode(key), revision });
      return res.kvs.length > 0 ? this.keys.item(res.kvs[0]) : null;
    } catch (err) {
      return this.rethrow(err, key, revision);
    }
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.checkOpen();
    validatePrefix(prefix);
    const limit = opts.limit && opts.limit > 0 ? Math.floor(opts.limit) : 0;
    let revision = opts.revision ?? 0;
    checkRevision("revision", revision);
    const range = this.keys.range(prefix);
    let start = range.key;
    if (opts.continue) {
      const c = decodeContinue(opts.continue, prefix);
      revision = c.revision;
      start = Buffer.concat([this.keys.encode(c.after), Buffer.from([0])]);
    }
    let res: Awaited<ReturnType<EtcdClient["range"]>>;
    try {
      res = await this.client.range({ key: start, range_end: range.rangeEnd, limit, revision });
    } catch (err) {
      return this.rethrow(err, prefix, revision);
    }
    const items = res.kvs.map((kv) => this.keys.item(kv));
    const result: ListResult = { items, revision: revision > 0 ? revision : res.header.revision };
    if (res.more && items.length > 0) {
      result.continue = encodeContinue({
        prefix,
        revision: result.revision,
        after: items[items.length - 1].key,
      });
      result.remainingItemCount = res.count - items.length;
    }
    return result;
  }

  async create(key: string, value: string): Promise<number> {
    this.checkOpen();
    checkKey(key);
    checkValue(key, value);
    const v = Buffer.from(value, "utf8");
    if (this.pendingStarts.size > 0) await this.settleStarts();
    const k = this.keys.encode(key);
    let res: TxnResponse;
    try {
      res = await this.client.txn({
        compare: [
          { target: CompareTarget.CREATE, result: CompareResult.EQUAL, key: k, create_revision: 0 },
        ],
        success: [{ request_put: { key: k, value: v } }],
        failure: [{ request_range: { key: k } }],
      });
    } catch (err) {
      return this.rethrow(err, key, 0, v.length);
    }
    if (res.succeeded) return res.header.revision;
    const current = res.responses[0]?.response_range?.kvs[0];
    throw new AlreadyExistsError(key, current ? this.keys.item(current) : null);
  }

  async update(key: string, value: string, expectedRevision: number): Promise<number> {
    this.checkOpen();
    checkKey(key);
    checkRevision("expected revision", expectedRevision);
    checkValue(key, value);
    const v = Buffer.from(value, "utf8");
    if (expectedRevision === 0) throw await this.noMatch(key, expectedRevision);
    if (this.pendingStarts.size > 0) await this.settleStarts();
    const k = this.keys.encode(key);
    let res: TxnResponse;
    try {
      res = await this.client.txn({
        compare: [modIs(k, expectedRevision)],
        success: [{ request_put: { key: k, value: v } }],
        failure: [{ request_range: { key: k } }],
      });
    } catch (err) {
      return this.rethrow(err, key, 0, v.length);
    }
    if (res.succeeded) return res.header.revision;
    throw this.casFailure(key, expectedRevision, res);
  }

  async delete(key: string, expectedRevision?: number): Promise<number> {
    this.checkOpen();
    checkKey(key);
    if (expectedRevision !== undefined) {
      checkRevision("expected revision", expectedRevision);
      if (expectedRevision === 0) throw await this.noMatch(key, expectedRevision);
    }
    if (this.pendingStarts.size > 0) await this.settleStarts();
    const k = this.keys.encode(key);
    try {
      if (expectedRevision === undefined) {
        const res = await this.client.deleteRange({ key: k });
        if (res.deleted === 0) throw new NotFoundError(key);
        return res.header.revision;
      }
      const res = await this.client.txn({
        compare: [modIs(k, expectedRevision)],
        success: [{ request_delete_range: { key: k } }],
        failure: [{ request_range: { key: k } }],
      });
      if (res.succeeded) return res.header.revision;
      throw this.casFailure(key, expectedRevision, res);
    } catch (err) {
      return this.rethrow(err, key, 0);
    }
  }

  /** Errors (closed store, bad arguments) are thrown by the first read of the returned watch. */
  watch(prefix: string, fromRevision: number, opts: WatchOptions = {}): Watch {
    const bufferSize = opts.bufferSize ?? this.watchBufferSize;
    try {
      this.checkOpen();
      validatePrefix(prefix);
      checkRevision("revision", fromRevision);
      if (!Number.isSafeInteger(bufferSize) || bufferSize < 1) {
        throw new InvalidKeyError(
          prefix,
          `watch buffer size must be a positive integer, got ${bufferSize}`,
        );
      }
    } catch (err) {
      return failedWatch(err as Error);
    }
    let leave: (() => void) | undefined;
    const watch = new EtcdWatch({
      fromRevision,
      bufferSize,
      onEnd: (w) => {
        this.watches.delete(w);
        leave?.();
      },
    });
    this.watches.add(watch);
    const start =
      fromRevision === 0
        ? this.currentRevision().then((rev) => rev + 1)
        : this.checkReadable(fromRevision).then(() => fromRevision + 1);
    const started = start.then(
      (startRevision) => {
        if (watch.ended) return;
        watch.start(startRevision);
        const fanout = this.fanoutFor(prefix, startRevision);
        fanout.join(watch);
        leave = () => fanout.leave(watch);
      },
      (err: unknown) => watch.fail(err instanceof Error ? err : new Error(String(err))),
    );
    if (fromRevision === 0) {
      this.pendingStarts.add(started);
      void started.then(() => this.pendingStarts.delete(started));
    }
    return watch;
  }

  async compact(revision: number): Promise<void> {
    this.checkOpen();
    checkRevision("revision", revision);
    if (revision === 0) return;
    try {
      await this.client.compact({ revision, physical: this.physicalCompaction });
    } catch (err) {
      // Already compacted at or past `revision`: nothing left to do.
      if (!isCompacted(err)) return this.rethrow(err, "", revision);
    }
    this.noteCompacted(revision);
  }

  async currentRevision(): Promise<number> {
    this.checkOpen();
    try {
      const res = await this.client.range({ key: this.keys.encode("/"), count_only: true });
      return res.header.revision;
    } catch (err) {
      return this.rethrow(err, "", 0);
    }
  }

  async compactedRevision(): Promise<number> {
    this.checkOpen();
    const known = this.knownCompacted;
    const probe = Math.max(known, 1);
    if (await this.readableAt(probe)) return known;
    // Compacted past what this store knows: the answer lies in (probe, current].
    let lo = probe;
    let hi = await this.currentRevision();
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await this.readableAt(mid)) hi = mid;
      else lo = mid;
    }
    this.noteCompacted(hi);
    return hi;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.compactor?.stop();
    for (const w of [...this.watches]) w.close();
    this.watches.clear();
    this.client.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError();
  }

  /** A running stream of `prefix` that a watch from `startRevision` can join, or a new one. */
  private fanoutFor(prefix: string, startRevision: number): WatchFanout {
    let list = this.fanouts.get(prefix);
    const found = list?.find((f) => f.canJoin(startRevision));
    if (found) return found;
    const fanout = new WatchFanout(
      {
        client: this.client,
        keys: this.keys,
        prefix,
        startRevision,
        retryTimeoutMs: this.watchRetryTimeoutMs,
        onCompacted: (rev) => this.noteCompacted(rev),
      },
      (done) => {
        const rest = this.fanouts.get(prefix)?.filter((f) => f !== done) ?? [];
        if (rest.length > 0) this.fanouts.set(prefix, rest);
        else this.fanouts.delete(prefix);
      },
    );
    if (!list) {
      list = [];
      this.fanouts.set(prefix, list);
    }
    list.push(fanout);
    return fanout;
  }

  private async settleStarts(): Promise<void> {
    await Promise.all([...this.pendingStarts]);
  }

  private noteCompacted(revision: number): void {
    if (revision > this.knownCompacted) this.knownCompacted = revision;
  }

  /** CompactedError unless a read at `revision` still works. */
  private async checkReadable(revision: number): Promise<void> {
    if (!(await this.readableAt(revision))) {
      const compacted = await this.compactedRevision();
      throw new CompactedError(revision, Math.max(compacted, revision + 1));
    }
  }

  /** Whether `revision` is not compacted (a read at it works, or it is in the future). */
  private async readableAt(revision: number): Promise<boolean> {
    try {
      await this.client.range({ key: this.keys.encode("/"), count_only: true, revision });
      return true;
    } catch (err) {
      if (isCompacted(err)) return false;
      if (err instanceof EtcdRpcError && err.details.includes(FUTURE)) return true;
      return this.rethrow(err, "", revision);
    }
  }

  /** The error of a compare-and-swap that cannot match (no key has modRevision 0). */
  private async noMatch(key: string, expectedRevision: number): Promise<StorageError> {
    const current = await this.get(key);
    return current ? new ConflictError(key, expectedRevision, current) : new NotFoundError(key);
  }

  /** The error of a compare-and-swap transaction whose compare failed. */
  private casFailure(key: string, expectedRevision: number, res: TxnResponse): StorageError {
    const current = res.responses[0]?.response_range?.kvs[0];
    if (!current) return new NotFoundError(key);
    return new ConflictError(key, expectedRevision, this.keys.item(current));
  }

  /** Rethrows an RPC failure as the storage error it means. */
  private async rethrow(err: unknown, key: string, revision: number, size = 0): Promise<never> {
    if (this.closed) throw new ClosedError();
    if (err instanceof StorageError) throw err;
    if (!(err instanceof EtcdRpcError)) throw err;
    if (err.details.includes(COMPACTED)) {
      const compacted = await this.compactedRevision().catch(() => revision + 1);
      throw new CompactedError(revision, Math.max(compacted, revision + 1));
    }
    if (err.details.includes(FUTURE)) {
      const current = await this.currentRevision().catch(() => 0);
      throw new FutureRevisionError(revision, current);
    }
    if (err.details.includes(NO_SPACE)) throw new NoSpaceError(err.details);
    if (err.details.includes(TOO_LARGE) || err.code === GrpcStatus.RESOURCE_EXHAUSTED) {
      throw new TooLargeError("value", size, MAX_VALUE_BYTES);
    }
    if (isUnavailable(err)) throw new UnavailableError(err.message);
    if (err.code === GrpcStatus.INVALID_ARGUMENT) throw new InvalidKeyError(key, err.details);
    throw new StorageError(err.message);
  }
}
