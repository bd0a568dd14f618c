/**
 * Storage writes with Kubernetes' optimistic concurrency: create (409 when the key
 * exists), and a read-decide-write loop for updates that re-reads and decides
 * again whenever the compare-and-swap loses a race (a decision that demanded a
 * particular resourceVersion then fails with 409 Conflict), as Kubernetes'
 * GuaranteedUpdate does. Dry runs stop before the store.
 */

import type { KubeObject, StatusError } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import { AlreadyExistsError, ConflictError, NotFoundError } from "../../storage/errors.ts";
import type { KeyValue } from "../../storage/store.ts";
import {
  decodeStored,
  type EncodedObject,
  encodeObject,
  rememberJson,
  withResourceVersion,
} from "../wire/codec.ts";
import { allocateClaims, releaseClaims } from "./claims.ts";
import type { StoreContext } from "./scope.ts";
import { conflictError, statusFromStorage } from "./store-errors.ts";

/** What a decision asks of storage. */
export type WriteDecision =
  /** Create the object (the key was absent). */
  | { action: "create"; obj: KubeObject }
  /** Replace the stored object. */
  | { action: "update"; obj: KubeObject }
  /** Nothing changes: answer with the stored object. */
  | { action: "noop"; obj: KubeObject }
  /** Remove the object (its last finalizer went); `obj` is what the client is answered. */
  | { action: "delete"; obj: KubeObject };

export interface WriteOutcome {
  /** The object as stored (with its new resourceVersion), or as it would be on a dry run. */
  obj: KubeObject;
  action: WriteDecision["action"];
}

/**
 * Encodes `obj` for storage and tells the type's watch cache what is about to be
 * stored at `key`, so that the cache takes the object from this write instead of
 * decoding its event again.
 */
function announceWrite(ctx: StoreContext, key: string, obj: KubeObject): EncodedObject {
  const encoded = encodeObject(obj);
  ctx.services.caches.forDef(ctx.def).expectWrite(key, encoded, obj, ctx.def.strategy.onRead);
  return encoded;
}

/**
 * `obj` as stored at `revision`, with its JSON remembered for the answer and, when
 * it was an update (`keep`), the object kept for the next update of `key`. A new
 * object is not kept (unless its type says it is updated right after its create,
 * Strategy.updatedOnCreate): most are never updated right away, and keeping every
 * new object for a while leaves them as garbage among the long-lived ones (the
 * watch cache's) when they are forgotten; an object updated once is kept from then on.
 */
function written(
  ctx: StoreContext,
  key: string,
  obj: KubeObject,
  encoded: EncodedObject,
  revision: number,
  keep: boolean,
): KubeObject {
  withResourceVersion(obj, revision);
  rememberJson(obj, encoded.withRevision(revision));
  if (keep)
    ctx.services.decoded.set(key, revision, obj, ctx.def.strategy.onRead, encoded.stored.length);
  else ctx.services.decoded.delete(key);
  return obj;
}

/** Whether a new object of the context's type is kept for the update that follows it. */
function keepNew(ctx: StoreContext): boolean {
  return ctx.def.strategy.updatedOnCreate === true;
}

/**
 * The stored object an update starts from: a copy of the one decoded or written
 * at the same revision a moment ago, or the stored value decoded (and kept).
 */
function currentObject(
  ctx: StoreContext,
  key: string,
  kv: Pick<KeyValue, "value" | "modRevision">,
): KubeObject {
  const { decoded } = ctx.services;
  const onRead = ctx.def.strategy.onRead;
  const kept = decoded.get(key, kv.modRevision, onRead);
  if (kept) return kept;
  const obj = decodeStored(kv, ctx.def);
  decoded.set(key, kv.modRevision, deepClone(obj), onRead, kv.value.length);
  return obj;
}

/** Stores a new object; 409 AlreadyExists if the key is taken. */
export async function storeCreate(
  ctx: StoreContext,
  key: string,
  obj: KubeObject,
  dryRun: boolean,
): Promise<KubeObject> {
  const subject = { ...ctx.subject, name: obj.metadata.name ?? "" };
  const claims = await allocateClaims(ctx, key, obj, undefined, dryRun);
  if (dryRun) {
    const existing = await ctx.services.store.get(key).catch((err: unknown) => {
      throw statusFromStorage(err, subject);
    });
    if (existing) throw statusFromStorage(new AlreadyExistsError(key), subject);
    delete obj.metadata.resourceVersion;
    return obj;
  }
  try {
    const encoded = announceWrite(ctx, key, obj);
    const rev = await ctx.services.store.create(key, encoded.stored);
    return written(ctx, key, obj, encoded, rev, keepNew(ctx));
  } catch (err) {
    await claims?.revert();
    throw statusFromStorage(err, subject);
  }
}

/** Whether `key` is still stored at `revision` (a kept copy's revision is current). */
async function storedAt(ctx: StoreContext, key: string, revision: number): Promise<boolean> {
  try {
    return (await ctx.services.store.get(key))?.modRevision === revision;
  } catch (err) {
    throw statusFromStorage(err, ctx.subject);
  }
}

/**
 * Reads `key`, asks `decide` what to do with the current object (null when absent),
 * and does it; repeats when storage reports that the object changed in between.
 * `decide` gets a private copy it may modify, and throws to refuse.
 *
 * The first attempt starts from the copy of `key` kept from its last write or
 * read through this server, when there is one, without reading storage: the
 * write expects the copy's revision, so a copy that is no longer current fails
 * the compare-and-swap and the update starts again from a read (without that
 * attempt counting against the retries). An answer that writes nothing (a
 * refusal, or nothing to change) holds only when storage is still at the copy's
 * revision, which is then read to tell.
 */
export async function guaranteedUpdate(
  ctx: StoreContext,
  key: string,
  dryRun: boolean,
  decide: (current: KubeObject | null) => Promise<WriteDecision> | WriteDecision,
): Promise<WriteOutcome> {
  const { store, limits } = ctx.services;
  let lastError: StatusError | null = null;
  let fromKept = !dryRun;
  for (let attempt = 0; attempt <= limits.maxConflictRetries; attempt++) {
    const kept = fromKept ? ctx.services.decoded.latest(key, ctx.def.strategy.onRead) : undefined;
    fromKept = false;
    let current: KubeObject | null;
    /** The revision the write expects (the current object's). */
    let revision = 0;
    if (kept) {
      current = kept.obj;
      revision = kept.revision;
    } else {
      let kv: Awaited<ReturnType<typeof store.get>>;
      try {
        kv = await store.get(key);
      } catch (err) {
        throw statusFromStorage(err, ctx.subject);
      }
      current = kv ? currentObject(ctx, key, kv) : null;
      if (kv) revision = kv.modRevision;
    }
    let decision: WriteDecision;
    let claims: Awaited<ReturnType<typeof allocateClaims>> | undefined;
    try {
      decision = await decide(current);
      claims =
        decision.action === "create" || decision.action === "update"
          ? await allocateClaims(ctx, key, decision.obj, current ?? undefined, dryRun)
          : undefined;
    } catch (err) {
      // A refusal of a copy that is no longer current is decided again on a read.
      if (kept && !(await storedAt(ctx, key, revision))) {
        attempt--;
        continue;
      }
      throw err;
    }
    if (dryRun) return { obj: decision.obj, action: decision.action };
    let outcome: WriteOutcome;
    try {
      switch (decision.action) {
        case "noop":
          if (kept && !(await storedAt(ctx, key, revision))) {
            attempt--;
            continue;
          }
          return { obj: decision.obj, action: "noop" };
        case "create": {
          const encoded = announceWrite(ctx, key, decision.obj);
          const rev = await store.create(key, encoded.stored);
          const obj = written(ctx, key, decision.obj, encoded, rev, keepNew(ctx));
          outcome = { obj, action: "create" };
          break;
        }
        case "update": {
          const encoded = announceWrite(ctx, key, decision.obj);
          const rev = await store.update(key, encoded.stored, revision);
          outcome = { obj: written(ctx, key, decision.obj, encoded, rev, true), action: "update" };
          break;
        }
        case "delete": {
          ctx.services.decoded.delete(key);
          // Answered with the object as it was last stored, as Kubernetes does.
          await store.delete(key, revision);
          outcome = { obj: decision.obj, action: "delete" };
          break;
        }
      }
    } catch (err) {
      await claims?.revert();
      if (
        err instanceof ConflictError ||
        err instanceof NotFoundError ||
        err instanceof AlreadyExistsError
      ) {
        if (kept) attempt--;
        else lastError = conflictError(ctx.subject);
        continue;
      }
      throw statusFromStorage(err, ctx.subject);
    }
    // What the old object held and the stored one does not is free again.
    await releaseClaims(ctx, key, current, outcome.action === "delete" ? null : outcome.obj);
    return outcome;
  }
  throw lastError ?? conflictError(ctx.subject);
}
