/**
 * What both endpoint controllers read from Pods: which Pods a Service selects,
 * whether a Pod belongs in its endpoints (an IP, not finished, not being deleted
 * unless terminating endpoints are kept), its ready/serving/terminating state,
 * a Service port's target resolved against the Pod's named container ports, and
 * the last-change-trigger-time a set of Pods and their Service implies.
 */
import type { Pod, Service } from "@setpoint/api";
import { labelSelectorFromSet, matchesLabels } from "@setpoint/api";

/** Annotation with the time of the last change the endpoints reflect. */
export const TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time";
/** Label Kubernetes puts on the endpoints of headless Services. */
export const HEADLESS_LABEL = "service.kubernetes.io/headless";

export type ServicePort = NonNullable<NonNullable<Service["spec"]>["ports"]>[number];

/** The Pods of `pods` that `svc`'s selector matches (none without a selector). */
export function selectedPods(svc: Service, pods: readonly Pod[]): Pod[] {
  const selector = svc.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return [];
  const sel = labelSelectorFromSet(selector);
  return pods.filter((p) => matchesLabels(sel, p.metadata.labels));
}

/** Whether the Pod's Ready condition is True. */
export function podReady(p: Pod): boolean {
  return (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/**
 * Whether a Pod has a place in endpoints: it has an IP and has not finished;
 * a Pod being deleted only when `keepTerminating` (EndpointSlices keep them).
 */
export function inEndpoints(p: Pod, keepTerminating: boolean): boolean {
  if (!p.status?.podIP) return false;
  if (p.status.phase === "Succeeded" || p.status.phase === "Failed") return false;
  return keepTerminating || !p.metadata.deletionTimestamp;
}

/** The Pod's port for a Service port: a number, or a named container port; undefined when it has none. */
export function targetPortOf(p: Pod, port: ServicePort): number | undefined {
  const target = port.targetPort ?? port.port;
  if (typeof target === "number") return target;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = port.protocol ?? "TCP";
  for (const c of p.spec?.containers ?? []) {
    for (const cp of c.ports ?? []) {
      if (cp.name === target && (cp.protocol ?? "TCP") === protocol) return cp.containerPort;
    }
  }
  return undefined;
}

/** A Pod as an endpoint's targetRef. */
export function podRef(p: Pod): { kind: string; namespace: string; name: string; uid: string } {
  return {
    kind: "Pod",
    namespace: p.metadata.namespace ?? "",
    name: p.metadata.name ?? "",
    uid: p.metadata.uid ?? "",
  };
}

function newest(times: (string | undefined)[]): string | undefined {
  let best: string | undefined;
  let bestMs = -1;
  for (const t of times) {
    const ms = t ? Date.parse(t) : Number.NaN;
    if (!Number.isNaN(ms) && ms > bestMs) {
      best = t;
      bestMs = ms;
    }
  }
  return best;
}

/**
 * The time of the newest change among the Service and its Pods (creation,
 * readiness change, deletion): the last-change-trigger-time annotation.
 */
export function triggerTime(svc: Service, pods: readonly Pod[]): string | undefined {
  const times: (string | undefined)[] = [svc.metadata.creationTimestamp];
  for (const p of pods) {
    times.push(p.metadata.creationTimestamp, p.metadata.deletionTimestamp);
    for (const c of p.status?.conditions ?? []) {
      if (c.type === "Ready") times.push(c.lastTransitionTime);
    }
  }
  const t = newest(times);
  return t ? new Date(Date.parse(t)).toISOString().replace(/\.\d{3}Z$/, "Z") : undefined;
}

/** Whether the Service is headless (clusterIP None). */
export function isHeadless(svc: Service): boolean {
  return svc.spec?.clusterIP === "None";
}

/** The Services in the namespace whose selector matches the Pod's labels. */
export function servicesOf(p: Pod, services: readonly Service[]): Service[] {
  return services.filter((s) => selectedPods(s, [p]).length > 0);
}
