/**
 * The status of ValidatingAdmissionPolicies, written by the server as
 * Kubernetes' policy status controller writes it: once per generation,
 * `status.observedGeneration` and `status.typeChecking.expressionWarnings`.
 *
 * Type checking here checks field selections: every chain of field names read
 * from `object` or `oldObject` (against the schema of each kind the
 * matchConstraints name explicitly, without `*`) and from `params` (against the
 * paramKind's schema) must name fields the schema declares; a field it does not
 * is reported as cel-go reports it (`undefined field 'NAME'`) for that kind, at
 * the expression's field path. Types of operands are not checked (the
 * expressions are compiled with `dyn` values; a type mismatch is found when the
 * expression runs, under the policy's failurePolicy).
 *
 * The policies are looked at when their watch cache moves on (checked on a
 * short timer; a stopped server stops it).
 */
import type { KubeObject, Schema } from "@setpoint/api";
import { ADMISSION_GROUP } from "../../registry/builtin/admission/index.ts";
import { formatCompileError } from "../../registry/crd/cel/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";

const POLICIES = "validatingadmissionpolicies";
const POLL_MS = 250;

type Obj = Record<string, unknown>;
const arr = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);

export interface ExpressionWarning {
  fieldRef: string;
  warning: string;
}

/** Writes a policy's status (through its status subresource, as the server). */
export type StatusWriter = (name: string, status: Obj, generation: number) => Promise<void>;

interface Target {
  label: string;
  schema: Schema | undefined;
}

interface AstNode {
  op: string;
  args: unknown;
  pos?: number;
  start?: number;
}

/** The chain `root.a.b.c` of a select node: [root, [a, b, c] with their positions]. */
function chain(
  node: AstNode,
): { root: string; fields: { name: string; pos: number }[] } | undefined {
  const fields: { name: string; pos: number }[] = [];
  let n: AstNode = node;
  while (n.op === ".") {
    const [inner, name] = n.args as [AstNode, string];
    // cel-go places a selection at its dot, one before the field name.
    fields.unshift({ name, pos: n.pos ?? 0 });
    n = inner;
  }
  if (n.op !== "id" || typeof n.args !== "string") return undefined;
  return { root: n.args, fields };
}

function isNode(v: unknown): v is AstNode {
  return typeof v === "object" && v !== null && typeof (v as AstNode).op === "string";
}

/** Every maximal select chain of an expression's AST. */
function selections(node: unknown, out: AstNode[]): AstNode[] {
  if (Array.isArray(node)) {
    for (const n of node) selections(n, out);
    return out;
  }
  if (!isNode(node)) return out;
  if (node.op === ".") {
    out.push(node);
    // The innermost non-select operand may hold more chains (e.g. a call's result).
    let n: AstNode = node;
    while (n.op === ".") n = (n.args as [AstNode, string])[0];
    if (n.op !== "id") selections(n, out);
    return out;
  }
  selections(node.args, out);
  return out;
}

/** The first field of `fields` the schema does not declare, or undefined. */
function undeclared(schema: Schema | undefined, fields: { name: string; pos: number }[]) {
  let s = schema;
  for (const f of fields) {
    if (!s || s["x-kubernetes-preserve-unknown-fields"] || s["x-kubernetes-int-or-string"]) return;
    if (
      s["x-kubernetes-embedded-resource"] &&
      (f.name === "apiVersion" || f.name === "kind" || f.name === "metadata")
    )
      return;
    const props = s.properties;
    if (props && f.name in props) {
      s = props[f.name];
      continue;
    }
    if (s.additionalProperties && typeof s.additionalProperties === "object") {
      s = s.additionalProperties as Schema;
      continue;
    }
    if (!props || s.type !== "object") return;
    return f;
  }
  return undefined;
}

export function typeCheckExpression(
  expression: string,
  parse: (expression: string) => unknown,
  roots: Record<string, Target[]>,
): string | undefined {
  let ast: unknown;
  try {
    ast = parse(expression);
  } catch {
    return undefined; // Compile errors refuse the policy when it is written.
  }
  const byLabel = new Map<string, string[]>();
  for (const sel of selections(ast, [])) {
    const c = chain(sel);
    if (!c) continue;
    for (const target of roots[c.root] ?? []) {
      const bad = undeclared(target.schema, c.fields);
      if (!bad) continue;
      const list = byLabel.get(target.label) ?? [];
      list.push(
        formatCompileError(expression, `undefined field '${bad.name}'`, Math.max(0, bad.pos - 1)),
      );
      byLabel.set(target.label, list);
    }
  }
  if (byLabel.size === 0) return undefined;
  return [...byLabel].map(([label, errs]) => `${label}: ${errs.join("\n")}`).join("\n");
}

function versionSchema(def: ResourceDefinition, version: string): Schema | undefined {
  return def.versions.find((v) => v.name === version)?.schema;
}

export class PolicyStatus {
  #timer: NodeJS.Timeout | undefined;
  #lastRev = -1;
  #busy = false;

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
    private readonly write: StatusWriter,
    private readonly parse: (expression: string, hasParams: boolean) => unknown,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.#tick(), POLL_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #tick(): Promise<void> {
    if (this.#busy) return;
    const def = this.registry.get(ADMISSION_GROUP, POLICIES);
    if (!def) return;
    const cache = this.caches.forDef(def);
    if (!cache.isReady || cache.rev === this.#lastRev) return;
    this.#busy = true;
    const rev = cache.rev;
    try {
      let pending = false;
      for (const e of cache.entries()) {
        const p = JSON.parse(e.json) as KubeObject & { status?: Obj };
        const generation = p.metadata.generation ?? 1;
        if (p.status?.observedGeneration === generation) continue;
        try {
          await this.write(p.metadata.name ?? "", this.statusOf(p), generation);
        } catch {
          pending = true; // Changed or gone meanwhile: looked at again.
        }
      }
      if (!pending) this.#lastRev = rev;
    } finally {
      this.#busy = false;
    }
  }

  /** The status a policy's generation gets. */
  statusOf(p: KubeObject): Obj {
    const spec = ((p as { spec?: Obj }).spec ?? {}) as Obj;
    const targets: Target[] = [];
    const mc = (spec.matchConstraints ?? {}) as Obj;
    for (const rule of arr<Obj>(mc.resourceRules)) {
      for (const group of arr<string>(rule.apiGroups)) {
        for (const version of arr<string>(rule.apiVersions)) {
          for (const resource of arr<string>(rule.resources)) {
            if (
              group === "*" ||
              version === "*" ||
              resource.includes("*") ||
              resource.includes("/")
            )
              continue;
            const def = this.registry.get(group, resource);
            if (!def || !def.versions.some((v) => v.name === version)) continue;
            const gv = group ? `${group}/${version}` : version;
            const label = `${gv}, Kind=${def.names.kind}`;
            if (targets.some((t) => t.label === label)) continue;
            targets.push({ label, schema: versionSchema(def, version) });
          }
        }
      }
    }
    const pk = spec.paramKind as { apiVersion?: string; kind?: string } | undefined;
    const paramTargets: Target[] = [];
    if (pk?.apiVersion && pk.kind) {
      const [group, version] = pk.apiVersion.includes("/")
        ? pk.apiVersion.split("/")
        : ["", pk.apiVersion];
      const def = this.registry.byKind(group ?? "", pk.kind);
      if (def && version)
        paramTargets.push({
          label: `${pk.apiVersion}, Kind=${pk.kind}`,
          schema: versionSchema(def, version),
        });
    }
    const roots = { object: targets, oldObject: targets, params: paramTargets };
    const hasParams = pk !== undefined;
    const warnings: ExpressionWarning[] = [];
    const check = (fieldRef: string, expression: unknown) => {
      if (typeof expression !== "string" || !expression.trim()) return;
      const warning = typeCheckExpression(expression, (x) => this.parse(x, hasParams), roots);
      if (warning) warnings.push({ fieldRef, warning });
    };
    arr<Obj>(spec.validations).forEach((v, i) => {
      check(`spec.validations[${i}].expression`, v.expression);
      check(`spec.validations[${i}].messageExpression`, v.messageExpression);
    });
    arr<Obj>(spec.auditAnnotations).forEach((a, i) => {
      check(`spec.auditAnnotations[${i}].valueExpression`, a.valueExpression);
    });
    arr<Obj>(spec.matchConditions).forEach((c, i) => {
      check(`spec.matchConditions[${i}].expression`, c.expression);
    });
    arr<Obj>(spec.variables).forEach((v, i) => {
      check(`spec.variables[${i}].expression`, v.expression);
    });
    return {
      observedGeneration: p.metadata.generation ?? 1,
      typeChecking: warnings.length > 0 ? { expressionWarnings: warnings } : {},
    };
  }
}
