/**
 * GET on an object (or its status). resourceVersion "0" may be served from the
 * watch cache; otherwise the read is from storage, the most recent state.
 */
import { errors } from "@setpoint/api";
import { objectKey } from "../store/keys.ts";
import { statusFromStorage } from "../store/store-errors.ts";
import { decodeStored } from "../wire/codec.ts";
import type { RequestScope } from "./context.ts";
import { respondObject } from "./respond.ts";

/** Handles GET on an object. */
export async function getResource(scope: RequestScope): Promise<void> {
  const key = objectKey(scope.def, scope.namespace, scope.name!);
  if (scope.query.string("resourceVersion") === "0") {
    const cache = scope.ctx.caches.forDef(scope.def);
    if (cache.isReady) {
      const entry = cache.get(key);
      if (!entry) throw errors.notFound(scope.subject);
      respondObject(scope, 200, JSON.parse(entry.json));
      return;
    }
  }
  let kv: Awaited<ReturnType<typeof scope.ctx.store.get>>;
  try {
    kv = await scope.ctx.store.get(key);
  } catch (err) {
    throw statusFromStorage(err, scope.subject);
  }
  if (!kv) throw errors.notFound(scope.subject);
  respondObject(scope, 200, decodeStored(kv, scope.def));
}
