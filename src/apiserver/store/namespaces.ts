/**
 * Namespace lifecycle rules for writes into namespaces, as Kubernetes' admission
 * enforces them: no writes into a namespace that does not exist (404), no new
 * objects in one that is terminating (403). Namespaces are looked up in the
 * namespaces watch cache, and in storage when the cache does not have them or
 * one was deleted moments ago. (Which namespaces may never be deleted is the
 * Namespace strategy's rule, src/registry/builtin/namespace.ts.)
 */
import type { KubeObject } from "@setpoint/api";
import { type ErrorSubject, errors } from "@setpoint/api";
import { NAMESPACE_TERMINATING } from "../../registry/builtin/namespace.ts";
import type { Registry } from "../../registry/registry.ts";
import { objectKey } from "../../registry/storage-keys.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { decodeStored } from "../wire/codec.ts";

/** The phase a namespace is in once deletion was requested. */
export const TERMINATING = NAMESPACE_TERMINATING;

/** For this long after a namespace is deleted, lookups bypass the cache (ms). */
export const FORCE_LIVE_LOOKUP_MS = 30_000;

export type NamespaceOperation = "create" | "update";

/** The selectable field holding a namespace's phase (kept in each cache entry). */
const PHASE_FIELD = "status.phase";

function phaseOf(ns: KubeObject): string {
  const status = ns.status as { phase?: unknown } | undefined;
  return typeof status?.phase === "string" ? status.phase : "";
}

export class NamespaceLifecycle {
  readonly #recentlyDeleted = new Map<string, number>();

  constructor(
    readonly store: Store,
    readonly registry: Registry,
    readonly caches: WatchCacheSet,
  ) {}

  /**
   * Told of every delete: when `def` is the served Namespace type, remembers that
   * the namespace's deletion began (its lookups go to storage for a while), as
   * Kubernetes' NamespaceLifecycle admission does.
   */
  noteDelete(def: ResourceDefinition, name: string): void {
    if (def !== this.registry.get("", "namespaces")) return;
    this.#recentlyDeleted.set(name, Date.now() + FORCE_LIVE_LOOKUP_MS);
  }

  /** The phase of a namespace ("" when it has none), or null when it does not exist. */
  async phase(name: string): Promise<string | null> {
    const def = this.registry.get("", "namespaces");
    if (!def) return null;
    const key = objectKey(def, undefined, name);
    const until = this.#recentlyDeleted.get(name);
    const live = until !== undefined && until > Date.now();
    if (until !== undefined && !live) this.#recentlyDeleted.delete(name);
    if (!live) {
      const cache = this.caches.forDef(def);
      if (cache.isReady) {
        const entry = cache.get(key);
        if (entry) return entry.fields?.[PHASE_FIELD] ?? phaseOf(JSON.parse(entry.json));
      }
    }
    const kv = await this.store.get(key);
    return kv ? (phaseOf(decodeStored(kv)) ?? "") : null;
  }

  /**
   * Refuses a write into `namespace`: 404 when the namespace does not exist, 403
   * when creating into a terminating one. A no-op when namespaces are not served.
   */
  async admit(namespace: string, op: NamespaceOperation, subject: ErrorSubject): Promise<void> {
    if (!this.registry.get("", "namespaces")) return;
    const phase = await this.phase(namespace);
    if (phase === null) throw errors.notFound({ resource: "namespaces", name: namespace });
    if (op === "create" && phase === TERMINATING) {
      const err = errors.forbidden(
        subject,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
      err.status.details = {
        ...(err.status.details ?? {}),
        causes: [
          {
            reason: "NamespaceTerminating",
            message: `namespace ${namespace} is being terminated`,
            field: "metadata.namespace",
          },
        ],
      };
      throw err;
    }
  }
}
