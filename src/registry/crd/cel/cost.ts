/**
 * Static cost of CEL rules, as Kubernetes estimates it: each node's cost times the
 * largest sizes its inputs can have (maxItems, maxLength, maxProperties, or what
 * fits in a request).
 */
import type { Schema } from "@setpoint/api";
import { isObject } from "../paths.ts";
import { MAX_REQUEST_BYTES } from "./limits.ts";
import { escapeCelName } from "./names.ts";
import { isAst } from "./types.ts";

export class CompileIssue extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

export interface Est {
  cost: number;
  size: number;
  schema?: Schema;
}

function minSize(s: Schema | undefined): number {
  if (!s) return 2;
  switch (s.type) {
    case "string":
      return 3;
    case "object":
    case "array":
      return 3;
    case "boolean":
      return 5;
    default:
      return 2;
  }
}

/** The largest number of elements (lists, maps) or characters (strings) a value can have. */
export function maxSize(s: Schema | undefined): number {
  if (!s) return Math.floor(MAX_REQUEST_BYTES / 2);
  if (s.type === "array") return s.maxItems ?? Math.floor(MAX_REQUEST_BYTES / minSize(s.items));
  if (s.type === "string") return s.maxLength ?? MAX_REQUEST_BYTES;
  if (s.type === "object") {
    if (isObject(s.additionalProperties)) {
      return (
        s.maxProperties ??
        Math.floor(MAX_REQUEST_BYTES / (minSize(s.additionalProperties as Schema) + 3))
      );
    }
    if (s.properties && !s["x-kubernetes-preserve-unknown-fields"]) {
      return Object.keys(s.properties).length;
    }
    return s.maxProperties ?? Math.floor(MAX_REQUEST_BYTES / 5);
  }
  return 1;
}

const ROOT_META = new Set(["apiVersion", "kind", "metadata"]);
const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);
const STRING_FUNCTIONS = new Set([
  "matches",
  "contains",
  "startsWith",
  "endsWith",
  "find",
  "findAll",
  "replace",
  "split",
  "lowerAscii",
  "upperAscii",
  "trim",
  "reverse",
  "indexOf",
  "lastIndexOf",
  "substring",
]);
const LIST_FUNCTIONS = new Set(["isSorted", "sum", "min", "max", "join", "indexOf", "lastIndexOf"]);

function fieldOf(s: Schema | undefined, name: string, root: boolean): Schema | undefined | null {
  if (!s) return undefined;
  if (s.properties) {
    for (const [k, p] of Object.entries(s.properties)) if (escapeCelName(k) === name) return p;
  }
  if (isObject(s.additionalProperties)) return s.additionalProperties as Schema;
  if (root && ROOT_META.has(name)) return undefined;
  if (s["x-kubernetes-preserve-unknown-fields"] || s["x-kubernetes-embedded-resource"]) {
    return undefined;
  }
  if (s.type === "object" && s.properties) return null;
  return undefined;
}

/** Static cost of an expression, and the schema/size of its result where known. */
export function estimate(
  n: unknown,
  selfSchema: Schema,
  root: boolean,
  scope: Map<string, Schema | undefined>,
): Est {
  if (!isAst(n)) return { cost: 0, size: 1 };
  const a = n.args as unknown[];
  const sumOf = (xs: unknown[]) =>
    xs.reduce((t: number, x) => t + estimate(x, selfSchema, root, scope).cost, 0);
  switch (n.op) {
    case "value": {
      const v = n.args;
      return { cost: 0, size: typeof v === "string" ? v.length : 1 };
    }
    case "id": {
      const name = String(n.args);
      if (scope.has(name)) {
        const s = scope.get(name);
        return { cost: 1, size: maxSize(s), schema: s };
      }
      if (name === "self" || name === "oldSelf") {
        return { cost: 1, size: maxSize(selfSchema), schema: selfSchema };
      }
      return { cost: 1, size: 1 };
    }
    case ".":
    case ".?": {
      const obj = estimate(a[0], selfSchema, root, scope);
      const name = String(a[1]);
      const isRootSelf =
        isAst(a[0]) && a[0].op === "id" && (a[0].args === "self" || a[0].args === "oldSelf");
      const child = fieldOf(obj.schema, name, root && isRootSelf);
      if (child === null) {
        const end = (n as { end?: number }).end;
        const at = typeof end === "number" ? end - name.length - 1 : (n.start ?? 0);
        throw new CompileIssue(`undefined field '${name}'`, at);
      }
      return { cost: obj.cost + 1, size: maxSize(child), schema: child };
    }
    case "[]":
    case "[?]": {
      const obj = estimate(a[0], selfSchema, root, scope);
      const idx = estimate(a[1], selfSchema, root, scope);
      const s = obj.schema;
      const child =
        s?.type === "array"
          ? s.items
          : isObject(s?.additionalProperties)
            ? (s?.additionalProperties as Schema)
            : undefined;
      return { cost: obj.cost + idx.cost + 1, size: maxSize(child), schema: child };
    }
    case "rcall": {
      const name = String(a[0]);
      const recv = estimate(a[1], selfSchema, root, scope);
      const args = a[2] as unknown[];
      if (COMPREHENSIONS.has(name) && isAst(args[0]) && args[0].op === "id") {
        const s = recv.schema;
        const elem =
          s?.type === "array"
            ? s.items
            : s?.type === "object"
              ? ({ type: "string" } as Schema)
              : undefined;
        const inner = new Map(scope);
        inner.set(String(args[0].args), elem);
        const body = args
          .slice(1)
          .reduce((t: number, x) => t + estimate(x, selfSchema, root, inner).cost, 0);
        return { cost: recv.cost + recv.size * (body + 1) + 1, size: recv.size };
      }
      let extra = 0;
      if (STRING_FUNCTIONS.has(name) && recv.schema?.type !== "array")
        extra = Math.ceil(recv.size / 10);
      else if (LIST_FUNCTIONS.has(name)) extra = recv.size;
      const sameSchema = name === "value" || name === "orValue";
      return {
        cost: recv.cost + sumOf(args) + extra + 1,
        size: sameSchema ? recv.size : name === "split" || name === "findAll" ? recv.size : 1,
        schema: sameSchema ? recv.schema : undefined,
      };
    }
    case "call": {
      const name = String(a[0]);
      const args = a[1] as unknown[];
      if (name === "has") return { cost: sumOf(args) + 1, size: 1 };
      if (name.endsWith("contains") || name.endsWith("equivalent") || name.endsWith("intersects")) {
        const sizes = args.map((x) => estimate(x, selfSchema, root, scope).size);
        return { cost: sumOf(args) + sizes.reduce((t, x) => t * x, 1) + 1, size: 1 };
      }
      return { cost: sumOf(args) + 1, size: 1 };
    }
    case "list":
      return { cost: sumOf(a) + 1, size: a.length };
    case "map":
      return { cost: a.reduce((t: number, e) => t + sumOf(e as unknown[]), 0) + 1, size: a.length };
    case "?:": {
      const c = estimate(a[0], selfSchema, root, scope);
      const l = estimate(a[1], selfSchema, root, scope);
      const r = estimate(a[2], selfSchema, root, scope);
      return { cost: c.cost + Math.max(l.cost, r.cost) + 1, size: Math.max(l.size, r.size) };
    }
    case "+": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return {
        cost: l.cost + r.cost + Math.ceil((l.size + r.size) / 10) + 1,
        size: l.size + r.size,
      };
    }
    case "==":
    case "!=": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return { cost: l.cost + r.cost + Math.ceil(Math.min(l.size, r.size) / 10) + 1, size: 1 };
    }
    case "in": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return { cost: l.cost + r.cost + r.size + 1, size: 1 };
    }
    default: {
      const parts = Array.isArray(a) ? a : [n.args];
      return { cost: sumOf(parts) + 1, size: 1 };
    }
  }
}

export function costMessage(what: string, cost: number, limit: number): string {
  const factor = cost / limit;
  const shown =
    factor > 100
      ? "more than 100x"
      : factor < 1.5
        ? `${factor.toFixed(6)}x`
        : `${factor.toFixed(1)}x`;
  return `${what} exceeds budget by factor of ${shown} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}
