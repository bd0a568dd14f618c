/**
 * What a resource store call works with, with no HTTP in it: the shared services
 * (storage, watch caches, decoded objects, namespace lifecycle, bounds), and the
 * scope of one call (type, version, namespace, name, subresource, caller).
 */
import type { ErrorSubject, KubeObject } from "@setpoint/api";
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
  /** Admission webhooks (src/apiserver/admission); none: writes are admitted as they are. */
  admission?: Admission;
}

/** A write, as admission sees it. */
export interface AdmissionAttributes {
  operation: "CREATE" | "UPDATE" | "DELETE";
  /** The object to be stored (create, update), in the storage version. */
  object?: KubeObject;
  /** The stored object (update, delete). */
  oldObject?: KubeObject;
  dryRun: boolean;
}

/** Admission between a write's decision and storage, as Kubernetes' admission chain. */
export interface Admission {
  /** Mutating admission: the object as the webhooks changed it, or undefined when none did. */
  mutate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<KubeObject | undefined>;
  /** Validating admission: throws the error the client gets when a webhook refuses. */
  validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void>;
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
  /** Where warnings for the client go (admission webhooks add theirs). */
  warnings?: string[];
  /** Adds an annotation to the request's audit event (admission policies add theirs). */
  annotate?: (key: string, value: string) => void;
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
