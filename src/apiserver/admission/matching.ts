/**
 * Whether a webhook is called for a request, as Kubernetes decides it: its rules
 * (operation, group, version, resource with subresource, scope), then its
 * namespaceSelector against the labels of the request's namespace (a Namespace's
 * own labels for a Namespace; cluster-scoped objects always pass) and its
 * objectSelector against the object's or the old object's labels. With
 * matchPolicy Equivalent, a rule naming another served version of the same
 * resource matches too, and the webhook is sent that version.
 */
import { labelSelectorFromMetav1, matchesLabels } from "@setpoint/api";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { MetaLabelSelector, RuleWithOperations, Webhook } from "./configurations.ts";

/** What a request is, for matching. */
export interface MatchAttributes {
  operation: "CREATE" | "UPDATE" | "DELETE";
  def: ResourceDefinition;
  /** The version the request addressed. */
  version: string;
  subresource: string;
  /** "" for a cluster-scoped object. */
  namespace: string;
  objectLabels?: Record<string, string>;
  oldObjectLabels?: Record<string, string>;
  /** The labels of the request's namespace; undefined when it is not known. */
  namespaceLabels?: Record<string, string>;
}

function hasOrStar(list: readonly string[] | undefined, value: string): boolean {
  return (list ?? []).some((v) => v === "*" || v === value);
}

function splitResource(r: string): [string, string] {
  const i = r.indexOf("/");
  return i < 0 ? [r, ""] : [r.slice(0, i), r.slice(i + 1)];
}

function resourceMatches(rule: RuleWithOperations, plural: string, sub: string): boolean {
  return (rule.resources ?? []).some((entry) => {
    const [res, s] = splitResource(entry);
    return (res === "*" || res === plural) && (s === "*" || s === sub);
  });
}

function scopeMatches(rule: RuleWithOperations, namespaced: boolean): boolean {
  const scope = rule.scope ?? "*";
  if (scope === "*") return true;
  return scope === (namespaced ? "Namespaced" : "Cluster");
}

function ruleMatches(rule: RuleWithOperations, a: MatchAttributes, version: string): boolean {
  return (
    hasOrStar(rule.operations, a.operation) &&
    hasOrStar(rule.apiGroups, a.def.group) &&
    hasOrStar(rule.apiVersions, version) &&
    resourceMatches(rule, a.def.names.plural, a.subresource) &&
    scopeMatches(rule, a.def.namespaced)
  );
}

/**
 * The version the webhook is sent the object in when its rules match the request:
 * the request's own, or (matchPolicy Equivalent) another served version its rules
 * name; undefined when it does not match.
 */
export function matchingVersion(w: Webhook, a: MatchAttributes): string | undefined {
  const rules = w.rules ?? [];
  if (rules.some((r) => ruleMatches(r, a, a.version))) return a.version;
  if ((w.matchPolicy ?? "Equivalent") !== "Equivalent") return undefined;
  for (const v of a.def.versions) {
    if (!v.served || v.name === a.version) continue;
    if (rules.some((r) => ruleMatches(r, a, v.name))) return v.name;
  }
  return undefined;
}

function selects(
  sel: MetaLabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!sel || (!sel.matchLabels && !sel.matchExpressions?.length)) return true;
  return matchesLabels(labelSelectorFromMetav1(sel as never), labels ?? {});
}

/** The namespaceSelector's verdict (see the header). */
export function namespaceMatches(w: Webhook, a: MatchAttributes): boolean {
  const sel = w.namespaceSelector;
  if (!sel || (!sel.matchLabels && !sel.matchExpressions?.length)) return true;
  if (a.def.group === "" && a.def.names.plural === "namespaces") {
    return selects(sel, a.objectLabels) || selects(sel, a.oldObjectLabels);
  }
  if (!a.def.namespaced) return true;
  return selects(sel, a.namespaceLabels);
}

/** The objectSelector's verdict: the new or the old object's labels match. */
export function objectMatches(w: Webhook, a: MatchAttributes): boolean {
  const sel = w.objectSelector;
  if (!sel || (!sel.matchLabels && !sel.matchExpressions?.length)) return true;
  return (
    (a.objectLabels !== undefined && selects(sel, a.objectLabels)) ||
    (a.oldObjectLabels !== undefined && selects(sel, a.oldObjectLabels))
  );
}

/** A policy's matchConstraints or a binding's matchResources, defaulted as stored. */
export interface MatchResources {
  namespaceSelector?: MetaLabelSelector;
  objectSelector?: MetaLabelSelector;
  resourceRules?: (RuleWithOperations & { resourceNames?: string[] })[];
  excludeResourceRules?: (RuleWithOperations & { resourceNames?: string[] })[];
  matchPolicy?: "Equivalent" | "Exact";
}

function namedRuleMatches(
  rule: RuleWithOperations & { resourceNames?: string[] },
  a: MatchAttributes,
  version: string,
  name: string,
): boolean {
  if (!ruleMatches(rule, a, version)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

/**
 * The version a policy evaluates the object in when `mr` matches the request
 * (its resource rules with their resourceNames, unless an excludeResourceRule
 * matches; with matchPolicy Equivalent another served version its rules name),
 * then its object and namespace selectors; undefined when it does not match.
 * With `anyResource` (a binding's matchResources without resourceRules) every
 * resource passes the rules.
 */
export function matchResourcesVersion(
  mr: MatchResources,
  a: MatchAttributes,
  name: string,
  anyResource = false,
): string | undefined {
  const equivalent = (mr.matchPolicy ?? "Equivalent") === "Equivalent";
  const versions = [
    a.version,
    ...(equivalent
      ? a.def.versions.filter((v) => v.served && v.name !== a.version).map((v) => v.name)
      : []),
  ];
  for (const rule of mr.excludeResourceRules ?? []) {
    if (versions.some((v) => namedRuleMatches(rule, a, v, name))) return undefined;
  }
  let version: string | undefined;
  const rules = mr.resourceRules ?? [];
  if (anyResource && rules.length === 0) version = a.version;
  else version = versions.find((v) => rules.some((r) => namedRuleMatches(r, a, v, name)));
  if (version === undefined) return undefined;
  const shim = {
    name: "",
    clientConfig: {},
    ...(mr.namespaceSelector ? { namespaceSelector: mr.namespaceSelector } : {}),
    ...(mr.objectSelector ? { objectSelector: mr.objectSelector } : {}),
  } as Webhook;
  if (!objectMatches(shim, a) || !namespaceMatches(shim, a)) return undefined;
  return version;
}
