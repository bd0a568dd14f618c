/**
 * The defaults Kubernetes gives a pod spec (core/v1 SetDefaults_PodSpec and
 * friends), applied to a Pod's spec and to every pod template (Deployments,
 * ReplicaSets, Jobs, PodTemplates), plus what only a Pod gets on create.
 */
type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

/** Always for `:latest` or no tag (and no digest), else IfNotPresent. */
export function defaultPullPolicy(image: string): string {
  if (image.includes("@")) return "IfNotPresent";
  const lastSlash = image.lastIndexOf("/");
  const colon = image.indexOf(":", lastSlash + 1);
  if (colon < 0) return "Always";
  return image.slice(colon + 1) === "latest" ? "Always" : "IfNotPresent";
}

function defaultProbe(p: unknown): void {
  if (!isObj(p)) return;
  setIfAbsent(p, "timeoutSeconds", 1);
  setIfAbsent(p, "periodSeconds", 10);
  setIfAbsent(p, "successThreshold", 1);
  setIfAbsent(p, "failureThreshold", 3);
  if (isObj(p.httpGet)) setIfAbsent(p.httpGet, "scheme", "HTTP");
}

function defaultContainer(c: unknown): void {
  if (!isObj(c)) return;
  if (typeof c.image === "string") setIfAbsent(c, "imagePullPolicy", defaultPullPolicy(c.image));
  setIfAbsent(c, "terminationMessagePath", "/dev/termination-log");
  setIfAbsent(c, "terminationMessagePolicy", "File");
  setIfAbsent(c, "resources", {});
  if (Array.isArray(c.ports))
    for (const p of c.ports) if (isObj(p)) setIfAbsent(p, "protocol", "TCP");
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) defaultProbe(c[probe]);
  if (Array.isArray(c.env)) {
    for (const e of c.env) {
      if (isObj(e) && isObj(e.valueFrom) && isObj(e.valueFrom.fieldRef)) {
        setIfAbsent(e.valueFrom.fieldRef, "apiVersion", "v1");
      }
    }
  }
}

function defaultVolume(v: unknown): void {
  if (!isObj(v)) return;
  for (const source of ["secret", "configMap", "projected", "downwardAPI"]) {
    if (isObj(v[source])) setIfAbsent(v[source], "defaultMode", 420);
  }
}

/** The pod spec defaults, in place. */
export function defaultPodSpec(spec: unknown): void {
  if (!isObj(spec)) return;
  setIfAbsent(spec, "restartPolicy", "Always");
  setIfAbsent(spec, "terminationGracePeriodSeconds", 30);
  setIfAbsent(spec, "dnsPolicy", "ClusterFirst");
  setIfAbsent(spec, "securityContext", {});
  setIfAbsent(spec, "schedulerName", "default-scheduler");
  for (const list of ["containers", "initContainers"]) {
    if (Array.isArray(spec[list])) for (const c of spec[list]) defaultContainer(c);
  }
  if (Array.isArray(spec.volumes)) for (const v of spec.volumes) defaultVolume(v);
}

/** The defaults of a pod template at obj.spec.template, in place. */
export function defaultTemplate(obj: Obj): void {
  const spec = obj.spec;
  if (!isObj(spec)) return;
  const template = spec.template;
  if (isObj(template)) defaultPodSpec(template.spec);
}

/** Seconds a new Pod tolerates a not-ready or unreachable node (DefaultTolerationSeconds). */
export const DEFAULT_TOLERATION_SECONDS = 300;
export const NOT_READY_TAINT = "node.kubernetes.io/not-ready";
export const UNREACHABLE_TAINT = "node.kubernetes.io/unreachable";

function tolerates(tolerations: Obj[], key: string): boolean {
  return tolerations.some(
    (t) =>
      (t.effect === undefined || t.effect === "" || t.effect === "NoExecute") &&
      ((t.operator === "Exists" && (t.key === undefined || t.key === "")) || t.key === key),
  );
}

/**
 * What a new Pod gets beyond the spec defaults: requests copied from limits,
 * DefaultTolerationSeconds' tolerations, priority 0, service links, the default
 * service account.
 */
export function defaultNewPodSpec(spec: unknown): void {
  if (!isObj(spec)) return;
  setIfAbsent(spec, "enableServiceLinks", true);
  setIfAbsent(spec, "priority", 0);
  setIfAbsent(spec, "preemptionPolicy", "PreemptLowerPriority");
  if (spec.serviceAccountName === undefined && spec.serviceAccount === undefined) {
    spec.serviceAccountName = "default";
  }
  if (typeof spec.serviceAccountName === "string") spec.serviceAccount = spec.serviceAccountName;
  for (const list of ["containers", "initContainers"]) {
    if (!Array.isArray(spec[list])) continue;
    for (const c of spec[list]) {
      if (!isObj(c) || !isObj(c.resources) || !isObj(c.resources.limits)) continue;
      const requests = isObj(c.resources.requests) ? c.resources.requests : {};
      for (const [k, v] of Object.entries(c.resources.limits)) setIfAbsent(requests, k, v);
      c.resources.requests = requests;
    }
  }
  const tolerations = (Array.isArray(spec.tolerations) ? spec.tolerations : []).filter(isObj);
  for (const key of [NOT_READY_TAINT, UNREACHABLE_TAINT]) {
    if (!tolerates(tolerations, key)) {
      tolerations.push({
        key,
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: DEFAULT_TOLERATION_SECONDS,
      });
    }
  }
  spec.tolerations = tolerations;
}

/** Kubernetes' QoS class of a pod spec: Guaranteed, Burstable or BestEffort. */
export function qosClass(spec: unknown): string {
  if (!isObj(spec)) return "BestEffort";
  const containers = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
  ].filter(isObj);
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const r = isObj(c.resources) ? c.resources : {};
    const req = isObj(r.requests) ? r.requests : {};
    const lim = isObj(r.limits) ? r.limits : {};
    const names = ["cpu", "memory"];
    if (names.some((n) => req[n] !== undefined || lim[n] !== undefined)) any = true;
    for (const n of names) {
      if (lim[n] === undefined) guaranteed = false;
      else if (req[n] !== undefined && String(req[n]) !== String(lim[n])) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}
