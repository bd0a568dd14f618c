/**
 * Turning stored objects into response bodies for the negotiated representation:
 * the object itself in the requested version, PartialObjectMetadata, or a Table
 * with the type's printer columns.
 */
import type { KubeObject, ListMeta } from "@setpoint/api";
import { errors } from "@setpoint/api";
import type { ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import { convertToVersion } from "./codec.ts";
import type { Output } from "./negotiate.ts";
import { type IncludeObject, toTable } from "./table.ts";

export type { IncludeObject };

/** How a response renders objects. */
export interface Renderer {
  def: ResourceDefinition;
  version: VersionDefinition;
  output: Output;
  includeObject: IncludeObject;
}

/** Reads `includeObject` (Table rows: none, metadata only, or the whole object). */
export function parseIncludeObject(v: string | undefined): IncludeObject {
  if (v === undefined || v === "" || v === "Metadata") return "Metadata";
  if (v === "None" || v === "Object") return v;
  throw errors.badRequest(
    `Unable to convert to Table as requested: includeObject: Unsupported value: ${JSON.stringify(v)}: supported values: "Metadata", "None", "Object"`,
  );
}

/** The PartialObjectMetadata of an object. */
export function partialMetadata(obj: KubeObject, metaVersion: string): KubeObject {
  return {
    kind: "PartialObjectMetadata",
    apiVersion: `meta.k8s.io/${metaVersion}`,
    metadata: obj.metadata,
  };
}

/** The body for one object. */
export function renderOne(r: Renderer, obj: KubeObject): unknown {
  const versioned = convertToVersion(obj, r.def, r.version.name);
  switch (r.output.kind) {
    case "partial":
      return partialMetadata(versioned, r.output.metaVersion ?? "v1");
    case "table":
      return tableOf(r, [versioned], undefined, false);
    default:
      return versioned;
  }
}

/** A Table of objects (`noHeaders` leaves out the column definitions, as watch events after the first). */
export function tableOf(
  r: Renderer,
  objects: KubeObject[],
  listMeta: ListMeta | undefined,
  noHeaders: boolean,
): Record<string, unknown> {
  return toTable(r.def, r.version, objects, {
    includeObject: r.includeObject,
    noHeaders,
    tableVersion: r.output.metaVersion === "v1beta1" ? "v1beta1" : "v1",
    ...(listMeta ? { listMeta } : {}),
  }) as Record<string, unknown>;
}

/** The body for a list. */
export function renderList(r: Renderer, objects: KubeObject[], listMeta: ListMeta): unknown {
  const versioned = objects.map((o) => convertToVersion(o, r.def, r.version.name));
  switch (r.output.kind) {
    case "partial":
      return {
        kind: "PartialObjectMetadataList",
        apiVersion: `meta.k8s.io/${r.output.metaVersion ?? "v1"}`,
        metadata: listMeta,
        items: versioned.map((o) => partialMetadata(o, r.output.metaVersion ?? "v1")),
      };
    case "table":
      return tableOf(r, versioned, listMeta, false);
    default:
      return {
        kind: r.def.names.listKind,
        apiVersion: apiVersionOfRenderer(r),
        metadata: listMeta,
        items: versioned,
      };
  }
}

function apiVersionOfRenderer(r: Renderer): string {
  return r.def.group ? `${r.def.group}/${r.version.name}` : r.version.name;
}

/** Whether objects can be sent as stored (JSON of the storage version, no transformation). */
export function rendersRaw(r: Renderer, storageVersionName: string): boolean {
  return (
    r.output.kind === "object" &&
    r.output.mediaType === "application/json" &&
    r.version.name === storageVersionName
  );
}

/** The list envelope around already-serialized items (the fast path for cached lists). */
export function rawListJson(r: Renderer, itemsJson: string[], listMeta: ListMeta): string {
  const head = JSON.stringify({
    kind: r.def.names.listKind,
    apiVersion: apiVersionOfRenderer(r),
    metadata: listMeta,
  });
  return `${head.slice(0, -1)},"items":[${itemsJson.join(",")}]}`;
}

/**
 * The JSON of a list's envelope split where its elements go (items, or a Table's
 * rows): `head` ends with the array's `[`, `tail` is `]}`. JSON output only.
 */
export function listEnvelopeJson(r: Renderer, listMeta: ListMeta): { head: string; tail: string } {
  const empty = JSON.stringify(renderList(r, [], listMeta));
  return { head: empty.slice(0, -2), tail: "]}" };
}

/** The elements of a list's array (items, or a Table's rows) for `objects`, as renderList makes them. */
export function listElements(r: Renderer, objects: KubeObject[]): unknown[] {
  const versioned = objects.map((o) => convertToVersion(o, r.def, r.version.name));
  switch (r.output.kind) {
    case "partial": {
      const v = r.output.metaVersion ?? "v1";
      return versioned.map((o) => partialMetadata(o, v));
    }
    case "table":
      return tableOf(r, versioned, undefined, true).rows as unknown[];
    default:
      return versioned;
  }
}

/** The JSON of each element of a list's array (items, or a Table's rows) for `objects`. */
export function listElementsJson(r: Renderer, objects: KubeObject[]): string[] {
  return listElements(r, objects).map((e) => JSON.stringify(e));
}
