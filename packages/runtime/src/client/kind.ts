/**
 * Kinds that carry the TypeScript type of their objects: reads given a
 * `Kind<T>` (the client's get, list and watch, the cache's, a reconcile's
 * reader) return `T` without naming it again; given a plain TypeRef they
 * return KubeObject, or the type named explicitly (`get<WebApp>(...)`).
 */
import type { KubeObject } from "@setpoint/api";
import type { TypeRef } from "./discovery.ts";

/** A kind, carrying the TypeScript type of its objects. A plain TypeRef is a `Kind<KubeObject>`. */
export interface Kind<T extends KubeObject = KubeObject> extends TypeRef {
  /** Type-level only; never set. */
  readonly __object?: T | undefined;
}

/** Declares a kind and the type of its objects: `kind<ConfigMap>("v1", "ConfigMap")`. */
export function kind<T extends KubeObject = KubeObject>(
  apiVersion: string,
  kindName: string,
): Kind<T> {
  return { apiVersion, kind: kindName };
}
