/**
 * DELETE on an object, and on a collection (deletecollection): the DeleteOptions
 * are read from the request, the resource store deletes (or, with finalizers,
 * marks; see src/apiserver/store/delete-decision.ts), and the answer is the
 * object (when only marked, or when the definition returns deleted objects) or a
 * success Status.
 */

import type { Status } from "@setpoint/api";
import type { DeleteOptions } from "../store/index.ts";
import { parseMediaType } from "../wire/media-type.ts";
import { renderList } from "../wire/render.ts";
import { writeObject } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { parseDeleteOptions } from "./delete-options.ts";
import { parseListOptions } from "./list-options.ts";
import { readBody } from "./request.ts";
import { respondObject, respondStatus } from "./respond.ts";

async function readDeleteOptions(scope: RequestScope): Promise<DeleteOptions> {
  const body = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  return parseDeleteOptions(body, parseMediaType(scope.req.headers["content-type"]), scope.query);
}

/** Handles DELETE on an object. */
export async function deleteResource(scope: RequestScope): Promise<void> {
  const o = await readDeleteOptions(scope);
  const name = scope.name!;
  const { obj, deleted } = await scope.store.delete(o);
  if (!deleted || scope.store.returnsDeletedObject) {
    const accepted = !deleted && o.orphanDependents === false;
    respondObject(scope, accepted ? 202 : 200, obj);
    return;
  }
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: {
      name: obj.metadata.name ?? name,
      group: scope.def.group,
      kind: scope.def.names.plural,
      uid: obj.metadata.uid ?? "",
    },
    code: 200,
  };
  respondStatus(scope, status);
}

/** Handles DELETE on a collection: deletes every object the selectors match. */
export async function deleteCollection(scope: RequestScope): Promise<void> {
  const opts = parseListOptions(scope.query, scope.def, scope.version.name, false);
  const o = await readDeleteOptions(scope);
  const items = await scope.store.deleteCollection(
    { labels: opts.labelSelector, fields: opts.fieldSelector },
    o,
  );
  const r = scope.renderer;
  writeObject(scope.res, 200, renderList(r, items, {}), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}
