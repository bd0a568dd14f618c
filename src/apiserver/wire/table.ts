/**
 * Table output (meta.k8s.io/v1 Table), what `kubectl get` asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: column definitions
 * (Name, the type's printer columns, Age), one row of cells per object, and each
 * row's object as PartialObjectMetadata (kubectl needs it for -A and
 * --show-labels), the full object, or nothing, as `includeObject` asks.
 *
 * Watch streams asked for as Tables carry one Table per event: the handler calls
 * `toTable(def, version, [event.object], { includeObject, noHeaders })` with
 * `noHeaders: false` for the first event of the stream and `true` for the rest
 * (column definitions are sent once, as Kubernetes does).
 */

import type { KubeObject, ListMeta } from "@setpoint/api";
import { evaluateJsonPath, formatJsonPathValue } from "@setpoint/api";
import { objectMetaSchema } from "../../registry/builtin/meta-schemas.ts";
import type { PrinterColumn, ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import { coversJson, parseAcceptRanges } from "./media-range.ts";

export type IncludeObject = "None" | "Metadata" | "Object";

/** meta.k8s.io versions a Table can be served in. */
export type TableVersion = "v1" | "v1beta1";

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  object?: unknown;
}

export interface TableOptions {
  includeObject: IncludeObject;
  /** List metadata (resourceVersion, continue, remainingItemCount) for a list. */
  listMeta?: ListMeta;
  /** The time ages are measured to (default: now). */
  now?: Date;
  /** Leave out column definitions (watch events after the first). */
  noHeaders?: boolean;
  /** meta.k8s.io version of the Table (default v1). */
  tableVersion?: TableVersion;
}

/**
 * Which meta.k8s.io Table version the Accept header asks for: the first range
 * (by q, then order) covering application/json that asks for as=Table,
 * g=meta.k8s.io, v=v1 or v1beta1. A plain JSON range before it means no Table.
 */
export function negotiateTableVersion(accept: string | undefined): TableVersion | undefined {
  for (const r of parseAcceptRanges(accept)) {
    if (!coversJson(r)) continue;
    const { as, g, v } = r.params;
    if (as === undefined && g === undefined && v === undefined) return undefined;
    if (as === "Table" && g === "meta.k8s.io" && (v === "v1" || v === "v1beta1")) return v;
  }
  return undefined;
}

/** Whether the Accept header asks for a Table (`application/json;as=Table;v=v1;g=meta.k8s.io`). */
export function negotiateTable(accept: string | undefined): boolean {
  return negotiateTableVersion(accept) !== undefined;
}

/** Content-Type of a Table response. */
export function tableContentType(v: TableVersion = "v1"): string {
  return `application/json;as=Table;v=${v};g=meta.k8s.io`;
}

/**
 * A duration as kubectl prints ages ("5s", "3m2s", "4h", "2d"): about two
 * significant figures; "<invalid>" more than a second in the future.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(seconds / 3600);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const years = Math.trunc(hours / 24 / 365);
    const days = Math.trunc(hours / 24) % 365;
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** The age of a timestamp as kubectl prints it; "<unknown>" if unset, "<invalid>" if unparsable. */
export function age(timestamp: unknown, now: Date): string {
  if (typeof timestamp !== "string" || timestamp === "") return "<unknown>";
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return "<invalid>";
  return humanDuration(now.getTime() - t);
}

const NAME_COLUMN: TableColumnDefinition = {
  name: "Name",
  type: "string",
  format: "name",
  description: objectMetaSchema.properties?.name?.description ?? "Name of the object.",
  priority: 0,
};

const AGE_COLUMN: TableColumnDefinition = {
  name: "Age",
  type: "string",
  format: "",
  description:
    objectMetaSchema.properties?.creationTimestamp?.description ?? "When the object was created.",
  priority: 0,
};

type Cell = (obj: KubeObject, now: Date) => unknown;

interface Layout {
  columns: TableColumnDefinition[];
  cells: Cell[];
}

function hasColumn(version: VersionDefinition, name: string): boolean {
  return version.printerColumns.some((c) => c.name.toLowerCase() === name.toLowerCase());
}

/** A value in a column of the given type, as Kubernetes types CRD column cells. */
function typedCell(type: string, value: unknown, now: Date): unknown {
  if (value === undefined || value === null) return null;
  switch (type) {
    case "integer":
      if (typeof value === "number") return Math.trunc(value);
      return typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : null;
    case "number":
      return typeof value === "number" ? value : null;
    case "boolean":
      return typeof value === "boolean" ? value : null;
    case "date":
      if (typeof value !== "string") return null;
      // Values that are not timestamps (e.g. "<unknown>") are shown as they are.
      return Number.isNaN(Date.parse(value)) && value.startsWith("<") ? value : age(value, now);
    default:
      return typeof value === "string" ? value : formatJsonPathValue(value);
  }
}

function columnCell(col: PrinterColumn): Cell {
  if (col.value) {
    const value = col.value;
    if (col.verbatim) return (obj) => value(obj) ?? null;
    return (obj, now) => typedCell(col.type, value(obj), now);
  }
  const path = col.jsonPath;
  if (!path) return () => null;
  return (obj, now) => {
    let results: unknown[];
    try {
      results = evaluateJsonPath(obj, path);
    } catch {
      return null;
    }
    if (results.length === 0 || results[0] === undefined || results[0] === null) return null;
    const first = results[0];
    if (col.type === "string") return formatJsonPathValue(first);
    return typedCell(col.type, first, now);
  };
}

function layout(version: VersionDefinition): Layout {
  const columns: TableColumnDefinition[] = [];
  const cells: Cell[] = [];
  if (!hasColumn(version, "Name")) {
    columns.push(NAME_COLUMN);
    cells.push((obj) => obj.metadata?.name ?? "");
  }
  for (const col of version.printerColumns) {
    columns.push({
      name: col.name,
      type: col.type,
      format: col.format ?? "",
      description: col.description ?? "",
      priority: col.priority,
    });
    cells.push(columnCell(col));
  }
  if (version.ageColumn !== false && !hasColumn(version, "Age")) {
    columns.push(AGE_COLUMN);
    cells.push((obj, now) => age(obj.metadata?.creationTimestamp, now));
  }
  return { columns, cells };
}

/** The column definitions of a type's Table. */
export function tableColumns(
  _def: ResourceDefinition,
  version: VersionDefinition,
): TableColumnDefinition[] {
  return layout(version).columns;
}

function rowObject(obj: KubeObject, include: IncludeObject, tableVersion: TableVersion): unknown {
  if (include === "Object") return obj;
  if (include === "None") return undefined;
  return {
    kind: "PartialObjectMetadata",
    apiVersion: `meta.k8s.io/${tableVersion}`,
    metadata: obj.metadata ?? {},
  };
}

/** A meta.k8s.io Table of `objects` (one row each). */
export function toTable(
  _def: ResourceDefinition,
  version: VersionDefinition,
  objects: KubeObject[],
  opts: TableOptions,
): object {
  const now = opts.now ?? new Date();
  const tableVersion = opts.tableVersion ?? "v1";
  const { columns, cells } = layout(version);
  const rows: TableRow[] = objects.map((obj) => {
    const row: TableRow = { cells: cells.map((cell) => cell(obj, now)) };
    const object = rowObject(obj, opts.includeObject, tableVersion);
    if (object !== undefined) row.object = object;
    return row;
  });
  const metadata: ListMeta = {};
  if (opts.listMeta) {
    const { resourceVersion, continue: cont, remainingItemCount } = opts.listMeta;
    if (resourceVersion !== undefined) metadata.resourceVersion = resourceVersion;
    if (cont) metadata.continue = cont;
    if (remainingItemCount !== undefined) metadata.remainingItemCount = remainingItemCount;
  } else if (objects.length === 1 && objects[0].metadata?.resourceVersion) {
    metadata.resourceVersion = objects[0].metadata.resourceVersion;
  }
  return {
    kind: "Table",
    apiVersion: `meta.k8s.io/${tableVersion}`,
    metadata,
    columnDefinitions: opts.noHeaders ? null : columns,
    rows,
  };
}
