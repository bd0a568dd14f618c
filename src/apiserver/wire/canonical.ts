/**
 * Objects as Kubernetes' Go types would encode them, made so on every write:
 *
 * - Timestamps are canonical: a `metav1.Time` is RFC 3339 in whole seconds, UTC with
 *   `Z` ("2024-01-02T15:04:05Z"); a `metav1.MicroTime` has exactly six fractional
 *   digits, UTC with `Z` ("2024-01-02T15:04:05.123456Z"). Any RFC 3339 value is read
 *   (other offsets, more or fewer digits); anything else is refused (400), as Go's
 *   decoder refuses it.
 * - Empty lists and maps that the Go types omit (`omitempty`) are left out: in
 *   metadata (labels, annotations, ownerReferences, finalizers, managedFields) for
 *   every type, and anywhere a built-in type's schema has a list or map.
 *
 * Which fields are Times and MicroTimes comes from the schema's named definitions
 * (meta/v1 Time, MicroTime), found once per schema.
 */
import { errors, type KubeObject, type Schema } from "@setpoint/api";
import { schemaDefinition } from "../../registry/definitions.ts";
import { isTyped, type ResourceDefinition, type VersionDefinition } from "../../registry/types.ts";

const TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";

/** Go's layouts, named in the refusal as Kubernetes names them. */
const TIME_LAYOUT = "2006-01-02T15:04:05Z07:00";
const MICRO_TIME_LAYOUT = "2006-01-02T15:04:05.000000Z07:00";

const RFC3339 =
  /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))$/;

type TimeKind = "time" | "micro";

/**
 * The canonical form of an RFC 3339 timestamp as a Time (seconds) or MicroTime
 * (six fractional digits), or undefined when `value` is not one.
 */
export function canonicalTimestamp(value: string, kind: TimeKind): string | undefined {
  if (value.length > TIMESTAMP_MEMO_KEY_LENGTH) return parseTimestamp(value, kind);
  const memo = kind === "time" ? TIME_MEMO : MICROTIME_MEMO;
  const known = memo.get(value);
  if (known !== undefined || memo.has(value)) return known;
  const canonical = parseTimestamp(value, kind);
  if (memo.size >= TIMESTAMP_MEMO_SIZE) memo.clear();
  memo.set(value, canonical);
  return canonical;
}

/**
 * Timestamps recently made canonical, by kind: the objects written in one second
 * carry the same few (creation, managedFields, conditions), so most are looked
 * up, not parsed again. Cleared when full.
 */
const TIMESTAMP_MEMO_SIZE = 4096;
/** Longer values are not kept (an RFC 3339 timestamp has at most about 40 characters). */
const TIMESTAMP_MEMO_KEY_LENGTH = 64;
const TIME_MEMO = new Map<string, string | undefined>();
const MICROTIME_MEMO = new Map<string, string | undefined>();

function parseTimestamp(value: string, kind: TimeKind): string | undefined {
  const m = RFC3339.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59) {
    return undefined;
  }
  if (Number(s) > 59 || (!z && (Number(oh) > 23 || Number(om) > 59))) return undefined;
  let ms = Date.UTC(Number(y), month - 1, day, Number(h), Number(mi), Number(s));
  const check = new Date(ms);
  if (check.getUTCDate() !== day) return undefined;
  if (!z) {
    const offset = (Number(oh) * 60 + Number(om)) * 60_000;
    ms += sign === "+" ? -offset : offset;
  }
  const whole = new Date(ms).toISOString().slice(0, 19);
  if (kind === "time") return `${whole}Z`;
  const micros = (frac ?? "").slice(0, 6).padEnd(6, "0");
  return `${whole}.${micros}Z`;
}

/** A path into an object: property names, "*" for any list item or map value. */
type Path = readonly string[];

interface SchemaFacts {
  times: { path: Path; kind: TimeKind }[];
  /** Lists and maps, deepest first (so emptied parents are seen after their children). */
  collections: Path[];
}

const factsCache = new WeakMap<Schema, SchemaFacts>();

function schemaFacts(schema: Schema): SchemaFacts {
  let facts = factsCache.get(schema);
  if (facts) return facts;
  facts = { times: [], collections: [] };
  const walk = (s: Schema | undefined, path: string[], depth: number, seen: Set<Schema>) => {
    if (!s || depth > 32 || seen.has(s)) return;
    const name = schemaDefinition(s)?.name;
    if (name === TIME || name === MICRO_TIME) {
      facts!.times.push({ path: [...path], kind: name === TIME ? "time" : "micro" });
      return;
    }
    seen.add(s);
    if (s.properties) {
      for (const [k, child] of Object.entries(s.properties)) {
        walk(child, [...path, k], depth + 1, seen);
      }
    }
    if (s.items) {
      walk(s.items, [...path, "*"], depth + 1, seen);
      facts!.collections.push([...path]);
    }
    if (typeof s.additionalProperties === "object") {
      walk(s.additionalProperties, [...path, "*"], depth + 1, seen);
      facts!.collections.push([...path]);
    }
    seen.delete(s);
  };
  walk(schema, [], 0, new Set());
  facts.collections.sort((a, b) => b.length - a.length);
  factsCache.set(schema, facts);
  return facts;
}

/** Calls `fn(container, key)` for every place `path` reaches in `obj`. */
function visit(
  obj: unknown,
  path: Path,
  fn: (container: Record<string, unknown> | unknown[], key: string | number) => void,
  i = 0,
): void {
  if (obj === null || typeof obj !== "object") return;
  const seg = path[i];
  const last = i === path.length - 1;
  if (seg === "*") {
    if (Array.isArray(obj)) {
      for (let j = 0; j < obj.length; j++) {
        if (last) fn(obj, j);
        else visit(obj[j], path, fn, i + 1);
      }
    } else {
      for (const k of Object.keys(obj)) {
        if (last) fn(obj as Record<string, unknown>, k);
        else visit((obj as Record<string, unknown>)[k], path, fn, i + 1);
      }
    }
    return;
  }
  if (Array.isArray(obj) || !(seg in obj)) return;
  if (last) fn(obj as Record<string, unknown>, seg);
  else visit((obj as Record<string, unknown>)[seg], path, fn, i + 1);
}

function isEmptyCollection(v: unknown): boolean {
  if (Array.isArray(v)) return v.length === 0;
  return v !== null && typeof v === "object" && Object.keys(v).length === 0;
}

const METADATA_COLLECTIONS = [
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
];

function refuseTime(def: ResourceDefinition, version: string, value: unknown, kind: TimeKind) {
  const kindName = def.names.kind;
  const layout = kind === "time" ? TIME_LAYOUT : MICRO_TIME_LAYOUT;
  return errors.badRequest(
    `${kindName} in version "${version}" cannot be handled as a ${kindName}: parsing time ${JSON.stringify(JSON.stringify(value))} as ${JSON.stringify(`"${layout}"`)}: cannot parse ${JSON.stringify(String(value))} as a timestamp`,
  );
}

/** Makes `obj` (to be written) encode as Kubernetes' types would; 400 for a malformed timestamp. */
export function canonicalizeObject(
  obj: KubeObject,
  def: ResourceDefinition,
  version: VersionDefinition,
): void {
  const fix = (
    container: Record<string, unknown> | unknown[],
    key: string | number,
    kind: TimeKind,
  ) => {
    const v = (container as Record<string | number, unknown>)[key];
    if (v === null || v === undefined) return;
    const canonical = typeof v === "string" ? canonicalTimestamp(v, kind) : undefined;
    if (canonical === undefined) throw refuseTime(def, version.name, v, kind);
    (container as Record<string | number, unknown>)[key] = canonical;
  };
  const meta = obj.metadata as unknown as Record<string, unknown>;
  if (meta) {
    for (const k of ["creationTimestamp", "deletionTimestamp"]) {
      if (k in meta) fix(meta, k, "time");
    }
    if (Array.isArray(meta.managedFields)) {
      for (const entry of meta.managedFields) {
        if (entry && typeof entry === "object" && "time" in entry) {
          fix(entry as Record<string, unknown>, "time", "time");
        }
      }
    }
    for (const k of METADATA_COLLECTIONS) {
      if (isEmptyCollection(meta[k])) delete meta[k];
    }
  }
  // Beyond metadata, only typed objects have Go types; a custom resource keeps
  // what its schema allowed.
  if (!isTyped(def)) return;
  const facts = schemaFacts(version.schema);
  for (const t of facts.times) {
    if (t.path[0] === "metadata") continue;
    visit(obj, t.path, (c, k) => fix(c, k, t.kind));
  }
  for (const path of facts.collections) {
    if (path.length === 0 || path[0] === "metadata") continue;
    visit(obj, path, (c, k) => {
      if (!Array.isArray(c) && isEmptyCollection(c[k])) delete c[k];
    });
  }
}
