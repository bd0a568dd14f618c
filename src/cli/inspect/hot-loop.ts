/**
 * Hot loops: objects written far more often than their spec changes warrant.
 *
 * Observed over the API, from outside any controller: for a sample window the
 * tool watches every kind (from the resourceVersion of its list) and counts,
 * per object, the writes it sees and what each changed: the spec (generation
 * moved), the status, or only metadata. A controller that rewrites status on
 * every pass (wakes on its own write, writes again) shows as a steady stream of
 * status writes with no spec change. A spec change legitimately causes a few
 * status writes (`STATUS_WRITES_PER_SPEC_CHANGE`); writes beyond that are
 * "excess". An object is a hot loop when its excess writes reach
 * `HOT_LOOP_MIN_WRITES` and their rate reaches the threshold (writes/s); or
 * when it is created and deleted again and again at that rate (a name
 * recreated as fast as something deletes it).
 * The likely writer is read from managedFields (the entry the write touched).
 *
 * Kinds that change on a timer by design (Leases renew, Events count) are left
 * out (`HOT_LOOP_EXEMPT`).
 *
 * A loop that only reads (a reconcile that requeues itself at once and writes
 * nothing) is invisible over the API: it shows in the controller's own
 * per-key reconcile counts, which the runtime's Manager publishes on its
 * leader Lease (`RECONCILE_STATS_ANNOTATION`, parsed by `reconcileHotKeys`).
 */

import type { KubeObject, ManagedFieldsEntry } from "@setpoint/api";
import { deepEqual } from "@setpoint/api";
import {
  type ControllerReconcileStats,
  groupResource,
  RECONCILE_STATS_ANNOTATION,
  type ReconcileStats as RuntimeReconcileStats,
  type ServedResource,
} from "@setpoint/runtime";

export { RECONCILE_STATS_ANNOTATION };

import type { LeaseInfo } from "./leases.ts";
import { type ObjectRef, objectRef } from "./resources.ts";

/** Writes below this many (beyond what spec changes explain) never count as a hot loop. */
export const HOT_LOOP_MIN_WRITES = 5;
/** Default rate of excess writes (per second) that makes a hot loop. */
export const DEFAULT_HOT_LOOP_RATE = 1;
/** Status (or metadata) writes one spec change may cause without counting as excess. */
export const STATUS_WRITES_PER_SPEC_CHANGE = 2;
/** Kinds not sampled: their objects change on a timer by design. */
export const HOT_LOOP_EXEMPT: ReadonlySet<string> = new Set([
  "leases.coordination.k8s.io",
  "events",
  "events.events.k8s.io",
]);

/** Whether a resource is sampled for hot loops. */
export function sampledForHotLoops(r: ServedResource): boolean {
  return !HOT_LOOP_EXEMPT.has(groupResource(r)) && r.verbs.includes("watch");
}

interface ObjectCounts {
  ref: ObjectRef;
  writes: number;
  creates: number;
  deletes: number;
  spec: number;
  status: number;
  metadata: number;
  writers: Map<string, number>;
  last: KubeObject | undefined;
}

/** One hot object, as reported. */
export interface HotLoop extends ObjectRef {
  /** Writes seen in the window, and what they were or changed. */
  writes: number;
  creates: number;
  deletes: number;
  specWrites: number;
  statusWrites: number;
  metadataWrites: number;
  /** Writes beyond what the spec changes explain (or creates and deletes), per second. */
  excessPerSecond: number;
  /** Field managers that made the writes, most first ("manager (subresource)"). */
  writers: string[];
}

function entryKey(e: ManagedFieldsEntry): string {
  return `${e.manager ?? ""}|${e.operation ?? ""}|${e.subresource ?? ""}`;
}

function writerName(e: ManagedFieldsEntry): string {
  return e.subresource ? `${e.manager ?? "?"} (${e.subresource})` : (e.manager ?? "?");
}

/**
 * The managers a write from `prev` to `next` was made by: entries that are new
 * or changed. When none changed visibly (same second, same fields), the newest
 * entry of the matching kind (status writes: a status subresource entry).
 */
export function writersOf(
  prev: KubeObject | undefined,
  next: KubeObject,
  statusWrite: boolean,
): string[] {
  const before = new Map((prev?.metadata.managedFields ?? []).map((e) => [entryKey(e), e]));
  const after = next.metadata.managedFields ?? [];
  const changed = after.filter((e) => {
    const old = before.get(entryKey(e));
    return !old || old.time !== e.time || !deepEqual(old.fieldsV1, e.fieldsV1);
  });
  if (changed.length > 0) return changed.map(writerName);
  const candidates = after.filter((e) => (e.subresource === "status") === statusWrite);
  const newest = (candidates.length > 0 ? candidates : after).reduce<
    ManagedFieldsEntry | undefined
  >((a, e) => (!a || Date.parse(e.time ?? "") >= Date.parse(a.time ?? "") ? e : a), undefined);
  return newest ? [writerName(newest)] : [];
}

/** Counts writes per object during a sample window; feed it what a watch sees. */
export class WriteSampler {
  private readonly objects = new Map<string, ObjectCounts>();

  private entry(resource: ServedResource, obj: KubeObject): ObjectCounts {
    const key = `${groupResource(resource)}|${obj.metadata.namespace ?? ""}|${obj.metadata.name ?? ""}`;
    let c = this.objects.get(key);
    if (!c) {
      c = {
        ref: objectRef(resource, obj),
        writes: 0,
        creates: 0,
        deletes: 0,
        spec: 0,
        status: 0,
        metadata: 0,
        writers: new Map(),
        last: undefined,
      };
      this.objects.set(key, c);
    }
    return c;
  }

  /** The object as listed before the window (what the first write is compared with). */
  baseline(resource: ServedResource, obj: KubeObject): void {
    this.entry(resource, obj).last = obj;
  }

  /** A watch event seen during the window. */
  observe(resource: ServedResource, type: string, obj: KubeObject): void {
    if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") return;
    const c = this.entry(resource, obj);
    const prev = c.last;
    if (prev && prev.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    c.writes++;
    const specWrite =
      type === "MODIFIED" && (prev?.metadata.generation ?? 0) !== (obj.metadata.generation ?? 0);
    const statusWrite =
      type === "MODIFIED" &&
      !specWrite &&
      prev !== undefined &&
      !deepEqual(prev.status, obj.status);
    if (type === "ADDED") c.creates++;
    else if (type === "DELETED") c.deletes++;
    else if (specWrite) c.spec++;
    else if (statusWrite) c.status++;
    else c.metadata++;
    if (type !== "DELETED") {
      for (const w of writersOf(prev, obj, statusWrite)) {
        c.writers.set(w, (c.writers.get(w) ?? 0) + 1);
      }
    }
    c.last = type === "DELETED" ? undefined : obj;
  }

  /** The hot objects of a window of `windowMs`, hottest first. */
  hotLoops(windowMs: number, ratePerSecond = DEFAULT_HOT_LOOP_RATE): HotLoop[] {
    const seconds = Math.max(windowMs, 1) / 1000;
    const out: HotLoop[] = [];
    for (const c of this.objects.values()) {
      const excess = c.status + c.metadata - STATUS_WRITES_PER_SPEC_CHANGE * c.spec;
      const churn = c.creates + c.deletes;
      const hot = (n: number) => n >= HOT_LOOP_MIN_WRITES && n / seconds >= ratePerSecond;
      if (!hot(excess) && !hot(churn)) continue;
      out.push({
        ...c.ref,
        writes: c.writes,
        creates: c.creates,
        deletes: c.deletes,
        specWrites: c.spec,
        statusWrites: c.status,
        metadataWrites: c.metadata,
        excessPerSecond: Math.round((Math.max(excess, churn) / seconds) * 10) / 10,
        writers: [...c.writers.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w),
      });
    }
    return out.sort((a, b) => b.excessPerSecond - a.excessPerSecond);
  }
}

/**
 * What a manager publishes in `RECONCILE_STATS_ANNOTATION` (the runtime's
 * ReconcileStats), as read back: the window is checked, each controller's
 * fields as they are used (another writer may have put anything there).
 *
 * ```json
 * {"windowSeconds":60,"controllers":{"webapp":{"reconciles":130,
 *   "topKeys":[{"key":"default/shop","reconciles":120}]}}}
 * ```
 */
export interface ReconcileStats extends Omit<RuntimeReconcileStats, "controllers"> {
  controllers: Record<string, Partial<ControllerReconcileStats>>;
}

/** A key a live controller reconciles at a hot-loop rate, from its published counts. */
export interface HotKey {
  lease: string;
  leaseNamespace: string;
  controller: string;
  key: string;
  reconciles: number;
  windowSeconds: number;
  perSecond: number;
}

/** Parses the annotation; undefined when absent or malformed. */
export function parseReconcileStats(text: string | undefined): ReconcileStats | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<ReconcileStats>;
    if (typeof v.windowSeconds !== "number" || !(v.windowSeconds > 0)) return undefined;
    if (typeof v.controllers !== "object" || v.controllers === null) return undefined;
    return { windowSeconds: v.windowSeconds, controllers: v.controllers };
  } catch {
    return undefined;
  }
}

/** Keys reconciled at `ratePerSecond` or more (and at least HOT_LOOP_MIN_WRITES times), from live leases. */
export function reconcileHotKeys(
  leases: { info: LeaseInfo; stats: ReconcileStats | undefined }[],
  ratePerSecond = DEFAULT_HOT_LOOP_RATE,
): HotKey[] {
  const out: HotKey[] = [];
  for (const { info, stats } of leases) {
    if (!stats || info.state !== "live") continue;
    for (const [controller, c] of Object.entries(stats.controllers)) {
      for (const k of Array.isArray(c?.topKeys) ? c.topKeys : []) {
        if (typeof k?.key !== "string" || typeof k.reconciles !== "number") continue;
        const perSecond = k.reconciles / stats.windowSeconds;
        if (k.reconciles < HOT_LOOP_MIN_WRITES || perSecond < ratePerSecond) continue;
        out.push({
          lease: info.name,
          leaseNamespace: info.namespace,
          controller,
          key: k.key,
          reconciles: k.reconciles,
          windowSeconds: stats.windowSeconds,
          perSecond: Math.round(perSecond * 10) / 10,
        });
      }
    }
  }
  return out.sort((a, b) => b.perSecond - a.perSecond);
}
