/**
 * The apiservers of a cluster, as their identity Leases show them
 * (src/controlplane/apiserver-identity.ts, Kubernetes' apiserver identity): each
 * one's Lease name, URL, storage, holder and when it last renewed. An apiserver
 * renews every 10 s; one that has not for STALE_AFTER_MS is presumed stopped (its
 * Lease stays until it expires, an hour later, and is deleted by the others).
 */
import type { KubeObject } from "@setpoint/api";
import type { Lease } from "@setpoint/runtime";
import {
  APISERVER_STORAGE_ANNOTATION,
  APISERVER_URL_ANNOTATION,
} from "../../controlplane/index.ts";
import { ageOf } from "./duration.ts";
import { APISERVER_IDENTITY_LABEL } from "./leases.ts";

/** An identity Lease not renewed for this long: its apiserver is presumed stopped. */
export const STALE_AFTER_MS = 40_000;

export interface ApiserverInfo {
  lease: string;
  url: string;
  /** "sqlite", or the etcd endpoints it uses (comma list). */
  storage: string;
  holder: string;
  renewedAgoMs: number;
  state: "renewing" | "stale";
}

/** The apiservers among `leases`, by URL. */
export function apiserverIdentities(leases: KubeObject[], now: number): ApiserverInfo[] {
  return leases
    .filter((l) => l.metadata.labels?.[APISERVER_IDENTITY_LABEL] !== undefined)
    .map((l) => {
      const spec = (l as Lease).spec ?? {};
      const renewedAgoMs = ageOf(spec.renewTime ?? "", now);
      return {
        lease: l.metadata.name ?? "",
        url: l.metadata.annotations?.[APISERVER_URL_ANNOTATION] ?? "",
        storage: l.metadata.annotations?.[APISERVER_STORAGE_ANNOTATION] ?? "",
        holder: spec.holderIdentity ?? "",
        renewedAgoMs,
        state: renewedAgoMs <= STALE_AFTER_MS ? ("renewing" as const) : ("stale" as const),
      };
    })
    .sort((a, b) => a.url.localeCompare(b.url) || a.lease.localeCompare(b.lease));
}

/** The etcd endpoints the apiservers say they use, each once. */
export function etcdEndpointsOf(apiservers: ApiserverInfo[]): string[] {
  const all = apiservers.flatMap((a) =>
    a.storage === "sqlite" || a.storage === ""
      ? []
      : a.storage
          .split(",")
          .map((e) => e.trim())
          .filter(Boolean),
  );
  return [...new Set(all)].sort();
}
