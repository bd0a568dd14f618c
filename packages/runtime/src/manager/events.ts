/**
 * Event recording (core/v1 Events), deduplicated and bounded, as client-go's
 * recorder behaves:
 *
 * - Deduplication: an Event identical to an earlier one (same object by UID,
 *   type, reason, action, message and component) does not create a new object; the
 *   first one's `count` and `lastTimestamp` are patched instead. Repeats that
 *   arrive while a write is in flight are folded into the next write.
 * - Spam filter: each (component, object) pair may record `EVENT_SPAM_BURST`
 *   Events, refilled at one per `EVENT_SPAM_REFILL_MS`; beyond that Events are
 *   dropped (and logged at debug), so a hot loop cannot flood the API.
 * - The dedup cache is an LRU of `EVENT_CACHE_SIZE` entries.
 * - Writes go one at a time, in the order recorded, as client-go's broadcaster
 *   sends them to the API: a burst of Events waits its turn behind the
 *   controller's own writes instead of competing with them. At most
 *   `EVENT_QUEUE_SIZE` Events wait; more are dropped (client-go's
 *   maxQueuedEvents, DropIfChannelFull).
 *
 * Recording never throws and never blocks the caller: writes run in the
 * background (`flush()` waits for them), failures are logged. Events are
 * informative; nothing may depend on them being written.
 *
 * `newEvent` builds the same Event for a tool that writes one itself (and wants
 * to see the write fail); `lastOccurrence` reads back when an Event (core/v1 or
 * events.k8s.io/v1) last happened.
 */
import type { KubeObject } from "@setpoint/api";
import { nowTimestamp } from "@setpoint/api";
import type { Client } from "../client/client.ts";
import { isNotFound } from "../client/errors.ts";
import { type Logger, silentLogger } from "../log.ts";

export type EventType = "Normal" | "Warning";

/** More about an Event. */
export interface EventOptions {
  /** What was done, or failed, about the object (the Event's `action`, e.g. "TerminalError"). */
  action?: string | undefined;
}

/** Records Events about objects. */
export interface EventRecorder {
  /** Records an Event about `obj` (which needs apiVersion, kind and metadata.name). */
  event(
    obj: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    opts?: EventOptions,
  ): void;
  normal(obj: KubeObject, reason: string, message: string, opts?: EventOptions): void;
  warning(obj: KubeObject, reason: string, message: string, opts?: EventOptions): void;
  /** Resolves when the Events recorded so far have been written (or given up on). */
  flush?(): Promise<void>;
}

/** Entries of the deduplication cache (client-go's maxLruCacheEntries). */
export const EVENT_CACHE_SIZE = 4096;
/** Events a (component, object) pair may record in a burst (client-go's spam burst). */
export const EVENT_SPAM_BURST = 25;
/** One more Event is allowed per this many ms once the burst is spent (client-go: 1 per 5 min). */
export const EVENT_SPAM_REFILL_MS = 300_000;
/** Longer messages are truncated to this many characters. */
export const EVENT_MESSAGE_MAX = 1024;
/** Events waiting to be written, at most (client-go's maxQueuedEvents). */
export const EVENT_QUEUE_SIZE = 1000;
/** Namespace of Events about cluster-scoped objects. */
export const CLUSTER_EVENT_NAMESPACE = "default";

const EVENT_TYPE = { apiVersion: "v1", kind: "Event" } as const;

export interface RecorderOptions {
  /** `source.component` and `reportingComponent` (e.g. the controller's name). */
  component: string;
  /** `source.host` and `reportingInstance` (e.g. the manager's identity). */
  instance?: string | undefined;
  logger?: Logger | undefined;
  /** Milliseconds clock for the spam filter; Date.now by default. */
  now?: (() => number) | undefined;
}

interface Series {
  namespace: string;
  /** The Event object's name, once created. */
  name?: string | undefined;
  count: number;
  /** Count the server has. */
  written: number;
  firstTimestamp: string;
  lastTimestamp: string;
  body: Record<string, unknown>;
  /** Waiting in the queue to be written. */
  queued?: boolean;
}

interface Bucket {
  tokens: number;
  at: number;
}

let sequence = 0n;

/** A unique Event name: `<object>.<hex>`, as client-go names them. */
function eventName(objName: string): string {
  sequence = (sequence + 1n) % 1_000_000n;
  const stamp = BigInt(Date.now()) * 1_000_000n + sequence;
  return `${objName}.${stamp.toString(16)}`;
}

/** Who records an Event, and more about it. */
export interface EventSource extends EventOptions {
  /** `source.component` and `reportingComponent`. */
  component: string;
  /** `source.host` and `reportingInstance`. */
  instance?: string | undefined;
}

/** The fields of an Event about `obj` that do not change as it recurs (no metadata, count, times). */
function eventBody(
  obj: KubeObject,
  type: EventType,
  reason: string,
  message: string,
  from: EventSource,
): Record<string, unknown> {
  const { apiVersion = "", kind = "" } = obj;
  const { name = "", namespace, uid, resourceVersion } = obj.metadata;
  const involvedObject: Record<string, string> = { apiVersion, kind, name };
  if (namespace) involvedObject.namespace = namespace;
  if (uid) involvedObject.uid = uid;
  if (resourceVersion) involvedObject.resourceVersion = resourceVersion;
  const source: Record<string, string> = { component: from.component };
  if (from.instance) source.host = from.instance;
  return {
    involvedObject,
    reason,
    message:
      message.length > EVENT_MESSAGE_MAX
        ? `${message.slice(0, EVENT_MESSAGE_MAX - 3)}...`
        : message,
    type,
    source,
    reportingComponent: from.component,
    reportingInstance: from.instance ?? "",
    ...(from.action ? { action: from.action } : {}),
  };
}

/**
 * A new core/v1 Event about `obj` (in its namespace, or CLUSTER_EVENT_NAMESPACE
 * for a cluster-scoped object), occurring once at `now`: what the Recorder
 * writes, for callers that create the Event themselves.
 */
export function newEvent(
  obj: KubeObject,
  type: EventType,
  reason: string,
  message: string,
  from: EventSource,
  now: Date = new Date(),
): KubeObject {
  const ts = nowTimestamp(now);
  return {
    ...EVENT_TYPE,
    metadata: {
      name: eventName(obj.metadata.name ?? ""),
      namespace: obj.metadata.namespace || CLUSTER_EVENT_NAMESPACE,
    },
    ...eventBody(obj, type, reason, message, from),
    count: 1,
    firstTimestamp: ts,
    lastTimestamp: ts,
  };
}

/**
 * When an Event last occurred: the latest of its timestamps, core/v1
 * (lastTimestamp, firstTimestamp, eventTime, series.lastObservedTime) or
 * events.k8s.io/v1 (deprecatedLastTimestamp...), or its creation; "" if none.
 */
export function lastOccurrence(ev: KubeObject): string {
  const series = ev.series as { lastObservedTime?: unknown | undefined } | undefined;
  const candidates = [
    series?.lastObservedTime,
    ev.lastTimestamp,
    ev.deprecatedLastTimestamp,
    ev.eventTime,
    ev.firstTimestamp,
    ev.deprecatedFirstTimestamp,
    ev.metadata.creationTimestamp,
  ];
  let latest = "";
  let latestMs = Number.NEGATIVE_INFINITY;
  for (const c of candidates) {
    if (typeof c !== "string" || c === "") continue;
    const t = Date.parse(c);
    if (Number.isFinite(t) && t > latestMs) {
      latest = c;
      latestMs = t;
    }
  }
  return latest;
}

/** The recorder a controller uses; writes core/v1 Events through `client`. */
export class Recorder implements EventRecorder {
  private readonly series = new Map<string, Series>();
  private readonly buckets = new Map<string, Bucket>();
  /** Series with a count the server does not have yet, in the order recorded. */
  private readonly queue: Series[] = [];
  /** The writer going through the queue, while there is one. */
  private draining: Promise<void> | undefined;
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(
    private readonly client: Pick<Client, "create" | "patch">,
    private readonly opts: RecorderOptions,
  ) {
    this.log = opts.logger ?? silentLogger();
    this.now = opts.now ?? Date.now;
  }

  normal(obj: KubeObject, reason: string, message: string, opts?: EventOptions): void {
    this.event(obj, "Normal", reason, message, opts);
  }

  warning(obj: KubeObject, reason: string, message: string, opts?: EventOptions): void {
    this.event(obj, "Warning", reason, message, opts);
  }

  event(
    obj: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    opts: EventOptions = {},
  ): void {
    const { apiVersion, kind } = obj;
    const { name, namespace, uid } = obj.metadata;
    if (!apiVersion || !kind || !name) {
      this.log.warn(
        { reason },
        "cannot record an Event about an object without apiVersion, kind and name",
      );
      return;
    }
    const body = eventBody(obj, type, reason, message, {
      component: this.opts.component,
      instance: this.opts.instance,
      action: opts.action,
    });
    const text = body.message as string;
    const objKey = `${apiVersion}|${kind}|${namespace ?? ""}|${name}|${uid ?? ""}`;
    if (!this.allow(objKey)) {
      this.log.debug({ kind, name, reason }, "event dropped by the spam filter");
      return;
    }
    const key = `${objKey}|${type}|${reason}|${opts.action ?? ""}|${text}`;
    const ts = nowTimestamp();
    let s = this.series.get(key);
    if (s) {
      this.series.delete(key); // re-insert: most recently used last
      s.count++;
      s.lastTimestamp = ts;
    } else {
      s = {
        namespace: namespace || CLUSTER_EVENT_NAMESPACE,
        count: 1,
        written: 0,
        firstTimestamp: ts,
        lastTimestamp: ts,
        body,
      };
    }
    this.series.set(key, s);
    if (this.series.size > EVENT_CACHE_SIZE) {
      const oldest = this.series.keys().next().value as string;
      this.series.delete(oldest);
    }
    if (!s.queued) {
      if (this.queue.length >= EVENT_QUEUE_SIZE) {
        this.log.debug({ kind, name, reason }, "event dropped: too many waiting to be written");
        return;
      }
      s.queued = true;
      this.queue.push(s);
    }
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Resolves when every Event recorded so far has been written (or failed). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Writes the queued series one at a time until none is left. */
  private async drain(): Promise<void> {
    for (let s = this.queue.shift(); s; s = this.queue.shift()) {
      s.queued = false;
      await this.pump(s);
    }
  }

  /** Writes the series until the server has its latest count. */
  private async pump(s: Series): Promise<void> {
    while (s.written < s.count) {
      const count = s.count;
      try {
        if (s.name) {
          try {
            await this.client.patch(
              EVENT_TYPE,
              s.name,
              s.namespace,
              { count, lastTimestamp: s.lastTimestamp },
              { type: "merge" },
            );
          } catch (e) {
            if (!isNotFound(e)) throw e;
            s.name = undefined; // the Event expired or was deleted: start a new one
            continue;
          }
        } else {
          const name = eventName(String((s.body.involvedObject as { name: string }).name));
          await this.client.create({
            ...EVENT_TYPE,
            metadata: { name, namespace: s.namespace },
            ...s.body,
            count,
            firstTimestamp: s.firstTimestamp,
            lastTimestamp: s.lastTimestamp,
          });
          s.name = name;
        }
        s.written = count;
      } catch (e) {
        this.log.warn(
          { err: e instanceof Error ? e.message : String(e), reason: s.body.reason },
          "could not write Event",
        );
        return;
      }
    }
  }

  private allow(objKey: string): boolean {
    const now = this.now();
    let b = this.buckets.get(objKey);
    if (!b) {
      b = { tokens: EVENT_SPAM_BURST, at: now };
    } else {
      this.buckets.delete(objKey);
      b.tokens = Math.min(EVENT_SPAM_BURST, b.tokens + (now - b.at) / EVENT_SPAM_REFILL_MS);
      b.at = now;
    }
    this.buckets.set(objKey, b);
    if (this.buckets.size > EVENT_CACHE_SIZE) {
      this.buckets.delete(this.buckets.keys().next().value as string);
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}
