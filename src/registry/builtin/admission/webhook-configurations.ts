/**
 * admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
 * MutatingWebhookConfiguration on the schemas generated from Kubernetes' Go
 * types: Kubernetes' defaults (failurePolicy Fail, matchPolicy Equivalent,
 * empty selectors, a 10 s timeout, rule scope `*`, service port 443,
 * reinvocationPolicy Never), the WEBHOOKS column, and validation with
 * Kubernetes' messages for the common mistakes. The apiserver's admission
 * (src/apiserver/admission) calls the webhooks they declare.
 */
import { CauseType, type KubeObject, type StatusCause } from "@setpoint/api";
import type { PrinterColumn, ResourceDefinition } from "../../types.ts";
import { field } from "../build.ts";
import { invalid, notSupported, required } from "../causes.ts";
import { workloadDefinition } from "../workloads/define.ts";
import { validateMatchConditions } from "./match-conditions.ts";

export const ADMISSION_GROUP = "admissionregistration.k8s.io";

type Obj = Record<string, unknown>;

function list<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

function webhooksOf(obj: KubeObject): Obj[] {
  return list<Obj>(field(obj, "webhooks"));
}

const WEBHOOKS_COLUMN: PrinterColumn = {
  name: "Webhooks",
  type: "integer",
  priority: 0,
  description: "How many webhooks the configuration declares.",
  value: (o) => webhooksOf(o).length,
};

function defaultWebhooks(obj: KubeObject, mutating: boolean): void {
  for (const w of webhooksOf(obj)) {
    w.failurePolicy ??= "Fail";
    w.matchPolicy ??= "Equivalent";
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    w.timeoutSeconds ??= 10;
    if (mutating) w.reinvocationPolicy ??= "Never";
    for (const rule of list<Obj>(w.rules)) rule.scope ??= "*";
    const service = (w.clientConfig as Obj | undefined)?.service as Obj | undefined;
    if (service) service.port ??= 443;
  }
}

const OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES = ["*", "Cluster", "Namespaced"];
const REVIEW_VERSIONS = ["v1", "v1beta1"];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function isSubdomain(name: string): boolean {
  return name.length <= 253 && name.split(".").every((l) => DNS_LABEL.test(l));
}

function validateWebhook(w: Obj, at: string, mutating: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = typeof w.name === "string" ? w.name : "";
  if (!name) causes.push(required(`${at}.name`));
  else if (name.split(".").length < 3) {
    causes.push(
      invalid(
        `${at}.name`,
        name,
        "should be a domain with at least three segments separated by dots",
      ),
    );
  } else if (!isSubdomain(name)) {
    causes.push(
      invalid(
        `${at}.name`,
        name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ),
    );
  }
  list<Obj>(w.rules).forEach((rule, j) => {
    const r = `${at}.rules[${j}]`;
    const ops = list<string>(rule.operations);
    if (ops.length === 0) causes.push(required(`${r}.operations`));
    for (const [k, op] of ops.entries()) {
      if (!OPERATIONS.includes(op))
        causes.push(notSupported(`${r}.operations[${k}]`, op, OPERATIONS));
    }
    if (list(rule.apiGroups).length === 0) causes.push(required(`${r}.apiGroups`));
    if (list(rule.apiVersions).length === 0) causes.push(required(`${r}.apiVersions`));
    if (list(rule.resources).length === 0) causes.push(required(`${r}.resources`));
    if (typeof rule.scope === "string" && !SCOPES.includes(rule.scope))
      causes.push(notSupported(`${r}.scope`, rule.scope, SCOPES));
  });
  const policy = w.failurePolicy;
  if (typeof policy === "string" && !["Fail", "Ignore"].includes(policy))
    causes.push(notSupported(`${at}.failurePolicy`, policy, ["Fail", "Ignore"]));
  const match = w.matchPolicy;
  if (typeof match === "string" && !["Equivalent", "Exact"].includes(match))
    causes.push(notSupported(`${at}.matchPolicy`, match, ["Equivalent", "Exact"]));
  if (mutating) {
    const re = w.reinvocationPolicy;
    if (typeof re === "string" && !["IfNeeded", "Never"].includes(re))
      causes.push(notSupported(`${at}.reinvocationPolicy`, re, ["IfNeeded", "Never"]));
  }
  const effects = w.sideEffects;
  if (effects === undefined || effects === null || effects === "")
    causes.push(required(`${at}.sideEffects`, "must specify one of None, NoneOnDryRun"));
  else if (!["None", "NoneOnDryRun"].includes(String(effects)))
    causes.push(notSupported(`${at}.sideEffects`, effects, ["None", "NoneOnDryRun"]));
  const versions = list<string>(w.admissionReviewVersions);
  if (versions.length === 0)
    causes.push(required(`${at}.admissionReviewVersions`, "must specify one of v1, v1beta1"));
  else if (!versions.some((v) => REVIEW_VERSIONS.includes(v)))
    causes.push(
      invalid(
        `${at}.admissionReviewVersions`,
        versions,
        "must include at least one of v1, v1beta1",
      ),
    );
  const timeout = w.timeoutSeconds;
  if (typeof timeout === "number" && (timeout < 1 || timeout > 30))
    causes.push(
      invalid(
        `${at}.timeoutSeconds`,
        timeout,
        "the timeout value must be between 1 and 30 seconds",
      ),
    );
  causes.push(
    ...validateClientConfig((w.clientConfig as Obj | undefined) ?? {}, `${at}.clientConfig`),
  );
  causes.push(...validateMatchConditions(w.matchConditions, `${at}.matchConditions`));
  return causes;
}

function validateClientConfig(cc: Obj, at: string): StatusCause[] {
  const url = typeof cc.url === "string" ? cc.url : undefined;
  const service = cc.service as Obj | undefined;
  if ((url === undefined) === (service === undefined))
    return [required(at, "exactly one of url or service is required")];
  if (url !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return [invalid(`${at}.url`, url, "host must be specified")];
    }
    if (parsed.protocol !== "https:")
      return [invalid(`${at}.url`, url, "'https' is the only allowed URL scheme")];
    if (parsed.username || parsed.password)
      return [invalid(`${at}.url`, url, "user information is not permitted in the URL")];
    if (parsed.hash || parsed.search)
      return [invalid(`${at}.url`, url, "fragments and query parameters are not permitted")];
    return [];
  }
  const causes: StatusCause[] = [];
  if (!service?.name) causes.push(required(`${at}.service.name`, "service name is required"));
  if (!service?.namespace)
    causes.push(required(`${at}.service.namespace`, "service namespace is required"));
  const port = service?.port;
  if (typeof port === "number" && (port < 1 || port > 65535))
    causes.push(
      invalid(
        `${at}.service.port`,
        port,
        "port is not valid: must be between 1 and 65535, inclusive",
      ),
    );
  const path = service?.path;
  if (typeof path === "string" && !path.startsWith("/"))
    causes.push(invalid(`${at}.service.path`, path, "must start with a '/'"));
  return causes;
}

function validateConfiguration(obj: KubeObject, mutating: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  webhooksOf(obj).forEach((w, i) => {
    const at = `webhooks[${i}]`;
    causes.push(...validateWebhook(w, at, mutating));
    if (typeof w.name === "string" && w.name) {
      if (seen.has(w.name))
        causes.push({
          reason: CauseType.Duplicate,
          message: `Duplicate value: ${JSON.stringify(w.name)}`,
          field: `${at}.name`,
        });
      seen.add(w.name);
    }
  });
  return causes;
}

function configurationDefinition(
  kind: string,
  plural: string,
  mutating: boolean,
): ResourceDefinition {
  return workloadDefinition({
    group: ADMISSION_GROUP,
    kind,
    plural,
    namespaced: false,
    status: false,
    generation: true,
    columns: [WEBHOOKS_COLUMN],
    strategy: {
      default: (obj) => defaultWebhooks(obj, mutating),
      validate: (obj) => validateConfiguration(obj, mutating),
    },
  });
}

export const validatingWebhookConfigurationDefinition = configurationDefinition(
  "ValidatingWebhookConfiguration",
  "validatingwebhookconfigurations",
  false,
);

export const mutatingWebhookConfigurationDefinition = configurationDefinition(
  "MutatingWebhookConfiguration",
  "mutatingwebhookconfigurations",
  true,
);
