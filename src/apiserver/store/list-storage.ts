/**
 * Lists read from storage, with Kubernetes' resourceVersion semantics (the watch
 * cache serves resourceVersion "0"):
 *
 * - resourceVersion unset: the most recent state;
 * - N with resourceVersionMatch=Exact, or with a limit and no match: exactly at N
 *   (410 once compacted);
 * - N otherwise: not older than N (the most recent state; 504 when N is in the future).
 *
 * Pages (limit + continue) are all read at the first page's revision. A continue
 * token whose revision was compacted gets 410 with a fresh token that continues at
 * the latest revision from the same key.
 */

import type { KubeObject } from "@setpoint/api";
import { errors, isEverything } from "@setpoint/api";
import { collectionPrefix } from "../../registry/storage-keys.ts";
import { CompactedError, FutureRevisionError, InvalidKeyError } from "../../storage/errors.ts";
import type { KeyValue } from "../../storage/store.ts";
import { decodeStored, parseResourceVersion, storedWithRevision } from "../wire/codec.ts";
import { type ContinueToken, decodeContinueToken, encodeContinueToken } from "./continue-token.ts";
import { type ObjectFilter, objectMatches } from "./filter.ts";
import type { StoreContext } from "./scope.ts";
import {
  LIST_EXPIRED_MESSAGE,
  statusFromStorage,
  tooLargeResourceVersion,
} from "./store-errors.ts";

/** Kubernetes' message for a continue token too old to continue consistently. */
export const INCONSISTENT_CONTINUE_MESSAGE =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/** The options of a list read from storage (Kubernetes' ListOptions, parsed). */
export interface ListRequest {
  /** Whether a selector selects less than everything (then no remainingItemCount). */
  filtered: boolean;
  /** The raw resourceVersion parameter ("" when absent). */
  resourceVersion: string;
  resourceVersionMatch?: "Exact" | "NotOlderThan";
  /** Most objects in the page; 0 for all. */
  limit: number;
  continue?: string | undefined;
}

/** One page of a list read from storage. */
export interface StorageListResult {
  /** The objects; empty when read `raw` (then in `json`). */
  items: KubeObject[];
  /** Read `raw`: each object's JSON as a response sends it, resourceVersion set. */
  json?: string[];
  revision: number;
  continue?: string;
  remainingItemCount?: number;
}

function rel(prefix: string, key: string): string {
  return key.slice(prefix.length);
}

/**
 * Whether a list read from storage can send objects as stored (with their
 * resourceVersion set in the text, see storedWithRevision), given that the
 * response is JSON of the storage version: nothing added on read, every object
 * of the collection selected.
 */
export function listsRaw(ctx: StoreContext, filter: ObjectFilter): boolean {
  return (
    ctx.def.strategy.onRead === undefined &&
    isEverything(filter.labels) &&
    filter.fields.requirements.length === 0
  );
}

/**
 * What a list read with a visitor hands over per storage page, instead of
 * collecting it: the objects selected (or, read raw, their JSON, then `items` is
 * empty) and the bytes they were stored in. The next storage page is read once
 * the promise it returns (if any) resolved: it may wait for a turn of the event loop.
 */
export type ListVisitor = (
  items: KubeObject[],
  json: string[],
  storedBytes: number,
) => void | Promise<void>;

/**
 * Reads a list (or one page of it) from storage; with `raw` (see listsRaw), as the
 * objects' JSON instead of objects. With `visit`, the objects are handed to it a
 * storage page at a time and not kept (the result's `items` and `json` are empty):
 * a page of any size is read in memory of about one storage page.
 *
 * Storage is read in pages of at most `storagePageSize` items: a page of a list
 * asked for with a larger limit is read in several, which ends where one read would
 * have (each read is at most the count still wanted, so the list ends after the
 * same key, with the same continue token and remaining count).
 */
export async function listFromStorage(
  ctx: StoreContext,
  opts: ListRequest,
  filter: ObjectFilter,
  raw = false,
  countRemaining = true,
  visit?: ListVisitor,
): Promise<StorageListResult> {
  const { store, limits } = ctx.services;
  const prefix = collectionPrefix(ctx.def, ctx.scope.namespace);
  const limit = opts.limit;
  let token: ContinueToken | undefined;
  let storeToken: string | undefined;
  let revision: number | undefined;
  let after: string | undefined;
  if (opts.continue) {
    token = decodeContinueToken(opts.continue);
    if (token.store !== undefined) storeToken = token.store;
    else {
      after = prefix + token.start;
      if (token.rv > 0) revision = token.rv;
    }
  } else if (opts.resourceVersion !== "") {
    const n = parseResourceVersion(opts.resourceVersion) ?? 0;
    const exact =
      opts.resourceVersionMatch === "Exact" ||
      (opts.resourceVersionMatch === undefined && limit > 0 && n > 0);
    if (exact) revision = n;
    else if (n > 0) {
      const current = await store.currentRevision();
      if (n > current) throw tooLargeResourceVersion(n, current);
    }
  }

  let items: KubeObject[] = [];
  let json: string[] = [];
  let storedBytes = 0;
  const handOver = async () => {
    if (!visit) return;
    const handed = { items, json, storedBytes };
    items = [];
    json = [];
    storedBytes = 0;
    await visit(handed.items, handed.json, handed.storedBytes);
  };
  let count = 0;
  let pageRevision = 0;
  let lastKey: string | undefined;
  let next: ContinueToken | undefined;
  let remaining: number | undefined;
  try {
    for (;;) {
      const want = limit > 0 ? limit - count : limits.storagePageSize;
      const pageSize =
        after !== undefined ? limits.storagePageSize : Math.min(want, limits.storagePageSize);
      const page = await store.list(prefix, {
        limit: pageSize,
        // Only a page asked for with a limit tells what remains after it, and only
        // the storage page that may end it (one of every object still wanted).
        countRemaining: countRemaining && limit > 0 && (after !== undefined || pageSize === want),
        ...(storeToken !== undefined
          ? { continue: storeToken }
          : revision !== undefined
            ? { revision }
            : {}),
      });
      pageRevision = page.revision;
      revision = page.revision;
      let consumed = 0;
      let full = false;
      for (const kv of page.items as KeyValue[]) {
        if (after !== undefined && kv.key <= after) {
          consumed++;
          continue;
        }
        if (limit > 0 && count >= limit) {
          full = true;
          break;
        }
        consumed++;
        lastKey = kv.key;
        if (raw) {
          json.push(
            storedWithRevision(kv.value, kv.modRevision) ??
              JSON.stringify(decodeStored(kv, ctx.def)),
          );
          storedBytes += kv.value.length;
          count++;
          continue;
        }
        const obj = decodeStored(kv, ctx.def);
        if (objectMatches(filter, ctx.def, obj)) {
          items.push(obj);
          storedBytes += kv.value.length;
          count++;
        }
      }
      await handOver();
      const passedStart = after !== undefined && page.items.some((kv) => kv.key > after!);
      if (full) {
        // Stopped inside a storage page: the next page starts after the last key returned.
        next = { rv: pageRevision, start: rel(prefix, lastKey!) };
        if (page.remainingItemCount !== undefined) {
          remaining = page.remainingItemCount + (page.items.length - consumed);
        }
        break;
      }
      if (!page.continue) break;
      storeToken = page.continue;
      if (passedStart) after = undefined;
      if (limit > 0 && count >= limit) {
        if (after === undefined) {
          const last = page.items[page.items.length - 1].key;
          next = { rv: pageRevision, start: rel(prefix, last), store: page.continue };
          remaining = page.remainingItemCount;
        } else {
          next = { rv: pageRevision, start: rel(prefix, lastKey ?? after) };
        }
        break;
      }
    }
  } catch (err) {
    if (err instanceof CompactedError) {
      if (token) {
        const e = errors.expired(
          INCONSISTENT_CONTINUE_MESSAGE,
          encodeContinueToken({ rv: -1, start: token.start }),
        );
        throw e;
      }
      throw errors.expired(LIST_EXPIRED_MESSAGE);
    }
    if (err instanceof FutureRevisionError) {
      throw tooLargeResourceVersion(err.requestedRevision, err.currentRevision);
    }
    if (err instanceof InvalidKeyError && token) {
      throw errors.badRequest(`invalid continue token: ${err.message}`);
    }
    throw statusFromStorage(err, ctx.subject);
  }
  const out: StorageListResult = {
    items,
    revision: token && token.rv > 0 ? token.rv : pageRevision,
  };
  if (raw) out.json = json;
  if (next) {
    out.continue = encodeContinueToken(next);
    if (!opts.filtered && remaining !== undefined) out.remainingItemCount = remaining;
  }
  return out;
}
