/**
 * The audit policy: Kubernetes' `audit.k8s.io/v1` Policy (YAML or JSON), its
 * validation as kube-apiserver validates it at start, and rule matching as its
 * policy checker does (rules in order, the first that matches gives the level;
 * none matching means level None).
 */
import { parse as parseYaml } from "yaml";

export const LEVELS = ["None", "Metadata", "Request", "RequestResponse"] as const;
export type Level = (typeof LEVELS)[number];

export const STAGES = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"] as const;
export type Stage = (typeof STAGES)[number];

export interface GroupResources {
  group?: string;
  resources?: string[];
  resourceNames?: string[];
}

export interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  apiVersion: "audit.k8s.io/v1";
  kind: "Policy";
  rules: PolicyRule[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

/** What a request is, as the policy sees it (kube-apiserver's authorizer attributes). */
export interface AuditAttributes {
  user?: { name: string; groups: readonly string[] };
  /** get, list, watch, create, ...; the lower-cased method off the resource paths. */
  verb: string;
  resourceRequest: boolean;
  /** The path without its query (non-resource requests). */
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

/** What the policy decides for a request. */
export interface AuditDecision {
  level: Level;
  omitStages: ReadonlySet<Stage>;
  omitManagedFields: boolean;
}

export class PolicyError extends Error {
  override name = "PolicyError";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringList(v: unknown, path: string, errs: string[]): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) {
    errs.push(`${path}: must be a list of strings`);
    return undefined;
  }
  return v as string[];
}

function stages(v: unknown, path: string, errs: string[]): Stage[] | undefined {
  const list = stringList(v, path, errs);
  if (!list) return undefined;
  list.forEach((s, i) => {
    if (!(STAGES as readonly string[]).includes(s)) {
      errs.push(
        `${path}[${i}]: Unsupported value: ${JSON.stringify(s)}: supported values: ${STAGES.map((x) => JSON.stringify(x)).join(", ")}`,
      );
    }
  });
  return list as Stage[];
}

function optionalBool(v: unknown, path: string, errs: string[]): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") {
    errs.push(`${path}: must be true or false`);
    return undefined;
  }
  return v;
}

const GROUP_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validateRule(raw: unknown, path: string, errs: string[]): PolicyRule | undefined {
  if (!isObject(raw)) {
    errs.push(`${path}: must be an object`);
    return undefined;
  }
  const level = raw.level;
  if (typeof level !== "string" || !(LEVELS as readonly string[]).includes(level)) {
    errs.push(
      level === undefined || level === ""
        ? `${path}.level: Required value`
        : `${path}.level: Unsupported value: ${JSON.stringify(level)}: supported values: ${LEVELS.map((x) => JSON.stringify(x)).join(", ")}`,
    );
  }
  const rule: PolicyRule = { level: level as Level };
  const users = stringList(raw.users, `${path}.users`, errs);
  const userGroups = stringList(raw.userGroups, `${path}.userGroups`, errs);
  const verbs = stringList(raw.verbs, `${path}.verbs`, errs);
  const namespaces = stringList(raw.namespaces, `${path}.namespaces`, errs);
  const urls = stringList(raw.nonResourceURLs, `${path}.nonResourceURLs`, errs);
  const omit = stages(raw.omitStages, `${path}.omitStages`, errs);
  const omitManaged = optionalBool(raw.omitManagedFields, `${path}.omitManagedFields`, errs);
  if (users) rule.users = users;
  if (userGroups) rule.userGroups = userGroups;
  if (verbs) rule.verbs = verbs;
  if (namespaces) rule.namespaces = namespaces;
  if (omit) rule.omitStages = omit;
  if (omitManaged !== undefined) rule.omitManagedFields = omitManaged;
  if (raw.resources !== undefined && raw.resources !== null) {
    if (!Array.isArray(raw.resources)) {
      errs.push(`${path}.resources: must be a list`);
    } else {
      rule.resources = [];
      raw.resources.forEach((gr: unknown, i: number) => {
        const at = `${path}.resources[${i}]`;
        if (!isObject(gr)) {
          errs.push(`${at}: must be an object`);
          return;
        }
        const out: GroupResources = {};
        if (gr.group !== undefined && gr.group !== null) {
          if (typeof gr.group !== "string") errs.push(`${at}.group: must be a string`);
          else if (gr.group !== "" && !GROUP_NAME.test(gr.group)) {
            errs.push(
              `${at}.group: Invalid value: ${JSON.stringify(gr.group)}: must be a valid API group name`,
            );
          } else out.group = gr.group;
        }
        const resources = stringList(gr.resources, `${at}.resources`, errs);
        const names = stringList(gr.resourceNames, `${at}.resourceNames`, errs);
        if (resources) out.resources = resources;
        if (names) {
          out.resourceNames = names;
          if (!resources || resources.length === 0) {
            errs.push(
              `${at}.resourceNames: Invalid value: using resourceNames requires at least one resource`,
            );
          }
        }
        rule.resources!.push(out);
      });
    }
  }
  if (urls) {
    rule.nonResourceURLs = urls;
    if ((rule.resources?.length ?? 0) > 0 || (namespaces?.length ?? 0) > 0) {
      errs.push(
        `${path}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs`,
      );
    }
    urls.forEach((u, i) => {
      if (u === "*") return;
      if (!u.startsWith("/")) {
        errs.push(
          `${path}.nonResourceURLs[${i}]: Invalid value: ${JSON.stringify(u)}: non-resource URL rules must begin with a '/' character`,
        );
      }
      const star = u.indexOf("*");
      if (star >= 0 && star !== u.length - 1) {
        errs.push(
          `${path}.nonResourceURLs[${i}]: Invalid value: ${JSON.stringify(u)}: non-resource URL wildcards '*' must be the final character`,
        );
      }
    });
  }
  return rule;
}

/** Validates a decoded policy document; throws a PolicyError listing every problem. */
export function validatePolicy(raw: unknown): Policy {
  if (!isObject(raw)) throw new PolicyError("the policy must be an object");
  const errs: string[] = [];
  if (raw.apiVersion !== "audit.k8s.io/v1") {
    errs.push(`apiVersion: must be "audit.k8s.io/v1", got ${JSON.stringify(raw.apiVersion ?? "")}`);
  }
  if (raw.kind !== "Policy") {
    errs.push(`kind: must be "Policy", got ${JSON.stringify(raw.kind ?? "")}`);
  }
  const rules: PolicyRule[] = [];
  if (raw.rules !== undefined && raw.rules !== null && !Array.isArray(raw.rules)) {
    errs.push("rules: must be a list");
  } else {
    const list = (raw.rules ?? []) as unknown[];
    list.forEach((r, i) => {
      const rule = validateRule(r, `rules[${i}]`, errs);
      if (rule) rules.push(rule);
    });
    if (list.length === 0 && errs.length === 0) errs.push("loaded illegal policy with 0 rules");
  }
  const omitStages = stages(raw.omitStages, "omitStages", errs);
  const omitManagedFields = optionalBool(raw.omitManagedFields, "omitManagedFields", errs);
  if (errs.length > 0) throw new PolicyError(errs.join("; "));
  return {
    apiVersion: "audit.k8s.io/v1",
    kind: "Policy",
    rules,
    ...(omitStages ? { omitStages } : {}),
    ...(omitManagedFields !== undefined ? { omitManagedFields } : {}),
  };
}

/** Parses and validates a policy file's text (YAML or JSON). */
export function parsePolicy(text: string): Policy {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new PolicyError(`cannot parse: ${e instanceof Error ? e.message : String(e)}`);
  }
  return validatePolicy(raw);
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === "*" || spec === path) return true;
  return spec.endsWith("*") && path.startsWith(spec.replace(/\*+$/, ""));
}

function matchesResource(rule: PolicyRule, a: AuditAttributes): boolean {
  if (!a.resourceRequest) return false;
  if (rule.namespaces && rule.namespaces.length > 0 && !rule.namespaces.includes(a.namespace)) {
    return false;
  }
  if (!rule.resources || rule.resources.length === 0) return true;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  for (const gr of rule.resources) {
    if ((gr.group ?? "") !== a.apiGroup) continue;
    if (!gr.resources || gr.resources.length === 0) return true;
    if (gr.resourceNames && gr.resourceNames.length > 0 && !gr.resourceNames.includes(a.name)) {
      continue;
    }
    for (const res of gr.resources) {
      if (res === combined || res === "*") return true;
      if (a.subresource && res.startsWith("*/") && res.slice(2) === a.subresource) return true;
      if (res.endsWith("/*") && res.slice(0, -2) === a.resource) return true;
    }
  }
  return false;
}

function ruleMatches(rule: PolicyRule, a: AuditAttributes): boolean {
  if (rule.users && rule.users.length > 0) {
    if (!a.user || !rule.users.includes(a.user.name)) return false;
  }
  if (rule.userGroups && rule.userGroups.length > 0) {
    if (!a.user?.groups.some((g) => rule.userGroups!.includes(g))) return false;
  }
  if (rule.verbs && rule.verbs.length > 0 && !rule.verbs.includes(a.verb)) return false;
  if ((rule.namespaces?.length ?? 0) > 0 || (rule.resources?.length ?? 0) > 0) {
    return matchesResource(rule, a);
  }
  if (rule.nonResourceURLs && rule.nonResourceURLs.length > 0) {
    return !a.resourceRequest && rule.nonResourceURLs.some((s) => pathMatches(a.path, s));
  }
  return true;
}

const NOTHING_OMITTED: ReadonlySet<Stage> = new Set();

/** The level, omitted stages and managed-fields choice for a request: the first matching rule's. */
export function evaluatePolicy(policy: Policy, a: AuditAttributes): AuditDecision {
  for (const rule of policy.rules) {
    if (!ruleMatches(rule, a)) continue;
    const omit = [...(policy.omitStages ?? []), ...(rule.omitStages ?? [])];
    return {
      level: rule.level,
      omitStages: omit.length > 0 ? new Set(omit) : NOTHING_OMITTED,
      omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields ?? false,
    };
  }
  return { level: "None", omitStages: NOTHING_OMITTED, omitManagedFields: false };
}

/** Whether level `a` records at least what `b` does. */
export function atLeast(a: Level, b: Level): boolean {
  return LEVELS.indexOf(a) >= LEVELS.indexOf(b);
}
