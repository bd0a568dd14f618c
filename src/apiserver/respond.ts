/** Answering a resource request: the object in the negotiated representation, with warnings. */
import type { KubeObject } from "../api/meta.ts";
import type { Status } from "../api/status.ts";
import type { RequestScope } from "./context.ts";
import { negotiateOutput } from "./negotiate.ts";
import { parseIncludeObject, type Renderer, renderOne } from "./render.ts";
import { writeObject, writeStatus } from "./response.ts";

/** The renderer for a request (Accept negotiated; 406 when nothing fits). */
export function rendererFor(scope: RequestScope, list: boolean): Renderer {
  const output = negotiateOutput(scope.req.headers.accept, list);
  return {
    def: scope.def,
    version: scope.version,
    output,
    includeObject: output.kind === "table" ? parseIncludeObject(scope.query) : "Metadata",
  };
}

/** Writes one object with `code`. */
export function respondObject(scope: RequestScope, code: number, obj: KubeObject): void {
  const r = rendererFor(scope, false);
  writeObject(scope.res, code, renderOne(r, obj), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}

/** Writes a success Status (e.g. for a deletion of a type that does not return the object). */
export function respondStatus(scope: RequestScope, status: Status): void {
  writeStatus(scope.res, status, scope.warnings);
}
