/**
 * Controllers' leader Leases, read as a tool sees them: who holds each, when it
 * last renewed, whether that renewal is still within the lease duration (live),
 * and which finalizers the holder declared in the `setpoint.dev/finalizers`
 * annotation the runtime's Manager writes.
 */
import type { KubeObject } from "@setpoint/api";
import { FINALIZERS_ANNOTATION, type Lease } from "@setpoint/runtime";
import { ageOf } from "./duration.ts";

/** Namespace of the per-node heartbeat Leases, which are not controller leases. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";
/** Label of the apiserver identity Leases Kubernetes keeps, which are not controller leases. */
export const APISERVER_IDENTITY_LABEL = "apiserver.kubernetes.io/identity";

/**
 * - live: held, and renewed within its lease duration;
 * - expired: held, but not renewed within its duration (the holder is gone or hung);
 * - released: no holder (the last leader gave it up on shutdown).
 */
export type LeaseState = "live" | "expired" | "released";

/** What a tool knows about one controller's leader Lease. */
export interface LeaseInfo {
  namespace: string;
  name: string;
  holder: string;
  /** spec.renewTime as written by the holder ("" when absent). */
  renewTime: string;
  /** Milliseconds since renewTime on this machine's clock (NaN when unknown). */
  renewedAgoMs: number;
  leaseDurationMs: number;
  state: LeaseState;
  /** The finalizers the holder's controllers declare (sorted). */
  finalizers: string[];
}

/** Whether a Lease is a controller's leader lease (not a node heartbeat or apiserver identity). */
export function isControllerLease(lease: KubeObject): boolean {
  if (lease.metadata.namespace === NODE_LEASE_NAMESPACE) return false;
  return lease.metadata.labels?.[APISERVER_IDENTITY_LABEL] === undefined;
}

/** The finalizers a Lease's annotation declares. */
export function declaredFinalizers(lease: KubeObject): string[] {
  const v = lease.metadata.annotations?.[FINALIZERS_ANNOTATION] ?? "";
  return [
    ...new Set(
      v
        .split(",")
        .map((f) => f.trim())
        .filter(Boolean),
    ),
  ].sort();
}

/**
 * A Lease as seen at `now` (ms since the epoch). The renewal age compares the
 * holder's wall clock with ours: clock skew between the two shifts it.
 */
export function leaseInfo(lease: KubeObject, now: number): LeaseInfo {
  const spec = (lease as Lease).spec ?? {};
  const holder = spec.holderIdentity ?? "";
  const renewTime = spec.renewTime ?? "";
  const renewedAgoMs = ageOf(renewTime, now);
  const leaseDurationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
  let state: LeaseState;
  if (holder === "") state = "released";
  else state = renewedAgoMs <= leaseDurationMs ? "live" : "expired";
  return {
    namespace: lease.metadata.namespace ?? "",
    name: lease.metadata.name ?? "",
    holder,
    renewTime,
    renewedAgoMs,
    leaseDurationMs,
    state,
    finalizers: declaredFinalizers(lease),
  };
}

/** The controller leases among `leases`, sorted by namespace and name. */
export function controllerLeases(leases: KubeObject[], now: number): LeaseInfo[] {
  return leases
    .filter(isControllerLease)
    .map((l) => leaseInfo(l, now))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}
