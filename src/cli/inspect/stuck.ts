/**
 * Objects stuck in deletion, and who (if anyone) will remove each finalizer
 * they still carry.
 *
 * An object with `deletionTimestamp` stays until its finalizers are gone (a
 * Namespace also waits on `spec.finalizers`). For each finalizer left:
 * - handled: a live controller (its leader Lease renewed within its duration)
 *   declares it on the Lease (`setpoint.dev/finalizers`);
 * - builtin: one of Kubernetes' own finalizers, removed by a built-in loop
 *   (garbage collector, namespace controller, the apiserver's CRD cleanup); the
 *   live Lease declaring it, else the live controller manager's Lease, is named;
 *   with neither, the loop is not running (except the apiserver's own);
 * - abandoned: no live controller declares it (its controller is not running,
 *   or does not publish its finalizers).
 */
import type { KubeObject } from "@setpoint/api";
import type { ServedResource } from "@setpoint/runtime";
import {
  CONTROLLER_MANAGER_LEASE,
  CONTROLLER_MANAGER_LEASE_NAMESPACE,
} from "../../controllers/controller-manager.ts";
import { ageOf, formatAge } from "./duration.ts";
import type { LeaseInfo } from "./leases.ts";
import { type ObjectRef, objectRef } from "./resources.ts";

/** Kubernetes' built-in finalizers and the loop that removes each. */
export const BUILTIN_FINALIZERS: Readonly<Record<string, string>> = {
  kubernetes: "namespace controller",
  orphan: "garbage collector",
  foregroundDeletion: "garbage collector",
  "customresourcecleanup.apiextensions.k8s.io": "apiserver CRD cleanup",
};

/** Built-in finalizers removed by the apiserver itself (live whenever it answers). */
export const APISERVER_FINALIZERS: ReadonlySet<string> = new Set([
  "customresourcecleanup.apiextensions.k8s.io",
]);

/** Where a finalizer sits: `metadata.finalizers`, or a Namespace's `spec.finalizers`. */
export type FinalizerPlace = "metadata" | "spec";

export type HandlingState = "handled" | "builtin" | "abandoned";

/** A live controller that declares a finalizer. */
export interface Handler {
  /** The Lease's namespace and name (the controller manager's election id). */
  leaseNamespace: string;
  lease: string;
  /** The current leader. */
  holder: string;
  renewedAgoMs: number;
}

/** One finalizer left on an object, and who handles it. */
export interface FinalizerHandling {
  finalizer: string;
  place: FinalizerPlace;
  state: HandlingState;
  /** For built-in finalizers: the loop that removes it. */
  builtin?: string;
  /** Live controllers declaring it (possibly several managers declare the same one). */
  handlers: Handler[];
}

/** An object in deletion that is still there. */
export interface StuckObject extends ObjectRef {
  uid: string;
  deletionTimestamp: string;
  /** Milliseconds since deletionTimestamp. */
  deletingForMs: number;
  finalizers: FinalizerHandling[];
}

/** A Namespace's spec.finalizers (empty for other kinds). */
export function specFinalizers(obj: KubeObject): string[] {
  if (obj.kind !== "Namespace" || (obj.apiVersion ?? "v1") !== "v1") return [];
  const f = (obj.spec as { finalizers?: unknown } | undefined)?.finalizers;
  return Array.isArray(f) ? f.map(String) : [];
}

/** "f", or "f [spec.finalizers]" for one in a Namespace's spec. */
export function describePlace(p: { finalizer: string; place: FinalizerPlace }): string {
  return p.place === "spec" ? `${p.finalizer} [spec.finalizers]` : p.finalizer;
}

/** The finalizers still keeping `obj` (metadata, then a Namespace's spec). */
export function pendingFinalizers(obj: KubeObject): { finalizer: string; place: FinalizerPlace }[] {
  return [
    ...(obj.metadata.finalizers ?? []).map((f) => ({ finalizer: f, place: "metadata" as const })),
    ...specFinalizers(obj).map((f) => ({ finalizer: f, place: "spec" as const })),
  ];
}

/** Who handles `finalizer`, given the controller leases. */
export function attributeFinalizer(
  finalizer: string,
  place: FinalizerPlace,
  leases: LeaseInfo[],
): FinalizerHandling {
  const handlers: Handler[] = leases
    .filter((l) => l.state === "live" && l.finalizers.includes(finalizer))
    .map((l) => ({
      leaseNamespace: l.namespace,
      lease: l.name,
      holder: l.holder,
      renewedAgoMs: l.renewedAgoMs,
    }));
  const builtin = BUILTIN_FINALIZERS[finalizer];
  if (builtin !== undefined) {
    // The built-in loops run in the controller manager: when its Lease declares no
    // finalizers at all, its live leader stands in for every built-in loop; when
    // it declares some, the list says which loops run (one may be switched off).
    const manager = leases.find(
      (l) =>
        l.state === "live" &&
        l.name === CONTROLLER_MANAGER_LEASE &&
        l.namespace === CONTROLLER_MANAGER_LEASE_NAMESPACE &&
        l.finalizers.length === 0,
    );
    if (handlers.length === 0 && manager && !APISERVER_FINALIZERS.has(finalizer)) {
      handlers.push({
        leaseNamespace: manager.namespace,
        lease: manager.name,
        holder: manager.holder,
        renewedAgoMs: manager.renewedAgoMs,
      });
    }
    return { finalizer, place, state: "builtin", builtin, handlers };
  }
  return { finalizer, place, state: handlers.length > 0 ? "handled" : "abandoned", handlers };
}

/** `finalizer (handled by …)`, `finalizer (ABANDONED: …)` or `finalizer (built-in: …)`. */
export function describeHandling(h: FinalizerHandling): string {
  const name = describePlace(h);
  const by = h.handlers
    .map(
      (x) => `handled by ${x.lease}, leader ${x.holder}, renewed ${formatAge(x.renewedAgoMs)} ago`,
    )
    .join("; ");
  switch (h.state) {
    case "handled":
      return `${name} (${by})`;
    case "abandoned":
      return `${name} (ABANDONED: no live controller declares it)`;
    case "builtin":
      if (by) return `${name} (built-in: ${h.builtin}; ${by})`;
      if (APISERVER_FINALIZERS.has(h.finalizer)) return `${name} (built-in: ${h.builtin})`;
      return `${name} (built-in: ${h.builtin}; NOT RUNNING: no live ${CONTROLLER_MANAGER_LEASE} Lease)`;
  }
}

/** Whether nothing live will remove the finalizer (abandoned, or a built-in whose loop is not running). */
export function isUnhandled(h: FinalizerHandling): boolean {
  if (h.state === "abandoned") return true;
  return h.state === "builtin" && h.handlers.length === 0 && !APISERVER_FINALIZERS.has(h.finalizer);
}

/** An object read from one served resource. */
export interface ResourceObject {
  resource: ServedResource;
  obj: KubeObject;
}

/**
 * The objects in deletion for at least `olderThanMs` at `now`, oldest first,
 * each object once (the same object served under two groups counts once).
 */
export function stuckObjects(
  items: Iterable<ResourceObject>,
  leases: LeaseInfo[],
  now: number,
  olderThanMs = 0,
): StuckObject[] {
  const seen = new Set<string>();
  const out: StuckObject[] = [];
  for (const { resource, obj } of items) {
    const ts = obj.metadata.deletionTimestamp;
    if (!ts) continue;
    const uid = obj.metadata.uid ?? "";
    const key = uid || `${resource.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const deletingForMs = ageOf(ts, now);
    if (!(deletingForMs >= olderThanMs)) continue;
    const s: StuckObject = {
      ...objectRef(resource, obj),
      uid,
      deletionTimestamp: ts,
      deletingForMs,
      finalizers: pendingFinalizers(obj).map((p) =>
        attributeFinalizer(p.finalizer, p.place, leases),
      ),
    };
    out.push(s);
  }
  return out.sort(
    (a, b) =>
      b.deletingForMs - a.deletingForMs ||
      a.resource.localeCompare(b.resource) ||
      `${a.namespace ?? ""}/${a.name}`.localeCompare(`${b.namespace ?? ""}/${b.name}`),
  );
}
