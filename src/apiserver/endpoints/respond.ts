/** Answering a resource request: the object in the negotiated representation, with warnings. */

import type { IncomingMessage } from "node:http";
import type { KubeObject, Status } from "@setpoint/api";
import type { ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import { convertToVersion, rememberedJson } from "../wire/codec.ts";
import { negotiateOutput, negotiateWatchOutput } from "../wire/negotiate.ts";
import { parseIncludeObject, type Renderer, renderOne } from "../wire/render.ts";
import { writeObject, writeRaw, writeStatus } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import type { Query } from "./request.ts";

/**
 * The renderer for a request (Accept negotiated, 406 when nothing fits; watches
 * stream JSON, or protobuf for the built-in kinds). Computed before the request
 * does anything.
 */
export function negotiateRenderer(
  req: IncomingMessage,
  def: ResourceDefinition,
  version: VersionDefinition,
  query: Query,
  how: "object" | "list" | "watch",
): Renderer {
  const protobuf = def.protobufMessage !== undefined;
  const output =
    how === "watch"
      ? negotiateWatchOutput(req.headers.accept, protobuf)
      : negotiateOutput(req.headers.accept, how === "list", protobuf);
  return {
    def,
    version,
    output,
    includeObject:
      output.kind === "table" ? parseIncludeObject(query.string("includeObject")) : "Metadata",
  };
}

/** Writes one object with `code`. */
export function respondObject(scope: RequestScope, code: number, obj: KubeObject): void {
  const r = scope.renderer;
  if (r.output.kind === "object" && r.output.mediaType === "application/json") {
    // An object just written, asked for as stored: its JSON is already made.
    const json = rememberedJson(obj);
    if (json !== undefined && convertToVersion(obj, r.def, r.version.name) === obj) {
      writeRaw(scope.res, code, r.output.contentType, json, scope.warnings);
      return;
    }
  }
  writeObject(scope.res, code, renderOne(r, obj), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}

/** Writes a success Status (e.g. for a deletion of a type that does not return the object). */
export function respondStatus(scope: RequestScope, status: Status): void {
  writeStatus(scope.res, status, scope.warnings, statusMediaType(scope.renderer));
}

/** The media type of a Status answered to a request: protobuf when the client asked for it. */
export function statusMediaType(r: Renderer): string {
  return r.output.mediaType === "application/vnd.kubernetes.protobuf"
    ? r.output.mediaType
    : "application/json";
}
