/**
 * admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
 * ValidatingAdmissionPolicyBinding on the schemas generated from Kubernetes' Go
 * types, with Kubernetes' defaults (failurePolicy Fail; matchPolicy Equivalent,
 * empty selectors and rule scope `*` in matchConstraints and matchResources;
 * parameterNotFoundAction Deny), kubectl's columns (VALIDATIONS, PARAMKIND;
 * POLICYNAME, PARAMREF), a status subresource on the policy, and validation with
 * Kubernetes' messages: every expression is compiled when the policy is written
 * and a compile error refuses it. The apiserver's admission
 * (src/apiserver/admission/policy-admission.ts) evaluates them.
 */
import {
  fieldErrors,
  formatLabelSelector,
  type KubeObject,
  labelSelectorFromMetav1,
  type MetaV1LabelSelector,
  type StatusCause,
} from "@setpoint/api";
import { CEL_KEYWORDS } from "../../crd/cel/index.ts";
import type { PrinterColumn, ResourceDefinition } from "../../types.ts";
import { field } from "../build.ts";
import { invalid, notSupported, qualifiedNameErrors, required } from "../causes.ts";
import { workloadDefinition } from "../workloads/define.ts";
import { validateMatchConditions } from "./match-conditions.ts";
import { CompileError, compilePolicyExpression, type Expected } from "./policy-cel.ts";
import { ADMISSION_GROUP } from "./webhook-configurations.ts";

type Obj = Record<string, unknown>;

function list<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

function obj(v: unknown): Obj | undefined {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;
}

const specOf = (o: KubeObject): Obj => obj(field(o, "spec")) ?? {};

const VALIDATIONS_COLUMN: PrinterColumn = {
  name: "Validations",
  type: "integer",
  priority: 0,
  description: "Validations indicates the number of validation rules defined in this configuration",
  value: (o) => list(specOf(o).validations).length,
};

const PARAM_KIND_COLUMN: PrinterColumn = {
  name: "ParamKind",
  type: "string",
  priority: 0,
  description: "ParamKind specifies the kind of resources used to parameterize this policy",
  value: (o) => {
    const pk = obj(specOf(o).paramKind);
    return pk ? `${pk.apiVersion ?? ""}/${pk.kind ?? ""}` : "<unset>";
  },
};

const POLICY_NAME_COLUMN: PrinterColumn = {
  name: "PolicyName",
  type: "string",
  priority: 0,
  description: "PolicyName indicates the policy definition which the policy binding binded to",
  value: (o) => String(specOf(o).policyName ?? ""),
};

const PARAM_REF_COLUMN: PrinterColumn = {
  name: "ParamRef",
  type: "string",
  priority: 0,
  description: "ParamRef indicates the param resource which sets the configration param",
  value: (o) => {
    const pr = obj(specOf(o).paramRef);
    if (!pr) return "<unset>";
    if (typeof pr.name === "string" && pr.name) {
      return `${typeof pr.namespace === "string" && pr.namespace ? pr.namespace : "*"}/${pr.name}`;
    }
    const sel = obj(pr.selector);
    if (!sel) return "<unset>";
    try {
      return formatLabelSelector(labelSelectorFromMetav1(sel as MetaV1LabelSelector)) || "<none>";
    } catch {
      return "<error>";
    }
  },
};

function defaultMatchResources(mr: Obj | undefined): void {
  if (!mr) return;
  mr.matchPolicy ??= "Equivalent";
  mr.namespaceSelector ??= {};
  mr.objectSelector ??= {};
  for (const r of [...list<Obj>(mr.resourceRules), ...list<Obj>(mr.excludeResourceRules)]) {
    r.scope ??= "*";
  }
}

function defaultPolicy(o: KubeObject): void {
  const spec = obj(field(o, "spec"));
  if (!spec) return;
  spec.failurePolicy ??= "Fail";
  defaultMatchResources(obj(spec.matchConstraints));
}

function defaultBinding(o: KubeObject): void {
  const spec = obj(field(o, "spec"));
  if (!spec) return;
  defaultMatchResources(obj(spec.matchResources));
  const pr = obj(spec.paramRef);
  if (pr) pr.parameterNotFoundAction ??= "Deny";
}

const OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES = ["*", "Cluster", "Namespaced"];
const REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"];
const ACTIONS = ["Audit", "Deny", "Warn"];
const CEL_IDENTIFIER = /^[_a-zA-Z][_a-zA-Z0-9]*$/;
/** Most auditAnnotations a policy may have. */
const MAX_AUDIT_ANNOTATIONS = 20;
/** Longest auditAnnotation valueExpression. */
const MAX_VALUE_EXPRESSION_LENGTH = 5 * 1024;

function validateSelector(sel: unknown, at: string): StatusCause[] {
  const s = obj(sel);
  if (!s) return [];
  const causes: StatusCause[] = [];
  list<Obj>(s.matchExpressions).forEach((e, i) => {
    const here = `${at}.matchExpressions[${i}]`;
    const op = String(e.operator ?? "");
    const values = list(e.values);
    if (op === "In" || op === "NotIn") {
      if (values.length === 0)
        causes.push(
          required(`${here}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
        );
    } else if (op === "Exists" || op === "DoesNotExist") {
      if (values.length > 0)
        causes.push(
          fieldErrors.forbidden(
            `${here}.values`,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
          ),
        );
    } else {
      causes.push(notSupported(`${here}.operator`, op, ["DoesNotExist", "Exists", "In", "NotIn"]));
    }
  });
  return causes;
}

function validateRule(r: Obj, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const ops = list<string>(r.operations);
  if (ops.length === 0) causes.push(required(`${at}.operations`));
  else if (ops.length > 1 && ops.includes("*"))
    causes.push(
      invalid(`${at}.operations`, ops, "if '*' is present, must not specify other operations"),
    );
  ops.forEach((op, k) => {
    if (!OPERATIONS.includes(op))
      causes.push(notSupported(`${at}.operations[${k}]`, op, OPERATIONS));
  });
  const groups = list<string>(r.apiGroups);
  if (groups.length === 0) causes.push(required(`${at}.apiGroups`));
  else if (groups.length > 1 && groups.includes("*"))
    causes.push(
      invalid(`${at}.apiGroups`, groups, "if '*' is present, must not specify other API groups"),
    );
  const versions = list<string>(r.apiVersions);
  if (versions.length === 0) causes.push(required(`${at}.apiVersions`));
  else if (versions.length > 1 && versions.includes("*"))
    causes.push(
      invalid(
        `${at}.apiVersions`,
        versions,
        "if '*' is present, must not specify other API versions",
      ),
    );
  versions.forEach((v, k) => {
    if (v === "") causes.push(required(`${at}.apiVersions[${k}]`));
  });
  const resources = list<string>(r.resources);
  if (resources.length === 0) causes.push(required(`${at}.resources`));
  resources.forEach((res, k) => {
    if (res === "") causes.push(required(`${at}.resources[${k}]`));
  });
  if (resources.includes("*/*") && resources.length > 1)
    causes.push(
      invalid(
        `${at}.resources`,
        resources,
        "if '*/*' is present, must not specify other resources",
      ),
    );
  if (resources.includes("*") && resources.some((x) => x !== "*" && !x.includes("/")))
    causes.push(
      invalid(
        `${at}.resources`,
        resources,
        "if '*' is present, must not specify other resources without subresources",
      ),
    );
  if (typeof r.scope === "string" && !SCOPES.includes(r.scope))
    causes.push(notSupported(`${at}.scope`, r.scope, SCOPES));
  const names = new Set<string>();
  list<string>(r.resourceNames).forEach((n, k) => {
    if (n === "." || n === ".." || n.includes("/") || n.includes("%"))
      causes.push(
        invalid(`${at}.resourceNames[${k}]`, n, "may not contain '/' or '%', nor be '.' or '..'"),
      );
    if (names.has(n)) causes.push(fieldErrors.duplicate(`${at}.resourceNames[${k}]`, n));
    names.add(n);
  });
  return causes;
}

function validateMatchResources(mr: Obj, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const mp = mr.matchPolicy;
  if (mp === undefined || mp === null) causes.push(required(`${at}.matchPolicy`));
  else if (!["Equivalent", "Exact"].includes(String(mp)))
    causes.push(notSupported(`${at}.matchPolicy`, mp, ["Equivalent", "Exact"]));
  causes.push(...validateSelector(mr.namespaceSelector, `${at}.namespaceSelector`));
  causes.push(...validateSelector(mr.objectSelector, `${at}.objectSelector`));
  for (const [i, r] of list<Obj>(mr.resourceRules).entries())
    causes.push(...validateRule(r, `${at}.resourceRules[${i}]`));
  for (const [i, r] of list<Obj>(mr.excludeResourceRules).entries())
    causes.push(...validateRule(r, `${at}.excludeResourceRules[${i}]`));
  return causes;
}

function compileCause(
  at: string,
  expression: string,
  hasParams: boolean,
  expected: Expected,
): StatusCause[] {
  try {
    compilePolicyExpression(expression, hasParams, expected);
    return [];
  } catch (err) {
    if (err instanceof CompileError) return [invalid(at, expression, err.message)];
    throw err;
  }
}

const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validateParamKind(pk: Obj, at: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const av = typeof pk.apiVersion === "string" ? pk.apiVersion : "";
  if (!av) causes.push(required(`${at}.apiVersion`));
  else {
    const parts = av.split("/");
    if (parts.length > 2)
      causes.push(invalid(`${at}.apiVersion`, av, `unexpected GroupVersion string: ${av}`));
    else {
      const [group, version] = parts.length === 2 ? parts : ["", parts[0]!];
      if (group && !SUBDOMAIN.test(group))
        causes.push(
          invalid(
            `${at}.apiVersion`,
            group,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          ),
        );
      if (!version) causes.push(invalid(`${at}.apiVersion`, av, "version must be specified"));
      else if (!DNS1035.test(version))
        causes.push(
          invalid(
            `${at}.apiVersion`,
            version,
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
          ),
        );
    }
  }
  const kind = typeof pk.kind === "string" ? pk.kind : "";
  if (!kind) causes.push(required(`${at}.kind`));
  else if (!DNS1035.test(kind.toLowerCase()))
    causes.push(
      invalid(
        `${at}.kind`,
        kind,
        "may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      ),
    );
  return causes;
}

function validatePolicy(o: KubeObject): StatusCause[] {
  const spec = specOf(o);
  const causes: StatusCause[] = [];
  const fp = spec.failurePolicy;
  if (fp === undefined || fp === null) causes.push(required("spec.failurePolicy"));
  else if (!["Fail", "Ignore"].includes(String(fp)))
    causes.push(notSupported("spec.failurePolicy", fp, ["Fail", "Ignore"]));
  const pk = obj(spec.paramKind);
  const hasParams = pk !== undefined;
  if (pk) causes.push(...validateParamKind(pk, "spec.paramKind"));
  const mc = obj(spec.matchConstraints);
  if (!mc) causes.push(required("spec.matchConstraints"));
  else {
    causes.push(...validateMatchResources(mc, "spec.matchConstraints"));
    if (list(mc.resourceRules).length === 0)
      causes.push(required("spec.matchConstraints.resourceRules"));
  }
  causes.push(...validateMatchConditions(spec.matchConditions, "spec.matchConditions", hasParams));
  list<Obj>(spec.variables).forEach((v, i) => {
    const at = `spec.variables[${i}]`;
    const name = typeof v.name === "string" ? v.name : "";
    if (!name.trim()) causes.push(required(`${at}.name`, "name is not specified"));
    else if (!CEL_IDENTIFIER.test(name) || CEL_KEYWORDS.has(name))
      causes.push(invalid(`${at}.name`, name, "name is not a valid CEL identifier"));
    const expr = typeof v.expression === "string" ? v.expression : "";
    if (!expr.trim()) causes.push(required(`${at}.expression`, "expression is not specified"));
    else causes.push(...compileCause(`${at}.expression`, expr, hasParams, "any"));
  });
  const validations = list<Obj>(spec.validations);
  const annotations = list<Obj>(spec.auditAnnotations);
  if (validations.length === 0 && annotations.length === 0) {
    const why = "validations or auditAnnotations must contain at least one item";
    causes.push(required("spec.validations", why), required("spec.auditAnnotations", why));
    return causes;
  }
  validations.forEach((v, i) => {
    const at = `spec.validations[${i}]`;
    const expr = typeof v.expression === "string" ? v.expression : "";
    if (!expr.trim()) causes.push(required(`${at}.expression`, "expression is not specified"));
    else causes.push(...compileCause(`${at}.expression`, expr, hasParams, "bool"));
    const me = typeof v.messageExpression === "string" ? v.messageExpression : "";
    if (me.length > 0 && !me.trim())
      causes.push(invalid(`${at}.messageExpression`, me, "must be non-empty if specified"));
    else if (me.trim())
      causes.push(...compileCause(`${at}.messageExpression`, me, hasParams, "string"));
    const msg = typeof v.message === "string" ? v.message : "";
    if (msg.length > 0 && !msg.trim())
      causes.push(invalid(`${at}.message`, msg, "message must be non-empty if specified"));
    else if (/[\n\r]/.test(msg.trim()))
      causes.push(invalid(`${at}.message`, msg, "message must not contain line breaks"));
    if (v.reason !== undefined && v.reason !== null && !REASONS.includes(String(v.reason)))
      causes.push(notSupported(`${at}.reason`, v.reason, REASONS));
  });
  if (annotations.length > MAX_AUDIT_ANNOTATIONS)
    causes.push(
      invalid(
        "spec.auditAnnotations",
        annotations,
        `must not have more than ${MAX_AUDIT_ANNOTATIONS} auditAnnotations`,
      ),
    );
  const keys = new Set<string>();
  annotations.forEach((a, i) => {
    const at = `spec.auditAnnotations[${i}]`;
    const key = typeof a.key === "string" ? a.key : "";
    if (!key) causes.push(required(`${at}.key`));
    else {
      const full = `${o.metadata.name ?? ""}/${key}`;
      const errs = qualifiedNameErrors(full);
      if (errs.length > 0) causes.push(invalid(`${at}.key`, full, errs.join("; ")));
      if (keys.has(key)) causes.push(fieldErrors.duplicate(`${at}.key`, key));
      keys.add(key);
    }
    const ve = typeof a.valueExpression === "string" ? a.valueExpression : "";
    if (!ve.trim())
      causes.push(required(`${at}.valueExpression`, "valueExpression is not specified"));
    else if (ve.length > MAX_VALUE_EXPRESSION_LENGTH)
      causes.push(fieldErrors.tooLong(`${at}.valueExpression`, MAX_VALUE_EXPRESSION_LENGTH));
    else causes.push(...compileCause(`${at}.valueExpression`, ve, hasParams, "any"));
  });
  return causes;
}

function validateBinding(o: KubeObject): StatusCause[] {
  const spec = specOf(o);
  const causes: StatusCause[] = [];
  if (typeof spec.policyName !== "string" || !spec.policyName)
    causes.push(required("spec.policyName"));
  const pr = obj(spec.paramRef);
  if (pr) {
    const name = typeof pr.name === "string" ? pr.name : "";
    const sel = obj(pr.selector);
    if (name && sel)
      causes.push(
        fieldErrors.forbidden("spec.paramRef.name", "name and selector are mutually exclusive"),
      );
    if (!name && !sel)
      causes.push(required("spec.paramRef", "one of name or selector must be specified"));
    if (sel) causes.push(...validateSelector(sel, "spec.paramRef.selector"));
    const ns = typeof pr.namespace === "string" ? pr.namespace : "";
    if (ns && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns))
      causes.push(
        invalid(
          "spec.paramRef.namespace",
          ns,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
      );
    const action = pr.parameterNotFoundAction;
    if (action === undefined || action === null)
      causes.push(required("spec.paramRef.parameterNotFoundAction"));
    else if (!["Allow", "Deny"].includes(String(action)))
      causes.push(notSupported("spec.paramRef.parameterNotFoundAction", action, ["Allow", "Deny"]));
  }
  const mr = obj(spec.matchResources);
  if (mr) causes.push(...validateMatchResources(mr, "spec.matchResources"));
  const actions = list<string>(spec.validationActions);
  const seen = new Set<string>();
  actions.forEach((a, i) => {
    if (!ACTIONS.includes(a)) causes.push(notSupported(`spec.validationActions[${i}]`, a, ACTIONS));
    if (seen.has(a)) causes.push(fieldErrors.duplicate(`spec.validationActions[${i}]`, a));
    seen.add(a);
  });
  if (seen.has("Deny") && seen.has("Warn"))
    causes.push(
      invalid(
        "spec.validationActions",
        actions,
        "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
      ),
    );
  if (seen.size === 0)
    causes.push(required("spec.validationActions", "at least one validation action is required"));
  return causes;
}

export const validatingAdmissionPolicyDefinition: ResourceDefinition = workloadDefinition({
  group: ADMISSION_GROUP,
  kind: "ValidatingAdmissionPolicy",
  plural: "validatingadmissionpolicies",
  categories: ["api-extensions"],
  namespaced: false,
  status: true,
  generation: true,
  columns: [VALIDATIONS_COLUMN, PARAM_KIND_COLUMN],
  strategy: { default: defaultPolicy, validate: validatePolicy },
});

export const validatingAdmissionPolicyBindingDefinition: ResourceDefinition = workloadDefinition({
  group: ADMISSION_GROUP,
  kind: "ValidatingAdmissionPolicyBinding",
  plural: "validatingadmissionpolicybindings",
  categories: ["api-extensions"],
  namespaced: false,
  status: false,
  generation: true,
  columns: [POLICY_NAME_COLUMN, PARAM_REF_COLUMN],
  strategy: { default: defaultBinding, validate: validateBinding },
});
