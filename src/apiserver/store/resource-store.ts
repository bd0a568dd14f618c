/**
 * The resource store: the one place between the HTTP endpoints and storage, for
 * every type (Kubernetes' generic registry store). Made per call for a scope
 * (type, version, namespace, name, subresource, caller), it reads objects (from
 * storage, or from the type's watch cache when any state will do), lists and
 * watches, and writes them under the rules every write follows: create, update
 * (a read-decide-write loop that retries lost races), delete and deletecollection.
 * It takes and returns objects, throws StatusErrors, and knows nothing of HTTP;
 * per-type behaviour comes from the definition's strategy.
 */
import type { ErrorSubject, KubeObject } from "@setpoint/api";
import { apiVersionOf, deepClone, errors, matchesFields, matchesLabels } from "@setpoint/api";
import { fieldValues } from "../../registry/field-selectors.ts";
import { collectionPrefix, objectKey } from "../../registry/storage-keys.ts";
import type { ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import type { CacheEntry, WatchCache } from "../watchcache/watch-cache.ts";
import { decodeStored } from "../wire/codec.ts";
import { type DeleteOptions, decideDelete } from "./delete-decision.ts";
import { entryMatches, type ObjectFilter } from "./filter.ts";
import {
  type ListRequest,
  type ListVisitor,
  listFromStorage,
  type StorageListResult,
} from "./list-storage.ts";
import { prepareNewObject } from "./new-object.ts";
import type { ResourceScope, StoreContext, StoreServices } from "./scope.ts";
import { statusFromStorage } from "./store-errors.ts";
import { decideUpdate, type UpdatePlan } from "./update-decision.ts";
import { guaranteedUpdate, storeCreate, type WriteOutcome } from "./writes.ts";

/** Times a create with generateName picks a new name after a collision. */
export const GENERATE_NAME_ATTEMPTS = 3;

export interface CreateOptions {
  dryRun: boolean;
  /** The field manager the create is recorded for. */
  manager: string;
}

export interface UpdateOptions extends UpdatePlan {
  dryRun: boolean;
}

/**
 * The object an update asks for, made from the current one (null when absent): in
 * the storage version, name and namespace bound. Called again when the update
 * loses a race; throws to refuse.
 */
export type UpdatedObject = (current: KubeObject | null) => KubeObject | Promise<KubeObject>;

/** What a delete did: `deleted` when the object is gone, else it was only marked. */
export interface DeleteOutcome {
  obj: KubeObject;
  deleted: boolean;
}

/** A snapshot of the watch cache's objects. */
export interface CachedList {
  entries: CacheEntry[];
  revision: number;
}

export class ResourceStore implements StoreContext {
  readonly def: ResourceDefinition;
  readonly version: VersionDefinition;
  readonly apiVersion: string;
  readonly subject: ErrorSubject;

  constructor(
    readonly services: StoreServices,
    readonly scope: ResourceScope,
  ) {
    this.def = scope.definition;
    this.version = scope.version;
    this.apiVersion = apiVersionOf(this.def.group, this.version.name);
    this.subject = {
      group: this.def.group,
      resource: this.def.names.plural,
      ...(scope.name !== undefined ? { name: scope.name } : {}),
    };
  }

  /** The storage key of the named object (the scope's name by default). */
  key(name = this.scope.name ?? ""): string {
    return objectKey(this.def, this.scope.namespace, name);
  }

  /** The storage prefix of the scope's collection (one namespace, or all). */
  get prefix(): string {
    return collectionPrefix(this.def, this.scope.namespace);
  }

  /** Whether a delete that removes an object answers with it (the definition says). */
  get returnsDeletedObject(): boolean {
    return this.def.returnDeletedObject === true;
  }

  /**
   * The scope's object; 404 when it does not exist. `anyState`: any recent state
   * will do (resourceVersion "0"), answered from the watch cache when it is primed.
   */
  async get(opts: { anyState?: boolean } = {}): Promise<KubeObject> {
    if (opts.anyState) {
      const cache = this.#cache();
      if (cache.isReady) {
        const entry = cache.get(this.key());
        if (!entry) throw errors.notFound(this.subject);
        return JSON.parse(entry.json) as KubeObject;
      }
    }
    let kv: Awaited<ReturnType<StoreServices["store"]["get"]>>;
    try {
      kv = await this.services.store.get(this.key());
    } catch (err) {
      throw statusFromStorage(err, this.subject);
    }
    if (!kv) throw errors.notFound(this.subject);
    return decodeStored(kv, this.def);
  }

  /**
   * The scope's object as the watch cache holds it (as storage does while the
   * cache is not primed), for the server's own readers (the CRD loop), not for
   * answering clients: a private copy of the object kept from a write at that
   * revision when there is one (the JSON of an object of megabytes takes tens of
   * milliseconds to parse), else the cache's JSON parsed. The copy's members may
   * be in another order than the JSON's. 404 when it does not exist.
   */
  async getRecent(): Promise<KubeObject> {
    const cache = this.#cache();
    if (!cache.isReady) return this.get();
    const key = this.key();
    const entry = cache.get(key);
    if (!entry) throw errors.notFound(this.subject);
    const kept = this.services.decoded.get(key, entry.rev, this.def.strategy.onRead);
    return kept ?? (JSON.parse(entry.json) as KubeObject);
  }

  /** The revision the scope's object was last written at; undefined when absent. */
  async revision(): Promise<number | undefined> {
    try {
      return (await this.services.store.get(this.key()))?.modRevision;
    } catch (err) {
      throw statusFromStorage(err, this.subject);
    }
  }

  /** The storage's current revision. */
  async currentRevision(): Promise<number> {
    try {
      return await this.services.store.currentRevision();
    } catch (err) {
      throw statusFromStorage(err, this.subject);
    }
  }

  /**
   * A list (or one page of it) read from storage; with `raw` (see listsRaw), as
   * the objects' JSON instead of objects; without `countRemaining`, no
   * remainingItemCount (a reader paging to the end needs none); with `visit`, the
   * objects are handed to it a storage page at a time instead of kept.
   */
  list(
    opts: ListRequest,
    filter: ObjectFilter,
    raw = false,
    countRemaining = true,
    visit?: ListVisitor,
  ): Promise<StorageListResult> {
    return listFromStorage(this, opts, filter, raw, countRemaining, visit);
  }

  /** The collection's objects `filter` selects, as the watch cache holds them now. */
  async listCached(filter: ObjectFilter): Promise<CachedList> {
    const cache = this.#cache();
    await cache.ready();
    const entries = cache.entries(this.prefix).filter((e) => entryMatches(filter, e));
    return { entries, revision: cache.rev };
  }

  /** The named object as the primed watch cache holds it; undefined when absent or not primed. */
  cached(name = this.scope.name ?? ""): CacheEntry | undefined {
    const cache = this.#cache();
    return cache.isReady ? cache.get(this.key(name)) : undefined;
  }

  /** The type's watch cache, primed, for a watch to follow. */
  async watchCache(): Promise<WatchCache> {
    const cache = this.#cache();
    await cache.ready();
    return cache;
  }

  #cache(): WatchCache {
    return this.services.caches.forDef(this.def);
  }

  /**
   * Creates `obj` (in the storage version, namespace bound): admission, server-set
   * metadata, field ownership, defaults, validation, then storage (409 when the
   * name is taken; a generated name is picked again a few times).
   */
  async create(obj: KubeObject, opts: CreateOptions): Promise<KubeObject> {
    const generated = !obj.metadata.name && Boolean(obj.metadata.generateName);
    for (let attempt = 1; ; attempt++) {
      // A generated name may collide: keep the object to try again with another.
      const next = generated ? deepClone(obj) : obj;
      await prepareNewObject(this, next, opts.manager, new Date(), true, opts.dryRun);
      const key = this.key(next.metadata.name!);
      try {
        return await storeCreate(this, key, next, opts.dryRun);
      } catch (err) {
        const exists =
          err instanceof Error && (err as { reason?: string }).reason === "AlreadyExists";
        if (!generated || !exists || attempt >= GENERATE_NAME_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Updates the scope's object (or its subresource) to what `updated` makes of
   * the current one, under the rules of every update (see decideUpdate); read,
   * decided and written again when a concurrent write wins the race.
   */
  update(opts: UpdateOptions, updated: UpdatedObject): Promise<WriteOutcome> {
    return this.guaranteedUpdate(opts.dryRun, async (current) =>
      decideUpdate(this, await updated(current), current, opts),
    );
  }

  /**
   * Reads the scope's object, asks `decide` what to do with it (null when absent),
   * and does it; again when storage reports that the object changed in between.
   */
  guaranteedUpdate(
    dryRun: boolean,
    decide: Parameters<typeof guaranteedUpdate>[3],
    key = this.key(),
  ): Promise<WriteOutcome> {
    return guaranteedUpdate(this, key, dryRun, decide);
  }

  /**
   * Deletes the scope's object, or marks it as being deleted while finalizers
   * remain; 403 when the type forbids it, 404 when it does not exist.
   */
  async delete(opts: DeleteOptions): Promise<DeleteOutcome> {
    const name = this.scope.name ?? "";
    const forbidden = this.def.strategy.forbidDelete?.(name);
    if (forbidden) throw errors.forbidden(this.subject, forbidden);
    this.services.namespaces.noteDelete(this.def, name);
    return this.#deleteAt(this.key(name), name, opts);
  }

  async #deleteAt(key: string, name: string, opts: DeleteOptions): Promise<DeleteOutcome> {
    const admission = this.services.admission;
    const outcome = await guaranteedUpdate(this, key, opts.dryRun, async (current) => {
      if (current && admission) {
        await admission.validate(this, {
          operation: "DELETE",
          oldObject: current,
          dryRun: opts.dryRun,
        });
      }
      return decideDelete(this, current, opts, name);
    });
    return { obj: outcome.obj, deleted: outcome.action === "delete" };
  }

  /**
   * Deletes every object of the collection the selectors match (as a delete of
   * each); returns them as deleted or marked. One gone in the meantime is skipped.
   */
  async deleteCollection(
    filter: Pick<ObjectFilter, "labels" | "fields">,
    opts: DeleteOptions,
  ): Promise<KubeObject[]> {
    const { store, limits } = this.services;
    const targets: { key: string; name: string }[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await store.list(this.prefix, {
          limit: limits.storagePageSize,
          ...(token ? { continue: token } : {}),
        });
        for (const kv of page.items) {
          const obj = decodeStored(kv, this.def);
          const fields = fieldValues(this.def, obj);
          if (!matchesLabels(filter.labels, obj.metadata.labels)) continue;
          if (!matchesFields(filter.fields, (f) => fields[f])) continue;
          targets.push({ key: kv.key, name: obj.metadata.name ?? "" });
        }
        token = page.continue;
      } while (token);
    } catch (err) {
      throw statusFromStorage(err, this.subject);
    }
    const items: KubeObject[] = [];
    for (const t of targets) {
      try {
        const { obj } = await this.#deleteAt(t.key, t.name, opts);
        items.push(obj);
      } catch (err) {
        // Gone in the meantime: someone else deleted it, which is what was asked.
        if (err instanceof Error && (err as { code?: number }).code === 404) continue;
        throw err;
      }
    }
    return items;
  }
}
