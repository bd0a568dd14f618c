/**
 * ValidatingAdmissionPolicies, evaluated on every write as Kubernetes' admission
 * chain does (after mutating webhooks, before validating webhooks): for each
 * binding of each policy whose matchConstraints (and the binding's
 * matchResources) match the request, with each param object the binding's
 * paramRef selects, the policy's matchConditions, then its validations (with its
 * variables) and auditAnnotations. A failed validation acts as the binding's
 * validationActions say: Deny refuses the write
 * ("ValidatingAdmissionPolicy 'P' with binding 'B' denied request: MESSAGE",
 * with the validation's reason and its code), Warn sends a warning, Audit adds a
 * `validation.policy.admission.k8s.io/validation_failure` annotation to the
 * request's audit event. An expression that cannot be evaluated, a param that
 * cannot be found under parameterNotFoundAction Deny and a paramKind that names
 * no served kind fail the binding under the policy's failurePolicy.
 *
 * Policies, bindings, params and namespaces are read from the server's watch
 * caches (no storage read per request); the parsed policies are kept per cached
 * state.
 */
import type { ParseResult } from "@marcbachmann/cel-js";
import {
  errors,
  type KubeObject,
  labelSelectorFromMetav1,
  matchesLabels,
  StatusError,
} from "@setpoint/api";
import { ADMISSION_GROUP } from "../../registry/builtin/admission/index.ts";
import {
  CompileError,
  compilePolicyExpression,
  evaluationError,
  lazyVariables,
  runMetered,
} from "../../registry/builtin/admission/policy-cel.ts";
import { CelAuthorizer, type Decide, toCel } from "../../registry/crd/cel/index.ts";
import type { Registry } from "../../registry/registry.ts";
import { objectKey } from "../../registry/storage-keys.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { convertToVersion } from "../wire/codec.ts";
import type { MetaLabelSelector } from "./configurations.ts";
import { type MatchAttributes, type MatchResources, matchResourcesVersion } from "./matching.ts";
import { admissionRequest } from "./request.ts";

const POLICIES = "validatingadmissionpolicies";
const BINDINGS = "validatingadmissionpolicybindings";
/** The audit annotation of validation failures under the Audit action. */
export const VALIDATION_FAILURE_ANNOTATION =
  "validation.policy.admission.k8s.io/validation_failure";
/** Longest audit annotation value kept (Kubernetes' limit). */
const MAX_ANNOTATION_VALUE = 10 * 1024;
const MAX_MESSAGE = 5 * 1024;

type Program = ParseResult | CompileError;

interface CompiledExpression {
  expression: string;
  program: Program;
}

interface CompiledValidation extends CompiledExpression {
  message?: string;
  messageExpression?: CompiledExpression;
  reason?: string;
}

interface CompiledPolicy {
  name: string;
  failurePolicy: "Fail" | "Ignore";
  paramKind?: { apiVersion: string; kind: string };
  matchConstraints: MatchResources;
  matchConditions: (CompiledExpression & { name: string })[];
  variables: { name: string; program: Program }[];
  validations: CompiledValidation[];
  auditAnnotations: (CompiledExpression & { key: string })[];
}

interface Binding {
  name: string;
  policyName: string;
  paramRef?: {
    name?: string;
    namespace?: string;
    selector?: MetaLabelSelector;
    parameterNotFoundAction?: "Allow" | "Deny";
  };
  matchResources?: MatchResources;
  validationActions: ("Deny" | "Warn" | "Audit")[];
}

interface Bound {
  policy: CompiledPolicy;
  bindings: Binding[];
}

function compileOne(
  expression: string,
  hasParams: boolean,
  expected: "bool" | "string" | "any",
): Program {
  try {
    return compilePolicyExpression(expression, hasParams, expected);
  } catch (err) {
    return err instanceof CompileError ? err : new CompileError(String(err));
  }
}

type Obj = Record<string, unknown>;
const arr = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);

function compilePolicy(o: KubeObject): CompiledPolicy {
  const spec = ((o as { spec?: Obj }).spec ?? {}) as Obj;
  const pk = spec.paramKind as { apiVersion: string; kind: string } | undefined;
  const hasParams = pk !== undefined;
  return {
    name: o.metadata.name ?? "",
    failurePolicy: spec.failurePolicy === "Ignore" ? "Ignore" : "Fail",
    ...(pk ? { paramKind: pk } : {}),
    matchConstraints: (spec.matchConstraints ?? {}) as MatchResources,
    matchConditions: arr<Obj>(spec.matchConditions).map((c) => ({
      name: String(c.name ?? ""),
      expression: String(c.expression ?? ""),
      program: compileOne(String(c.expression ?? ""), hasParams, "bool"),
    })),
    variables: arr<Obj>(spec.variables).map((v) => ({
      name: String(v.name ?? ""),
      program: compileOne(String(v.expression ?? ""), hasParams, "any"),
    })),
    validations: arr<Obj>(spec.validations).map((v) => {
      const me = typeof v.messageExpression === "string" ? v.messageExpression : "";
      return {
        expression: String(v.expression ?? ""),
        program: compileOne(String(v.expression ?? ""), hasParams, "bool"),
        ...(typeof v.message === "string" && v.message.trim() ? { message: v.message.trim() } : {}),
        ...(me.trim()
          ? { messageExpression: { expression: me, program: compileOne(me, hasParams, "string") } }
          : {}),
        ...(typeof v.reason === "string" ? { reason: v.reason } : {}),
      };
    }),
    auditAnnotations: arr<Obj>(spec.auditAnnotations).map((a) => ({
      key: String(a.key ?? ""),
      expression: String(a.valueExpression ?? ""),
      program: compileOne(String(a.valueExpression ?? ""), hasParams, "any"),
    })),
  };
}

/** The code of a validation's reason, as Kubernetes maps it. */
function reasonCode(reason: string): number {
  switch (reason) {
    case "Forbidden":
      return 403;
    case "Unauthorized":
      return 401;
    case "RequestEntityTooLarge":
      return 413;
    default:
      return 422;
  }
}

interface Failure {
  policy: string;
  binding: string;
  message: string;
  reason: string;
  expressionIndex?: number;
}

/** What one binding's evaluation decided. */
type Outcome =
  | { kind: "failures"; failures: Failure[] }
  /** A failure that refuses whatever the binding's actions (configuration errors under Fail). */
  | { kind: "deny"; failure: Failure };

export class PolicyAdmission {
  #parsed: { revs: string; bound: Bound[] } | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {}

  /** The policies with their bindings, in name order, once the caches are primed. */
  async #bound(): Promise<Bound[]> {
    const pdef = this.registry.get(ADMISSION_GROUP, POLICIES);
    const bdef = this.registry.get(ADMISSION_GROUP, BINDINGS);
    if (!pdef || !bdef) return [];
    const pc = this.caches.forDef(pdef);
    const bc = this.caches.forDef(bdef);
    await Promise.all([pc.ready(), bc.ready()]);
    const revs = `${pc.rev}/${bc.rev}`;
    if (this.#parsed?.revs === revs) return this.#parsed.bound;
    const byName = (a: KubeObject, b: KubeObject) =>
      (a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1;
    const bindings = bc
      .entries()
      .map((e) => JSON.parse(e.json) as KubeObject)
      .sort(byName)
      .map(
        (b) => ({ name: b.metadata.name ?? "", ...((b as { spec?: Obj }).spec ?? {}) }) as Binding,
      );
    const bound: Bound[] = [];
    for (const p of pc
      .entries()
      .map((e) => JSON.parse(e.json) as KubeObject)
      .sort(byName)) {
      const mine = bindings.filter((b) => b.policyName === p.metadata.name);
      if (mine.length > 0) bound.push({ policy: compilePolicy(p), bindings: mine });
    }
    this.#parsed = { revs, bound };
    return bound;
  }

  async validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void> {
    if (
      ctx.def.group === ADMISSION_GROUP &&
      (ctx.def.names.plural === POLICIES || ctx.def.names.plural === BINDINGS)
    )
      return;
    const bound = await this.#bound();
    if (bound.length === 0) return;
    const obj = attrs.object ?? attrs.oldObject;
    const name = obj?.metadata.name ?? ctx.scope.name ?? "";
    const namespace = ctx.def.namespaced
      ? (ctx.scope.namespace ?? obj?.metadata.namespace ?? "")
      : "";
    const a: MatchAttributes = {
      operation: attrs.operation,
      def: ctx.def,
      version: ctx.version.name,
      subresource: ctx.scope.subresource ?? "",
      namespace,
      ...(attrs.object ? { objectLabels: attrs.object.metadata.labels ?? {} } : {}),
      ...(attrs.oldObject ? { oldObjectLabels: attrs.oldObject.metadata.labels ?? {} } : {}),
    };
    let namespaceObject: KubeObject | undefined;
    if (namespace) {
      namespaceObject = await this.#read("", "namespaces", undefined, namespace);
      a.namespaceLabels = namespaceObject?.metadata.labels ?? {};
    }
    const denied: Failure[] = [];
    const audit: Failure[] = [];
    for (const { policy, bindings } of bound) {
      const version = matchResourcesVersion(policy.matchConstraints, a, name);
      if (version === undefined) continue;
      const annotations: Record<string, string> = {};
      for (const binding of bindings) {
        if (
          binding.matchResources &&
          matchResourcesVersion(binding.matchResources, a, name, true) === undefined
        )
          continue;
        const outcome = await this.#evaluate(
          ctx,
          attrs,
          policy,
          binding,
          version,
          namespace,
          namespaceObject,
          annotations,
        );
        if (outcome.kind === "deny") {
          denied.push(outcome.failure);
          continue;
        }
        for (const f of outcome.failures) {
          for (const action of binding.validationActions ?? []) {
            if (action === "Deny") denied.push(f);
            else if (action === "Warn")
              ctx.scope.warnings?.push(
                `Validation failed for ValidatingAdmissionPolicy '${f.policy}' with binding '${f.binding}': ${f.message}`,
              );
            else if (action === "Audit") audit.push(f);
          }
        }
      }
      for (const [key, value] of Object.entries(annotations)) ctx.scope.annotate?.(key, value);
    }
    if (audit.length > 0) {
      ctx.scope.annotate?.(
        VALIDATION_FAILURE_ANNOTATION,
        JSON.stringify(
          audit.map((f) => ({
            message: f.message,
            policy: f.policy,
            binding: f.binding,
            expressionIndex: f.expressionIndex ?? 0,
            validationActions: ["Audit"],
          })),
        ),
      );
    }
    const first = denied[0];
    if (first) throw deniedError(ctx, obj, first);
  }

  /** One binding of a policy on one request, over each of its params. */
  async #evaluate(
    ctx: StoreContext,
    attrs: AdmissionAttributes,
    policy: CompiledPolicy,
    binding: Binding,
    version: string,
    namespace: string,
    namespaceObject: KubeObject | undefined,
    annotations: Record<string, string>,
  ): Promise<Outcome> {
    const configError = (why: string): Outcome =>
      policy.failurePolicy === "Ignore"
        ? { kind: "failures", failures: [] }
        : {
            kind: "deny",
            failure: {
              policy: policy.name,
              binding: binding.name,
              message: `failed to configure binding: ${why}`,
              reason: "Invalid",
            },
          };
    let params: (KubeObject | null)[] = [null];
    if (policy.paramKind) {
      const found = await this.#params(policy.paramKind, binding, namespace);
      if (typeof found === "string") return configError(found);
      if (found.length === 0) {
        if (binding.paramRef?.parameterNotFoundAction === "Allow")
          return { kind: "failures", failures: [] };
        return configError(
          "no params found for policy binding with `Deny` parameterNotFoundAction",
        );
      }
      params = found;
    }
    const request = admissionRequest(ctx, attrs, version, "");
    const base = {
      object: toCel(request.object, undefined),
      oldObject: toCel(request.oldObject, undefined),
      request: toCel(request, undefined),
      namespaceObject: namespaceObject ? toCel(namespaceObject, undefined) : null,
      authorizer: celAuthorizer(ctx, attrs),
    };
    const failures: Failure[] = [];
    for (const param of params) {
      const activation: Record<string, unknown> = { ...base };
      if (policy.paramKind) activation.params = param ? toCel(param, undefined) : null;
      activation.variables = lazyVariables(policy.variables, activation);
      failures.push(...this.#evaluateWith(policy, binding, activation, annotations));
    }
    return { kind: "failures", failures };
  }

  #evaluateWith(
    policy: CompiledPolicy,
    binding: Binding,
    activation: Record<string, unknown>,
    annotations: Record<string, string>,
  ): Failure[] {
    const fail = (message: string, reason = "Invalid", expressionIndex?: number): Failure => ({
      policy: policy.name,
      binding: binding.name,
      message,
      reason,
      ...(expressionIndex !== undefined ? { expressionIndex } : {}),
    });
    const ignore = policy.failurePolicy === "Ignore";
    // matchConditions: any false skips; an error (none false) is a failure.
    const conditionErrors: string[] = [];
    for (const c of policy.matchConditions) {
      try {
        const r = run(c.program, activation);
        if (r === false) return [];
        if (r !== true) conditionErrors.push(`expression '${c.name}' resulted in a non-bool value`);
      } catch (err) {
        conditionErrors.push(`expression '${c.name}' resulted in error: ${evaluationError(err)}`);
      }
    }
    if (conditionErrors.length > 0) return ignore ? [] : [fail(conditionErrors.join(", "))];
    const failures: Failure[] = [];
    policy.validations.forEach((v, i) => {
      let result: unknown;
      try {
        result = run(v.program, activation);
      } catch (err) {
        if (!ignore)
          failures.push(
            fail(
              `expression '${v.expression}' resulted in error: ${evaluationError(err)}`,
              "Invalid",
              i,
            ),
          );
        return;
      }
      if (result === true) return;
      if (result !== false) {
        if (!ignore)
          failures.push(
            fail(`expression '${v.expression}' resulted in a non-bool value`, "Invalid", i),
          );
        return;
      }
      failures.push(fail(this.#message(v, activation), v.reason ?? "Invalid", i));
    });
    for (const a of policy.auditAnnotations) {
      try {
        const value = run(a.program, activation);
        if (value === null || value === undefined) continue;
        if (typeof value !== "string")
          throw new Error(`valueExpression must evaluate to a string, got ${typeof value}`);
        annotations[`${policy.name}/${a.key}`] = value.slice(0, MAX_ANNOTATION_VALUE);
      } catch (err) {
        if (!ignore)
          failures.push(
            fail(`valueExpression '${a.expression}' resulted in error: ${evaluationError(err)}`),
          );
      }
    }
    return failures;
  }

  /** The message of a failed validation: its messageExpression's, its message, or the expression. */
  #message(v: CompiledValidation, activation: Record<string, unknown>): string {
    if (v.messageExpression) {
      try {
        const m = run(v.messageExpression.program, activation);
        if (
          typeof m === "string" &&
          m.trim() &&
          !/[\r\n]/.test(m.trim()) &&
          m.length <= MAX_MESSAGE
        )
          return m.trim();
      } catch {
        // Falls back to the message, as Kubernetes does.
      }
    }
    return v.message ?? `failed expression: ${v.expression.trim()}`;
  }

  /** The params a binding selects, or why they cannot be read. */
  async #params(
    paramKind: { apiVersion: string; kind: string },
    binding: Binding,
    namespace: string,
  ): Promise<KubeObject[] | string> {
    const [group, version] = paramKind.apiVersion.includes("/")
      ? paramKind.apiVersion.split("/")
      : ["", paramKind.apiVersion];
    const def = this.registry.byKind(group ?? "", paramKind.kind);
    if (!def || !def.versions.some((v) => v.name === version && v.served))
      return `failed to find resource referenced by paramKind: '${paramKind.apiVersion}, Kind=${paramKind.kind}'`;
    const ref = binding.paramRef;
    if (!ref) return "paramRef is required when paramKind is specified";
    let ns: string | undefined;
    if (def.namespaced) {
      ns = ref.namespace || namespace;
      if (!ns)
        return "cannot use a namespaced paramRef in a policy binding that matches a cluster-scoped resource without setting paramRef.namespace";
    }
    const cache = this.caches.forDef(def);
    await cache.ready();
    const inVersion = (o: KubeObject) => convertToVersion(o, def, version ?? "");
    if (ref.name) {
      const entry = cache.get(objectKey(def, ns, ref.name));
      return entry ? [inVersion(JSON.parse(entry.json) as KubeObject)] : [];
    }
    const sel = labelSelectorFromMetav1((ref.selector ?? {}) as never);
    return cache
      .entries()
      .map((e) => JSON.parse(e.json) as KubeObject)
      .filter(
        (o) =>
          (ns === undefined || o.metadata.namespace === ns) &&
          matchesLabels(sel, o.metadata.labels ?? {}),
      )
      .map(inVersion);
  }

  async #read(
    group: string,
    plural: string,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined> {
    const def = this.registry.get(group, plural);
    if (!def) return undefined;
    const cache = this.caches.forDef(def);
    await cache.ready();
    const entry = cache.get(objectKey(def, namespace, name));
    return entry ? (JSON.parse(entry.json) as KubeObject) : undefined;
  }
}

/**
 * `authorizer` for one request: checks asked of the server's authorizers as the
 * requester, and `requestResource` the request's own resource.
 */
function celAuthorizer(ctx: StoreContext, attrs: AdmissionAttributes): CelAuthorizer {
  const authz = ctx.services.authorizer;
  const decide: Decide = (user, access) =>
    authz ? authz.authorize(user, access) : { allowed: true, reason: "" };
  const name = ctx.scope.name ?? attrs.object?.metadata.name ?? attrs.oldObject?.metadata.name;
  return new CelAuthorizer(decide, ctx.scope.user, {
    group: ctx.def.group,
    resource: ctx.def.names.plural,
    ...(ctx.scope.subresource ? { subresource: ctx.scope.subresource } : {}),
    ...(ctx.scope.namespace ? { namespace: ctx.scope.namespace } : {}),
    ...(name ? { name } : {}),
  });
}

function run(program: Program, activation: Record<string, unknown>): unknown {
  if (program instanceof CompileError) throw program;
  return runMetered(program, activation);
}

/** Kubernetes' refusal: admission's Forbidden with the validation's reason and code. */
function deniedError(ctx: StoreContext, obj: KubeObject | undefined, f: Failure): StatusError {
  const message = `ValidatingAdmissionPolicy '${f.policy}' with binding '${f.binding}' denied request: ${f.message}`;
  const def: ResourceDefinition = ctx.def;
  const name = obj?.metadata.name || obj?.metadata.generateName || ctx.scope.name || "";
  const resource = def.group ? `${def.names.plural}.${def.group}` : def.names.plural;
  const base = errors.internal(message);
  const status = {
    ...base.status,
    message: `${resource} ${JSON.stringify(name)} is forbidden: ${message}`,
    reason: f.reason as never,
    code: reasonCode(f.reason),
    details: {
      name,
      ...(def.group ? { group: def.group } : {}),
      kind: def.names.plural,
      causes: [{ message }],
    },
  };
  return new StatusError(status);
}
