/**
 * GET on an object (or its status). resourceVersion "0" may be served from the
 * watch cache; otherwise the read is from storage, the most recent state.
 */
import type { RequestScope } from "./context.ts";
import { respondObject } from "./respond.ts";

/** Handles GET on an object. */
export async function getResource(scope: RequestScope): Promise<void> {
  const anyState = scope.query.string("resourceVersion") === "0";
  respondObject(scope, 200, await scope.store.get({ anyState }));
}
