/**
 * What a resource store call works with, with no HTTP in it: the shared services
 * (storage, watch caches, decoded objects, namespace lifecycle, bounds), and the
 * scope of one call (type, version, namespace, name, subresource, caller).
 */
import type { ErrorSubject } from "@setpoint/api";
import type { Authorizer, ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import type { DecodedObjects } from "./decoded-objects.ts";
import type { NamespaceLifecycle } from "./namespaces.ts";

/** Who is calling, as authentication established it. */
export interface StoreUser {
  name: string;
  groups: string[];
}

/** The caller of reads the server makes on its own behalf. */
export const SERVER_USER: StoreUser = Object.freeze({
  name: "system:apiserver",
  groups: ["system:masters"],
}) as StoreUser;

/** The bounds the store works within (see src/apiserver/endpoints/limits.ts). */
export interface StoreLimits {
  /** Items read from storage per page while scanning (lists, deletecollection). */
  storagePageSize: number;
  /** Times an update is retried after losing a compare-and-swap. */
  maxConflictRetries: number;
}

/** The services every resource store shares. */
export interface StoreServices {
  store: Store;
  caches: WatchCacheSet;
  /** Objects recently decoded or written, for the updates that start from them. */
  decoded: DecodedObjects;
  namespaces: NamespaceLifecycle;
  limits: StoreLimits;
  /** Checks writes that need more than their verb (RBAC's escalation rule); none: unchecked. */
  authorizer?: Authorizer;
}

/** What one call is about. */
export interface ResourceScope {
  definition: ResourceDefinition;
  /** The version the caller addressed (objects are stored in the storage version). */
  version: VersionDefinition;
  namespace?: string;
  name?: string;
  /** "status", "scale", or another subresource the definition declares. */
  subresource?: string;
  user: StoreUser;
}

/** A scope bound to the services, with what every step derives from it. */
export interface StoreContext {
  readonly services: StoreServices;
  readonly scope: ResourceScope;
  readonly def: ResourceDefinition;
  readonly version: VersionDefinition;
  /** "v1" or "group/version" of the addressed version. */
  readonly apiVersion: string;
  /** What errors are about: the resource, its group and the object's name. */
  readonly subject: ErrorSubject;
}
