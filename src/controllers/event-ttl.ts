/**
 * Event expiry: an Event is deleted once it has been quiet for the TTL (default
 * one hour, Kubernetes' --event-ttl), measured from its latest timestamp
 * (lastTimestamp, eventTime, series.lastObservedTime, creation), so a series
 * that keeps recurring stays while it recurs.
 *
 * Cheap by construction: informers of the manager's shared cache on core/v1
 * and events.k8s.io/v1 Events (objects reduced to their timestamps; set up by
 * a runnable, so they run leader or not and count in /readyz) feed each
 * Event's expiry time into the
 * work queue's delay heap (`enqueueAfter`): one timer for the earliest expiry,
 * O(log n) per change, and nothing scans the Events on a schedule. When an
 * Event's time comes, it is deleted with preconditions on its UID and
 * resourceVersion, so a newer Event of the same name, or an Event updated
 * meanwhile, is never deleted by mistake (its update reschedules it).
 */
import type { KubeObject, ObjectMeta } from "@setpoint/api";
import {
  type CheckResult,
  type Client,
  type Controller,
  type Informer,
  type InformerCache,
  type InformerScope,
  isConflict,
  isNoKindMatch,
  isNotFound,
  type Logger,
  lastOccurrence,
  type Manager,
  type ReconcileContext,
  type Result,
  type Runnable,
  silentLogger,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";

/** The controller's name (what `--disable` takes). */
export const EVENT_TTL_CONTROLLER = "event-ttl";
/** How long an Event lives after its latest occurrence (Kubernetes' default: 1 h). */
export const DEFAULT_EVENT_TTL_MS = 60 * 60 * 1000;
/** Concurrent deletions. */
export const DEFAULT_EVENT_TTL_WORKERS = 4;

/** The Event kinds that expire, and the tag that names each in queue keys. */
export const EVENT_KINDS = [
  { tag: "core", type: { apiVersion: "v1", kind: "Event" } },
  { tag: "events", type: { apiVersion: "events.k8s.io/v1", kind: "Event" } },
] as const;

export interface EventTtlOptions {
  /** Time to live after an Event's latest occurrence, in ms (default DEFAULT_EVENT_TTL_MS). */
  ttlMs?: number;
  workers?: number;
  logger?: Logger;
}

/** An Event reduced to what its expiry depends on. */
export function reduceEvent(o: KubeObject): KubeObject {
  const m = o.metadata ?? {};
  const metadata: ObjectMeta = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    creationTimestamp: m.creationTimestamp,
  };
  const out: KubeObject = { apiVersion: o.apiVersion, kind: o.kind, metadata };
  for (const f of [
    "lastTimestamp",
    "firstTimestamp",
    "eventTime",
    "deprecatedLastTimestamp",
    "deprecatedFirstTimestamp",
  ]) {
    if (typeof o[f] === "string") out[f] = o[f];
  }
  const series = o.series as { lastObservedTime?: unknown } | undefined;
  if (typeof series?.lastObservedTime === "string") {
    out.series = { lastObservedTime: series.lastObservedTime };
  }
  return out;
}

/** When the Event last occurred (ms since the epoch; 0 when it has no timestamp). */
function lastOccurredAt(o: KubeObject): number {
  return Date.parse(lastOccurrence(o)) || 0;
}

/** The informer scope of Events here: every Event, reduced to its timestamps. */
const EVENT_SCOPE: InformerScope = { transform: reduceEvent };

/** The queue key name of an Event: "<tag>:<name>" (Event names cannot contain ':'). */
function keyName(tag: string, name: string): string {
  return `${tag}:${name}`;
}

export class EventTtlController implements BuiltinController, Runnable {
  readonly name = EVENT_TTL_CONTROLLER;
  readonly ttlMs: number;
  private readonly log: Logger;
  private client!: Client;
  private cache!: InformerCache;
  private controller!: Controller;
  private readonly informers = new Map<string, Informer<KubeObject>>();

  constructor(private readonly opts: EventTtlOptions = {}) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_EVENT_TTL_MS;
    if (!(this.ttlMs > 0)) throw new RangeError("the event TTL must be positive");
    this.log = (opts.logger ?? silentLogger()).child({ controller: EVENT_TTL_CONTROLLER });
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.client = client;
    this.cache = mgr.cache;
    this.controller = mgr.addController(
      {
        client,
        name: EVENT_TTL_CONTROLLER,
        reconciler: (req, ctx) => this.reconcile(req.namespace ?? "", req.name, ctx),
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_EVENT_TTL_WORKERS,
      },
      [],
    );
    mgr.add(this);
  }

  /** Readiness (the manager's /readyz): the Event informers have synced. */
  ready(): CheckResult {
    const pending = [...this.informers].filter(([, i]) => !i.hasSynced()).map(([tag]) => tag);
    return pending.length === 0
      ? { ok: true }
      : { ok: false, reason: `event informers not synced: ${pending.join(", ")}` };
  }

  /** Sets up the Event informers in the manager's cache (which stops them on shutdown). */
  async start(signal: AbortSignal): Promise<void> {
    for (const { tag, type } of EVENT_KINDS) {
      try {
        await this.client.resourceFor(type);
      } catch (e) {
        if (isNoKindMatch(e)) {
          this.log.info({ apiVersion: type.apiVersion }, "Events not served in this version");
          continue;
        }
        if (signal.aborted) return;
        this.log.warn({ err: e instanceof Error ? e.message : String(e) }, "discovery failed");
      }
      if (signal.aborted) return;
      const informer = this.cache.informerFor<KubeObject>(type, EVENT_SCOPE);
      const schedule = (o: KubeObject) => this.schedule(tag, o);
      informer.addEventHandler({ onAdd: schedule, onUpdate: (_old, o) => schedule(o) });
      this.informers.set(tag, informer);
    }
  }

  private schedule(tag: string, o: KubeObject): void {
    const name = o.metadata.name;
    if (!name) return;
    const delay = lastOccurredAt(o) + this.ttlMs - Date.now();
    this.controller.enqueueAfter(
      { namespace: o.metadata.namespace, name: keyName(tag, name) },
      Math.max(0, delay),
    );
  }

  private async reconcile(
    namespace: string,
    key: string,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    const colon = key.indexOf(":");
    const tag = key.slice(0, colon);
    const name = key.slice(colon + 1);
    const kind = EVENT_KINDS.find((k) => k.tag === tag);
    const informer = this.informers.get(tag);
    if (!kind || !informer) return undefined;
    const ev = informer.get(name, namespace || undefined);
    if (!ev) return undefined;
    const left = lastOccurredAt(ev) + this.ttlMs - Date.now();
    if (left > 0) return { requeueAfter: left };
    try {
      await ctx.client.delete(kind.type, name, namespace || undefined, {
        preconditions: { uid: ev.metadata.uid, resourceVersion: ev.metadata.resourceVersion },
      });
      ctx.log.debug("event expired");
    } catch (e) {
      // Gone already, or changed since read (its update reschedules it): nothing to do.
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
    return undefined;
  }
}
